"""Lab 11 helpers (find it and fix it: counters and faults). Thin: the logic is in the grader, the inspector,
:mod:`rocmlab.profile.counters` and :mod:`rocmlab.hip.faults`.

- :func:`offline_rows`: the slow starter (its mechanical HIP port) against the fixed solution for gfx942, as the
  offline compiler shows them (memory instructions, VGPRs, LDS, the compiler's occupancy and the calculator's
  for the real launch);
- :func:`bank_map`: which LDS bank each lane of a wavefront's store touches, for a tile row length (a model of
  the bank mapping, 32 banks of 4 bytes, not a measurement);
- the fault set in ``rocmlab/hip/kernels/lab11/``: :func:`fault_source`, :func:`check_faulting_line` (the graded
  "name the line" question), :func:`asan_build` (the AddressSanitizer build for ``gfx942:xnack+``);
- :func:`grade` runs an exercise's grader and records the points (:mod:`rocmlab.course.progress`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmlab import grader, paths, settings
from rocmlab.course import progress
from rocmlab.grader.spec import COMMON_DIR
from rocmlab.cuda2hip import hipify
from rocmlab.hip import build, occupancy
from rocmlab.hip import inspector as hip_inspect

LAB = "11-counters-and-faults"
#: The sizes the lab's timing cell runs slow and fixed at on a GPU: large enough that the fixes show. At the
#: exercises' run sizes the occupancy fix cannot show: 100,003 points are 391 blocks, less than one block per
#: compute unit, so the occupancy the fix buys is never used (0.85-0.91x on an H100); 16M points (65,536 blocks)
#: keep every CU full (1.78x on an H100). The bank fix: 131,072 rows x 128 (512 blocks, 64 MB) is the size where an
#: H100 showed any gain (1.05x); an H100 hides the conflicts at every size (its stores wait on global loads, and
#: the counter l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st still counts them). Coalescing shows at any size.
DEMO_SIZES = {"lab11-coalesce": {"rows": 1000, "cols": 776}, "lab11-lds-banks": {"rows": 131072, "cols": 128},
              "lab11-occupancy": {"n": 16777216}}
SLOW_KERNELS = ("lab11-coalesce", "lab11-lds-banks", "lab11-occupancy")
RACE = "lab11-race"
KERNELS_DIR = paths.kernels_dir() / "lab11"
FLAGS = ("-I", str(COMMON_DIR))
BLOCK = 256   # every Lab 11 program launches blocks of 256 threads

#: The AddressSanitizer build for MI300X (ROCm's "Using AddressSanitizer" page: -fsanitize=address with
#: -shared-libsan, -g for line numbers, and a target with xnack+; run with HSA_XNACK=1).
ASAN_TARGET = f"{settings.DEFAULT_TARGET}:xnack+"
ASAN_FLAGS = ("-fsanitize=address", "-shared-libsan", "-g")
ASAN_DOC = "https://rocm.docs.amd.com/projects/llvm-project/en/latest/conceptual/using-gpu-sanitizer.html"

#: The fault programs, and the statement each one's bad access is in (the line is found in the file, so
#: editing the file above it keeps the answer right).
FAULTS = {
    "oob_write": ("oob_write.hip", r"out\[i \+ \(i == n \? far : 0\)\] ="),
    "use_after_free": ("use_after_free.hip", r"hipLaunchKernelGGL\(scale,"),
}
#: Per fault: what the right line is, and the hint for a wrong answer (the question asks for that line).
FAULT_ANSWERS = {
    "oob_write": ("the out-of-bounds write: its guard i <= n lets the thread i == n write out[n], one past the end",
                  "read the kernel's guard and index arithmetic: which statement writes out[i] for every i the "
                  "guard lets through? (a report built with -g names the line; so does rocgdb at the stop)"),
    "use_after_free": ("the launch of scale, the kernel that writes the buffer d after hipFree(d) released it "
                       "(the write itself is x[i] = s * x[i] inside scale)",
                       "find hipFree(d), then the first statement after it that hands d to the GPU: the line "
                       "that launches the kernel (AMD_SERIALIZE_KERNEL=3 makes the fault appear at that launch)"),
}


def starter_port(exercise_id: str) -> str:
    """The mechanical HIP port of an exercise's slow CUDA starter (what the learner starts from)."""
    return hipify.hipify_source(grader.load(exercise_id).starter, "starter.cu").hip


