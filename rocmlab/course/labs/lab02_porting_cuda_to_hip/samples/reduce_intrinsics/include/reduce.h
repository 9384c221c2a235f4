// Host entry points of the reduction library.
#pragma once

void launch_block_sum(const float* x, float* out, int n);
void launch_scale_half(void* x, float s, int n);
void launch_count_above(const float* x, int n, float t, unsigned long long* count);
