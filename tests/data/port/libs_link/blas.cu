// cuBLAS: compiles against hipBLAS and links against it and rocBLAS.
#include <cstdio>
#include <cuda_runtime.h>
#include <cublas_v2.h>

int main() {
    cublasHandle_t h;
    cublasCreate(&h);
    float a = 2.0f, *x, *y;
    cudaMalloc(&x, 8 * sizeof(float));
    cudaMalloc(&y, 8 * sizeof(float));
    cublasSaxpy(h, 8, &a, x, 1, y, 1);
    cublasDestroy(h);
    printf("done\n");
    return 0;
}
