// Softmax / log-softmax over the last axis of [rows, n]: one block per row,
// max-subtracted, accumulated in f32.

#define SOFTMAX(T, S)                                                                \
    extern "C" __global__ void rlx_softmax_##S(const T* x, T* y, i64 rows, i64 n,    \
                                               int log_space) {                      \
        i64 r = blockIdx.x;                                                          \
        if (r >= rows) return;                                                       \
        const T* xr = x + r * n;                                                     \
        T* yr = y + r * n;                                                           \
        float m = -RLX_INF;                                                         \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, to_f(xr[k])); \
        m = block_max(m);                                                            \
        float s = 0.0f;                                                              \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) s += expf(to_f(xr[k]) - m); \
        s = block_sum(s);                                                            \
        float ls = logf(s);                                                          \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) {                          \
            float v = to_f(xr[k]) - m;                                               \
            yr[k] = from_f<T>(log_space ? v - ls : expf(v) / s);                     \
        }                                                                            \
    }
RLX_FLOAT_TYPES(SOFTMAX)
