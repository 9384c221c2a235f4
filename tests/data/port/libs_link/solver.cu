// cuSOLVER (dense LU) and cuRAND host API, OpenMP on the host.
#include <cstdio>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <curand.h>
#include <omp.h>

int main() {
    cusolverDnHandle_t h;
    if (cusolverDnCreate(&h) != CUSOLVER_STATUS_SUCCESS) return 1;
    int lwork = 0;
    float* A;
    cudaMalloc(&A, 16 * sizeof(float));
    cusolverDnSgetrf_bufferSize(h, 4, 4, A, 4, &lwork);
    curandGenerator_t g;
    curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT);
    curandGenerateUniform(g, A, 16);
    int threads = 0;
#pragma omp parallel
    {
#pragma omp atomic
        threads += 1;
    }
    printf("lwork %d, %d host threads (max %d)\n", lwork, threads, omp_get_max_threads());
    cusolverDnDestroy(h);
    return 0;
}
