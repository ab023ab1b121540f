// Casts between f32 / f16 / bf16 / i32 / i64 (round to nearest even for
// the narrow floats; float -> int truncates toward zero, as numpy's astype).

__device__ __forceinline__ float load_f(const int* p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float load_f(const i64* p, i64 i) { return (float)p[i]; }
template <typename T> __device__ __forceinline__ float load_f(const T* p, i64 i) { return to_f(p[i]); }

template <typename T> __device__ __forceinline__ void store_f(T* p, i64 i, float v) { p[i] = from_f<T>(v); }
__device__ __forceinline__ void store_f(int* p, i64 i, float v) { p[i] = (int)v; }
__device__ __forceinline__ void store_f(i64* p, i64 i, float v) { p[i] = (i64)v; }

#define CAST(TI, SI, TO, SO)                                                         \
    extern "C" __global__ void rlx_cast_##SI##_##SO(const TI* x, TO* y, i64 n) {     \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x)                                       \
            store_f(y, i, load_f(x, i));                                             \
    }
#define CAST_FROM(TI, SI)            \
    CAST(TI, SI, float, f32)         \
    CAST(TI, SI, rlx_half, f16)        \
    CAST(TI, SI, rlx_bf16, bf16) \
    CAST(TI, SI, int, i32)
CAST_FROM(float, f32)
CAST_FROM(rlx_half, f16)
CAST_FROM(rlx_bf16, bf16)
CAST_FROM(int, i32)
CAST_FROM(i64, i64)
