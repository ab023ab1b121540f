// GGUF block formats to f32 (ggml's layouts), one thread per value:
//   Q4_0: f16 d, 16 bytes of nibbles: v = (q - 8) * d
//   Q4_1: f16 d, f16 m, 16 bytes of nibbles: v = q * d + m
//   Q8_0: f16 d, 32 signed bytes: v = q * d
// Within a block, value j < 16 is the low nibble of byte j and value
// j + 16 its high nibble. Scales are read bytewise (blocks are not
// 4-byte aligned).

__device__ __forceinline__ float half_at(const unsigned char* p) {
    rlx_half h;
    h.bits = (unsigned short)(p[0] | (p[1] << 8));
    return to_f(h);
}

__device__ __forceinline__ int nibble(const unsigned char* qs, i64 j) {
    return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
}

extern "C" __global__ void rlx_dequant_q4_0(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 32) * 18;
        y[i] = (float)(nibble(blk + 2, i % 32) - 8) * half_at(blk);
    }
}

extern "C" __global__ void rlx_dequant_q4_1(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 32) * 20;
        y[i] = (float)nibble(blk + 4, i % 32) * half_at(blk) + half_at(blk + 2);
    }
}

extern "C" __global__ void rlx_dequant_q8_0(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 32) * 34;
        y[i] = (float)(signed char)blk[2 + i % 32] * half_at(blk);
    }
}
