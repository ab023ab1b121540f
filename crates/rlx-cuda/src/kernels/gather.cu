// Row gather (embedding lookup): out[i, :] = table[idx[i], :]. A negative
// index counts from the end (numpy); one still out of range writes zeros
// and sets *bad to 1 + its position, which the host turns into an error.

#define GATHER(T, S)                                                                 \
    extern "C" __global__ void rlx_gather_##S(const T* table, const i64* idx,        \
                                              T* out, i64 count, i64 row_len,        \
                                              i64 rows, i64* bad) {                  \
        i64 total = count * row_len;                                                 \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;          \
             i += (i64)gridDim.x * blockDim.x) {                                     \
            i64 j = i / row_len, c = i % row_len;                                    \
            i64 r = idx[j];                                                          \
            if (r < 0) r += rows;                                                    \
            if (r < 0 || r >= rows) {                                                \
                out[i] = from_f<T>(0.0f);                                            \
                atomicCAS((unsigned long long*)bad, 0ull, (unsigned long long)(j + 1)); \
            } else {                                                                 \
                out[i] = table[r * row_len + c];                                     \
            }                                                                        \
        }                                                                            \
    }
RLX_FLOAT_TYPES(GATHER)
