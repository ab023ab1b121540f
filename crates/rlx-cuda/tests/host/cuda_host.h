// The CUDA dialect RLX's kernels use, for the host C++ compiler: the real
// `src/kernels/*.cu` sources compiled with g++ and run on the CPU by
// `tests/common/host_kernels.rs` (no GPU needed). Included before
// `common.cuh` (which then takes its `RLX_HOST` branches for the 16-bit
// conversions, PTX `cvt` there). A launch runs its grid block by block;
// the threads of a block run as fibers (ucontext) switched at every
// barrier, so `__syncthreads`, warp shuffles and `__shared__` memory keep
// their CUDA meaning. Kernels without barriers run thread after thread.
// Atomics are plain read-modify-writes: only one fiber runs at a time.
#pragma once
#define RLX_HOST 1

#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
// One block at a time per OS thread: its shared memory is a per-thread static.
#define __shared__ static thread_local

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

namespace rlx_host {
// The state of the launch running on this OS thread (tests run in parallel).
struct State {
    uint3 block_idx, thread_idx;
    dim3 grid_dim, block_dim;
    bool fibers;                 // threads of a block run as fibers
    ucontext_t* sched;           // the scheduler's context
    ucontext_t* ctx;             // the fibers' contexts
    unsigned current;            // the running fiber
    unsigned char* done;         // per fiber: returned
    float* lanes;                // shuffle exchange, one slot per thread
    int error;                   // a barrier where no block can meet it
};
inline thread_local State st;
}  // namespace rlx_host

#define blockIdx (rlx_host::st.block_idx)
#define threadIdx (rlx_host::st.thread_idx)
#define gridDim (rlx_host::st.grid_dim)
#define blockDim (rlx_host::st.block_dim)

inline unsigned rlx_host_threads() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned rlx_host_tid() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

// A barrier: the fiber yields to the scheduler, which resumes every fiber
// of the block in turn, so all reach it before any passes it.
inline void __syncthreads() {
    using rlx_host::st;
    if (!st.fibers) {
        if (rlx_host_threads() > 1) {
            std::fprintf(stderr, "cuda_host: __syncthreads in a launch run without fibers\n");
            std::abort();
        }
        return;
    }
    swapcontext(&st.ctx[st.current], st.sched);
}

// Warp shuffle (xor lanes): every thread of the block publishes its value,
// a barrier, each reads its partner's, a barrier (so the slots can be reused).
inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
    unsigned t = rlx_host_tid(), n = rlx_host_threads(), u = t ^ (unsigned)lane_mask;
    if (u >= n) {
        std::fprintf(stderr, "cuda_host: shuffle partner %u outside a block of %u\n", u, n);
        std::abort();
    }
    rlx_host::st.lanes[t] = v;
    __syncthreads();
    float r = rlx_host::st.lanes[u];
    __syncthreads();
    return r;
}

inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
inline float __uint_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned v; std::memcpy(&v, &f, 4); return v; }
inline int __float_as_int(float f) { int v; std::memcpy(&v, &f, 4); return v; }
// Compiled with -ffp-contract=off: a product is never fused into an fma.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// Atomics: plain, since one fiber runs at a time (the old value returned).
inline float atomicAdd(float* p, float v) { float o = *p; *p = o + v; return o; }
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
    unsigned o = *p; if (o == cmp) *p = v; return o;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp,
                                    unsigned long long v) {
    unsigned long long o = *p; if (o == cmp) *p = v; return o;
}

