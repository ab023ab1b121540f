// Unary and broadcasting binary elementwise ops, computed in f32.
// Op codes: the `UnaryOp` / `BinaryOp` discriminants in kernels/ops.rs.

__device__ __forceinline__ float unary(int op, float x) {
    switch (op) {
    case 0: return -x;
    case 1: return fabsf(x);
    case 2: return expf(x);
    case 3: return logf(x);
    case 4: return sqrtf(x);
    case 5: return rsqrtf(x);
    case 6: return tanhf(x);
    case 7: return 1.0f / (1.0f + expf(-x));
    case 8: return fmaxf(x, 0.0f);
    case 9: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case 10: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case 11: return x / (1.0f + expf(-x));
    case 12: return sinf(x);
    case 13: return cosf(x);
    case 14: return 1.0f / x;
    case 15: return x * x;
    case 16: return floorf(x);
    case 17: return ceilf(x);
    case 18: return rintf(x);  // half to even
    case 19: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);  // NaN and +-0 stay
    case 20: return erff(x);
    case 21: return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
    default: return __int_as_float(0x7fc00000);
    }
}

__device__ __forceinline__ float binary(int op, float a, float b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return fmaxf(a, b);
    case 5: return fminf(a, b);
    case 6: return powf(a, b);
    case 7: {  // floored (numpy / Python) modulo: the sign of b
        float r = fmodf(a, b);
        return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
    }
    case 8: return atan2f(a, b);
    default: return __int_as_float(0x7fc00000);
    }
}

#define UNARY(T, S)                                                                  \
    extern "C" __global__ void rlx_unary_##S(const T* x, T* y, i64 n, int op) {      \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x)                                       \
            y[i] = from_f<T>(unary(op, to_f(x[i])));                                  \
    }
RLX_FLOAT_TYPES(UNARY)

#define BINARY(T, S)                                                                 \
    extern "C" __global__ void rlx_binary_##S(const T* a, const T* b, T* y, i64 n,   \
                                              int op, Layout l) {                    \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;              \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 oa, ob;                                                              \
            offsets(l, i, &oa, &ob);                                                 \
            y[i] = from_f<T>(binary(op, to_f(a[oa]), to_f(b[ob])));                  \
        }                                                                            \
    }
RLX_FLOAT_TYPES(BINARY)
