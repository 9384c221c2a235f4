"""Lab 11 on a CPU: the counters of each diagnosis for the slow and the fixed kernel, counted by the wave64
simulator (:func:`rocmlab.profile.counters.simulate_counts`), beside the ``rocprofv3 --pmc`` counter an MI300X
reports for the same event. The simulator's numbers are its own counts from the program's loads and stores (its
model is :data:`rocmlab.profile.counters.SIMULATED_MODEL`), never measured hardware; no MI300X number is shown here
(none was measured: run the printed rocprofv3 command on one)."""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass

from rocmlab import settings
from rocmlab.course import progress
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.grader import load
from rocmlab.hip import build
from rocmlab.hip.sim import launch_occupancy
from rocmlab.profile import counters

#: Per exercise: its kernel, and the simulator's counts that tell slow from fixed (each a gfx942 counter name).
SIMULATED = {
    "lab11-coalesce": ("scale_rows", ("SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "TCP_TOTAL_CACHE_ACCESSES_sum",
                                      "bytes_read")),
    "lab11-lds-banks": ("gemv_lds", ("SQ_INSTS_LDS", "SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE")),
    "lab11-occupancy": ("stencil7", ("SQ_WAVES", "workgroup_size", "lds_bytes_per_workgroup",
                                     "VGPRs (gfx942 compiler)")),
}
#: What stands on an MI300X for the simulator's own (non-counter) figures.
ON_MI300X = {
    "workgroup_size": "the launch's block size (rocprofv3 --kernel-trace lists each dispatch's workgroup size)",
    "lds_bytes_per_workgroup": "the kernel's LDS per workgroup (the compiler's listing; rocprofv3's kernel trace)",
    "VGPRs (gfx942 compiler)": "the same: registers are the compiler's, on any machine",
}


def figure(exercise_id: str, c: dict) -> tuple[str, float]:
    """The figure that tells slow from fixed, from one kernel's counts: (what it is, its value)."""
    if exercise_id == "lab11-coalesce":
        insts = c["SQ_INSTS_VMEM_RD"] + c["SQ_INSTS_VMEM_WR"]
        return "128 B lines per global memory instruction", c["TCP_TOTAL_CACHE_ACCESSES_sum"] / max(insts, 1)
    if exercise_id == "lab11-occupancy":
        return f"waves per SIMD at the launch (limited by {c['occupancy_limited_by']})", c["waves_per_simd"]
    return "share of LDS cycles lost to bank conflicts", c["SQ_LDS_BANK_CONFLICT"] / max(c["SQ_LDS_IDX_ACTIVE"], 1)


def simulated_pair(exercise_id: str, seed: int = 0, timeout_s: float = 120.0, size: dict | None = None) -> dict:
    """{"slow": counts, "fixed": counts} of the exercise's kernel (the mechanical port of the CUDA starter, and the
    reference fix), both run by the simulator on the same inputs (the exercise's run size, or ``size``). For
    lab11-occupancy the counts carry the launch's occupancy (:mod:`rocmlab.hip.sim.launch_occupancy`)."""
    import os

    import numpy as np

    from rocmlab.grader import rlx

    kernel, _ = SIMULATED[exercise_id]
    ex = load(exercise_id)
    out = {}
    with tempfile.TemporaryDirectory(prefix="lab11-sim-") as d:
        os.chmod(d, 0o777)
        if size is None:
            inp, _ = lab11.write_inputs(exercise_id, d, "run", seed)
        else:
            inp = os.path.join(d, "input.bin")
            rlx.write_arrays(inp, ex.reference_module().make_inputs(np.random.default_rng(seed), dict(size)).values())
            os.chmod(inp, 0o644)
        for version, src in (("slow", lab11.starter_port(exercise_id)), ("fixed", ex.solution)):
            got = counters.simulate_counts(src, (inp, os.path.join(d, f"{version}.bin")), flags=lab11.FLAGS,
                                           scratch=d, timeout_s=timeout_s)
            out[version] = got.kernel(kernel)
            if exercise_id == "lab11-occupancy":
                out[version] |= launch_occupancy.from_run(src, got.stderr, kernel, flags=lab11.FLAGS).counts()
    return out


def table_rows(exercise_id: str, pair: dict) -> list[list]:
    """Rows: counter | slow | fixed (counted by the wave64 simulator) | what rocprofv3 --pmc counts on an MI300X."""
    _, names = SIMULATED[exercise_id]
    rows = []
    for n in names:
        hw = counters.GFX942.get(n)
        rows.append([n, pair["slow"][n], pair["fixed"][n],
                     f"rocprofv3 --pmc {n}: {hw.meaning}" if hw else ON_MI300X.get(
                         n, "(no single counter: the simulator's own)")])
    what, _ = figure(exercise_id, pair["slow"])
    rows.append([what, f"{figure(exercise_id, pair['slow'])[1]:.3g}", f"{figure(exercise_id, pair['fixed'])[1]:.3g}",
                 next(d.ratio for d in counters.DIAGNOSES if d.exercise == exercise_id)])
    return rows


