// A ballot kept in 32 bits and counted with the 32-bit popcount.
#include <cstdio>

__global__ void vote(const int* in, int* count) {
    unsigned b = __ballot(in[threadIdx.x] > 0);   // HAZARD
    if (threadIdx.x == 0) *count = __popc(b);   // HAZARD
}

int main() { printf("ok\n"); return 0; }
