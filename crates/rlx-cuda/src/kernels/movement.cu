// Strided copies: transpose, slice, broadcast and each part of a concat are
// one copy from x (element strides `a_strides`, from `x_offset`) into y
// (element strides `b_strides`, from `y_offset`) over `dims`. Bytes move
// unchanged, so one kernel per element width serves every dtype.

#define COPY(T, S)                                                                   \
    extern "C" __global__ void rlx_strided_copy_##S(const T* x, T* y, i64 n,         \
                                                    i64 x_offset, i64 y_offset,      \
                                                    Layout l) {                      \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 ox, oy;                                                              \
            offsets(l, i, &ox, &oy);                                                 \
            y[y_offset + oy] = x[x_offset + ox];                                     \
        }                                                                            \
    }
COPY(unsigned char, b1)
COPY(unsigned short, b2)
COPY(unsigned int, b4)
COPY(unsigned long long, b8)
