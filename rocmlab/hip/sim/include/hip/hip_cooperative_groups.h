// hip/hip_cooperative_groups.h of rocmlab's CPU simulator: thread_block and tiles of up to 64 lanes
// (a tile never spans two wavefronts). Grid-wide groups (this_grid) are not simulated.
#pragma once
#ifndef HIPSIM_HIP_COOPERATIVE_GROUPS_H
#define HIPSIM_HIP_COOPERATIVE_GROUPS_H
#include "hip_runtime.h"

namespace cooperative_groups {

class thread_block {
  public:
    unsigned thread_rank() const { return ::hipsim::thread_linear(); }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
    __attribute__((always_inline)) void sync(int line = __builtin_LINE()) const {
        ::hipsim::block_barrier("thread_block::sync", line);
    }
};
inline thread_block this_thread_block() { return thread_block(); }

template <unsigned N> class thread_block_tile {
    static_assert(N >= 1 && N <= 64 && (N & (N - 1)) == 0,
                  "tiles are a power of two of at most 64 lanes (one wavefront on MI300X)");
    static uint64_t lanes() { return N == 64 ? ~0ull : ((1ull << N) - 1) << (__lane_id() & ~(N - 1)); }

  public:
    unsigned thread_rank() const { return ::hipsim::thread_linear() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return ::hipsim::thread_linear() / N; }
    unsigned meta_group_size() const { return (blockDim.x * blockDim.y * blockDim.z + N - 1) / N; }
    __attribute__((always_inline)) void sync(int line = __builtin_LINE()) const {
        ::hipsim::wave_exchange(0, __lane_id(), 1, 0, 0, "tile.sync", line);
    }
    template <class T> __attribute__((always_inline)) T shfl(T v, int src, int line = __builtin_LINE()) const {
        return __shfl(v, src, static_cast<int>(N), line);
    }
    template <class T> __attribute__((always_inline)) T shfl_down(T v, unsigned d, int line = __builtin_LINE()) const {
        return __shfl_down(v, d, static_cast<int>(N), line);
    }
    template <class T> __attribute__((always_inline)) T shfl_up(T v, unsigned d, int line = __builtin_LINE()) const {
        return __shfl_up(v, d, static_cast<int>(N), line);
    }
    template <class T> __attribute__((always_inline)) T shfl_xor(T v, int m, int line = __builtin_LINE()) const {
        return __shfl_xor(v, m, static_cast<int>(N), line);
    }
    __attribute__((always_inline)) unsigned long long ballot(int pred, int line = __builtin_LINE()) const {
        const unsigned base = __lane_id() & ~(N - 1);
        return (__ballot(pred, line) & lanes()) >> base;
    }
    __attribute__((always_inline)) int any(int pred, int line = __builtin_LINE()) const { return ballot(pred, line) != 0; }
    __attribute__((always_inline)) int all(int pred, int line = __builtin_LINE()) const {
        const unsigned base = __lane_id() & ~(N - 1);
        ::hipsim::Exchange e = ::hipsim::wave_exchange(0, __lane_id(), pred != 0, 0, 0, "tile.all", line);
        return ((e.ballot & lanes()) >> base) == ((e.exec & lanes()) >> base);
    }
};

template <unsigned N, class Parent> inline thread_block_tile<N> tiled_partition(const Parent&) {
    return thread_block_tile<N>();
}
template <class G> inline void sync(const G& g) { g.sync(); }

}  // namespace cooperative_groups
#endif
