"""One small unit per check, after nbgrader's preprocessors: static, compile, run, compare, perf.

Each check is a function ``(ctx, spec) -> CheckResult``. ``ctx`` (a :class:`Context`) carries what
earlier checks produced: the build, the run's outputs. An exercise's ``spec.yaml`` lists the checks
it uses, in order, with their points.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np

from rocmlab import sandbox, settings
from rocmlab.grader import libs, static
from rocmlab.grader.static import include_dir
from rocmlab.grader import rlx as gio
from rocmlab.grader.report import CheckResult
from rocmlab.grader.spec import CheckSpec, Exercise
from rocmlab.hip import compile as driver
from rocmlab.hip import simulate as sim

# What a build prints when its host code reaches the first GPU call on a machine without one.
NO_DEVICE = re.compile(r"hipErrorNoDevice|hipErrorInvalidDevice|no ROCm-capable device|invalid device ordinal|"
                       r"no CUDA-capable device|cudaErrorNoDevice|CUDA driver version is insufficient",
                       re.IGNORECASE)
NO_GPU_WORK = ("your program launches no kernel and calls no GPU library in the code compiled for the target: "
               "port the kernel and its launch, then grade again")


class MachineFault(RuntimeError):
    """The machine cannot grade this (no compiler, no target, no GPU for the asked target): the grader's
    problem, never the learner's. The message names the fix."""


@dataclass
class Context:
    exercise: Exercise
    source: str
    plat: object
    seed: int
    target: str | None = None
    time_limit_s: float | None = None   # the caller's (CLI, notebook) limit per run; None: the spec's, else settings'
    build: object = None
    build_skip: str = ""           # why compiling was not possible here (missing library), if so
    build_refused: str = ""        # why the grader would not compile it (it reads other files), if so
    run: dict = field(default_factory=dict)     # results of the correctness run
    timed: dict = field(default_factory=dict)   # results of the timed run
    workdir: str = ""
    analysis: object = None        # static.Analysis of the submission (what the compiler sees)
    analysis_error: str = ""       # why the static analysis could not run, if so
    sim_build: object = None       # the CPU simulator's build, where no GPU can run the submission
    sim_ahead: object = None       # that build, started beside the compile check's (a Future), where it will be needed
    specs: tuple = ()              # the checks this grading runs (all the exercise's when empty)

    def child_seed(self, salt: int) -> int:
        return (self.seed * 1_000_003 + salt) % (1 << 63)


def analysis(ctx: Context):
    """The scanner's view of the submission, once per grading (None when it could not run)."""
    if ctx.analysis is None and not ctx.analysis_error:
        try:
            flags, _ = build_flags(ctx, nvidia=False)
            ctx.analysis = static.analyze(ctx.source, ctx.target, flags=flags)
        except static.AnalysisError as exc:
            ctx.analysis_error = str(exc)
    return ctx.analysis


def not_run(spec: CheckSpec, ctx: Context, reason: str) -> CheckResult:
    """A check that could not run because of the submission: says why, earns nothing."""
    return result(spec, ctx, "not run", f"not run: {reason}")


def result(spec: CheckSpec, ctx: Context, status: str, message: str, details=None) -> CheckResult:
    hint = ""
    if status == "failed":
        hints = ctx.exercise.hints_for(spec.id)
        hint = hints[0].text if hints else ""
    points = spec.points if status == "passed" else 0.0
    return CheckResult(spec.id, spec.type, status, points, spec.points, message, hint, details or {})


# --- static --------------------------------------------------------------------------------------

