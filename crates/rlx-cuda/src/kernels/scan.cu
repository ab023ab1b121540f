// Per-line scans of x viewed as [outer, n, inner] along the middle axis:
// one thread per (outer, inner) line.

// argmax / argmin (i64 result): the first extremum; a NaN counts as the
// extremum (numpy), so the first NaN wins.
#define ARGREDUCE(T, S)                                                              \
    extern "C" __global__ void rlx_argreduce_##S(const T* x, i64* y, i64 outer,      \
                                                 i64 n, i64 inner, int argmin) {     \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < outer * inner;  \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            const T* line = x + (t / inner) * n * inner + t % inner;                 \
            float best = to_f(line[0]);                                              \
            i64 at = 0;                                                              \
            for (i64 k = 1; k < n && best == best; ++k) {                            \
                float v = to_f(line[k * inner]);                                     \
                if (v != v || (argmin ? v < best : v > best)) {                      \
                    best = v;                                                        \
                    at = k;                                                          \
                }                                                                    \
            }                                                                        \
            y[t] = at;                                                               \
        }                                                                            \
    }
RLX_FLOAT_TYPES(ARGREDUCE)

// Cumulative sum (f32 accumulation), inclusive or exclusive, forward or
// from the end of the line.
#define CUMSUM(T, S)                                                                 \
    extern "C" __global__ void rlx_cumsum_##S(const T* x, T* y, i64 outer, i64 n,    \
                                              i64 inner, int exclusive, int reverse) { \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < outer * inner;  \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            i64 base = (t / inner) * n * inner + t % inner;                          \
            float acc = 0.0f;                                                        \
            for (i64 s = 0; s < n; ++s) {                                            \
                i64 at = base + (reverse ? n - 1 - s : s) * inner;                   \
                float v = to_f(x[at]);                                               \
                if (!exclusive) acc += v;                                            \
                y[at] = from_f<T>(acc);                                              \
                if (exclusive) acc += v;                                             \
            }                                                                        \
        }                                                                            \
    }
RLX_FLOAT_TYPES(CUMSUM)
