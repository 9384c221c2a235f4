"""Lab 01's inline exercises: each gets fresh random numbers and a check that can fail.

The grader (``rocmlab.grader``) takes over graded work; these are the lab's quick checks.
Each ``check`` returns a :class:`Feedback` (``ok`` is None while unanswered) and never raises
for a wrong answer, so a learner's notebook keeps running.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from rocmlab.course import progress
from rocmlab.course.verdict import MARKS, verdict_html
from rocmlab.hip import build, hipcuda
from rocmlab.hip import occupancy as occ
from rocmlab.hip.compile import choose
from rocmlab.hip.inspector import inspect, inspect_targets
from rocmlab.machine.detect import current
from rocmlab.settings import AMD_TARGETS, DEFAULT_TARGET, TARGET_NAMES


@dataclass(frozen=True)
class Feedback:
    ok: bool | None
    message: str
    earned: float = 0.0
    possible: float = 0.0

    def __str__(self) -> str:
        pts = f" ({self.earned:g}/{self.possible:g} points)" if self.ok is not None and self.possible else ""
        return f"[{MARKS[self.ok]}]{pts} {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        pts = f"{self.earned:g}/{self.possible:g} points" if self.ok is not None and self.possible else ""
        return verdict_html(self.ok, self.message, pts)


LAB = "01-hip-programming-model"


def _recorded(task: str, fb: Feedback, earnable: float | None = None) -> Feedback:
    """Keep an answered check in the learner's progress record (rocmlab progress); returns ``fb``."""
    if fb.ok is not None:
        possible = progress.LAB_TASKS[LAB][task]
        progress.record(LAB, task, earned=fb.earned, earnable=possible if earnable is None else earnable,
                        possible=possible, backend=current().backend)
    return fb


def _rng(seed):
    return random.Random(seed)


