"""HIP->CUDA translation (and the forward hipify): names, launches, shuffles, headers, unknown names."""

from __future__ import annotations

import re

import pytest

from rocmlab.hip import hipcuda
from rocmlab.hip.hipcuda import hipify, translate


def test_inverse_tables_prefer_the_runtime_api():
    inv = hipcuda.tables()[0]
    assert inv["hipMalloc"] == "cudaMalloc"            # not the driver API's cuMemAlloc
    assert inv["hipError_t"] == "cudaError_t"          # not CUresult
    assert inv["hipErrorInvalidValue"] == "cudaErrorInvalidValue"
    assert inv["hipMemcpyHostToDevice"] == "cudaMemcpyHostToDevice"
    assert all(k.startswith(("hip", "HIP")) for k in inv)   # e.g. nvtxRangeId_t -> int is not inverted


def test_runtime_names_and_header():
    src = ('#include <hip/hip_runtime.h>\nint main() { float* d; hipError_t e = hipMalloc(&d, 4);\n'
           '  hipDeviceSynchronize(); hipFree(d); return e != hipSuccess; }\n')
    t = translate(src)
    assert t.ok and t.unknown_names == []
    assert "#include <cuda_runtime.h>" in t.cuda_source
    for name in ("cudaError_t", "cudaMalloc", "cudaDeviceSynchronize", "cudaFree", "cudaSuccess"):
        assert name in t.cuda_source
    assert "hip" not in t.cuda_source


def test_strings_and_comments_are_left_alone():
    src = '// hipMalloc here stays\nconst char* s = "hipMalloc failed";\nint x = hipSuccess; /* hipFree */\n'
    out = translate(src).cuda_source
    assert "// hipMalloc here stays" in out and '"hipMalloc failed"' in out and "/* hipFree */" in out
    assert "int x = cudaSuccess;" in out


def test_launch_macro_becomes_chevrons_keeping_lines(rng):
    kernel = "k" + str(rng.randrange(1000))
    args = [f"a{i}" for i in range(rng.randrange(0, 6))]
    shm, stream = str(rng.randrange(0, 4096)), rng.choice(["0", "s"])
    sep = rng.choice([", ", ",\n    "])
    call = f"hipLaunchKernelGGL({kernel}, dim3(g, 2){sep}dim3(b), {shm}, {stream}" + "".join(f"{sep}{a}" for a in args) + ");"
    src = f"void f() {{\n  {call}\n  int after = 1;\n}}\n"
    t = translate(src)
    flat = re.sub(r"\s+", "", t.cuda_source)
    assert f"{kernel}<<<dim3(g,2),dim3(b),{shm},{stream}>>>({','.join(args)});" in flat
    assert t.cuda_source.count("\n") == src.count("\n")
    assert t.cuda_source.splitlines()[-2].strip() == "int after = 1;"


def test_launch_of_a_template_kernel_through_hip_kernel_name():
    t = translate("hipLaunchKernelGGL(HIP_KERNEL_NAME(scale<float, 4>), dim3(1), dim3(64), 0, 0, x, n);\n")
    assert "scale<float, 4><<< dim3(1), dim3(64), 0, 0>>>( x, n);" in t.cuda_source


def test_maskless_warp_functions_get_the_full_mask():
    src = "v += __shfl_down(v, off); v = __shfl_xor(v, 1, 16); unsigned long long m = __ballot(p);\n" \
          "int a = __any(p); int l = __shfl_down_sync(0xffffffff, v, 1);\n"
    out = translate(src)
    assert "__shfl_down_sync(0xffffffffu, v, off)" in out.cuda_source
    assert "__shfl_xor_sync(0xffffffffu, v, 1, 16)" in out.cuda_source
    assert "__ballot_sync(0xffffffffu, p)" in out.cuda_source and "__any_sync(0xffffffffu, p)" in out.cuda_source
    assert "__shfl_down_sync(0xffffffff, v, 1)" in out.cuda_source          # already CUDA: untouched
    assert any("64-bit" in n for n in out.notes)


