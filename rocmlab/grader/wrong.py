"""A set of wrong submissions, made from the solutions by small edits: what the grader must catch.

Each entry: ``name -> WrongSubmission(exercise, source, fails, where)``: ``fails`` is the check that must
fail, ``where`` says which backends can see it (``any``: every machine that can grade; ``gpu``: only where a
GPU runs the kernel). A wrong kernel is ``any`` too: without a GPU the CPU simulator runs it (a machine that
can compile for the AMD target offline can also simulate). Lab 02, the tests and ``tests/gpu/run_solutions.py``
use the same set.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmlab.grader.spec import load

_MAIN = "    xio::usage_if(argc, argv);\n"


@dataclass(frozen=True)
class WrongSubmission:
    name: str
    exercise: str
    source: str
    fails: str        # check id that must fail
    where: str        # "any" or "gpu"
    what: str


def _edit(exercise: str, old: str, new: str, count: int = 1) -> str:
    src = load(exercise).solution
    if old not in src:
        raise AssertionError(f"{exercise}: cannot make the wrong submission, {old!r} is not in the solution")
    return src.replace(old, new, count)


def _host(code: str) -> str:
    return _edit("vector-add", _MAIN, _MAIN + code)


def wrong_submissions() -> dict[str, WrongSubmission]:
    items = [
        WrongSubmission("hard-coded warp of 32", "block-reduction",
                        _edit("block-reduction", "offset = warpSize / 2", "offset = 16").replace(
                            "threadIdx.x % warpSize, wave = threadIdx.x / warpSize",
                            "threadIdx.x % 32, wave = threadIdx.x / 32"),
                        "no-warp-assumptions", "any", "shuffle loop from 16, lane = % 32"),
        WrongSubmission("no error checks", "vector-add",
                        _edit("vector-add", "    HIP_CHECK(hipGetLastError());\n", "").replace(
                            "HIP_CHECK(hipMemcpy(a,", "(void)hipMemcpy(a,").replace(
                            "HIP_CHECK(hipFree(a));", "hipFree(a);"),
                        "errors-checked", "any", "a launch and a free without checks"),
        # The static check catches it everywhere. It also fails to compile against the offline HIP 5.2
        # headers (no __shfl_down_sync), and ROCm 6.2+ rejects the 32-bit mask.
        WrongSubmission("mechanical hipify (32-bit shuffle mask)", "block-reduction",
                        _edit("block-reduction", "v += __shfl_down(v, offset);",
                              "v += __shfl_down_sync(0xffffffff, v, offset);"),
                        "no-warp-assumptions", "any",
                        "__shfl_down_sync(0xffffffff, ...) kept, as hipify leaves it"),
        WrongSubmission("wrong index", "vector-add",
                        _edit("vector-add", "int i = blockIdx.x * blockDim.x + threadIdx.x;",
                              "int i = blockIdx.x + threadIdx.x;"),
                        "correct", "any", "i = blockIdx.x + threadIdx.x"),
        WrongSubmission("only passes on zeros", "vector-add",
                        _edit("vector-add", "c[i] = a[i] + b[i];", "c[i] = a[i] * b[i];"),
                        "correct", "any", "a * b equals a + b only when both are zero"),
        WrongSubmission("infinite loop", "vector-add",
                        _host("    volatile int spin = 1;\n    while (spin) {}\n"), "runs", "any", "spins forever"),
        WrongSubmission("segfault", "vector-add",
                        _host("    volatile int* null_ptr = nullptr;\n    *null_ptr = 42;\n"), "runs", "any",
                        "writes through a null pointer"),
        WrongSubmission("huge malloc", "vector-add",
                        _host("    std::vector<float> huge(1ull << 38);  // 1 TiB\n    std::fprintf(stderr, \"%p\\n\", static_cast<void*>(huge.data()));\n"),
                        "runs", "any", "asks for 1 TiB"),
        WrongSubmission("megabytes of output", "vector-add",
                        _host("    for (int k = 0; k < 200000; ++k) std::printf(\"debug: step %d of the warm-up\\n\", k);\n"),
                        "runs", "any", "prints about 6 MB"),
        WrongSubmission("printed hard-coded answer", "vector-add",
                        _host("    { std::vector<float> guess(xio::load(argv[1])[0].size(), 1.0f);\n"
                              "      xio::Writer(argv[2]).f32(guess.data(), guess.size());\n"
                              "      std::printf(\"vector_add: PASSED\\n\"); return 0; }\n"),
                        "correct", "any", "writes 1.0 everywhere and prints PASSED without touching the GPU"),
        # Lab 11: the race. Offline the ISA has no s_barrier; on a GPU the result is wrong only on some runs
        # (benchmarks/lab11_gpu.py counts how often), so the set names the check every machine sees.
        WrongSubmission("missing __syncthreads (race)", "lab11-race",
                        _edit("lab11-race", "    __syncthreads();                             // every write to tile "
                                            "lands before any read of it\n", ""),
                        "barrier-gfx942", "any", "reads LDS another wavefront may not have written yet"),
    ]
    return {w.name: w for w in items}
