// Comparisons (Bool result, one byte per element) and `where(c, a, b)`,
// both broadcasting. Compare op codes: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge
// (`CmpOp` order). Select moves bytes, so one kernel per element width;
// its three operands' strides come in two layouts: (c, a) and (b, unused).

template <typename V> __device__ __forceinline__ unsigned char cmp_op(int op, V a, V b) {
    switch (op) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    default: return a >= b;
    }
}

__device__ __forceinline__ float cmp_load(float v) { return v; }
__device__ __forceinline__ float cmp_load(rlx_half v) { return to_f(v); }
__device__ __forceinline__ float cmp_load(rlx_bf16 v) { return to_f(v); }
__device__ __forceinline__ int cmp_load(int v) { return v; }
__device__ __forceinline__ i64 cmp_load(i64 v) { return v; }

#define COMPARE(T, S)                                                                \
    extern "C" __global__ void rlx_compare_##S(const T* a, const T* b,               \
                                               unsigned char* y, i64 n, int op,      \
                                               Layout l) {                           \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 oa, ob;                                                              \
            offsets(l, i, &oa, &ob);                                                 \
            y[i] = cmp_op(op, cmp_load(a[oa]), cmp_load(b[ob]));                     \
        }                                                                            \
    }
COMPARE(float, f32)
COMPARE(rlx_half, f16)
COMPARE(rlx_bf16, bf16)
COMPARE(int, i32)
COMPARE(i64, i64)

#define SELECT(T, S)                                                                 \
    extern "C" __global__ void rlx_select_##S(const unsigned char* c, const T* a,    \
                                              const T* b, T* y, i64 n, Layout ca,    \
                                              Layout bl) {                           \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 oc, oa, ob, unused;                                                  \
            offsets(ca, i, &oc, &oa);                                                \
            offsets(bl, i, &ob, &unused);                                            \
            y[i] = c[oc] ? a[oa] : b[ob];                                            \
        }                                                                            \
    }
SELECT(unsigned char, b1)
SELECT(unsigned short, b2)
SELECT(unsigned int, b4)
SELECT(unsigned long long, b8)
