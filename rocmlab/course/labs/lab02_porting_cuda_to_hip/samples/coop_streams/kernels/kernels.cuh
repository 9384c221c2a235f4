// Launchers for the pipeline's kernels.
#pragma once
#include <cuda_runtime.h>

void launch_histogram(const unsigned char* data, int n, unsigned int* bins, cudaStream_t s);
void launch_grid_sum(const float* x, float* partial, float* out, int n, cudaStream_t s);
void launch_tile_reduce(const float* x, float* out, int n, cudaStream_t s);
void launch_count_flags(const int* flags, int n, unsigned long long* total, int* max_seen, cudaStream_t s);
void run_graph(const unsigned char* data, int n, unsigned int* bins, cudaStream_t s);
