// Included by particles.cu (uses its Particle type): never a translation unit of its own.
__global__ void step(Particle* p, float dt) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    p[i].x += p[i].v * dt;
}