HEADER = ["counter (gfx942 name)", f"slow: {counters.SIMULATED_LABEL}", f"fixed: {counters.SIMULATED_LABEL}",
          "on an MI300X (not measured here)"]


# --- the graded diagnosis: the learner's cause for each of the course's slow kernels, checked against its counts --

#: The kernel of each slow exercise. The diagnosis is of the course's own slow kernel (the mechanical port of the
#: CUDA starter, :func:`lab.starter_port`), counted by the grader: never of a program the learner hands in, which
#: could be a stand-in of the same name that shows no cause.
KERNELS = {"lab11-coalesce": "scale_rows", "lab11-lds-banks": "gemv_lds", "lab11-occupancy": "stencil7"}
#: The answers a diagnosis may give: the three causes (rocmlab.profile.counters.DIAGNOSES), or none of them.
NONE = "none of these"
CAUSES = (*(d.cause for d in counters.DIAGNOSES), NONE)
#: Small sizes the simulator counts in a few seconds (the inputs are fresh random values each time).
DIAGNOSIS_SIZES = {"lab11-coalesce": {"rows": 96, "cols": 256}, "lab11-lds-banks": {"rows": 256, "cols": 64},
                   "lab11-occupancy": {"n": 4099}}
#: When the counts show each cause (the same rule for every kernel, stated so a learner can apply it by hand):
#: uncoalesced: the 128-byte lines the global memory instructions touch carry more than 8x the bytes they use;
#: bank conflicts: more than a fifth of the LDS cycles are conflict stalls; occupancy: the launch gets fewer than
#: 4 of 8 waves per SIMD and LDS is what limits it.
LINE_USE_BELOW = 1 / 8
CONFLICT_SHARE_ABOVE = 0.2
WAVES_BELOW = 4
RULES = {
    "uncoalesced global access": "bytes used per byte of the 128 B lines touched below 1/8",
    "LDS bank conflicts": "SQ_LDS_BANK_CONFLICT / SQ_LDS_IDX_ACTIVE above 0.2",
    "occupancy limited by LDS": "waves per SIMD at the launch below 4, limited by LDS",
}


@dataclass
class Measured:
    """What the simulator counted on one kernel: its counts, its launch's occupancy, each cause's figure and
    whether the counts show that cause."""

    exercise_id: str
    counts: dict
    occupancy: launch_occupancy.LaunchOccupancy
    figures: dict          # cause -> (what, value)
    found: tuple           # the causes the counts show (empty: none of these)

    @property
    def right_answer(self) -> tuple:
        return self.found or (NONE,)


def _figures(c: dict, occ) -> dict:
    lines = c["TCP_TOTAL_CACHE_ACCESSES_sum"]
    use = (c["bytes_read"] + c["bytes_written"]) / (128 * lines) if lines else 1.0
    share = c["SQ_LDS_BANK_CONFLICT"] / c["SQ_LDS_IDX_ACTIVE"] if c["SQ_LDS_IDX_ACTIVE"] else 0.0
    return {"uncoalesced global access": ("bytes used per byte of the 128 B lines touched", use),
            "LDS bank conflicts": ("share of LDS cycles lost to bank conflicts", share),
            "occupancy limited by LDS": (f"waves per SIMD at the launch (limited by {occ.limiting})",
                                         occ.waves_per_simd)}