# --- exercise 1: launch shape -------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchExercise:
    n: int
    block: int

    @classmethod
    def new(cls, seed=None) -> LaunchExercise:
        r = _rng(seed)
        return cls(r.randrange(1000, 200_000), r.choice([64, 128, 256, 512, 1024]))

    def question(self) -> str:
        return (f"A 1-D kernel processes n = {self.n} elements with blockDim.x = {self.block}. How many blocks "
                "(gridDim.x) cover every element, how many wavefronts is one block on an MI300X, and how many "
                "warps on an H200?")

    def answer(self) -> dict:
        return {"blocks": -(-self.n // self.block), "mi300x_waves_per_block": -(-self.block // 64),
                "h200_warps_per_block": -(-self.block // 32)}

    def check(self, blocks=None, mi300x_waves_per_block=None, h200_warps_per_block=None) -> Feedback:
        """A point per right number; kept in the progress record (task ``launch-shape``)."""
        got = {"blocks": blocks, "mi300x_waves_per_block": mi300x_waves_per_block,
               "h200_warps_per_block": h200_warps_per_block}
        if all(v is None for v in got.values()):
            return Feedback(None, "fill in the three numbers, then run the cell again")
        want = self.answer()
        wrong = [k for k in want if got[k] != want[k]]
        earned = float(len(want) - len(wrong))
        if not wrong:
            return _recorded("launch-shape", Feedback(
                True, f"{want['blocks']} blocks; {want['mi300x_waves_per_block']} wavefronts of 64 vs "
                      f"{want['h200_warps_per_block']} warps of 32 per block", earned, 3))
        hints = {"blocks": "round up: (n + blockDim.x - 1) / blockDim.x, or the tail elements get no thread",
                 "mi300x_waves_per_block": "an MI300X wavefront is 64 threads",
                 "h200_warps_per_block": "an NVIDIA warp is 32 threads"}
        return _recorded("launch-shape", Feedback(False, "; ".join(f"{k}: {hints[k]}" for k in wrong), earned, 3))


# --- which cells can compile here ------------------------------------------------------------

def compiler_missing(target: str | None = None, lang: str = "hip", plat=None) -> str:
    """'' when this machine has a compiler for ``target`` (default: what a ``%%hip`` or ``%%cuda``
    cell builds for here); else a message naming the fix. A lab cell that needs it prints the
    message, and the rest of the lab runs on."""

    target = target or build.default_target(lang, plat)
    _, why = choose(lang, target, plat)
    return f"skipped: this cell needs a compiler for {target}; the rest of the lab runs. {why}" if why else ""


def amd_compiler_missing(target: str | None = None) -> str:
    """:func:`compiler_missing` for the AMD target the lab inspects (settings.DEFAULT_TARGET)."""
    return compiler_missing(target or DEFAULT_TARGET)


# --- what ROCm 7 says: the real compiler's view of three facts -----------------------------------

MASK_32 = r"""
#include <hip/hip_runtime.h>
__global__ void wave_sum(const float* x, float* out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = warpSize / 2; off > 0; off /= 2)
    v += __shfl_down_sync(0xffffffff, v, off);      // CUDA's full mask: 32 bits
  if (threadIdx.x % warpSize == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = v;
}
""".lstrip()
#: The fix: a 64-bit mask (all lanes of a wave64), or __activemask().
MASK_64 = MASK_32.replace("0xffffffff, v, off);      // CUDA's full mask: 32 bits",
                          "0xffffffffffffffffull, v, off);   // 64 bits: every lane of a wavefront")

WARPSIZE_ARRAY = r"""
#include <hip/hip_runtime.h>
__global__ void per_wave(const float* x, float* out) {
  __shared__ float partial[1024 / warpSize];          // one slot per wave of a 1024-thread block
  partial[threadIdx.x / warpSize] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
""".lstrip()
#: What older ROCm code did instead: the compiler's wavefront-size macro.
WARPSIZE_MACRO = WARPSIZE_ARRAY.replace("[1024 / warpSize];          // one slot per wave of a 1024-thread block",
                                        "[1024 / __AMDGCN_WAVEFRONT_SIZE];   // the old compile-time macro")
#: The fix that works on every ROCm: the wave size is a template parameter, known at compile time.
WARPSIZE_TEMPLATE = r"""
#include <hip/hip_runtime.h>
template <int Wave>
__global__ void per_wave(const float* x, float* out) {
  __shared__ float partial[1024 / Wave];              // a compile-time constant again
  partial[threadIdx.x / Wave] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
template __global__ void per_wave<64>(const float*, float*);   // CDNA: wave64
""".lstrip()


@dataclass(frozen=True)
class CompilerSays:
    """One source compiled for one target: did it build, and the compiler's first error."""

    title: str
    ok: bool
    line: int | None
    message: str
    toolchain: str

    def __str__(self) -> str:
        if self.ok:
            return f"{self.title}: compiles ({self.toolchain})"
        where = f"line {self.line}: " if self.line else ""
        return f"{self.title}: error: {where}{self.message}"


def compiler_says(title: str, source: str, target: str | None = None) -> CompilerSays:
    """Compile device code for ``target`` and keep the first error (mapped to the source's line)."""
    r = inspect(source, target or DEFAULT_TARGET)
    errs = [d for d in r.diagnostics if d.severity == "error"]
    first = errs[0] if errs else None
    msg = first.message if first else ""
    return CompilerSays(title, r.ok, first.line if first else None, msg, r.toolchain)


def rocm7_facts(target: str | None = None) -> dict[str, CompilerSays]:
    """The three ROCm 7 facts Lab 01 shows, each as the compiler states it."""
    return {
        "mask32": compiler_says("__shfl_down_sync with CUDA's 32-bit mask", MASK_32, target),
        "mask64": compiler_says("__shfl_down_sync with a 64-bit mask", MASK_64, target),
        "warpsize_array": compiler_says("__shared__ float partial[1024 / warpSize]", WARPSIZE_ARRAY, target),
        "warpsize_macro": compiler_says("__shared__ float partial[1024 / __AMDGCN_WAVEFRONT_SIZE]", WARPSIZE_MACRO,
                                        target),
        "warpsize_template": compiler_says("template <int Wave> ... partial[1024 / Wave]", WARPSIZE_TEMPLATE, target),
    }


def resources_by_target(source: str, targets=AMD_TARGETS) -> list[list]:
    """Rows (target, product, kernel, VGPRs, SGPRs, LDS B, compiler's occupancy, calculator's,
    limited by) for every kernel of ``source`` on each target: the same code, different chips."""
    rows = []
    for t, found in zip(targets, inspect_targets(source, targets), strict=True):
        for k in found.kernels:
            o = occ.from_kernel(k)
            rows.append([t, TARGET_NAMES.get(t, ""), k.name.split("(")[0], k.vgprs, k.sgprs, k.lds_bytes,
                         k.occupancy, o.waves_per_simd, o.limiting])
    return rows


# --- exercise 2: a wavefront-size-agnostic reduction ----------------------------------------------

WAVE_SUM_STARTER = r"""
#include <hip/hip_runtime.h>
// Sum v over the lanes of each wavefront; lane 0 writes the result.
__global__ void wave_sum(const float* x, float* out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = 16; off > 0; off /= 2)      // ported from CUDA: assumes 32 lanes
    v += __shfl_down(v, off);
  if (threadIdx.x % warpSize == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = v;
}
""".lstrip()


def shuffle_steps(source: str, target: str = DEFAULT_TARGET) -> tuple[int | None, str]:
    """(cross-lane steps in ``wave_sum``'s ISA, message). Each __shfl_down step is one
    ``ds_bpermute_b32`` (or a DPP move) in the target's ISA."""
    ins = inspect(source, target)
    if not ins.ok:
        return None, "does not compile: " + "; ".join(str(d) for d in ins.diagnostics[:3])
    try:
        k = ins.isa_of("wave_sum")
    except KeyError:
        return None, "no kernel named wave_sum: keep the kernel's name"
    return k.counts.get("shuffle", 0), ""


def check_wave_sum(source: str, target: str = DEFAULT_TARGET) -> Feedback:
    """Compile the learner's ``wave_sum`` for ``target`` and count its cross-lane steps in the real ISA."""
    if not source or source.strip() == WAVE_SUM_STARTER.strip():
        return Feedback(None, "this is still the starter: make the loop work for any wavefront size, save the "
                              "file, then press Grade again")
    lanes = occ.TARGET_FACTS.get(target, {"wave": 64})["wave"]
    steps, msg = shuffle_steps(source, target)
    if steps is None:
        return Feedback(False, msg, 0, 4)
    need = lanes.bit_length() - 1
    loop = re.search(r"for\s*\(\s*int\s+\w+\s*=\s*([^;]+);", source)
    if steps == need:
        start = loop.group(1).strip() if loop else "?"
        if re.fullmatch(r"\d+", start):
            return Feedback(False, f"{steps} steps is right for {target}, but the start {start} is a literal: it "
                                   "breaks on the other vendor; use warpSize / 2", 2, 4)
        return Feedback(True, f"{steps} shuffle steps in the {target} ISA: log2({lanes}) = {need}, all lanes combined",
                        4, 4)
    return Feedback(False, f"the {target} ISA has {steps} shuffle steps; a {lanes}-lane wavefront needs {need} "
                           f"(offsets {lanes // 2}, {lanes // 4}, ..., 1): start the loop at warpSize / 2", 0, 4)


#: Where Lab 01's exercise 2 file lives, beside the notebook (the learner edits it in JupyterLab's editor).
WAVE_SUM_FILE = Path("my-work") / "lab01" / "wave_sum.hip"


def wave_sum_file(path: Path | str | None = None, overwrite: bool = False) -> Path:
    """Write the starter to ``my-work/lab01/wave_sum.hip`` (kept if it exists: your edits survive a rerun)."""
    path = Path(path) if path is not None else Path.cwd() / WAVE_SUM_FILE
    if overwrite or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(WAVE_SUM_STARTER)
    return path


def wave_sum_widget(path: Path | str | None = None, target: str = DEFAULT_TARGET):
    """Exercise 2's loop: open the file in the editor, fix it, Grade again (it reads the file as it is now)."""
    from rocmlab.course.widgets.grader import edit_and_grade

    missing = amd_compiler_missing(target)

    def grade(text):
        if missing:   # the machine cannot compile for gfx942: nothing is scored, the message says the fix
            fb = Feedback(None, missing)
        else:
            fb = _recorded("wave-sum", check_wave_sum(text, target))
        return fb, fb._repr_html_()

    return edit_and_grade(wave_sum_file(path), grade)


# --- exercise 3: occupancy ----------------------------------------------------------------------

@dataclass(frozen=True)
class OccupancyExercise:
    vgprs: int
    lds_bytes: int
    block: int

    @classmethod
    def new(cls, seed=None) -> OccupancyExercise:
        r = _rng(seed)
        while True:
            ex = cls(r.randrange(40, 200), r.choice([0, 8192, 16384, 24576, 32768]), r.choice([256, 512]))
            o = ex.solution()
            if o.waves_per_simd < 8:   # a case where something really limits it
                return ex

    def question(self) -> str:
        return (f"A {DEFAULT_TARGET} kernel uses {self.vgprs} VGPRs, no AGPRs, 32 SGPRs and {self.lds_bytes} bytes of LDS "
                f"per workgroup, launched with {self.block} threads per workgroup. How many waves per SIMD "
                "can be resident, and which resource limits it ('VGPRs', 'SGPRs', 'LDS' or 'workgroup size')?")

    def solution(self) -> occ.Occupancy:
        return occ.occupancy(self.vgprs, 0, 32, self.lds_bytes, self.block, DEFAULT_TARGET)

    def check(self, waves=None, limited_by=None) -> Feedback:
        """A point for the waves, one for the limiting resource; kept in the progress record (``occupancy``)."""
        if waves is None and limited_by is None:
            return Feedback(None, "give waves (an integer) and limited_by (a resource name), then run the cell again")
        o = self.solution()
        ties = [k for k, v in o.limits.items() if v == o.waves_per_simd]
        earned = float((waves == o.waves_per_simd) + (limited_by in ties))
        if earned == 2:
            return _recorded("occupancy", Feedback(True, o.explain(), earned, 2))
        hint = []
        if waves != o.waves_per_simd:
            hint.append("VGPRs: 512 per lane per SIMD, allocated in granules of 8; LDS: 64 KiB per CU shared by "
                        "the resident workgroups, whose waves spread over 4 SIMDs")
        if limited_by not in ties:
            hint.append("compute the limit of each resource alone; the smallest wins")
        return _recorded("occupancy", Feedback(False, "; ".join(hint), earned, 2))


# --- Lab 02's last section: what ROCm 7 says about a mechanically hipified kernel ------------------

HIPIFY_ME = r"""
#include <cuda_runtime.h>
// A warp reduction as CUDA code writes it: 32 lanes, a 32-bit full mask.
__global__ void warp_sum(const float* x, float* out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync(0xffffffff, v, off);
  if (threadIdx.x % 32 == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}
""".lstrip()


@dataclass(frozen=True)
class PortStep:
    """One version of the ported kernel and what the ROCm compiler makes of it."""

    title: str
    source: str
    ok: bool
    line: int | None
    message: str
    shuffle_steps: int | None      # cross-lane steps in the ISA (None: it did not compile)
    lanes: int                     # lanes of the target's wavefront

    def __str__(self) -> str:
        if not self.ok:
            return f"{self.title}: does not compile: line {self.line}: {self.message}"
        need = self.lanes.bit_length() - 1
        covered = 1 << (self.shuffle_steps or 0)
        verdict = f"one sum per {self.lanes}-lane wavefront" if self.shuffle_steps == need else (
            f"each sum covers {covered} lanes, as on NVIDIA: a {self.lanes}-lane wavefront needs {need} steps, and "
            f"the code only stays right while every 32 in it agrees")
        return f"{self.title}: compiles; {self.shuffle_steps} shuffle steps in the ISA ({verdict})"


def hipified_kernel_steps(cuda_source: str = HIPIFY_ME, target: str | None = None) -> list[PortStep]:
    """Hipify ``cuda_source`` mechanically, then fix it in two steps, compiling each version for
    ``target`` with the real compiler: the 32-bit mask (a compile error on ROCm 7), then the
    32-lane loop (it compiles, but the ISA shows half-wavefront sums: 5 steps, not 6)."""
    target = target or DEFAULT_TARGET
    lanes = occ.TARGET_FACTS.get(target, {"wave": 64})["wave"]
    hip = hipcuda.hipify(cuda_source).cuda_source
    mask_fixed = hip.replace("0xffffffff,", "0xffffffffffffffffull,")
    loop_fixed = (mask_fixed.replace("int off = 16", "int off = warpSize / 2")
                  .replace("threadIdx.x % 32", "threadIdx.x % warpSize").replace(") / 32]", ") / warpSize]"))
    steps = []
    for title, src in (("1. hipify alone", hip), ("2. a 64-bit mask", mask_fixed), ("3. warpSize, not 32", loop_fixed)):
        r = inspect(src, target)
        errs = [d for d in r.diagnostics if d.severity == "error"]
        n = None
        if r.ok:
            n = r.isa_of("warp_sum").counts.get("shuffle", 0)
        steps.append(PortStep(title, src, r.ok, errs[0].line if errs else None, errs[0].message if errs else "",
                              n, lanes))
    return steps
