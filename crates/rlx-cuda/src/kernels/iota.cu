// Iota: y[i] = start + step * (index of element i along one axis), the
// axis given by the product of the dims after it (`inner`) and its length.
// Computed in double, then rounded to the element type (integers truncate).

#define IOTA(T, S, CONVERT)                                                          \
    extern "C" __global__ void rlx_iota_##S(T* y, i64 n, i64 inner, i64 len,        \
                                            double start, double step) {             \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            double v = start + step * (double)((i / inner) % len);                   \
            y[i] = CONVERT;                                                          \
        }                                                                            \
    }
IOTA(float, f32, (float)v)
IOTA(rlx_half, f16, from_f<rlx_half>((float)v))
IOTA(rlx_bf16, bf16, from_f<rlx_bf16>((float)v))
IOTA(int, i32, (int)v)
IOTA(i64, i64, (i64)v)