def measure(exercise_id: str, source: str, *, seed: int, size: dict | None = None,
            timeout_s: float = 120.0) -> Measured:
    """Run ``source`` (the learner's program for ``exercise_id``) on the simulator with its counters, on fresh
    random inputs from ``seed``, and measure the three figures on its kernel. Raises
    :class:`rocmlab.profile.counters.CounterError` when it cannot build or run there (the message says why)."""
    import os

    import numpy as np

    from rocmlab.grader import rlx

    if exercise_id not in KERNELS:
        raise KeyError(f"no diagnosis for {exercise_id!r}: one of {', '.join(KERNELS)}")
    kernel, ex = KERNELS[exercise_id], load(exercise_id)
    with tempfile.TemporaryDirectory(prefix="lab11-diag-") as d:
        os.chmod(d, 0o777)
        inp = os.path.join(d, "input.bin")
        inputs = ex.reference_module().make_inputs(np.random.default_rng(seed),
                                                   dict(size or DIAGNOSIS_SIZES[exercise_id]))
        rlx.write_arrays(inp, inputs.values())
        os.chmod(inp, 0o644)
        run = counters.simulate_counts(source, (inp, os.path.join(d, "out.bin")), flags=lab11.FLAGS, scratch=d,
                                       timeout_s=timeout_s)
    try:
        c = run.kernel(kernel)
        occ = launch_occupancy.from_run(source, run.stderr, kernel, flags=lab11.FLAGS)
    except (KeyError, build.HipError) as exc:
        raise counters.CounterError(str(exc).strip("'\"")) from None
    figures = _figures(c, occ)
    found = []
    if figures["uncoalesced global access"][1] < LINE_USE_BELOW:
        found.append("uncoalesced global access")
    if figures["LDS bank conflicts"][1] > CONFLICT_SHARE_ABOVE:
        found.append("LDS bank conflicts")
    if occ.waves_per_simd < WAVES_BELOW and occ.limiting == "LDS":
        found.append("occupancy limited by LDS")
    return Measured(exercise_id, c, occ, figures, tuple(found))


def measured_rows(measured: dict) -> list[list]:
    """Rows for a table: kernel | each cause's figure (the learner applies :data:`RULES` to them)."""
    rows = []
    for ex_id, m in measured.items():
        if isinstance(m, Exception):
            rows.append([f"{KERNELS[ex_id]} ({ex_id})", f"not counted: {m}", "", ""])
            continue
        occ = m.occupancy
        limit = "nothing limits it" if occ.limiting.startswith("the hardware") else f"limited by {occ.limiting}"
        rows.append([f"{KERNELS[ex_id]} ({ex_id})", f"{m.figures[CAUSES[0]][1]:.3g}", f"{m.figures[CAUSES[1]][1]:.3g}",
                     f"{occ.waves_per_simd} ({limit}; {occ.launch.lds_bytes} B LDS, {occ.vgprs} VGPRs)"])
    return rows


MEASURED_HEADER = ["kernel", "bytes used / bytes of lines touched", "LDS conflict share",
                   "waves per SIMD at the launch"]


#: Short forms a learner may write for each answer.
ALIASES = {"uncoalesced": "uncoalesced global access", "coalescing": "uncoalesced global access",
           "bank conflicts": "LDS bank conflicts", "occupancy": "occupancy limited by LDS", "none": NONE}
TASK = "diagnosis"
BACKEND = "cpu: wave64 simulator"


def _cause(answer) -> str | None:
    if not isinstance(answer, str):
        return None
    a = " ".join(answer.lower().split())
    for c in CAUSES:
        if a == c.lower():
            return c
    return ALIASES.get(a)


@dataclass
class DiagnosisVerdict:
    """The verdict on the diagnosis of the three kernels: one verdict element (a line, then a row per kernel)."""

    ok: bool | None
    message: str
    rows: list            # (status, kernel, points, message)
    earned: float = 0.0
    possible: float = 3.0
    seed: int | None = None

    def __str__(self) -> str:
        from rocmlab.course.verdict import MARKS

        head = f"[{MARKS[self.ok]}] {self.earned:g}/{self.possible:g} points: {self.message}"
        return "\n".join([head, *(f"  {st}: {k} ({p}): {m}" for st, k, p, m in self.rows)])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from rocmlab.course.verdict import element

        pts = f"{self.earned:g}/{self.possible:g} points" if self.ok is not None else ""
        details = [("where it ran", f"{BACKEND}: the course's slow kernels, built and run isolated, on fresh "
                                    f"random inputs (seed {self.seed})")] if self.seed is not None else []
        return element(self.ok, self.message, pts, self.rows, details)


