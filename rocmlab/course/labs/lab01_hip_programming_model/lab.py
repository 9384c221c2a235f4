"""Lab 01's inline exercises: each gets fresh random numbers and a check that can fail; the ROCm 7 facts and
the wave-sum exercise.

The grader (``rocmlab.grader``) takes over graded work; these are the lab's quick checks.
Each ``check`` returns a :class:`Feedback` (``ok`` is None while unanswered) and never raises
for a wrong answer, so a learner's notebook keeps running.
"""

from __future__ import annotations

import os
import random
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from rocmlab.course import progress
from rocmlab.course.needs import amd_compiler_missing
from rocmlab.course.verdict import MARKS, verdict_html
from rocmlab.hip import occupancy as occ
from rocmlab.hip.inspector import inspect, inspect_targets
from rocmlab.machine.detect import current
from rocmlab.settings import AMD_TARGETS, DEFAULT_TARGET, TARGET_NAMES, WAVEFRONT_SIZE


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


def hip_compiler_here(plat=None) -> str:
    """The compiler that compiles this lab's HIP cells on this machine, as the compiler driver chooses it (the
    offline hipcc 7.2 on a CPU machine, ROCm's hipcc on an AMD GPU; on NVIDIA, nvcc through the HIP->CUDA path),
    or why there is none."""
    from rocmlab.hip import compile as driver

    plat = plat or current()
    if plat.backend == "cuda":
        tc, why = driver.choose("cuda", driver.gpu_target("nvcc", plat), plat)
        return f"{tc.label}: HIP cells through the HIP->CUDA path" if tc else why
    target = driver.gpu_target("rocm", plat)
    tc, why = driver.choose("hip", target, plat)
    return f"{tc.label} for {target}" if tc else why


def stack_rows(plat=None) -> list[list[str]]:
    """The ROCm stack's layers (:func:`rocmlab.machine.stack.layers`) with the compiler that compiles HIP here."""
    from rocmlab.machine import stack

    plat = plat or current()
    return stack.layers(plat, compiler=hip_compiler_here(plat))


def prepare_simulator() -> threading.Thread | None:
    """On a machine with no GPU device (no ``/dev/kfd``, no ``/dev/nvidia0``), start building the CPU simulator's
    runtime in the background, once per cache: a fresh home's first HIP cell would otherwise wait for it (about
    2 s of clang on 2 cores), while here it builds as the lab's first cell imports torch. Returns the thread (it
    ends at once where the runtime is built already), or None where nothing needs it (a GPU, no simulator). A
    failure is left to the HIP cell, which builds the runtime itself and reports it."""
    if os.path.exists("/dev/kfd") or os.path.exists("/dev/nvidia0"):
        return None
    from rocmlab.hip import compile as hip_compile, simulate

    tc = simulate.discover()
    if tc is None:
        return None

    def build_runtime():
        try:
            hip_compile.simulator_runtime(tc)
        except Exception:  # noqa: BLE001 - the HIP cell builds it again and says why
            pass

    worker = threading.Thread(target=build_runtime, name="rocmlab-simulator-runtime", daemon=True)
    worker.start()
    return worker


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


def _check(cid: str, points: float, cases: list, asked: list, pick, hint: str):
    """One check over fresh cases: every answer's ``pick`` must equal the case's."""
    from rocmlab.course import tasks as T

    wrong = [(case, want, got, err) for (case, want), (got, err) in zip(cases, asked, strict=True)
             if err or pick(got) != want]
    if not wrong:
        return T.passed(cid, "compare", points, f"right for all {len(cases)} fresh cases")
    case, want, got, err = wrong[0]
    said = err or f"{pick(got)!r}"
    return T.failed(cid, "compare", points, f"{len(wrong)} of {len(cases)} fresh cases wrong; first: {case}: you "
                    f"said {said}, the answer is {want!r}", hint)


def _item(got, i):
    return got[i] if isinstance(got, (list, tuple)) and len(got) > i else None


def grade_launch_shape(launch_shape, seed: int | None = None, record: bool = True):
    """Exercise 1 as a function, the form it is handed in and re-graded in (``rocmlab handin
    01-hip-programming-model/launch-shape FILE.py``): ``launch_shape(n, block)`` returns ``(blocks,
    mi300x_waves_per_block, h200_warps_per_block)``; three fresh launches, a point per number."""
    import time

    from rocmlab.course import tasks as T
    from rocmlab.grader import pyanswer

    started, seed = time.monotonic(), T.draw_seed(seed)
    exs = [LaunchExercise.new(seed + i) for i in range(3)]
    asked = pyanswer.answers(launch_shape, [(e.n, e.block) for e in exs], spread=True)
    checks = []
    for i, (cid, hint) in enumerate((("blocks", "round up: (n + block - 1) // block"),
                                     ("mi300x-waves", "an MI300X wavefront is 64 threads"),
                                     ("h200-warps", "an NVIDIA warp is 32 threads"))):
        key = list(LaunchExercise(1, 1).answer())[i]
        cases = [(f"n = {e.n}, block = {e.block}", e.answer()[key]) for e in exs]
        checks.append(_check(cid, 1, cases, asked, lambda got, i=i: _item(got, i), hint))
    return T.finish(LAB, "launch-shape", "Lab 01 exercise 1: blocks, wavefronts and warps", checks,
                    "cpu (arithmetic)", "any machine", seed, started, record)


