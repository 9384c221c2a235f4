"""One translation and one scanner: Lab 02's path, the grader's static checks and `rocmlab port`
give the same verdict on the same file."""

from __future__ import annotations

import random
from pathlib import Path

from rocmlab.grader import static
from rocmlab.cuda2hip import hipify
from rocmlab.port import port

PLANTED = Path(__file__).parents[1] / "data" / "port" / "traps" / "planted_warp32.cu"

KERNEL = """#include <cuda_runtime.h>
#define WARP_SIZE 32
__global__ void k(const float* x, float* out) {{
  float v = x[threadIdx.x];
  for (int o = {start}; o > 0; o /= 2) v += __shfl_down_sync({mask}, v, o);
  unsigned int b = __ballot_sync(__activemask(), v > 0);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v + __popc(b));
#if __CUDA_ARCH__ >= 700
  out[1] = v;
#endif
#if 0
  int never = threadIdx.x & 31;
#endif
}}
int main() {{ float* d; cudaMalloc(&d, 4); k<<<1, 64>>>(d, d); cudaDeviceSynchronize(); cudaFree(d); }}
"""


def _verdicts(cuda: str, tmp_path: Path, name: str = "k.cu"):
    lab = hipify.hipify_source(cuda, name)                       # Lab 02's porting cell
    lab_errors = {(t.line, t.rule) for t in lab.traps if t.severity == "error"}
    analysis = static.analyze(lab.hip)                            # the grader, on the HIP
    problems = static.no_warp_size(analysis, {}) + static.no_cuda_left(analysis, {})
    grader_lines = {line for line, _ in problems}
    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / name).write_text(cuda)
    res = port(src, tmp_path / "out", compile=False)             # rocmlab port, a one-file project
    ported = res.files[0]["ported"]
    port_errors = {(t.line, t.rule) for t in res.traps if t.severity == "error" and t.compiled and t.path == ported}
    port_text = (tmp_path / "out" / ported).read_text()
    return lab, lab_errors, grader_lines, port_errors, port_text


def test_lab_grader_and_port_give_the_same_verdict(tmp_path):
    rng = random.Random()
    cuda = KERNEL.format(start=rng.choice([16, 32]), mask=rng.choice(["0xffffffff", "0xFFFFFFFFu"]))
    lab, lab_errors, grader_lines, port_errors, port_text = _verdicts(cuda, tmp_path)
    assert port_text == lab.hip                                  # one translation
    assert lab_errors and lab_errors == port_errors              # one scanner, one verdict
    warp_or_left = {line for line, rule in lab_errors}
    assert grader_lines <= warp_or_left and grader_lines        # the grader's failures are those errors
    rules = {r for _, r in lab_errors}
    assert {"hard-coded-warp-size", "lane-offset-16-or-32", "ballot-in-32-bits", "lane-arithmetic-32",
            "popc-on-mask", "cuda-arch-guard"} <= rules
    # never-compiled code (#if 0) is no error anywhere
    never_line = cuda.split("\n").index("  int never = threadIdx.x & 31;") + 1
    assert lab.hip.split("\n")[never_line - 1].strip() == "int never = threadIdx.x & 31;"
    assert not any(line == never_line for line, _ in lab_errors | port_errors)


def test_same_verdict_on_the_planted_file(tmp_path):
    cuda = PLANTED.read_text().replace('#include "planted_common.cuh"\n', "")
    lab, lab_errors, grader_lines, port_errors, _ = _verdicts(cuda, tmp_path, "planted.cu")
    assert lab_errors == port_errors and len(lab_errors) > 15
    # control: a clean wave-agnostic kernel has no error in any of the three
    clean = ("#include <hip/hip_runtime.h>\n__global__ void k(float* o) {\n  float v = o[threadIdx.x];\n"
             "  for (int s = warpSize / 2; s > 0; s /= 2) v += __shfl_down(v, s);\n"
             "  if (threadIdx.x % warpSize == 0) o[0] = v;\n}\n")
    c_lab, c_lab_errors, c_grader, c_port, _ = _verdicts(clean, tmp_path / "c", "clean.cu")
    assert c_lab_errors == c_port == set() and c_grader == set()
