// wave_ops.hip: one cross-lane operation per run, on values the test writes, for tests/test_sim_intrinsics.py.
// `wave_ops IN OUT`: IN holds int32 n, op, width, barrier, block, then val[n], arg[n], act[n]; OUT gets int64 out[n].
// Lanes with act == 0 take no part: they return at once (barrier == 0) or wait at the block barrier (barrier == 1).
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace cg = cooperative_groups;

__global__ void wave_op(int op, int width, int barrier, const int* val, const int* arg, const int* act, long long* out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    long long r = -7777;
    if (act[t]) {
        const int v = val[t], a = arg[t];
        cg::thread_block block = cg::this_thread_block();
        switch (op) {
            case 0: r = __shfl(v, a, width); break;
            case 1: r = __shfl_up(v, static_cast<unsigned>(a), width); break;
            case 2: r = __shfl_down(v, static_cast<unsigned>(a), width); break;
            case 3: r = __shfl_xor(v, a, width); break;
            case 4: r = static_cast<long long>(__ballot(a & 1)); break;
            case 5: r = __any(a & 1); break;
            case 6: r = __all(a & 1); break;
            case 7: r = static_cast<long long>(__activemask()); break;
            case 8: r = __lane_id(); break;
            case 9: r = __popcll(__ballot(a & 1)); break;
            case 10: r = __shfl_down_sync(__activemask(), v, static_cast<unsigned>(a), width); break;
            case 11: r = __shfl_xor_sync(0xffffffffffffffffull, v, a, width); break;
            case 12: r = cg::tiled_partition<32>(block).shfl_down(v, static_cast<unsigned>(a)); break;
            case 13: r = cg::tiled_partition<16>(block).shfl(v, a); break;
            case 14: r = static_cast<long long>(cg::tiled_partition<32>(block).ballot(a & 1)); break;
            case 15: r = cg::tiled_partition<16>(block).any(a & 1); break;
            case 16: r = cg::tiled_partition<8>(block).all(a & 1); break;
            case 17: { double d = __shfl_xor(v * 0.5, a, width); r = static_cast<long long>(d * 2.0); break; }
            case 18: r = static_cast<long long>(__ballot_sync(__activemask(), a & 1)); break;
            case 19: r = __shfl(static_cast<long long>(v) << 20, a, width) >> 20; break;
            case 20: r = cg::tiled_partition<32>(block).thread_rank() * 1000 + cg::tiled_partition<32>(block).meta_group_rank(); break;
            case 21: r = warpSize; break;
        }
    }
    if (barrier) __syncthreads();
    out[t] = r;
}

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    FILE* f = std::fopen(argv[1], "rb");
    int head[5];
    if (!f || std::fread(head, 4, 5, f) != 5) return 3;
    const int n = head[0], op = head[1], width = head[2], barrier = head[3], block = head[4];
    std::vector<int> host(3 * n);
    if (std::fread(host.data(), 4, 3 * n, f) != static_cast<size_t>(3 * n)) return 3;
    std::fclose(f);
    int* d;
    long long* out;
    if (hipMalloc(&d, 3 * n * sizeof(int)) != hipSuccess || hipMalloc(&out, n * sizeof(long long)) != hipSuccess) return 4;
    hipMemcpy(d, host.data(), 3 * n * sizeof(int), hipMemcpyHostToDevice);
    wave_op<<<n / block, block>>>(op, width, barrier, d, d + n, d + 2 * n, out);
    if (hipGetLastError() != hipSuccess) return 5;
    std::vector<long long> res(n);
    hipMemcpy(res.data(), out, n * sizeof(long long), hipMemcpyDeviceToHost);
    FILE* o = std::fopen(argv[2], "wb");
    std::fwrite(res.data(), 8, n, o);
    std::fclose(o);
    return 0;
}
