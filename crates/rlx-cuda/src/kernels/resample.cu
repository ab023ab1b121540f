// Nearest / linear resize of the spatial dims of x [N, C, *sp] (up to 3
// spatial dims), one thread per output element (PyTorch `interpolate`).
// Nearest takes source index floor(j * in / out); linear interpolates
// between the two taps of every resized dim (PyTorch's
// `area_pixel_compute_source_index`), multilinearly across dims; a dim of
// unchanged size is copied through.

struct Resize {
    i64 planes;      // N * C
    i64 rank;        // spatial dims (1 to 3)
    i64 input[3];
    i64 output[3];
    int linear;
    int align_corners;
};

#define RESIZE(T, S)                                                                 \
    extern "C" __global__ void rlx_resize_##S(const T* x, T* y, i64 total, Resize r) { \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;          \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 rest = i, j[3], i0[3], i1[3];                                        \
            float w1[3];                                                             \
            for (int d = (int)r.rank - 1; d >= 0; --d) {                             \
                j[d] = rest % r.output[d];                                           \
                rest /= r.output[d];                                                 \
            }                                                                        \
            i64 plane = rest;                                                        \
            for (int d = 0; d < r.rank; ++d) {                                       \
                i64 n_in = r.input[d], n_out = r.output[d];                          \
                w1[d] = 0.0f;                                                        \
                if (n_in == n_out) {                                                 \
                    i0[d] = i1[d] = j[d];                                            \
                } else if (!r.linear) {                                              \
                    i64 s = j[d] * n_in / n_out;                                     \
                    i0[d] = i1[d] = s < n_in - 1 ? s : n_in - 1;                     \
                } else {                                                             \
                    double src;                                                      \
                    if (r.align_corners) {                                           \
                        src = n_out > 1 ? (double)(n_in - 1) / (n_out - 1) * j[d] : 0.0; \
                    } else {                                                         \
                        src = (double)n_in / n_out * (j[d] + 0.5) - 0.5;             \
                        if (src < 0.0) src = 0.0;                                    \
                    }                                                                \
                    i64 lo = (i64)src;                                               \
                    if (lo > n_in - 1) lo = n_in - 1;                                \
                    i0[d] = lo;                                                      \
                    i1[d] = lo + 1 < n_in ? lo + 1 : n_in - 1;                       \
                    w1[d] = (float)(src - lo);                                       \
                }                                                                    \
            }                                                                        \
            float acc = 0.0f;                                                        \
            for (int corner = 0; corner < (1 << r.rank); ++corner) {                 \
                float w = 1.0f;                                                      \
                i64 at = plane;                                                      \
                for (int d = 0; d < r.rank; ++d) {                                   \
                    bool hi = (corner >> d) & 1;                                     \
                    w *= hi ? w1[d] : 1.0f - w1[d];                                  \
                    at = at * r.input[d] + (hi ? i1[d] : i0[d]);                     \
                }                                                                    \
                if (w != 0.0f) acc += w * to_f(x[at]);                               \
            }                                                                        \
            y[i] = from_f<T>(acc);                                                   \
        }                                                                            \
    }
RLX_FLOAT_TYPES(RESIZE)
