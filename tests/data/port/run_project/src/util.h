/* C helpers, called from CUDA: declared extern "C" as nvcc + gcc need them */
#ifndef UTIL_H
#define UTIL_H
#ifdef __cplusplus
extern "C" {
#endif
int checksum(const int *v, int n);
int *make_input(int n, unsigned seed);
#ifdef __cplusplus
}
#endif
#endif
