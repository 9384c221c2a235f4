"""`rocmlab port --run` on an NVIDIA machine (issue 43): the port, translated back to CUDA, built with nvcc and run
on the NVIDIA GPU, compared with the CUDA original built and run on the same GPU.

On a CPU machine: the pieces that need no GPU (what varies between two runs of the original is not compared; the
ported tree translates back to CUDA with its lines kept). The end-to-end test runs where nvcc and an NVIDIA GPU
are (``pytest tests/port/test_port_run_nvidia.py`` there); it is skipped elsewhere with the reason."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocmlab.hip import hipcuda
from rocmlab.port import PortInputError, port, run_compare

DATA = Path(__file__).parents[1] / "data" / "port"

# a CUDA project that is valid for nvcc 13: a C file, a header of kernels, a timing that differs run to run
REDUCE_CU = r"""#include <cstdio>
#include <cstdlib>
#include <ctime>
#include "kernels.cuh"
extern "C" {
#include "util.h"
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], 0, 10) : 1u;
  int *h = make_input(n, seed);
  int *d = 0, *d_total = 0, total = 0;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaMalloc((void **)&d, n * sizeof(int));
  cudaMalloc((void **)&d_total, sizeof(int));
  cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(d_total, 0, sizeof(int));
  cudaEventRecord(a);
  block_sum<<<(n + 255) / 256, 256>>>(d, d_total, n);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, a, b);
  cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost);
  printf("kernel time %.6f ms\n", ms + (float)(clock() % 1000) * 1e-6f);
  printf("n=%d sum=%d\n", n, total);
  cudaFree(d);
  cudaFree(d_total);
  free(h);
  return 0;
}
"""
KERNELS_CUH = r"""#pragma once
__global__ void block_sum(const int *in, int *total, int n) {
  __shared__ int s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) s[threadIdx.x] += s[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, s[0]);
}
"""
UTIL_H = "int *make_input(int n, unsigned seed);\n"
UTIL_C = r"""#include <stdlib.h>
#include "util.h"
int *make_input(int n, unsigned seed) {
  int *p = malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (int)((seed >> 16) % 100);
  }
  return p;
}
"""
# the port widens a 32-bit mask parameter to 64 bits (right on MI300X): its size, printed, differs on NVIDIA
MASK_SIZE_CU = r"""#include <cstdio>
#include <cstdlib>
__device__ unsigned lanes(unsigned mask, bool p, unsigned *bytes) {
  *bytes = sizeof(mask);
  return __popc((unsigned)__ballot_sync(mask, p));
}
__global__ void k(unsigned *out, int n) {
  unsigned bytes;
  unsigned c = lanes(0xffffffff, threadIdx.x < n, &bytes);
  if (threadIdx.x == 0) { out[0] = c; out[1] = bytes; }
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 5;
  unsigned *d, h[2];
  cudaMalloc(&d, sizeof(h));
  k<<<1, 32>>>(d, n);
  cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
  printf("lanes %u, mask bytes %u\n", h[0], h[1]);
  return 0;
}
"""


def _project(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    for name, text in (("main.cu", REDUCE_CU), ("kernels.cuh", KERNELS_CUH), ("util.h", UTIL_H), ("util.c", UTIL_C),
                       ("mask_size.cu", MASK_SIZE_CU)):
        (src / name).write_text(text)
    return src


# --- what two runs of the original disagree on is not compared ----------------------------------------------------
def test_what_varies_between_two_runs_of_the_original_is_not_compared():
    rng = random.Random()
    t1, t2, t3 = (round(rng.uniform(0.01, 9.0), 4) for _ in range(3))
    total = rng.randrange(1000, 10**6)
    first = f"kernel time {t1} ms\nptr 0x{rng.randrange(1 << 40):x}\nsum={total}\n"
    second = f"kernel time {t2} ms\nptr 0x{rng.randrange(1 << 40):x}\nsum={total}\n"
    skip = run_compare.varying(first, second)
    assert skip == {(1, 1), (2, 0)}                       # the timing's number; the address's whole line
    port_out = f"kernel time {t3} ms\nptr 0x1234\nsum={total}\n"
    assert run_compare.compare_text(first, port_out, 1e-6, 0.0, skip=skip) == ""
    # controls: without the skip the timing differs; a wrong sum is still a difference with it
    assert "line 1" in run_compare.compare_text(first, port_out, 1e-6, 0.0)
    wrong = f"kernel time {t3} ms\nptr 0x1234\nsum={total + 1}\n"
    assert f"expected {total}, got {total + 1}" in run_compare.compare_text(first, wrong, 1e-6, 0.0, skip=skip)
    # a line that reports a timing or a rate: its numbers are not compared, its words are
    rate = f"copy {t1} GB/s in {t2} ms\nn=10 sum={total}\n"
    assert run_compare.timing_numbers(rate) == {(1, 1), (1, 2)}
    assert run_compare.compare_text(rate, f"copy 1.5 GB/s in 7 ms\nn=10 sum={total}\n", 1e-6, 0.0,
                                    skip=run_compare.timing_numbers(rate)) == ""
    assert "line 1" in run_compare.compare_text(rate, f"copy 1.5 MB/s in 7 ms\nn=10 sum={total}\n", 1e-6, 0.0,
                                                skip=run_compare.timing_numbers(rate))      # control: the words
    assert run_compare.timing_numbers(f"n=10 sum={total}\nmatrix 32 x 32\n") == set()   # control: no timing
    # two runs of different lengths: nothing is known to vary, everything is compared
    assert run_compare.varying(first, second + "extra\n") == set()
    assert run_compare.varying(first, first) == set()


def test_a_recorded_output_can_name_what_varies(tmp_path):
    """A manifest recorded from the CUDA original (benchmarks/port_run_rate.py --reference-json) names the numbers
    that vary run to run: they are not compared; everything else is."""
    (tmp_path / "a.cu").write_text("int main() { return 0; }\n")
    ms, total = random.uniform(0.1, 5.0), random.randrange(10**6)
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"programs": {"a.cu": [{"expected": {"stdout": f"took {ms:.4f}\nsum {total}\n",
                                                                  "not_compared": [[1, 1]]}}]}}))
    (case,) = run_compare.load_manifest(m, tmp_path)
    assert case.skip == {(1, 1)}

    def run(out):
        return SimpleNamespace(timed_out=False, returncode=0, stdout=out, explain=lambda: "exit 0")

    assert run_compare.judge(case, run(f"took 9.9\nsum {total}\n"), {}, tmp_path, True) == (True, "")
    matches, diff = run_compare.judge(case, run(f"took 9.9\nsum {total + 2}\n"), {}, tmp_path, True)
    assert not matches and f"expected {total}, got {total + 2}" in diff            # control: the answer differs
    plain = replace(case, skip=frozenset())
    assert run_compare.judge(plain, run(f"took 9.9\nsum {total}\n"), {}, tmp_path, True)[0] is False   # control
    m.write_text(json.dumps({"programs": {"a.cu": [{"expected": {"not_compared": "line 1"}}]}}))
    with pytest.raises(PortInputError, match="not_compared"):
        run_compare.load_manifest(m, tmp_path)


# --- the port, translated back to CUDA for nvcc ---------------------------------------------------------------------
def test_the_port_translates_back_to_cuda_with_its_lines(tmp_path):
    """Every ported file of a C + CUDA project (and of the test project with a texture reference, whose shim uses
    HIP_SYMBOL) translates back to CUDA: no HIP name left, every line where it was."""
    for src in (_project(tmp_path / "a"), DATA / "run_project"):
        out = tmp_path / ("out-" + src.parent.name)
        res = port(src, out, compile=False)
        files = [f["ported"] for f in res.files]
        files += [str(p.relative_to(out)) for p in (out / "rocmlab_port_include").rglob("*.h")]
        assert files
        problems = run_compare._cuda_tree(out, files, tmp_path / "cuda" / src.parent.name)
        assert problems == {}
        for rel in files:
            hip, cuda = (out / rel).read_text(), (tmp_path / "cuda" / src.parent.name / rel).read_text()
            assert hip.count("\n") == cuda.count("\n"), rel
            code = re.sub(r"//[^\n]*|/\*.*?\*/", "", cuda, flags=re.DOTALL)       # comments keep their words
            assert not re.search(r"\b(?:hip[A-Z]\w*|HIP_SYMBOL)\b|hip/hip_runtime", code), (rel, code)
    assert "cudaMalloc" in (tmp_path / "cuda" / "a" / "main.hip").read_text()
    # control: an AMD-only builtin has no CUDA spelling and is named
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "k.hip").write_text("__global__ void k(int *p) { *p = __builtin_amdgcn_readfirstlane(*p); }\n")
    assert run_compare._cuda_tree(bad, ["k.hip"], tmp_path / "bad-cuda") == {
        "k.hip": ["__builtin_amdgcn_readfirstlane"]}
    assert hipcuda.translate("hipMemcpyToSymbol(HIP_SYMBOL(c), &x, 4);").cuda_source == \
        "cudaMemcpyToSymbol((c), &x, 4);"
    # the header guards a port tests (helper_cuda.h's #ifdef __DRIVER_TYPES_H__) are CUDA's again
    guard = hipcuda.translate("#ifdef HIP_INCLUDE_HIP_DRIVER_TYPES_H\nint x;\n#endif\n")
    assert guard.cuda_source.startswith("#ifdef __DRIVER_TYPES_H__\n") and guard.ok


def test_nvcc_compiles_gpu_units_as_cuda_and_host_files_as_host_code():
    assert run_compare.nvcc_flags("src/main.hip")[-2:] == ("-x", "cu")
    assert run_compare.nvcc_flags("src/kernels.cu")[-2:] == ("-x", "cu")
    for host in ("src/util.c", "src/io.cpp"):                       # control: host files as the original's were
        assert "-x" not in run_compare.nvcc_flags(host)
    # hipProfilerStart comes back as cudaProfilerStart, which CUDA declares in cuda_profiler_api.h (not in
    # cuda_runtime_api.h, what hip_runtime_api.h becomes): every unit reads it first (Learn-CUDA-Programming's sgemm)
    for rel in ("src/main.hip", "src/io.cpp"):
        flags = run_compare.nvcc_flags(rel)
        assert flags[flags.index("-include") + 1] == "cuda_profiler_api.h", flags
    assert "-include" not in run_compare.nvcc_flags("src/util.c")       # a C file is left as the original's


# --- end to end, where nvcc and an NVIDIA GPU are --------------------------------------------------------------------
def test_on_an_nvidia_gpu_the_port_runs_and_matches_the_cuda_original(tmp_path):
    """The reduction (C file, header, a timing that differs run to run) matches the CUDA original run on the same
    GPU; the control, a mask parameter the port widened to 64 bits whose size the program prints, does not."""
    if run_compare.nvidia_toolchain() is None:
        pytest.skip("needs an NVIDIA GPU (the cuda backend) and nvcc")
    src = _project(tmp_path)
    n, seed = random.randrange(300, 5000), random.randrange(1, 2**31)
    lanes = random.randrange(1, 32)
    manifest = tmp_path / "runs.json"
    manifest.write_text(json.dumps({"programs": {"main.cu": [{"args": [str(n), str(seed)]}],
                                                 "mask_size.cu": [{"args": [str(lanes)]}]}}))
    res = port(src, tmp_path / "out", run=True, manifest=manifest, workers=4)
    runs = {r.program: r for r in res.runs}
    good, control = runs["main.cu"], runs["mask_size.cu"]
    assert "through HIP->CUDA" in good.backend and good.backend.startswith("cuda: ")
    assert good.reference.startswith("the CUDA original"), good
    assert (good.runs, good.matches, good.status) == (True, True, "matched"), (good.first_difference, good.note)
    assert f"n={n} sum=" in good.original_stdout
    assert good.not_compared >= 1 and "not compared" in good.note          # the timing
    assert good.compiles in (None, True)                                   # None: no AMD compiler on this machine
    assert (control.runs, control.matches, control.status) == (True, False, "mismatch"), control
    assert "expected 4, got 8" in control.first_difference
    assert f"lanes {lanes}, mask bytes 4" in control.original_stdout


def test_a_program_that_includes_a_cuda_library_header_links_that_library(tmp_path, monkeypatch):
    """The olcf cuBLAS exercise ported and translated back to CUDA failed to link on an H100 ("undefined reference
    to cublasCreate_v2"): nvcc_program now links the CUDA libraries the project's files include."""
    fake = tmp_path / "cublas"
    (fake / "include").mkdir(parents=True)
    (fake / "lib").mkdir()
    (fake / "include" / "cublas_v2.h").write_text("")
    (fake / "lib" / "libcublas.so").write_text("")
    monkeypatch.setenv("ROCMLAB_CUBLAS", str(fake))
    blas = '#include <cstdio>\n  #  include "cublas_v2.h"\nint main() { return 0; }\n'
    flags, why = run_compare.cuda_library_flags([blas, "#include <curand.h>\n#include <cufft.h>\n"])
    assert why == "" and "-lcublas" in flags and flags[flags.index("-I") + 1] == str(fake / "include"), flags
    assert {"-lcurand", "-lcufft"} <= set(flags) and "-lcusparse" not in flags, flags
    # no library header, or one only named in a comment or a string: nothing linked
    assert run_compare.cuda_library_flags(['// #include <cublas_v2.h>\nconst char *s = "cublas.h";\n']) == ((), "")
    # cuBLAS included but nowhere on this machine: the fix, not a link error
    monkeypatch.setenv("ROCMLAB_CUBLAS", str(tmp_path / "nowhere"))
    monkeypatch.setattr(run_compare, "_project_texts", lambda root: [blas])
    from rocmlab.grader import libs
    monkeypatch.setattr(libs, "cublas_dirs", lambda: None)
    flags, why = run_compare.cuda_library_flags([blas])
    assert flags == () and "cuBLAS headers (cublas_v2.h) not found" in why and "nvidia-cublas" in why, why


def test_the_project_texts_are_every_source_file_under_the_root(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "blas.cuh").write_text("#include <cublas_v2.h>\n")
    (tmp_path / "main.cu").write_text('#include "inc/blas.cuh"\n')
    (tmp_path / "notes.txt").write_text("#include <curand.h>\n")
    texts = run_compare._project_texts(tmp_path)
    assert len(texts) == 2 and any("cublas_v2.h" in t for t in texts)     # the header beside main.cu counts
    assert not any("curand" in t for t in texts)                           # a text file is not a source
