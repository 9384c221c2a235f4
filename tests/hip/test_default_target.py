"""Without ``-t``, ``hip inspect``/``hip build`` and every default the driver decides build for the GPU here (AMD: its
gfx; NVIDIA: its sm), and for gfx942 where there is none. Each case has the no-GPU control."""

from __future__ import annotations

from types import SimpleNamespace

from rocmlab.hip import compile as driver
from rocmlab.hip import inspector

AMD = SimpleNamespace(backend="rocm", device=SimpleNamespace(target="gfx90a", target_id="gfx90a:sramecc+"))
NV = SimpleNamespace(backend="cuda", device=SimpleNamespace(target="sm_90", target_id="sm_90"))
CPU = SimpleNamespace(backend="cpu", device=None)
SRC = "#include <hip/hip_runtime.h>\n__global__ void k(float* p) { p[0] = 1.0f; }\n"


def test_inspect_without_a_target_uses_the_gpu_here():
    # the toolchain is named so that no compiler runs: the result still says which target it was for
    assert inspector.inspect(SRC, plat=AMD, toolchain="rocm", use_cache=False).target == "gfx90a"
    assert inspector.inspect(SRC, plat=NV, toolchain="nvcc", use_cache=False).target == "sm_90"
    assert inspector.inspect(SRC, plat=CPU, toolchain="rocm", use_cache=False).target == "gfx942"   # no GPU


def test_the_drivers_file_builds_default_to_the_gpu_here():
    assert driver.gpu_target("rocm", AMD) == "gfx90a" and driver.gpu_target("offline", AMD) == "gfx90a"
    assert driver.gpu_target("nvcc", NV) == "sm_90"
    assert driver.gpu_target("rocm", CPU) == "gfx942" and driver.gpu_target("nvcc", CPU) == "sm_90"
    other_nv = SimpleNamespace(backend="cuda", device=SimpleNamespace(target="sm_100", target_id="sm_100"))
    assert driver.gpu_target("nvcc", other_nv) == "sm_100" and driver.gpu_target("offline", other_nv) == "gfx942"
