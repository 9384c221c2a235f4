// Sorts device keys in place with thrust.
#include <thrust/device_ptr.h>
#include <thrust/sort.h>
#include "ops.h"

void sort_keys(float* keys, int n) {
  thrust::device_ptr<float> p(keys);
  thrust::sort(p, p + n);
}
