// Host-only bit utilities and printing: never a wavefront question.
#include <cstdio>
#include <cstdint>

static uint32_t low_bits(uint32_t x, int n) { return n >= 32 ? x : x & ((1u << n) - 1u); }
static uint32_t top_bits(uint32_t x, int startbit) { return x >> (32 - startbit); }
static uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

void print_bits(uint32_t x) {
    for (int i = 0; i < 32; ++i) putchar((x >> (31 - i)) & 1 ? '1' : '0');
    putchar('\n');
    int lanes = 32;
    int idx = 40;
    printf("word %d bit %d of %d\n", idx / 32, idx % 32, lanes);
    printf("%u %u %u\n", low_bits(x, 5), top_bits(x, 4), rotl(x, 3));
}