MEMORY_OPS = ("global_", "buffer_", "flat_", "ds_", "s_barrier")


def offline_rows(exercise_id: str, target: str = settings.DEFAULT_TARGET) -> list[list]:
    """[version, memory instructions, VGPRs, LDS B, compiler waves/SIMD, waves/SIMD at the launch (256)] for the
    slow starter and the fixed solution; raises HipError when a version does not compile for ``target``."""
    ex = grader.load(exercise_id)
    kernel = {"lab11-coalesce": "scale_rows", "lab11-lds-banks": "gemv_lds", "lab11-occupancy": "stencil7",
              "lab11-race": "block_reverse"}[exercise_id]
    rows = []
    for version, src in (("slow (starter)", starter_port(exercise_id)), ("fixed (solution)", ex.solution)):
        ins = hip_inspect.inspect(src, target, flags=FLAGS)
        if not ins.ok:
            raise build.HipError(f"{exercise_id} {version} does not compile for {target}: "
                                 + "; ".join(str(d) for d in ins.diagnostics[:3]))
        k = ins.kernel(kernel)
        ops = {m: n for m, n in ins.isa_of(k.symbol).mnemonics().items() if m.startswith(MEMORY_OPS)}
        launch = occupancy.from_kernel(k, workgroup_size=BLOCK, target=target.split(":")[0])
        rows.append([version, ", ".join(f"{n} x {m}" for m, n in sorted(ops.items())), k.vgprs, k.lds_bytes,
                     k.occupancy, f"{launch.waves_per_simd} ({launch.limiting})"])
    return rows


