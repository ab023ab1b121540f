// GGUF block formats to f32 (ggml's layouts), one thread per value:
//   Q4_0: f16 d, 16 bytes of nibbles: v = (q - 8) * d
//   Q4_1: f16 d, f16 m, 16 bytes of nibbles: v = q * d + m
//   Q5_0: f16 d, u32 qh, 16 bytes of nibbles: v = (q | bit j of qh << 4) - 16) * d
//   Q5_1: f16 d, f16 m, u32 qh, 16 bytes of nibbles: v = (q | bit j of qh << 4) * d + m
//   Q8_0: f16 d, 32 signed bytes: v = q * d
// Within a block, value j < 16 is the low nibble of byte j and value
// j + 16 its high nibble. Scales are read bytewise (blocks are not
// 4-byte aligned). The `q * d + m` products are rounded before the add
// (__fmul_rn: never contracted into an fma), as ggml's / rlx-gguf's are.
// The K-quants (256-value super-blocks) follow below; their products are
// rounded as ggml's CPU code rounds them (__fmul_rn: never contracted into
// an fma), so the values are bit-identical to ggml's / rlx-gguf's.

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
        y[i] = __fmul_rn((float)nibble(blk + 4, i % 32), half_at(blk)) + half_at(blk + 2);
    }
}

// The 5-bit value j (0..32) of a Q5_0 / Q5_1 block: nibble j of qs with bit
// j of the little-endian u32 qh as its fifth bit.
__device__ __forceinline__ int five_bits(const unsigned char* qh, const unsigned char* qs, i64 j) {
    return nibble(qs, j) | (((qh[j / 8] >> (j % 8)) & 1) << 4);
}

extern "C" __global__ void rlx_dequant_q5_0(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 32) * 22;
        y[i] = (float)(five_bits(blk + 2, blk + 6, i % 32) - 16) * half_at(blk);
    }
}

extern "C" __global__ void rlx_dequant_q5_1(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 32) * 24;
        y[i] = __fmul_rn((float)five_bits(blk + 4, blk + 8, i % 32), half_at(blk)) + half_at(blk + 2);
    }
}

extern "C" __global__ void rlx_dequant_q8_0(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 32) * 34;
        y[i] = (float)(signed char)blk[2 + i % 32] * half_at(blk);
    }
}

// The 6-bit scale (or, with `min`, the min) j (0..8) of a Q4_K / Q5_K
// block's 12 scale bytes (ggml's get_scale_min_k4).
__device__ __forceinline__ int scale_k4(const unsigned char* q, int j, int min) {
    if (j < 4) return q[j + 4 * min] & 63;
    return min ? (q[j + 4] >> 4) | ((q[j] >> 6) << 4)
               : (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
}

// Value r (0..256) of a Q4_K / Q5_K block: chunk c = r / 64 of 32 bytes of
// qs, its low nibbles (sub-block 2c) then its high ones (2c + 1);
//   v = d·scale·(q [+ 16 from qh bit 2c or 2c + 1]) - dmin·min.
__device__ __forceinline__ float k4_value(const unsigned char* blk, const unsigned char* qh,
                                          const unsigned char* qs, int r) {
    int c = r / 64, hi = (r % 64) / 32, l = r % 32, j = 2 * c + hi;
    int q = hi ? qs[c * 32 + l] >> 4 : qs[c * 32 + l] & 0xF;
    if (qh && ((qh[l] >> j) & 1)) q += 16;
    float dl = __fmul_rn(half_at(blk), (float)scale_k4(blk + 4, j, 0));
    float ml = __fmul_rn(half_at(blk + 2), (float)scale_k4(blk + 4, j, 1));
    return __fmul_rn(dl, (float)q) - ml;
}

// Q4_K (144 bytes): f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles.
extern "C" __global__ void rlx_dequant_q4_k(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 256) * 144;
        y[i] = k4_value(blk, 0, blk + 16, (int)(i % 256));
    }
}

// Q5_K (176 bytes): f16 d, f16 dmin, 12 scale bytes, 32 bytes of high
// bits qh, 128 bytes of nibbles.
extern "C" __global__ void rlx_dequant_q5_k(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 256) * 176;
        y[i] = k4_value(blk, blk + 16, blk + 48, (int)(i % 256));
    }
}

// Q6_K (210 bytes): 128 bytes of low nibbles ql, 64 bytes of 2-bit highs
// qh, 16 signed scales, f16 d. Value r: half n = r / 128, quarter k =
// (r % 128) / 32, lane l = r % 32; its low 4 bits are a nibble of
// ql[n·64 + (k & 1)·32 + l] (high for k >= 2), its top 2 bits bits 2k of
// qh[n·32 + l];  v = d·scale[n·8 + l / 16 + 2k]·(q - 32).
extern "C" __global__ void rlx_dequant_q6_k(const unsigned char* b, float* y, i64 total) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const unsigned char* blk = b + (i / 256) * 210;
        int r = (int)(i % 256), n = r / 128, k = (r % 128) / 32, l = r % 32;
        int low = blk[n * 64 + (k & 1) * 32 + l];
        low = k >= 2 ? low >> 4 : low & 0xF;
        int q = (low | (((blk[128 + n * 32 + l] >> (2 * k)) & 3) << 4)) - 32;
        float dl = __fmul_rn(half_at(blk + 208), (float)(signed char)blk[192 + n * 8 + l / 16 + 2 * k]);
        y[i] = __fmul_rn(dl, (float)q);
    }
}