def grade_occupancy(occupancy, seed: int | None = None, record: bool = True):
    """Exercise 3 as a function (``rocmlab handin 01-hip-programming-model/occupancy FILE.py``):
    ``occupancy(vgprs, lds_bytes, block)`` returns ``(waves_per_simd, limited_by)`` for a gfx942 kernel with no
    AGPRs and 32 SGPRs; three fresh kernels, a point for the waves and one for the limiting resource."""
    import time

    from rocmlab.course import tasks as T
    from rocmlab.grader import pyanswer

    started, seed = time.monotonic(), T.draw_seed(seed)
    exs = [OccupancyExercise.new(seed + i) for i in range(3)]
    asked = pyanswer.answers(occupancy, [(e.vgprs, e.lds_bytes, e.block) for e in exs], spread=True)
    label = [f"{e.vgprs} VGPRs, {e.lds_bytes} B LDS, {e.block} threads" for e in exs]
    waves = _check("waves", 1, [(lb, e.solution().waves_per_simd) for lb, e in zip(label, exs, strict=True)], asked,
                   lambda got: _item(got, 0), "the smallest of the limits of VGPRs, LDS and workgroup size")
    ties = [[k for k, v in e.solution().limits.items() if v == e.solution().waves_per_simd] for e in exs]
    ok = [not err and _item(got, 1) in t for (got, err), t in zip(asked, ties, strict=True)]
    limit = T.verdict(all(ok), "limited-by", "compare", 1, "the limiting resource is right for all 3 kernels",
                       f"{ok.count(False)} of 3 limiting resources wrong; first: {label[ok.index(False)]}: the limit "
                       f"is {' or '.join(ties[ok.index(False)])}" if not all(ok) else "",
                       "compute the limit of each resource alone; the smallest wins")
    return T.finish(LAB, "occupancy", "Lab 01 exercise 3: waves per SIMD and the limiting resource",
                    [waves, limit], "cpu (arithmetic)", DEFAULT_TARGET, seed, started, record)


def grade_wave_sum(source: str, seed: int | None = None):
    """Exercise 2's re-grade (``rocmlab handin 01-hip-programming-model/wave-sum wave_sum.hip``): the learner's
    file compiled for gfx942 by the sandboxed compiler, its shuffle steps counted in the ISA. A machine that
    cannot compile for gfx942 gives status "error" (not scored)."""
    import time

    from rocmlab.course import tasks as T
    from rocmlab.grader.report import CheckResult

    started = time.monotonic()
    missing = amd_compiler_missing(DEFAULT_TARGET)
    if missing:
        rep = T.finish(LAB, "wave-sum", "Lab 01 exercise 2: a wave sum for any wavefront size", [], "cpu",
                       DEFAULT_TARGET, seed or 0, started, False)
        rep.status, rep.error = "error", missing
        return rep
    fb = check_wave_sum(source, DEFAULT_TARGET)
    status = "passed" if fb.ok else ("failed" if fb.ok is False else "not run")
    check = CheckResult("shuffle-steps", "isa", status, float(fb.earned), 4.0, fb.message)
    return T.finish(LAB, "wave-sum", "Lab 01 exercise 2: a wave sum for any wavefront size", [check],
                    "cpu (offline gfx942 compile)", DEFAULT_TARGET, seed or 0, started, False)


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
    """The three ROCm 7 facts Lab 01 shows, each as the compiler states it: five small compiles, side by
    side (one compiler per core, as :func:`rocmlab.hip.inspector.inspect_targets` does)."""
    from concurrent.futures import ThreadPoolExecutor
    import os

    facts = {"mask32": ("__shfl_down_sync with CUDA's 32-bit mask", MASK_32),
             "mask64": ("__shfl_down_sync with a 64-bit mask", MASK_64),
             "warpsize_array": ("__shared__ float partial[1024 / warpSize]", WARPSIZE_ARRAY),
             "warpsize_macro": ("__shared__ float partial[1024 / __AMDGCN_WAVEFRONT_SIZE]", WARPSIZE_MACRO),
             "warpsize_template": ("template <int Wave> ... partial[1024 / Wave]", WARPSIZE_TEMPLATE)}
    with ThreadPoolExecutor(min(len(facts), os.cpu_count() or 1)) as pool:
        said = pool.map(lambda item: compiler_says(*item, target), facts.values())
        return dict(zip(facts, said, strict=True))


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
    lanes = WAVEFRONT_SIZE.get(target, 64)
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

    from rocmlab.course.handin import handin_button
    from rocmlab.course.items import WAVE_SUM

    file = wave_sum_file(path)
    handin = handin_button(WAVE_SUM, file)      # beside Grade again: the file as it is when pressed
    box = edit_and_grade(file, grade, buttons=(handin,))
    box.children = (*box.children, handin.message)
    return box


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
