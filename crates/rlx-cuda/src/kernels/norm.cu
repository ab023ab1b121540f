// Layer norm and RMS norm over the last axis of [rows, n]: one block per
// row, statistics in f32 (two passes for the variance, as numpy does).
// `gamma` / `beta` may be null (no scale / no shift).

#define LAYER_NORM(T, S)                                                             \
    extern "C" __global__ void rlx_layer_norm_##S(const T* x, const T* gamma,        \
                                                  const T* beta, T* y, i64 rows,     \
                                                  i64 n, float eps) {                \
        i64 r = blockIdx.x;                                                          \
        if (r >= rows) return;                                                       \
        const T* xr = x + r * n;                                                     \
        T* yr = y + r * n;                                                           \
        float s = 0.0f;                                                              \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) s += to_f(xr[k]);          \
        float mean = block_sum(s) / (float)n;                                        \
        float q = 0.0f;                                                              \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) {                          \
            float d = to_f(xr[k]) - mean;                                            \
            q += d * d;                                                              \
        }                                                                            \
        float inv = rsqrtf(block_sum(q) / (float)n + eps);                           \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) {                          \
            float v = (to_f(xr[k]) - mean) * inv;                                    \
            if (gamma) v *= to_f(gamma[k]);                                          \
            if (beta) v += to_f(beta[k]);                                            \
            yr[k] = from_f<T>(v);                                                    \
        }                                                                            \
    }
RLX_FLOAT_TYPES(LAYER_NORM)

#define RMS_NORM(T, S)                                                               \
    extern "C" __global__ void rlx_rms_norm_##S(const T* x, const T* gamma, T* y,    \
                                                i64 rows, i64 n, float eps) {        \
        i64 r = blockIdx.x;                                                          \
        if (r >= rows) return;                                                       \
        const T* xr = x + r * n;                                                     \
        T* yr = y + r * n;                                                           \
        float q = 0.0f;                                                              \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) {                          \
            float v = to_f(xr[k]);                                                   \
            q += v * v;                                                              \
        }                                                                            \
        float inv = rsqrtf(block_sum(q) / (float)n + eps);                           \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) {                          \
            float v = to_f(xr[k]) * inv;                                             \
            if (gamma) v *= to_f(gamma[k]);                                          \
            yr[k] = from_f<T>(v);                                                    \
        }                                                                            \
    }
RLX_FLOAT_TYPES(RMS_NORM)