def check_diagnosis(answers: dict, *, seed: int | None = None, record: bool = True,
                    size: dict | None = None) -> DiagnosisVerdict:
    """Grade the learner's diagnosis of each of the course's slow kernels: ``answers`` maps an exercise
    (``lab11-coalesce``, ...) to a cause (one of :data:`CAUSES`). Each answer is checked against what the simulator
    counts on the course's kernel (:func:`lab.starter_port`), on fresh random inputs (``seed``, else a new one):
    right when the counts show that cause (or show none of them, for "none of these"). One point per kernel. A
    kernel the simulator cannot count here is the machine's fault: the verdict says "not graded here"."""
    possible = float(progress.LAB_TASKS[lab11.LAB][TASK])
    per = possible / len(KERNELS)
    answers = answers if isinstance(answers, dict) else {}
    if not any(answers.get(ex) is not None for ex in KERNELS):
        return DiagnosisVerdict(None, "not answered yet: set a cause for each kernel in `diagnosis`, then run "
                                "the cell", [], 0.0, possible)
    if counters_problem():
        return DiagnosisVerdict(None, f"not graded here: {counters_problem()}", [], 0.0, possible)
    seed = secrets.randbits(32) if seed is None else int(seed)
    rows, earned = [], 0.0
    for i, (ex_id, kernel) in enumerate(KERNELS.items()):
        given = answers.get(ex_id)
        cause = _cause(given)
        if given is None:
            rows.append(("failed", kernel, f"0/{per:g}", "not answered: name a cause for this kernel"))
            continue
        if cause is None:
            rows.append(("failed", kernel, f"0/{per:g}", f"{given!r} is not one of the answers: "
                         + "; ".join(repr(c) for c in CAUSES)))
            continue
        try:
            m = measure(ex_id, lab11.starter_port(ex_id), seed=seed + i, size=size)
        except counters.CounterError as exc:        # the course's own kernel: this machine's fault, not scored
            return DiagnosisVerdict(None, f"not graded here: the simulator could not count {kernel}: "
                                    f"{str(exc)[:300]}", [], 0.0, possible)
        if cause in m.right_answer:
            earned += per
            if cause == NONE:
                why = "; ".join(f"{w} {v:.3g}" for w, v in m.figures.values())
                text = f"right: none of the three causes shows in the kernel's counts ({why})"
            else:
                what, value = m.figures[cause]
                text = f"right: {what} = {value:.3g} on {kernel} ({RULES[cause]})"
            rows.append(("passed", kernel, f"{per:g}/{per:g}", text))
        else:
            if cause == NONE:
                text = ("the counts of this kernel show a cause: read its row of the table above against the "
                        "three rules")
            else:
                what, value = m.figures[cause]
                text = (f"the kernel's counts do not show {cause}: {what} = {value:.3g}, and the rule is "
                        f"{RULES[cause]}. Which figure crosses its rule?")
            rows.append(("failed", kernel, f"0/{per:g}", text))
    if record:
        progress.record(lab11.LAB, TASK, earned=earned, earnable=possible, possible=possible, backend=BACKEND)
    ok = earned == possible
    msg = ("right for all three kernels: their counts show what you named" if ok else
           "not every diagnosis matches what the simulator counted on the kernel: see the rows below")
    return DiagnosisVerdict(ok, msg, rows, earned, possible, seed)


def counters_problem() -> str:
    """'' when the simulator and the offline gfx942 compiler (for the registers) are here, else why not."""
    from rocmlab.hip import compile as driver
    from rocmlab.hip import simulate

    return simulate.problem() or driver.available(settings.DEFAULT_TARGET)


# --- hand-in: the diagnosis, re-graded by the instructor ----------------------------------------------------------

ITEM = f"{lab11.LAB}/{TASK}"


def answer_json(answers: dict) -> str:
    """The hand-in file's text: ``{"diagnosis": {exercise: cause}}`` (the re-grade counts the course's kernels
    again, on its own fresh inputs)."""
    import json

    return json.dumps({"diagnosis": {ex: answers.get(ex) for ex in KERNELS}}, indent=1)


def _regrade(source: str, seed: int, time_limit_s):
    import json
    import time

    from rocmlab.grader import items
    from rocmlab.grader.report import CheckResult

    started = time.monotonic()
    item = items.get(ITEM)
    try:
        value = json.loads(source)
        ok = isinstance(value, dict) and isinstance(value.get("diagnosis"), dict)
    except ValueError:
        ok = False
    if not ok:
        check = CheckResult("answer", "compare", "not run", 0.0, item.possible,
                            'hand in a JSON object {"diagnosis": {...}}: '
                            "lab11_counters.answer_json(diagnosis) writes it")
        return items.report(item, [check], BACKEND, seed, started)
    v = check_diagnosis(value["diagnosis"], seed=seed, record=False)     # any "sources" handed in: not used
    if v.ok is None and v.message.startswith("not graded here"):
        raise RuntimeError(f"{ITEM} cannot be re-graded on this machine: {v.message}")   # the machine's fault
    per = item.possible / len(KERNELS)
    checks = [CheckResult(kernel, "compare", st, float(pts.split("/")[0]), per, msg) for st, kernel, pts, msg in v.rows]
    return items.report(item, checks or [CheckResult("answer", "compare", "failed", 0.0, item.possible, v.message)],
                        BACKEND, seed, started)


def _register() -> None:
    from rocmlab.grader import items

    items.register(items.Item(ITEM, "task", lab11.LAB, TASK, float(progress.LAB_TASKS[lab11.LAB][TASK]),
                              "Lab 11: the cause of each slow kernel, checked against the simulator's counts of it",
                              "diagnosis", _regrade, answer_suffix=".json"))


_register()
