// Padding: y[i] = x[source of i] per axis, `before[d]` cells added in front
// of axis d. Mode 0 fills cells outside x with `fill` (the value's bits),
// 1 mirrors without repeating the edge (numpy reflect), 2 repeats the edge.
// Bytes move unchanged, so one kernel per element width serves every dtype.

struct PadLayout {
    int rank;
    i64 out_dims[RLX_MAX_RANK];
    i64 in_dims[RLX_MAX_RANK];
    i64 before[RLX_MAX_RANK];
};

// The source of coordinate c (of the padded axis) in an axis of length n,
// or -1 outside x under mode 0.
__device__ __forceinline__ i64 pad_source(i64 c, i64 n, int mode) {
    if (c >= 0 && c < n) return c;
    if (mode == 0) return -1;
    if (mode == 2) return c < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    i64 period = 2 * (n - 1);
    i64 m = c % period;
    if (m < 0) m += period;
    return m < n ? m : period - m;
}

#define PAD(T, S)                                                                    \
    extern "C" __global__ void rlx_pad_##S(const T* x, T* y, i64 n, PadLayout l,     \
                                           int mode, unsigned long long fill) {      \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 rest = i, src = 0, stride = 1;                                       \
            bool inside = true;                                                      \
            for (int d = l.rank - 1; d >= 0; --d) {                                  \
                i64 c = rest % l.out_dims[d];                                        \
                rest /= l.out_dims[d];                                               \
                i64 s = pad_source(c - l.before[d], l.in_dims[d], mode);             \
                if (s < 0) inside = false;                                           \
                src += s * stride;                                                   \
                stride *= l.in_dims[d];                                              \
            }                                                                        \
            y[i] = inside ? x[src] : (T)fill;                                        \
        }                                                                            \
    }
PAD(unsigned char, b1)
PAD(unsigned short, b2)
PAD(unsigned int, b4)
PAD(unsigned long long, b8)