def test_thread_index_aliases_and_macros():
    out = translate("int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;\n"
                    "#ifdef __HIP_DEVICE_COMPILE__\n#endif\n#ifdef __HIP_PLATFORM_AMD__\n#endif\n").cuda_source
    assert "int i = blockIdx.x * blockDim.x + threadIdx.x;" in out
    assert "#ifdef __CUDA_ARCH__" in out and "#ifdef __HIP_PLATFORM_AMD__" in out


def test_unknown_names_are_reported_not_passed_silently():
    src = "#include <hip/hip_ext.h>\nvoid f() { hipExtLaunchFooBar(); __builtin_amdgcn_s_sleep(1);\n" \
          " int l = __lane_id(); hipExtLaunchFooBar(); }\n"
    t = translate(src)
    assert not t.ok
    assert t.unknown_names == ["hip/hip_ext.h", "hipExtLaunchFooBar", "__builtin_amdgcn_s_sleep", "__lane_id"]
    assert "hipExtLaunchFooBar" in t.explain() and "__HIP_PLATFORM_AMD__" in t.explain()


def test_fresh_random_identifier_soup_keeps_every_line(rng):
    inv = sorted(hipcuda.tables()[0].items())
    picks = [rng.choice(inv) for _ in range(40)]
    lines = [f"  x{i} = {h}(y); // {h}" for i, (h, _) in enumerate(picks)]
    out = translate("\n".join(lines) + "\n").cuda_source.splitlines()
    assert len(out) == len(lines)
    for (h, c), line in zip(picks, out, strict=True):
        assert line.split("=")[1].strip().startswith(f"{c}(y);") and line.endswith(f"// {h}")


def test_hipify_forward_direction():
    t = hipify("#include <cuda_runtime.h>\nint main() { float* d; cudaMalloc(&d, 4); k<<<1, 64>>>(d);\n"
               " cudaFree(d); cudaNotARealThing(); }\n")
    assert "#include <hip/hip_runtime.h>" in t.cuda_source and "hipMalloc(&d, 4)" in t.cuda_source
    assert "k<<<1, 64>>>(d)" in t.cuda_source
    assert t.unknown_names == ["cudaNotARealThing"]


@pytest.mark.parametrize("bad", ["hipLaunchKernelGGL(k, 1, 2);", "hipLaunchKernelGGL(k, 1, 2, 0"])
def test_malformed_launch_is_left_with_a_note(bad):
    t = translate(bad + "\n")
    assert "hipLaunchKernelGGL" in t.cuda_source and any("hipLaunchKernelGGL needs" in n for n in t.notes)



def test_hipblas_header_maps_to_the_v2_api():
    """hipBLAS mirrors cuBLAS's handle API (cublas_v2.h), not the legacy cublas.h."""
    from rocmlab.hip.hipcuda import translate

    out = translate("#include <hipblas/hipblas.h>\n#include \"hipblas.h\"\n").cuda_source
    assert "#include <cublas_v2.h>" in out and '#include "cublas_v2.h"' in out
    assert "cublas.h>" not in out


def test_the_sources_own_macros_are_not_unknown_runtime_names():
    src = ("#define HIP_CHECK(c) do { hipError_t e = (c); if (e) return 1; } while (0)\n"
           "int main() { float* p; HIP_CHECK(hipMalloc(&p, 4)); hipFooBar(); return 0; }\n")
    tr = translate(src)
    assert tr.unknown_names == ["hipFooBar"]       # the control: a HIP name nobody defined is still reported
    assert "HIP_CHECK(cudaMalloc(&p, 4))" in tr.cuda_source and "cudaError_t e" in tr.cuda_source
    fwd = hipify("#define CUDA_CHECK(c) (c)\nint main() { CUDA_CHECK(cudaFree(0)); cudaNoSuch(); }\n")
    assert fwd.unknown_names == ["cudaNoSuch"] and "CUDA_CHECK(hipFree(0))" in fwd.cuda_source