def check_static(ctx: Context, spec: CheckSpec) -> CheckResult:
    rule = spec.options.get("rule")
    fn = static.RULES.get(rule)
    if fn is None:
        raise ValueError(f"{ctx.exercise.id}: static check {spec.id} has unknown rule {rule!r} "
                         f"(one of {', '.join(static.RULES)})")
    a = analysis(ctx)
    if a is None:
        return not_run(spec, ctx, ctx.analysis_error)
    problems = fn(a, spec.options)
    if not problems:
        return result(spec, ctx, "passed", {"no-cuda-left": "no CUDA API, PTX or texture reference left",
                                             "no-warp-size": "no warp-size assumptions found",
                                             "errors-checked": "every HIP call and launch is checked",
                                             "requires": "uses " + ", ".join(spec.options.get("patterns", []))}
                       .get(rule, "ok"))
    shown = "; ".join((f"line {ln}: " if ln else "") + text for ln, text in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return result(spec, ctx, "failed", shown + more, {"problems": problems})


# --- compile -------------------------------------------------------------------------------------

def build_flags(ctx: Context, nvidia: bool) -> tuple[tuple[str, ...], str]:
    extra, missing = libs.flags(ctx.exercise.libraries, nvidia)
    # the folder's name is the header's hash, so the build cache sees changes to exercise_io.h
    return ("-I", include_dir(), *extra), missing


#: A program every working toolchain builds: when it fails too, the machine lacks something.
PROBE_SOURCE = "#include <hip/hip_runtime.h>\n__global__ void k(int* p) { p[0] = 1; }\nint main() { return 0; }\n"


def _machine_fault(res, target: str = "", flags=(), plat=None) -> str:
    """The build's failure when it is the machine's (no compiler, no bitcode for the target, a broken
    toolchain), else ''. Told apart by what the machine lacks, never by the compiler's message (a learner
    controls that text: ``#error ... not available offline here``): a known-good program is built with the
    same target and flags; if it fails too, the machine is at fault."""
    from rocmlab.hip import build

    if res.ok:
        return ""
    if getattr(res, "machine_fault", ""):      # the compiler's user could not read a file (the driver checked)
        return res.machine_fault
    if not res.toolchain_kind:
        return res.cannot_run_reason or res.log
    if not target:
        return ""
    probe = build.compile(PROBE_SOURCE, lang="hip", target=target, flags=flags, plat=plat, name="grader-probe")
    if probe.ok:
        return ""
    return "the toolchain cannot build even a minimal program here: " + "; ".join(
        d.message for d in (probe.errors or probe.diagnostics)[:2])


def do_build(ctx: Context):
    from rocmlab.hip import build

    if ctx.build is not None or ctx.build_skip:
        return ctx.build
    target = ctx.target or build.default_target("hip", ctx.plat)
    flags, missing = build_flags(ctx, nvidia=target.startswith("sm_"))
    if missing:
        ctx.build_skip = missing
        return None
    # where no GPU runs the program this is the fast build (device code, host code and a link check, no
    # program): run checks use the CPU simulator's build, or link on demand (execute)
    ctx.sim_ahead = _simulator_build_ahead(ctx, target, flags)
    res = build.compile(ctx.source, lang="hip", target=target, flags=flags, plat=ctx.plat,
                        name=f"{ctx.exercise.id}-submission")
    fault = _machine_fault(res, target, flags, ctx.plat)
    if fault:
        raise MachineFault(f"cannot compile for {target} here: {fault}")
    if ctx.target and res.ok and not res.can_run and target.startswith("sm_"):
        raise MachineFault(f"target {target} was asked for, but {res.cannot_run_reason}: grade on a machine with "
                           "that GPU, or leave the target unset to grade for the offline AMD target here")
    ctx.build = res
    return ctx.build


def _simulator_build_ahead(ctx: Context, target: str, flags):
    """Where no GPU will run the submission and a check runs it, its CPU-simulator build starts now, in a thread
    beside the compile check's build (each is one compiler process): the run check then finds it built instead
    of building it after. None elsewhere, and where this grading runs no run check (``check(..., only=...)``).
    Called only once the static checks allow compiling the file."""
    from concurrent.futures import ThreadPoolExecutor

    from rocmlab.hip import build

    if (not any(c.type == "run" for c in ctx.specs or ctx.exercise.checks) or target not in sim.TARGETS
            or driver.resolve_platform(ctx.plat).backend != "cpu" or driver.find_toolchain(sim.KIND) is None):
        return None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rocmlab-sim-build")
    try:
        return pool.submit(build.compile, ctx.source, lang="hip", target=target, flags=flags, toolchain=sim.KIND,
                           plat=None)
    finally:
        pool.shutdown(wait=False)      # the thread ends with its one build


def _compile_refusal(ctx: Context) -> str:
    """Why the grader will not compile the submission ('' if it will). A policy check that cannot finish
    refuses: without the static analysis, what the file makes the compiler read is unknown."""
    a = analysis(ctx)
    if a is None:
        return (f"the grader's checks of what this file makes the compiler read could not finish "
                f"({ctx.analysis_error}). The grader did not compile it")
    bad = static.compile_inputs(a, ctx.source)
    if not bad:
        return ""
    return "; ".join(f"line {ln}: {text}" for ln, text in bad[:3]) + ". The grader did not compile it"


def check_compile(ctx: Context, spec: CheckSpec) -> CheckResult:
    refusal = _compile_refusal(ctx)
    if refusal:
        ctx.build_refused = refusal
        return result(spec, ctx, "failed", refusal)
    res = do_build(ctx)
    if res is None:
        return result(spec, ctx, "skipped", f"cannot compile here: {ctx.build_skip}")
    if res.ok:
        w_ = getattr(res, "warnings", [])
        warn = len(w_() if callable(w_) else w_)
        w = f", {warn} warning(s) (not a failure)" if warn else ""
        return result(spec, ctx, "passed", f"compiled for {res.target} with {res.toolchain}: {_what_was_built(res)}{w}"
                       + (" (cached)" if res.cached else ""))
    errs = [d for d in res.diagnostics if d.severity in ("error", "fatal error")] or res.diagnostics
    shown = "; ".join((f"line {d.line}: " if d.line else "") + d.message for d in errs[:3])
    return result(spec, ctx, "failed", f"does not compile for {res.target} ({_what_was_built(res)}): {shown}",
                   {"log": _learner_log(res.log)})


def _what_was_built(res) -> str:
    """Which halves the compile check built: an error in either is reported here."""
    if res.binary is None and res.mode == "exe":
        return "device code and host code, link checked (no program linked: nothing here runs it)"
    return "device code, host code and the linked program"


def _learner_log(log: str) -> str:
    """The compiler's messages about the submission only (never lines of another file), capped."""
    keep = [ln for ln in log.splitlines() if "submission" in ln.split(":", 1)[0] or ln.startswith(" ")]
    return "\n".join(keep)[-4000:]


# --- run -----------------------------------------------------------------------------------------

def _fresh_inputs(ctx: Context, size_name: str, salt: int) -> dict:
    ref = ctx.exercise.reference_module()
    sizes = ctx.exercise.sizes.get(size_name) or ctx.exercise.sizes["run"]
    rng = np.random.default_rng(ctx.child_seed(salt))
    inputs = ref.make_inputs(rng, dict(sizes))
    for name, a in inputs.items():   # never zeros or one repeated value: a wrong kernel passes on those
        if a.size > 16 and np.unique(a[: 1 << 16]).size < 2:
            raise AssertionError(f"{ctx.exercise.id}: input {name} is degenerate (all one value)")
    return inputs


def run_program(res, scratch: str, args, timeout_s: float, file_bytes: int | None = None,
                outputs=()) -> sandbox.Completed:
    """Run a built submission in the sandbox: it sees the system, its own scratch folder (its binary, its
    input file) and nothing else: not the grader, the seed, the reference or anyone's results. The scratch is
    private: a tmpfs of ``sandbox.RUN_SCRATCH_BYTES`` (only ``outputs`` reach the host, each capped at
    ``file_bytes``), so one submission cannot fill the grader's temporary space for the others."""
    prog = os.path.join(scratch, "prog")
    shutil.copy2(res.binary, prog)
    os.chmod(prog, 0o755)
    simulated = res.toolchain_kind == sim.KIND
    gpu = bool(res.can_run) and not simulated
    # an offline build runs inside the ROCm root it was linked against (its libamdhip64 lives there)
    return driver.run_program(res.toolchain_kind, res.root, [prog, *args], scratch=scratch, time_limit=timeout_s,
                              memory_bytes=None if gpu else settings.RUN_MEMORY_BYTES,
                              output_bytes=settings.RUN_OUTPUT_BYTES, gpu=gpu,
                              file_bytes=max(settings.RUN_FILE_BYTES, file_bytes or 0),
                              scratch_bytes=sandbox.RUN_SCRATCH_BYTES, outputs=outputs,
                              env=sim.run_env(timeout_s) if simulated else None)


def run_time_limit(ctx: Context, spec: CheckSpec) -> float:
    """Seconds a run check's program may take: the caller's limit (the instructor's ``--time-limit``, a
    notebook's argument) > the exercise spec's ``timeout_s`` > ``settings.RUN_TIME_LIMIT_S``."""
    given = settings.resolve(ctx.time_limit_s, spec.options.get("timeout_s"), default=settings.RUN_TIME_LIMIT_S)
    return settings.time_limit(given, what="the run time limit")


def execute(ctx: Context, size_name: str, salt: int, timeout_s: float) -> dict:
    """Run the program on fresh inputs; returns a dict with the Completed, inputs, expected and output arrays.

    Inputs and expected outputs are made here, outside the sandbox; only the input file goes in. The output
    file is read back with a cap (twice the expected size, plus 1 MB)."""
    res = ctx.sim_build or ctx.build
    if res.binary is None:     # the fast build linked no program: link it now to run its host code
        from rocmlab.hip import build

        res = ctx.build = build.compile(ctx.source, lang="hip", target=res.target, flags=res.flags, plat=ctx.plat,
                                        name=f"{ctx.exercise.id}-submission", link=True)
    inputs = _fresh_inputs(ctx, size_name, salt)
    want = ctx.exercise.reference_module().reference(inputs)
    cap = 2 * sum(np.asarray(w).nbytes for w in want.values()) + (1 << 20)
    d = tempfile.mkdtemp(prefix="run-", dir=ctx.workdir or None)
    try:
        inp, outp = os.path.join(d, "input.bin"), os.path.join(d, "output.bin")
        gio.write_arrays(inp, inputs.values())
        os.chmod(inp, 0o644)
        host_only = not res.can_run
        done = run_program(res, d, (inp, outp), timeout_s, file_bytes=cap,   # large perf sizes write large outputs
                           outputs=(outp,))
        arrays, fmt_error = None, ""
        try:
            arrays = gio.read_arrays(outp, max_bytes=cap)
        except gio.FormatError as exc:
            fmt_error = str(exc)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return {"done": done, "inputs": inputs, "want": want, "arrays": arrays, "format_error": fmt_error,
            "host_only": host_only, "size": size_name, "simulated": res.toolchain_kind == sim.KIND}


def _run_verdict(r: dict) -> tuple[str, str]:
    """The run check's verdict. On the simulator its sanitizer's findings (written on the simulator's own channel
    as they are found, whatever the program does with stderr or its exit) are part of it whatever the program's
    own exit status: the first finding (kind, line, variable, lanes) leads the message, and any finding fails
    the check (a GPU would hide the bug)."""
    status, msg = _verdict(r)
    if not r.get("simulated"):
        return status, msg
    found = sim.findings(r["done"].stderr)
    shown = "; ".join(f"{tool}: {text}" for tool, text in found[:2]) + (
        f" (and {len(found) - 2} more finding(s))" if len(found) > 2 else "")
    stopped = sim.stopped_message(r["done"].stderr)
    if stopped and status == "failed":
        msg = f"{msg}: {stopped}" if r["done"].returncode != sim.STOPPED_EXIT else f"stopped: {stopped}"
    if found and status == "passed":     # the sanitizer saw what MI300X would hide: a failed check
        status, msg = "failed", (f"the program ran, but the simulator's sanitizer found {len(found)} problem(s) "
                                 f"a GPU would hide: {shown}")
    elif found and status == "failed":
        msg = f"the simulator's sanitizer found {len(found)} problem(s): {shown}; and {msg}"
    elif found:                          # skipped: the finding still shows
        msg += f"; the simulator's sanitizer found: {shown}"
    return status, sim.label(msg)


def _own_stderr(done) -> list[str]:
    """The non-empty lines the program itself wrote to stderr (the simulator's own lines left out)."""
    return [ln.strip() for ln in done.stderr.splitlines() if ln.strip() and not ln.startswith(sim.label())]


def _said(done, lines: int = 2, chars: int = 240) -> str:
    """'; it said: ...' with the last lines the program wrote to stderr (its own words: the simulator's lines are
    not), printable characters only and capped; '' when it said nothing there."""
    own = _own_stderr(done)
    if not own:
        return ""
    text = " | ".join(own[-lines:])
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return f"; it said: {text[:chars]}" + ("…" if len(text) > chars else "")


def refuse_starved(done) -> None:
    """Raise :class:`MachineFault` when the machine was too busy to give the run its CPU (``done.starved``: it
    waited far longer than it ran): neither its time-out nor its timing says anything about the program, so it is
    not scored. Every run verdict asks this first (the run check's, the perf check's, the speedup check's)."""
    if done.starved:
        raise MachineFault("the program " + done.explain())


def kernel_time_ms(exercise: Exercise, r: dict) -> tuple[float | None, str]:
    """The kernel time (ms) a timed run reports in its ``time_ms`` output, and whether it can be trusted: ``(ms, "")``;
    ``(None, "missing")`` when the output has no readable ``time_ms``; ``(ms, "impossible")`` when it is not a
    positive number or longer than the whole run took (``r["done"].duration_s``: the program timed something else,
    or made its number up). The one timing guard of the perf and speedup checks."""
    try:
        ms = float(r["arrays"][exercise.outputs.index("time_ms")][0])
    except (TypeError, ValueError, IndexError):
        return None, "missing"
    if not (ms > 0) or ms / 1e3 > r["done"].duration_s:
        return ms, "impossible"
    return ms, ""


def _verdict(r: dict) -> tuple[str, str]:
    done = r["done"]
    refuse_starved(done)
    if done.timed_out:
        return "failed", "the program " + done.explain()
    if "bad_alloc" in done.stderr or "out of memory" in done.stderr.lower():
        return "failed", ("the program ran out of memory (the sandbox caps its address space): "
                          "allocate what the inputs need, not more")
    if done.signal:
        return "failed", "the program " + done.explain()
    if done.stdout_truncated or done.stderr_truncated:
        return "failed", ("the program printed more than the output limit (it was cut off): print a summary "
                          "line, not the data")
    missing_lib = re.search(r"error while loading shared libraries: (\S+?):", done.stderr)
    if r["host_only"] and done.returncode == 127 and missing_lib:
        return "skipped", (f"cannot start here: {missing_lib.group(1)} is not installed (the offline toolchain "
                           "links hipBLAS but has no rocBLAS); run checks need a ROCm install or the NVIDIA GPU path")
    if r["host_only"] and done.returncode not in (0, None) and NO_DEVICE.search(done.stderr + done.stdout):
        return "skipped", ("no GPU here: the program ran on the host up to its first GPU call, which reported "
                           "no device; run checks need an AMD GPU, or an NVIDIA GPU through the HIP->CUDA path")
    if done.returncode != 0:
        return "failed", "the program " + done.explain() + _said(done)
    if r["host_only"]:
        return "failed", ("the program finished without any GPU here: it does not use the GPU, or it ignores "
                          "the errors of its HIP calls")
    if r["format_error"]:
        return "failed", f"the program ran but its output is unusable: {r['format_error']}"
    warn = " (it wrote to stderr: a warning is not a failure)" if _own_stderr(done) else ""
    return "passed", f"ran cleanly in {done.duration_s:.2f} s{warn}"


def _unbuilt(ctx: Context, spec: CheckSpec) -> CheckResult | None:
    """The result of a run-type check whose program cannot run, or None when it can."""
    if getattr(ctx, "build_refused", ""):
        return not_run(spec, ctx, "the program was not compiled (see the compile check)")
    if _compile_refusal(ctx):
        return not_run(spec, ctx, "the program reads files at compile time (see the compile check)")
    res = do_build(ctx)
    if res is None:
        return result(spec, ctx, "skipped", f"not built here: {ctx.build_skip}")
    if not res.ok:
        return not_run(spec, ctx, "the program does not compile")
    return None


def _simulate(ctx: Context, spec: CheckSpec) -> CheckResult | None:
    """No GPU runs this build here: build it for the CPU simulator instead (``ctx.sim_build``). Returns the
    check's result when the simulator cannot run it (skipped: the machine's limit, never the learner's)."""
    from rocmlab.hip import build

    if ctx.build.can_run or ctx.build.toolchain_kind not in ("offline", "rocm"):
        return None
    ahead = ctx.sim_ahead
    s = ahead.result() if ahead is not None and ctx.build.mode == "exe" else build.simulator_build(ctx.build)
    if s is None:
        return None
    if not s.ok:
        return _simulator_failed(ctx, spec, s)
    ctx.sim_build = s
    return None


def _simulator_failed(ctx: Context, spec: CheckSpec, s) -> CheckResult:
    """The simulator's build of code that compiled for the target failed. Never "skipped" for the learner's
    own choice: skipped only where the exercise's own solution cannot be simulated either (MFMA, hipBLAS: the
    machine's limit); failed where the learner's code causes it (a construct the solution does without, or a
    compile error only the host build sees); a machine fault (not scored) where the simulator cannot build even
    a minimal program here."""
    from rocmlab.hip import build

    why = "; ".join((f"line {d.line}: " if d.line else "") + d.message for d in s.errors[:2]) or s.summary()
    ctx.run = {"status": "failed", "arrays": None, "format_error": ""}
    if sim.unsupported(ctx.source):       # something the simulator does not model (MFMA, a library, assembly)
        try:
            solution_runs = not sim.unsupported(ctx.exercise.solution)
        except OSError:                   # no solution here (a learner's environment): the machine's limit
            solution_runs = False
        if not solution_runs:
            ctx.run["status"] = "skipped"
            return result(spec, ctx, "skipped", sim.label(f"no GPU here, and the CPU simulator cannot run this: "
                                                          f"{why}"))
        return result(spec, ctx, "failed", sim.label(
            f"no GPU here, and the CPU simulator, which runs this exercise here, cannot run your program: {why}. "
            "The exercise needs none of it: write it without, or grade on an AMD GPU"))
    probe = build.compile(PROBE_SOURCE, lang="hip", target=s.target, toolchain=sim.KIND, plat=None,
                          name="grader-sim-probe")
    if not probe.ok:
        raise MachineFault("the CPU simulator cannot build even a minimal program here: " + "; ".join(
            d.message for d in (probe.errors or probe.diagnostics)[:2]))
    return result(spec, ctx, "failed", sim.label(
        f"your program compiles for {ctx.build.target}, but the CPU simulator, which runs it here as MI300X would, "
        f"cannot build it: {why}. The simulator compiles your file once, as the gfx942 device pass sees it "
        "(__HIP_DEVICE_COMPILE__ is 1 in host code too), against the HIP API this course uses: make it build "
        "that way, or grade on an AMD GPU"))


def check_run(ctx: Context, spec: CheckSpec) -> CheckResult:
    early = _unbuilt(ctx, spec) or _simulate(ctx, spec)
    if early is not None:
        return early
    ctx.run = execute(ctx, "run", 1, run_time_limit(ctx, spec))
    status, msg = _run_verdict(ctx.run)
    ctx.run["status"] = status
    return result(spec, ctx, status, msg, {"stdout_tail": ctx.run["done"].stdout[-settings.FEEDBACK_OUTPUT_CHARS:],
                                            "isolation": ctx.run["done"].isolation})


# --- compare -------------------------------------------------------------------------------------

def compare_outputs(ctx: Context, r: dict) -> tuple[bool, str, dict]:
    ex = ctx.exercise
    ref = ex.reference_module()
    want = r.get("want") or ref.reference(r["inputs"])
    scale = ref.scale(r["inputs"]) if hasattr(ref, "scale") else {}
    arrays = r["arrays"]
    if arrays is None:
        return False, f"no output to compare: {r['format_error']}", {}
    if len(arrays) < len(want):
        return False, f"the program wrote {len(arrays)} arrays, the exercise expects {len(ex.outputs)} ({', '.join(ex.outputs)})", {}
    rtol, atol = float(ex.tolerance.get("rtol", 0.0)), float(ex.tolerance.get("atol", 0.0))
    for idx, (name, w) in enumerate(want.items()):
        got = arrays[ex.outputs.index(name) if name in ex.outputs else idx]
        w = np.asarray(w).ravel()
        if got.size != w.size:
            return False, f"output {name} has {got.size} values, expected {w.size}", {}
        g64, w64 = got.astype(np.float64), w.astype(np.float64)
        if name in scale:
            tol = rtol * scale[name] + atol
        else:
            tol = rtol * np.abs(w64) + atol
        bad = ~(np.abs(g64 - w64) <= tol)   # NaN counts as bad
        if bad.any():
            i = int(np.argmax(bad))
            where = np.flatnonzero(bad)[:8]
            samples = [[int(k), float(got[k]), float(w[k])] for k in where]
            return False, (f"output {name}: {int(bad.sum())} of {w.size} values differ; first mismatch at index {i}: "
                           f"got {float(got[i]):.7g}, expected {float(w[i]):.7g} (tolerance rtol={rtol:g}, atol={atol:g})"), \
                {"first_mismatch": i, "mismatches": int(bad.sum()), "output": name, "samples": samples}
    return True, f"matches the reference on fresh random inputs ({', '.join(f'{k}[{np.asarray(v).size}]' for k, v in want.items())})", {}


def check_compare(ctx: Context, spec: CheckSpec) -> CheckResult:
    if ctx.build_skip:
        return result(spec, ctx, "skipped", f"not built here: {ctx.build_skip}")
    if not ctx.run:
        return not_run(spec, ctx, "nothing to compare: the program did not run")
    if ctx.run.get("status") == "skipped":
        return result(spec, ctx, "skipped", "needs a GPU run (see the run check)")
    if ctx.run["arrays"] is None:
        return not_run(spec, ctx, f"nothing to compare: {ctx.run['format_error'] or 'no output'}")
    ok, msg, details = compare_outputs(ctx, ctx.run)
    if ctx.run.get("simulated"):
        msg, details = sim.label(msg), {**details, "backend": sim.LABEL}
    return result(spec, ctx, "passed" if ok else "failed", msg, details)


# --- perf ----------------------------------------------------------------------------------------

def check_perf(ctx: Context, spec: CheckSpec) -> CheckResult:
    if ctx.build_skip:
        return result(spec, ctx, "skipped", f"not built here: {ctx.build_skip}")
    res = ctx.build
    if res is None or not res.ok:
        return not_run(spec, ctx, "the program does not compile")
    if not res.can_run:
        return result(spec, ctx, "skipped", f"needs a GPU: {res.cannot_run_reason}")
    if ctx.run.get("status") != "passed":
        return not_run(spec, ctx, "not timed: the correctness run did not pass")
    dev = ctx.plat.device
    peak_name = spec.options.get("peak", "bandwidth_tbs" if spec.options.get("metric") == "bandwidth" else "fp32_vector_tflops")
    peak = dev.spec[peak_name] if dev is not None and dev.spec is not None else None
    if not peak:
        return result(spec, ctx, "skipped", f"no {peak_name} peak for {dev.name if dev else 'this device'} in datasets/hardware.csv")
    r = ctx.timed = execute(ctx, "perf", 2, float(spec.options.get("timeout_s", settings.PERF_TIME_LIMIT_S)))
    status, msg = _run_verdict(r)
    if status != "passed":
        return result(spec, ctx, "failed", "timed run: " + msg)
    ok, cmsg, _ = compare_outputs(ctx, r)
    if not ok:
        return result(spec, ctx, "failed", "wrong in the timed run (correctness is re-checked there): " + cmsg)
    ex = ctx.exercise
    ms, problem = kernel_time_ms(ex, r)
    if problem == "missing":
        return result(spec, ctx, "failed", "the program reports no kernel time (time_ms) in its output")
    if problem:
        return result(spec, ctx, "failed", f"reported kernel time {ms!r} ms is impossible (the whole run took "
                       f"{r['done'].duration_s:.3f} s): time with events around the kernel")
    work = ex.reference_module().work(r["inputs"])
    if spec.options.get("metric") == "bandwidth":
        value, unit = work["bytes"] / (ms * 1e-3) / 1e12, "TB/s"
    else:
        value, unit = work["flops"] / (ms * 1e-3) / 1e12, "TFLOP/s"
    frac = value / peak
    need = float(spec.options.get("min_fraction", 0.5))
    details = {"value": value, "unit": unit, "peak": peak, "fraction": frac, "time_ms": ms}
    label = f"{value:.3g} {unit} = {frac:.0%} of {dev.name}'s peak {peak:g} {unit} (datasets/hardware.csv)"
    if frac > 1.5:
        return result(spec, ctx, "failed", f"{label}: faster than the hardware can go, so the timing is wrong", details)
    if frac >= need:
        return result(spec, ctx, "passed", f"{label}; needed {need:.0%}", details)
    return result(spec, ctx, "failed", f"{label}; needs {need:.0%}", details)


CHECKS = {"static": check_static, "compile": check_compile, "run": check_run, "compare": check_compare,
          "perf": check_perf}


def new_seed() -> int:
    """A seed the learner does not control: fresh from the OS for every grading."""
    return secrets.randbits(62)
