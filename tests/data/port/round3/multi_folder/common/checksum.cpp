#include "checksum.h"
unsigned long long checksum(const int* v, int n) {
  unsigned long long s = 7;
  for (int i = 0; i < n; i++) s = (s * 31 + (unsigned long long)v[i]) % 1000003ULL;
  return s;
}