// IEEE binary16 <-> binary32, round to nearest even (PTX cvt.f32.f16 /
// cvt.rn.f16.f32): subnormals, infinities, NaN (quieted) kept.
inline float rlx_host_half_to_float(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    unsigned bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0);
    else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (man == 0) bits = sign;
    else {  // subnormal: normalise
        int e = -1;
        do { man <<= 1; ++e; } while (!(man & 0x400));
        bits = sign | ((unsigned)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    return __uint_as_float(bits);
}
inline unsigned short rlx_host_float_to_half(float f) {
    unsigned x = __float_as_uint(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (unsigned short)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00);  // rounds to inf
    if (ax < 0x38800000u) {  // subnormal or zero half: scale to an integer, round
        float m = __uint_as_float(ax) * 16777216.0f;  // 2^24: units of 2^-24
        return (unsigned short)(sign | (unsigned)std::nearbyint(m));
    }
    unsigned r = ax + 0xfffu + ((ax >> 13) & 1);  // round to nearest even at bit 13
    return (unsigned short)(sign | ((r - 0x38000000u) >> 13));
}
// binary32 -> bfloat16, round to nearest even (cvt.rn.bf16.f32), NaN quieted.
inline unsigned short rlx_host_float_to_bf16(float f) {
    unsigned x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40);
    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

namespace rlx_host {
template <typename F> struct Body { F f; };

template <typename F> void fiber_entry(unsigned lo, unsigned hi) {
    auto* f = reinterpret_cast<F*>((uintptr_t)lo | ((uintptr_t)hi << 32));
    (*f)();
    st.done[st.current] = 1;
    // returning resumes uc_link: the scheduler
}

// Runs `thread()` for every thread of every block of the grid.
template <typename F> int run_grid(const unsigned* grid, const unsigned* block, bool fibers, F thread) {
    st.grid_dim = {grid[0], grid[1], grid[2]};
    st.block_dim = {block[0], block[1], block[2]};
    st.fibers = fibers;
    unsigned n = block[0] * block[1] * block[2];
    const size_t stack = 64 * 1024;
    ucontext_t sched;
    ucontext_t* ctx = nullptr;
    unsigned char* stacks = nullptr;
    if (fibers) {
        ctx = new ucontext_t[n];
        stacks = new unsigned char[(size_t)n * stack];
        st.done = new unsigned char[n];
        st.lanes = new float[n];
        st.sched = &sched;
        st.ctx = ctx;
    }
    auto set_thread = [&](unsigned t) {
        st.thread_idx = {t % block[0], (t / block[0]) % block[1], t / (block[0] * block[1])};
    };
    for (unsigned bz = 0; bz < grid[2]; ++bz)
        for (unsigned by = 0; by < grid[1]; ++by)
            for (unsigned bx = 0; bx < grid[0]; ++bx) {
                st.block_idx = {bx, by, bz};
                if (!fibers) {
                    for (unsigned t = 0; t < n; ++t) {
                        set_thread(t);
                        thread();
                    }
                    continue;
                }
                uintptr_t fp = (uintptr_t)&thread;
                for (unsigned t = 0; t < n; ++t) {
                    getcontext(&ctx[t]);
                    ctx[t].uc_stack.ss_sp = stacks + (size_t)t * stack;
                    ctx[t].uc_stack.ss_size = stack;
                    ctx[t].uc_link = &sched;
                    makecontext(&ctx[t], (void (*)())fiber_entry<F>, 2, (unsigned)fp,
                                (unsigned)(fp >> 32));
                    st.done[t] = 0;
                }
                // Rounds: each live fiber runs to its next barrier (or its end).
                for (;;) {
                    unsigned live = 0;
                    for (unsigned t = 0; t < n; ++t) {
                        if (st.done[t]) continue;
                        st.current = t;
                        set_thread(t);
                        swapcontext(&sched, &ctx[t]);
                        live += !st.done[t];
                    }
                    if (live == 0) break;
                    if (live != n) {  // some returned while others wait at a barrier
                        std::fprintf(stderr, "cuda_host: %u of %u threads wait at a barrier the others left\n", live, n);
                        st.error = 2;
                        break;
                    }
                }
                if (st.error) break;
            }
    if (fibers) {
        delete[] ctx;
        delete[] stacks;
        delete[] st.done;
        delete[] st.lanes;
    }
    return st.error;
}

template <typename... A, size_t... I>
void call(void (*k)(A...), void** args, std::index_sequence<I...>) {
    k(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(args[I])...);
}

// A launch as cuLaunchKernel takes it: `args[i]` points at parameter i's
// value. Returns 0, 1 (argument count or sizes differ from the kernel's
// parameters: `sizes` has their byte sizes) or 2 (a barrier not all
// threads of a block reach).
template <typename... A>
int launch(void (*k)(A...), const unsigned* grid, const unsigned* block, void** args,
           const unsigned* sizes, unsigned nargs, int fibers) {
    const unsigned want[] = {(unsigned)sizeof(A)..., 0u};
    if (nargs != sizeof...(A)) return 1;
    for (unsigned i = 0; i < nargs; ++i)
        if (sizes[i] != want[i]) return 1;
    st.error = 0;
    return run_grid(grid, block, fibers != 0,
                    [&] { call(k, args, std::index_sequence_for<A...>{}); });
}
}  // namespace rlx_host

// The extern "C" trampoline of kernel `name` (appended per entry point).
#define RLX_HOST_ENTRY(name)                                                              \
    extern "C" int rlx_host_##name(const unsigned* grid, const unsigned* block, void** args, \
                                   const unsigned* sizes, unsigned nargs, int fibers) {    \
        return rlx_host::launch(name, grid, block, args, sizes, nargs, fibers);           \
    }
