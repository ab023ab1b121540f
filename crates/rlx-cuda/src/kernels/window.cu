// NCHW convolution and pooling over a Window2d, one thread per output
// element, accumulated in f32 (a 1-d op is planned as height 1).

// y[n, o, oy, ox] = bias[o] + sum over c < in_c / groups, i < kh, j < kw of
// w[o, c, i, j] * x[n, g * in_c / groups + c, oy*sh - ph + i*dh, ox*sw - pw + j*dw]
// (g = o / (out_c / groups); taps outside x count 0). `bias` may be null.
#define CONV2D(T, S)                                                                 \
    extern "C" __global__ void rlx_conv2d_##S(const T* x, const T* wt,               \
                                              const T* bias, T* y, Window2d g) {     \
        i64 total = g.batch * g.out_c * g.oh * g.ow;                                 \
        i64 cpg = g.in_c / g.groups, opg = g.out_c / g.groups;                       \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total;          \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            i64 ox = t % g.ow, oy = (t / g.ow) % g.oh;                               \
            i64 o = (t / (g.ow * g.oh)) % g.out_c, n = t / (g.ow * g.oh * g.out_c);  \
            i64 c0 = (o / opg) * cpg;                                                \
            float acc = bias ? to_f(bias[o]) : 0.0f;                                 \
            for (i64 c = 0; c < cpg; ++c)                                            \
                for (i64 i = 0; i < g.kh; ++i) {                                     \
                    i64 yi = oy * g.sh - g.ph + i * g.dh;                            \
                    if (yi < 0 || yi >= g.h) continue;                               \
                    for (i64 j = 0; j < g.kw; ++j) {                                 \
                        i64 xi = ox * g.sw - g.pw + j * g.dw;                        \
                        if (xi < 0 || xi >= g.w) continue;                           \
                        acc += to_f(wt[((o * cpg + c) * g.kh + i) * g.kw + j]) *     \
                               to_f(x[((n * g.in_c + c0 + c) * g.h + yi) * g.w + xi]); \
                    }                                                                \
                }                                                                    \
            y[t] = from_f<T>(acc);                                                   \
        }                                                                            \
    }
RLX_FLOAT_TYPES(CONV2D)

// Transposed convolution as a gather: x [N, in_c, h, w], w [in_c,
// out_c / groups, kh, kw] (g.h / g.w the input's, g.oh / g.ow the output's).
// y[n, o, oy, ox] = bias[o] + sum over c of group g = o / opg, i, j with
// oy + ph - i*dh = yi*sh and ox + pw - j*dw = xi*sw (yi, xi inside x) of
// x[n, c, yi, xi] * w[c, o % opg, i, j]: each output cell collects the
// input cells a direct scatter would have added into it.
#define CONV_TRANSPOSE2D(T, S)                                                       \
    extern "C" __global__ void rlx_conv_transpose2d_##S(const T* x, const T* wt,     \
                                                        const T* bias, T* y,         \
                                                        Window2d g) {                \
        i64 total = g.batch * g.out_c * g.oh * g.ow;                                 \
        i64 cpg = g.in_c / g.groups, opg = g.out_c / g.groups;                       \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total;          \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            i64 ox = t % g.ow, oy = (t / g.ow) % g.oh;                               \
            i64 o = (t / (g.ow * g.oh)) % g.out_c, n = t / (g.ow * g.oh * g.out_c);  \
            i64 c0 = (o / opg) * cpg, oo = o % opg;                                  \
            float acc = bias ? to_f(bias[o]) : 0.0f;                                 \
            for (i64 c = c0; c < c0 + cpg; ++c)                                      \
                for (i64 i = 0; i < g.kh; ++i) {                                     \
                    i64 ty = oy + g.ph - i * g.dh;                                   \
                    if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.h) continue;      \
                    i64 yi = ty / g.sh;                                              \
                    for (i64 j = 0; j < g.kw; ++j) {                                 \
                        i64 tx = ox + g.pw - j * g.dw;                               \
                        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.w) continue;  \
                        i64 xi = tx / g.sw;                                          \
                        acc += to_f(wt[((c * opg + oo) * g.kh + i) * g.kw + j]) *    \
                               to_f(x[((n * g.in_c + c) * g.h + yi) * g.w + xi]);    \
                    }                                                                \
                }                                                                    \
            y[t] = from_f<T>(acc);                                                   \
        }                                                                            \
    }
RLX_FLOAT_TYPES(CONV_TRANSPOSE2D)

// Max (avg = 0) or average pooling of each channel; padding never wins a
// max. The average divides by the in-bounds taps, or with
// count_include_pad by the taps inside the padded input (PyTorch).
#define POOL2D(T, S)                                                                 \
    extern "C" __global__ void rlx_pool2d_##S(const T* x, T* y, Window2d g, int avg, \
                                              int count_include_pad) {               \
        i64 total = g.batch * g.in_c * g.oh * g.ow;                                  \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total;          \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            i64 ox = t % g.ow, oy = (t / g.ow) % g.oh, plane = t / (g.ow * g.oh);    \
            const T* xp = x + plane * g.h * g.w;                                     \
            float acc = avg ? 0.0f : -RLX_INF;                                       \
            i64 inside = 0, padded_h = 0, padded_w = 0;                              \
            for (i64 i = 0; i < g.kh; ++i) {                                         \
                i64 yi = oy * g.sh - g.ph + i * g.dh;                                \
                padded_h += oy * g.sh + i * g.dh < g.eh;                             \
                for (i64 j = 0; j < g.kw; ++j) {                                     \
                    i64 xi = ox * g.sw - g.pw + j * g.dw;                            \
                    if (i == 0) padded_w += ox * g.sw + j * g.dw < g.ew;             \
                    if (yi < 0 || yi >= g.h || xi < 0 || xi >= g.w) continue;        \
                    float v = to_f(xp[yi * g.w + xi]);                               \
                    acc = avg ? acc + v : fmaxf(acc, v);                             \
                    ++inside;                                                        \
                }                                                                    \
            }                                                                        \
            if (avg) acc /= (float)(count_include_pad ? padded_h * padded_w : inside); \
            y[t] = from_f<T>(acc);                                                   \
        }                                                                            \
    }
RLX_FLOAT_TYPES(POOL2D)
