"""hipify through torch.utils.hipify, and the trap report on what it leaves."""

import pytest

from rocmlab.cuda2hip import hipify
from rocmlab.cuda2hip.scan import scan

CUDA = """#include <cuda_runtime.h>
__global__ void k(const float* x, float* out) {
  float v = x[threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  unsigned int b = __ballot_sync(0xffffffff, v > 0);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v + __popc(b));
}
int main() { float* d; cudaMalloc(&d, 4); k<<<1, 64>>>(d, d); cudaDeviceSynchronize(); cudaFree(d); }
"""


def test_torch_hipify_renames_and_leaves_the_traps():
    port = hipify.hipify_source(CUDA, "k.cu")
    assert "hipMalloc(&d, 4)" in port.hip and "cudaMalloc" not in port.hip
    assert "#include <hip/hip_runtime.h>" in port.hip
    assert ("cudaMalloc", "hipMalloc") in port.renames
    # hipify does not touch the warp-size assumptions: the trap report finds them, with lines
    rules = {(t.line, t.rule) for t in port.traps}
    assert (4, "lane-offset-16-or-32") in rules and (4, "shfl-sync-32-bit-mask") in rules
    assert (5, "ballot-in-32-bits") in rules and (6, "lane-arithmetic-32") in rules
    assert all(t.fix for t in port.traps)
    html = port.side_by_side_html()
    assert "hipMalloc" in html and "cudaMalloc" in html and "lane-offset-16-or-32" in html
    assert "+++" in port.diff()


def compiled_findings(source):
    return [f for f in scan(source, filename="source.hip").findings if f.compiled]


@pytest.mark.parametrize("code, rule", [
    ("asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(l));", "inline-ptx"),
    ("texture<float, 1> tex; float v = tex1Dfetch(tex, i);", "texture-reference"),
    ("cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, A, m, B, k, &b, C, m);", "library-left"),
    ("cudnnCreate(&h);", "library-left"),
    ("if (prop.major >= 7) fast();", "compute-capability"),
    ("size_t s = prop.sharedMemPerMultiprocessor;", "device-prop-field"),
    ("auto t = cg::tiled_partition<32>(block);", "cg-tile-32"),
    ("unsigned m = __activemask();", "ballot-in-32-bits"),
    ("#define WARP_SIZE 32", "hard-coded-warp-size"),
    ("int lane = threadIdx.x & 31;", "lane-arithmetic-32"),
    ("__shared__ float tile[TILE][TILE + 1];", "shared-padding-32-banks"),
    ("unsigned mask = 0xffffffff;", "full-mask-32"),
    ("__syncwarp();", "syncwarp"),
    ("cudaStream_t s;", "cuda-left"),
])
def test_each_trap_rule_fires(code, rule):
    found = [t.rule for t in compiled_findings(code)]
    assert rule in found, found


def test_comments_and_strings_are_not_traps():
    src = '// cudaMalloc and 0xffffffff in a comment\nconst char* s = "__shfl_down_sync(0xffffffff";\n/* asm( */\n'
    assert compiled_findings(src) == []


def test_clean_hip_has_no_wrong_traps():
    src = ("__global__ void k(float* x) { float v = x[threadIdx.x];\n"
           "  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);\n"
           "  unsigned long long m = __ballot(v > 0); x[0] = __popcll(m); }\n")
    assert [t for t in compiled_findings(src) if t.severity == "error"] == []


def test_folder_and_file(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.cu").write_text(CUDA)
    (src / "sub" / "b.cuh").write_text("#pragma once\ninline void f() { cudaDeviceSynchronize(); }\n")
    ports = hipify.hipify_folder(src, tmp_path / "out")
    assert set(ports) == {"a.cu", "sub/b.cuh"}
    assert (tmp_path / "out" / "a.hip").read_text().count("hipMalloc") == 1
    assert "hipDeviceSynchronize" in (tmp_path / "out" / "sub" / "b.cuh").read_text()
    port = hipify.hipify_file(src / "a.cu", tmp_path / "one.hip")
    assert (tmp_path / "one.hip").read_text() == port.hip


def test_bad_input_messages(tmp_path):
    with pytest.raises(ValueError, match="non-empty"):
        hipify.hipify_source("  ")
    with pytest.raises(ValueError, match="unknown hipify tool"):
        hipify.hipify_source(CUDA, tool="nope")
    with pytest.raises(FileNotFoundError, match="no such CUDA file"):
        hipify.hipify_file(tmp_path / "missing.cu")
    if "perl" not in hipify.available_tools():
        with pytest.raises(hipify.HipifyError, match="hipify-perl is not here"):
            hipify.hipify_source(CUDA, tool="perl")
    else:                                    # ROCm's hipify-perl: the same fixes and the same scanner follow
        perl = hipify.hipify_source(CUDA, tool="hipify-perl")
        assert "hipMalloc" in perl.hip and perl.tool == "perl"
        assert {t.rule for t in perl.traps} >= {"lane-offset-16-or-32", "ballot-in-32-bits"}