def bank_map(row_words: int, kt: int = 8, lanes: int = 64, banks: int = 32) -> dict:
    """The first store of ``gemv_lds``'s tile by one wavefront: lane ``l`` writes ``tile[l % kt][l // kt]``, word
    ``(l % kt) * row_words + l // kt``. Returns the bank of each lane and the worst conflict (distinct words in
    one bank) per half-wavefront of 32 lanes. A model of the mapping (32 banks of 4 bytes), not a measurement."""
    words = [(lane % kt) * row_words + lane // kt for lane in range(lanes)]
    bank = [w % banks for w in words]
    worst = 0
    for h in range(0, lanes, 32):
        per_bank: dict[int, set] = {}
        for w in words[h:h + 32]:
            per_bank.setdefault(w % banks, set()).add(w)
        worst = max(worst, max(len(s) for s in per_bank.values()))
    return {"words": words, "banks": bank, "conflict_degree": worst}


# --- faults --------------------------------------------------------------------------------------

def fault_source(name: str) -> str:
    if name not in FAULTS:
        raise KeyError(f"no fault program {name!r}: one of {', '.join(FAULTS)}")
    return (KERNELS_DIR / FAULTS[name][0]).read_text()


def faulting_line(name: str) -> int:
    """The 1-based line of the bad access (or the launch that makes it) in the fault program."""
    rx = re.compile(FAULTS[name][1])
    for i, line in enumerate(fault_source(name).splitlines(), 1):
        if rx.search(line):
            return i
    raise RuntimeError(f"{FAULTS[name][0]} no longer has the statement {FAULTS[name][1]!r}")


def numbered_source(name: str) -> str:
    """The fault program with its line numbers, as the question refers to them."""
    return "\n".join(f"{i:3d}  {line}" for i, line in enumerate(fault_source(name).splitlines(), 1))


@dataclass
class LineVerdict:
    """The verdict on "name the line": shows as one verdict element with points in a notebook."""

    name: str
    ok: bool | None
    message: str
    earned: float = 0.0
    possible: float = 1.0

    def __iter__(self):          # ok, message = check_faulting_line(...)
        return iter((self.ok, self.message))

    def __str__(self) -> str:
        mark = {True: "correct", False: "not yet", None: "not answered yet"}[self.ok]
        return f"{FAULTS[self.name][0]}: [{mark}] {self.earned:g}/{self.possible:g} point: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from rocmlab.course.verdict import verdict_html

        pts = f"{self.earned:g}/{self.possible:g} point" if self.ok is not None else ""
        return verdict_html(self.ok, f"{FAULTS[self.name][0]}: {self.message}", pts)


def check_faulting_line(name: str, answer, *, record: bool = True, backend: str = "cpu") -> LineVerdict:
    """Grade the learner's answer (a line number of the fault program) to "which line makes the bad access?"
    (for use_after_free: which line launches the kernel that does). Unpacks as ``ok, message``."""
    fname = FAULTS[name][0]
    possible = float(progress.LAB_TASKS[LAB][f"{name}-line"])
    if answer is None:
        return LineVerdict(name, None, f"not answered yet: set the line number of {fname}, then run the cell",
                           0.0, possible)
    try:
        if isinstance(answer, bool) or (isinstance(answer, float) and not answer.is_integer()):
            raise ValueError
        given = int(answer)
    except (TypeError, ValueError, OverflowError):
        return LineVerdict(name, False, f"answer with a line number of {fname} (an integer), not {answer!r}",
                           0.0, possible)
    want = faulting_line(name)
    ok = given == want
    if record:
        progress.record(LAB, f"{name}-line", earned=possible if ok else 0.0, earnable=possible, possible=possible,
                        backend=backend)
    what, hint = FAULT_ANSWERS[name]
    if ok:
        return LineVerdict(name, True, f"right: line {want} is {what}", possible, possible)
    return LineVerdict(name, False, f"line {given} is not it: {hint}", 0.0, possible)


def asan_build(name: str = "oob_write", use_cache: bool = True):
    """The fault program built with AddressSanitizer for ``gfx942:xnack+`` (a BuildResult; offline on any machine)."""
    return build.compile(fault_source(name), target=ASAN_TARGET, flags=ASAN_FLAGS, name=f"lab11-{name}-asan",
                         use_cache=use_cache)


def asan_device_code(target: str, name: str = "oob_write") -> dict:
    """Is the device code for ``target`` instrumented? Compiles the fault program's device code to assembly with
    the ASan flags: {"ok", "ignored" (the compiler's warning that it ignored -fsanitize=address, if any),
    "instrumented" (the assembly calls the ASan runtime)}. Without xnack+ clang ignores the flag for the GPU."""
    from rocmlab.hip import compile as driver

    tc = build.find_toolchain("offline") or build.find_toolchain("rocm")
    if tc is None:
        return {"ok": False, "ignored": "", "instrumented": False, "why": "no AMD toolchain here"}
    out = driver.compile_source(fault_source(name), tc, lang="hip", output_kind="asm", target=target,
                                flags=ASAN_FLAGS)
    ignored = next((ln.strip() for ln in out.log.splitlines() if "ignoring '-fsanitize=address'" in ln), "")
    return {"ok": out.ok, "ignored": ignored, "instrumented": out.ok and "asan" in out.read(), "why": ""}


def asan_command(name: str = "oob_write") -> str:
    return (f"hipcc --offload-arch={ASAN_TARGET} {' '.join(ASAN_FLAGS)} {FAULTS[name][0]} -o {name}\n"
            f"HSA_XNACK=1 ./{name}")


# --- grading -------------------------------------------------------------------------------------

def grade(exercise_id: str, source: str, *, record: bool = True):
    """The grader's report for ``source`` on this machine; its points go to the progress record."""
    report = grader.check(exercise_id, source)
    if record and report.status == "graded":
        progress.record(LAB, exercise_id, earned=report.earned, earnable=report.available,
                        possible=report.possible, backend=report.backend)
    return report


# --- slow against fixed on the GPU at hand (the notebook and benchmarks/lab11_gpu.py) --------------

def build_pair(exercise_id: str, plat=None) -> dict:
    """{"slow": BuildResult, "fixed": BuildResult} for the GPU here (or the offline target on a CPU)."""
    ex = grader.load(exercise_id)
    return {v: build.compile(src, flags=FLAGS, plat=plat, name=f"{exercise_id}-{v}")
            for v, src in (("slow", starter_port(exercise_id)), ("fixed", ex.solution))}


def size_of(exercise_id: str, size: str | dict) -> dict:
    """A size for the timing: the exercise's own (``"run"``, ``"perf"``), ``"demo"`` (:data:`DEMO_SIZES`), or a
    dict of the program's parameters."""
    if isinstance(size, dict):
        return dict(size)
    if size == "demo":
        return dict(DEMO_SIZES[exercise_id])
    ex = grader.load(exercise_id)
    return dict(ex.sizes.get(size) or ex.sizes["run"])


def write_inputs(exercise_id: str, folder, size: str | dict = "perf", seed: int = 0) -> tuple[str, dict]:
    """The exercise's inputs at ``size`` (see :func:`size_of`; fresh random, from ``seed``) written as
    ``folder/input.bin``."""
    import os

    import numpy as np

    from rocmlab.grader import rlx

    ex = grader.load(exercise_id)
    inputs = ex.reference_module().make_inputs(np.random.default_rng(seed), size_of(exercise_id, size))
    path = os.path.join(str(folder), "input.bin")
    rlx.write_arrays(path, inputs.values())
    os.chmod(path, 0o644)
    return path, inputs


def time_pair(exercise_id: str, size: str | dict = "perf", plat=None, timeout_s: float = 120.0, seed: int = 0) -> dict:
    """Run slow and fixed on the same inputs on this GPU; {"slow_ms", "fixed_ms", "ratio", "correct": {...},
    "backend", "device"}. Raises :class:`rocmlab.hip.build.CannotRun` where no GPU can run them."""
    import os
    import tempfile

    import numpy as np

    from rocmlab.grader import rlx
    from rocmlab.machine.detect import current

    plat = plat or current()
    ex = grader.load(exercise_id)
    builds = build_pair(exercise_id, plat)
    out = {"backend": plat.backend, "device": plat.device_name, "size": size_of(exercise_id, size), "correct": {}}
    with tempfile.TemporaryDirectory(prefix="lab11-") as d:
        os.chmod(d, 0o777)
        inp, inputs = write_inputs(exercise_id, d, size, seed)
        want = ex.reference_module().reference(inputs)
        name, w = next(iter(want.items()))
        for v, res in builds.items():
            outp = os.path.join(d, f"{v}.bin")
            cap = 2 * sum(np.asarray(a).nbytes for a in want.values()) + (1 << 20)   # perf sizes: large outputs
            done = build.run(res, (inp, outp), timeout_s=timeout_s, scratch=d, file_bytes=cap)
            if done.returncode != 0:
                raise build.CannotRun(f"{exercise_id} {v} {done.explain()}: {done.stderr.strip()[-300:]}")
            arrays = rlx.read_arrays(outp)
            out[f"{v}_ms"] = float(arrays[ex.outputs.index("time_ms")][0])
            got = arrays[0].astype(np.float64)
            ref = ex.reference_module()
            scale = ref.scale(inputs)[name] if hasattr(ref, "scale") else np.abs(np.asarray(w, dtype=np.float64))
            tol = float(ex.tolerance.get("rtol", 0)) * scale + float(ex.tolerance.get("atol", 0))
            out["correct"][v] = bool(np.all(np.abs(got - np.asarray(w, dtype=np.float64)) <= tol))
    out["ratio"] = out["slow_ms"] / out["fixed_ms"]
    return out
