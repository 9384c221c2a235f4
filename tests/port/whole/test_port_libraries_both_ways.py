"""Every CUDA library header the forward port maps (hipBLAS, hipRAND, hipFFT, hipSPARSE, hipSOLVER with cusolverDn.h,
hipCUB) comes back to CUDA's through HIP->CUDA (issue 52: a port of a cusolverDn.h program did not build with nvcc).

Both ways, on a small program per library: CUDA -> HIP (``rocmlab port``'s translation) names the HIP header and
its HIP names; HIP -> CUDA (:mod:`rocmlab.hip.hipcuda`) names CUDA's again, with no HIP name left; where nvcc is
here, the translation back compiles (``nvcc -c``, no GPU needed). The control: without the header map, the
cusolverDn.h program keeps ``hipsolver/hipsolver.h`` and does not compile."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmlab.cuda2hip import translate
from rocmlab.hip import hipcuda

N = random.randint(8, 64)
# (CUDA header, the HIP header the port writes, a program using the library)
PROGRAMS = {
    "cublas": ("cublas_v2.h", "hipblas", f"""#include <cublas_v2.h>
int main() {{ cublasHandle_t h; cublasCreate(&h); float a = 1.f, *x = 0; cudaMalloc((void**)&x, {N} * sizeof(float));
  cublasSscal(h, {N}, &a, x, 1); cublasDestroy(h); return cudaFree(x) == cudaSuccess ? 0 : 1; }}
"""),
    "curand": ("curand.h", "hiprand", f"""#include <curand.h>
int main() {{ curandGenerator_t g; float *x = 0; cudaMalloc((void**)&x, {N} * sizeof(float));
  curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT); curandSetPseudoRandomGeneratorSeed(g, {N}ULL);
  curandGenerateUniform(g, x, {N}); curandDestroyGenerator(g); return 0; }}
"""),
    "curand_kernel": ("curand_kernel.h", "hiprand", f"""#include <curand_kernel.h>
__global__ void k(float* o) {{ curandState s; curand_init({N}, threadIdx.x, 0, &s); o[threadIdx.x] = curand_uniform(&s); }}
int main() {{ float* o = 0; cudaMalloc((void**)&o, {N} * sizeof(float)); k<<<1, {N}>>>(o); return 0; }}
"""),
    "cufft": ("cufft.h", "hipfft", f"""#include <cufft.h>
int main() {{ cufftHandle p; cufftComplex* d = 0; cudaMalloc((void**)&d, {N} * sizeof(cufftComplex));
  if (cufftPlan1d(&p, {N}, CUFFT_C2C, 1) != CUFFT_SUCCESS) return 1; cufftExecC2C(p, d, d, CUFFT_FORWARD);
  cufftDestroy(p); return 0; }}
"""),
    "cusparse": ("cusparse.h", "hipsparse", """#include <cusparse.h>
int main() { cusparseHandle_t h; if (cusparseCreate(&h) != CUSPARSE_STATUS_SUCCESS) return 1; cusparseDestroy(h); return 0; }
"""),
    "cusolver": ("cusolverDn.h", "hipsolver", f"""#include <cusolverDn.h>
int main() {{ cusolverDnHandle_t h; if (cusolverDnCreate(&h) != CUSOLVER_STATUS_SUCCESS) return 1;
  float* a = 0; int work = 0; cudaMalloc((void**)&a, {N} * {N} * sizeof(float));
  cusolverDnSgetrf_bufferSize(h, {N}, {N}, a, {N}, &work); cusolverDnDestroy(h); return work < 0; }}
"""),
    "cub": ("cub/cub.cuh", "hipcub", f"""#include <cub/cub.cuh>
int main() {{ int *in = 0, *out = 0; void* tmp = 0; size_t bytes = 0; cudaMalloc((void**)&in, {N} * sizeof(int));
  cudaMalloc((void**)&out, sizeof(int)); cub::DeviceReduce::Sum(tmp, bytes, in, out, {N}); return 0; }}
"""),
}


def _both_ways(program: str) -> tuple[str, hipcuda.Translation]:
    hip = translate.translate({"main.cu": program}).texts["main.cu"]
    return hip, hipcuda.translate(hip)


@pytest.mark.parametrize("lib", sorted(PROGRAMS))
def test_library_header_maps_forward_and_back(lib):
    cuda_header, hip_lib, program = PROGRAMS[lib]
    hip, back = _both_ways(program)
    hip_includes = [line for line in hip.splitlines() if line.startswith("#include")]
    assert any(hip_lib in line for line in hip_includes), hip_includes
    assert f"<{cuda_header}>" not in hip and "cu" + hip_lib[3:] not in hip.replace("hip", "")[:0]
    assert f"#include <{cuda_header}>" in back.cuda_source or f'#include "{cuda_header}"' in back.cuda_source, \
        back.cuda_source
    assert not back.unknown_names, back.unknown_names
    assert "hip" not in back.cuda_source.replace("cuda_profiler", ""), back.cuda_source


def _nvcc_has(header: str) -> bool:
    """Whether nvcc's toolkit here has ``header`` (a CUDA install may lack the math libraries' headers)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return False
    roots = {Path(nvcc).resolve().parents[1], Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda")}
    return any((d / header).is_file() for root in roots
               for d in (root / "include", root / "include" / "cccl", root / "targets" / "x86_64-linux" / "include",
                         root / "targets" / "x86_64-linux" / "include" / "cccl"))


def _nvcc_compiles(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    src = tmp_path / "main.cu"
    src.write_text(text)
    return subprocess.run(["nvcc", "-c", "-w", str(src), "-o", str(tmp_path / "main.o")], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("lib", sorted(PROGRAMS))
def test_library_program_translated_back_compiles_with_nvcc(lib, tmp_path):
    if not _nvcc_has(PROGRAMS[lib][0]):
        pytest.skip(f"nvcc or its {PROGRAMS[lib][0]} is not here: the translation back is not compiled")
    _, back = _both_ways(PROGRAMS[lib][2])
    done = _nvcc_compiles(back.cuda_source, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


def test_control_library_names_left_in_hip_do_not_compile(tmp_path):
    """The failing control: the same translation back with hipCUB's namespace, or hipSOLVER's header, left as the
    port wrote them (as before the map): nvcc rejects it."""
    lib = "cub" if _nvcc_has("cub/cub.cuh") else "cusolver" if _nvcc_has("cusolverDn.h") else None
    if lib is None:
        pytest.skip("nvcc, or both cub/cub.cuh and cusolverDn.h, are not here")
    _, back = _both_ways(PROGRAMS[lib][2])
    broken = (back.cuda_source.replace("cub::", "hipcub::") if lib == "cub" else
              back.cuda_source.replace("#include <cusolverDn.h>", "#include <hipsolver/hipsolver.h>"))
    assert broken != back.cuda_source
    assert _nvcc_compiles(back.cuda_source, tmp_path).returncode == 0
    done = _nvcc_compiles(broken, tmp_path)
    assert done.returncode != 0 and "hip" in done.stderr
