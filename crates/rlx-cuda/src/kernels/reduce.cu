// Reductions of x viewed as [outer, n, inner] over the middle axis: one
// block per output element, accumulated in f32.
// Op codes: 0 sum, 1 mean, 2 max, 3 min.

#define REDUCE(T, S)                                                                 \
    extern "C" __global__ void rlx_reduce_##S(const T* x, T* y, i64 outer, i64 n,    \
                                              i64 inner, int op) {                   \
        i64 o = blockIdx.x / inner, in = blockIdx.x % inner;                          \
        if (o >= outer) return;                                                      \
        const T* row = x + o * n * inner + in;                                       \
        float acc = op == 2 ? -RLX_INF : (op == 3 ? RLX_INF : 0.0f);               \
        for (i64 k = threadIdx.x; k < n; k += blockDim.x) {                          \
            float v = to_f(row[k * inner]);                                          \
            acc = op == 2 ? fmaxf(acc, v) : (op == 3 ? fminf(acc, v) : acc + v);     \
        }                                                                            \
        float r;                                                                     \
        if (op == 2) r = block_max(acc);                                             \
        else if (op == 3) r = -block_max(-acc);                                      \
        else r = block_sum(acc);                                                     \
        if (op == 1) r /= (float)n;                                                  \
        if (threadIdx.x == 0) y[blockIdx.x] = from_f<T>(r);                          \
    }
RLX_FLOAT_TYPES(REDUCE)
