// Host entry points of the small ops library.
#pragma once
#include <cstddef>

int gemm_cublas(int m, int n, int k, const float* a, const float* b, float* c);
void sort_keys(float* keys, int n);
int lane_ids(int* out, int n);
float texture_sum(const float* d_in, int n);
void scan_and_count(const float* x, int n, float* sum, unsigned int* above, int* max_bucket);
int driver_init(size_t bytes);
void describe_device();
