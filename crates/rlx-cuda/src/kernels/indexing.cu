// Per-element indexing along one axis (numpy `take_along_axis`, torch
// `scatter_add`). The Layout walks the index tensor's dims; `a_strides`
// are the data's strides over them with the indexed axis zeroed, so an
// element's data offset is its Layout offset plus `index * axis_stride`.
// A negative index counts from the end; one still outside `0..len` is
// skipped (a gather writes zero) and sets *bad to 1 + its position, which
// the host turns into an error.

__device__ __forceinline__ bool resolve_index(i64 r, i64 len, i64 at, i64* bad, i64* out) {
    if (r < 0) r += len;
    if (r < 0 || r >= len) {
        atomicCAS((unsigned long long*)bad, 0ull, (unsigned long long)(at + 1));
        return false;
    }
    *out = r;
    return true;
}

#define GATHER_ELEMENTS(T, S)                                                        \
    extern "C" __global__ void rlx_gather_elements_##S(                              \
        const T* x, const i64* idx, T* y, i64 count, Layout l, i64 axis_stride,      \
        i64 len, i64* bad) {                                                         \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < count;          \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 base, unused, r;                                                     \
            offsets(l, i, &base, &unused);                                           \
            y[i] = resolve_index(idx[i], len, i, bad, &r) ? x[base + r * axis_stride] \
                                                         : from_f<T>(0.0f);          \
        }                                                                            \
    }
RLX_FLOAT_TYPES(GATHER_ELEMENTS)

// Atomic float add into f32 (native) or a 16-bit float (a compare-and-swap
// loop on the aligned 32-bit word holding it, the other half kept as is).
__device__ __forceinline__ void atomic_add_f(float* p, float v) { atomicAdd(p, v); }
template <typename T> __device__ __forceinline__ void atomic_add_16(T* p, float v) {
    unsigned int* word = (unsigned int*)((unsigned long long)p & ~3ull);
    unsigned int shift = ((unsigned long long)p & 2ull) ? 16u : 0u;
    unsigned int old = *word, seen;
    do {
        seen = old;
        T cur;
        cur.bits = (unsigned short)(seen >> shift);
        T sum = from_f<T>(to_f(cur) + v);
        unsigned int next = (seen & ~(0xFFFFu << shift)) | ((unsigned int)sum.bits << shift);
        old = atomicCAS(word, seen, next);
    } while (old != seen);
}
__device__ __forceinline__ void atomic_add_f(rlx_half* p, float v) { atomic_add_16(p, v); }
__device__ __forceinline__ void atomic_add_f(rlx_bf16* p, float v) { atomic_add_16(p, v); }

// y already holds the base (the host copies it first); each update is
// added atomically, so repeated indices accumulate (in any order).
#define SCATTER_ADD(T, S)                                                            \
    extern "C" __global__ void rlx_scatter_add_##S(const i64* idx, const T* upd, T* y, \
                                                   i64 count, Layout l,              \
                                                   i64 axis_stride, i64 len, i64* bad) { \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < count;          \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 base, unused, r;                                                     \
            offsets(l, i, &base, &unused);                                           \
            if (resolve_index(idx[i], len, i, bad, &r))                              \
                atomic_add_f(y + base + r * axis_stride, to_f(upd[i]));              \
        }                                                                            \
    }
RLX_FLOAT_TYPES(SCATTER_ADD)

// Top-k of each line of x viewed as [outer, n, inner] along n: one thread
// per line picks the k best by repeated selection. The order is total:
// NaN above every number (torch), ties broken by the lower index; the
// j-th pick is the best element strictly after pick j - 1 in that order.
// `vals` or `inds` is null when that output is not wanted.
__device__ __forceinline__ int nan_greatest_cmp(float a, float b) {
    bool an = a != a, bn = b != b;
    if (an || bn) return (int)an - (int)bn;
    return a < b ? -1 : (a > b ? 1 : 0);
}
// True when (a, ia) comes before (b, ib) in the output order.
__device__ __forceinline__ bool topk_before(float a, i64 ia, float b, i64 ib, int largest) {
    int c = nan_greatest_cmp(a, b);
    if (largest) c = -c;
    return c < 0 || (c == 0 && ia < ib);
}
#define TOPK(T, S)                                                                   \
    extern "C" __global__ void rlx_topk_##S(const T* x, T* vals, i64* inds, i64 outer, \
                                            i64 n, i64 inner, i64 k, int largest) {  \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < outer * inner;  \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            i64 a = t / inner, c = t % inner;                                        \
            const T* line = x + a * n * inner + c;                                   \
            float prev = 0.0f;                                                       \
            i64 prev_i = -1;                                                         \
            for (i64 j = 0; j < k; ++j) {                                            \
                float best = 0.0f;                                                   \
                i64 best_i = -1;                                                     \
                for (i64 i = 0; i < n; ++i) {                                        \
                    float v = to_f(line[i * inner]);                                 \
                    if (prev_i >= 0 && !topk_before(prev, prev_i, v, i, largest)) continue; \
                    if (best_i < 0 || topk_before(v, i, best, best_i, largest)) {    \
                        best = v;                                                    \
                        best_i = i;                                                  \
                    }                                                                \
                }                                                                    \
                i64 o = (a * k + j) * inner + c;                                     \
                if (vals) vals[o] = line[best_i * inner];                            \
                if (inds) inds[o] = best_i;                                          \
                prev = best;                                                         \
                prev_i = best_i;                                                     \
            }                                                                        \
        }                                                                            \
    }
RLX_FLOAT_TYPES(TOPK)
