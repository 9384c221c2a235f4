// Bit packing with 32-bit words: correct on any wavefront size.
#include <cstdio>
#include <cstdint>

__device__ unsigned getbits(unsigned x, int startbit, int len) {
    return (x << (32 - startbit - len)) >> (32 - len);
}

__global__ void pack(const int* flags, unsigned* words, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n && flags[idx]) {
        atomicOr(&words[idx / 32], 1u << (idx % 32));
    }
}

__global__ void unpack(const unsigned* words, int* flags, int n) {
    int bit = blockIdx.x * blockDim.x + threadIdx.x;
    if (bit < n) {
        int word = bit / 32;
        int shift = bit & 31;
        flags[bit] = (words[word] >> shift) & 1u;
        flags[bit] += getbits(words[word], 32 - shift, 0) * 0;
    }
}

int main() {
    int n = 1000;
    int nwords = (n + 31) / 32;
    printf("%d words of 32 bits\n", nwords);
    return 0;
}
