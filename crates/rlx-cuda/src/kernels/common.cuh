// Shared by every RLX kernel source: storage types and their float view.
// No CUDA headers (NVRTC alone has none): the 16-bit floats are bit
// containers converted with PTX `cvt` (bf16 rounding needs sm_80). Under
// RLX_HOST (the host build of tests/host/cuda_host.h) the same IEEE
// round-to-nearest-even conversions are the shim's.

typedef long long i64;
#define RLX_INF __int_as_float(0x7f800000)

struct rlx_half { unsigned short bits; };
struct rlx_bf16 { unsigned short bits; };

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(rlx_half v) {
#ifdef RLX_HOST
    return rlx_host_half_to_float(v.bits);
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
#endif
}
__device__ __forceinline__ float to_f(rlx_bf16 v) { return __uint_as_float(((unsigned)v.bits) << 16); }

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ rlx_half from_f<rlx_half>(float v) {
    rlx_half h;
#ifdef RLX_HOST
    h.bits = rlx_host_float_to_half(v);
#else
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(v));
#endif
    return h;
}
template <> __device__ __forceinline__ rlx_bf16 from_f<rlx_bf16>(float v) {
    rlx_bf16 h;
#ifdef RLX_HOST
    h.bits = rlx_host_float_to_bf16(v);
#else
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(v));
#endif
    return h;
}

// Up to 8 dimensions: the output's dims and each operand's element strides
// (0 along a broadcast dimension).
#define RLX_MAX_RANK 8
struct Layout {
    int rank;
    i64 dims[RLX_MAX_RANK];
    i64 a_strides[RLX_MAX_RANK];
    i64 b_strides[RLX_MAX_RANK];
};

// Offsets of flat output index `i` in operands a and b.
__device__ __forceinline__ void offsets(const Layout& l, i64 i, i64* oa, i64* ob) {
    i64 a = 0, b = 0;
    for (int d = l.rank - 1; d >= 0; --d) {
        i64 c = i % l.dims[d];
        i /= l.dims[d];
        a += c * l.a_strides[d];
        b += c * l.b_strides[d];
    }
    *oa = a;
    *ob = b;
}

// Sum / max of a float over a block of up to 1024 threads (blockDim.x a
// multiple of 32); every thread gets the result.
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[32];
    v = warp_sum(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = lane < warps ? partial[lane] : 0.0f;
    return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v) {
    __shared__ float partial[32];
    v = warp_max(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = lane < warps ? partial[lane] : -RLX_INF;
    return warp_max(v);
}

// Instantiates KERNEL(T, suffix) for f32, f16 and bf16.
#define RLX_FLOAT_TYPES(KERNEL) \
    KERNEL(float, f32)          \
    KERNEL(rlx_half, f16)         \
    KERNEL(rlx_bf16, bf16)

// A 2-d window (NCHW convolution / pooling): x [batch, in_c, h, w] to
// y [batch, out_c, oh, ow]; eh / ew are the padded input extents
// (h + both pads), which average pooling with count_include_pad counts in.
struct Window2d {
    i64 batch, in_c, h, w, out_c, groups;
    i64 kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, eh, ew;
};
