// im2col for NCHW conv2d: col[(c * kh + i) * kw + j, (n * oh + y) * ow + x]
// = input[n, c, y * sh - ph + i * dh, x * sw - pw + j * dw] (0 outside),
// so the convolution is weight[oc, c*kh*kw] @ col (a cuBLAS GEMM).

struct ConvGeom {
    i64 batch, channels, height, width;
    i64 kh, kw, oh, ow;
    i64 sh, sw, ph, pw, dh, dw;
};

#define IM2COL(T, S)                                                                 \
    extern "C" __global__ void rlx_im2col_##S(const T* x, T* col, ConvGeom g) {     \
        i64 cols = g.batch * g.oh * g.ow;                                            \
        i64 total = g.channels * g.kh * g.kw * cols;                                 \
        for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total;          \
             t += (i64)gridDim.x * blockDim.x) {                                     \
            i64 row = t / cols, c0 = t % cols;                                       \
            i64 j = row % g.kw, i = (row / g.kw) % g.kh, c = row / (g.kw * g.kh);    \
            i64 xo = c0 % g.ow, yo = (c0 / g.ow) % g.oh, n = c0 / (g.ow * g.oh);     \
            i64 yi = yo * g.sh - g.ph + i * g.dh, xi = xo * g.sw - g.pw + j * g.dw;  \
            bool inside = yi >= 0 && yi < g.height && xi >= 0 && xi < g.width;       \
            col[t] = inside ? x[((n * g.channels + c) * g.height + yi) * g.width + xi] \
                            : from_f<T>(0.0f);                                       \
        }                                                                            \
    }
RLX_FLOAT_TYPES(IM2COL)
