"""One exercise in a notebook: write the starter into the learner's folder, edit it, grade it, show hints.

    from rocmlab.course.exercise import Workbench
    bench = Workbench("vector-add")      # the learner's folder: ./my-work/vector-add
    bench.start()                        # writes starter.cu, README.md and vector_add.hip (hipify's port)
    # ... edit my-work/vector-add/vector_add.hip ...
    report = bench.grade()               # the grader on this machine; print(bench.score(report))
    bench.hint()                         # the next graded hint (level 1 nudges, level 3 nearly tells)
    bench.widget()                       # the same as buttons: Grade again, Show a hint

The ``.hip`` file starts as the mechanical port of the CUDA starter (PyTorch's hipify): it compiles or not,
and keeps every trap the exercise is about. :func:`rocmlab.grader.report.availability` says which points this machine cannot
award and why, so a full score on the checks a CPU runs never reads as a full score.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rocmlab import grader, sandbox
from rocmlab.course.my_work import read_my_work
from rocmlab.grader.report import availability
from rocmlab.cuda2hip import hipify

#: The learner's folder, relative to the notebook's working directory, unless one is passed.
DEFAULT_FOLDER = "my-work"


def busy_machine(report) -> bool:
    """True when a busy machine stopped this grade (never scored): grading again later may give a verdict."""
    return report.status == "error" and sandbox.too_busy(report.error)


@dataclass
class Workbench:
    """The learner's copy of one exercise, and the grade / hint loop over it."""

    exercise_id: str
    folder: Path | str | None = None
    seed: int | None = None                  # instructors and tests only; by default every grade is fresh
    time_limit_s: float | None = None
    hints_shown: int = 0
    reports: list = field(default_factory=list)

    def __post_init__(self):
        self.exercise = grader.load(self.exercise_id)
        base = Path(self.folder) if self.folder is not None else Path.cwd() / DEFAULT_FOLDER / self.exercise.id
        self.folder = base

    @property
    def hip_path(self) -> Path:
        return self.folder / f"{self.exercise.program}.hip"

    @property
    def starter_path(self) -> Path:
        return self.folder / "starter.cu"

    def start(self, overwrite: bool = False) -> Path:
        """Write the starter, the README and the file to edit; an existing edit is kept unless ``overwrite``."""

        self.folder.mkdir(parents=True, exist_ok=True)
        self.starter_path.write_text(self.exercise.starter)
        (self.folder / "README.md").write_text(self.exercise.readme)
        if overwrite or not self.hip_path.exists():
            port = hipify.hipify_source(self.exercise.starter, self.starter_path.name)
            head = (f"// {self.exercise.title}\n// Your port of starter.cu: torch hipify's renames + rocmlab's fix pass (64-bit masks). "
                    "Edit it, save, then press Grade again.\n")
            self.hip_path.write_text(head + port.hip)
        return self.hip_path

    def source(self) -> str:
        if not self.hip_path.exists():
            raise FileNotFoundError(f"{self.hip_path} does not exist yet: run start() first")
        return read_my_work(self.hip_path)

    def grade(self, source: str | None = None):
        """Grade the learner's file (or ``source``) on this machine; returns the grader's Report."""
        report = grader.check(self.exercise.id, source if source is not None else self.source(), seed=self.seed,
                              time_limit_s=self.time_limit_s)
        self.reports.append(report)
        return report

    def grade_solution(self):
        """The reference solution through the same grader (its score only): the most this machine awards. A grade
        that a busy machine stopped (never scored) is tried once more, as its verdict advises."""
        report = self.grade(self.exercise.solution)
        if busy_machine(report):
            report = self.grade(self.exercise.solution)
        return report

    def score(self, report) -> str:
        return availability(report).text()

    def hint(self):
        """The next hint, one level at a time; None when all are shown."""
        levels = sorted(self.exercise.hints, key=lambda h: h.level)
        if self.hints_shown >= len(levels):
            return None
        self.hints_shown += 1
        return levels[self.hints_shown - 1]

    def shown_hints(self) -> list:
        return sorted(self.exercise.hints, key=lambda h: h.level)[: self.hints_shown]

    def widget(self):
        """The learner's loop over their file (rocmlab.course.widgets.grader.feedback_widget): a link that opens
        it in the editor, Grade again (re-reads it; the grade goes to the progress record), Show a hint."""
        from rocmlab.course.widgets.grader import feedback_widget

        return feedback_widget(self.exercise.id, self.hip_path, seed=self.seed, time_limit_s=self.time_limit_s)


def table_rows(reports: dict | None = None) -> list[list]:
    """Every exercise in order: id, title, points, and (given reports by id) what this machine can award."""
    rows = []
    for ex in grader.exercises():
        row = [ex.order, ex.id, ex.title, f"{ex.possible:g}"]
        if reports is not None and ex.id in reports:
            a = availability(reports[ex.id])
            row += [f"{a.runnable:g}", ", ".join(cid for cid, *_ in a.skipped) or "-"]
        rows.append(row)
    return rows


# --- the thin notebook of each exercise (written by `python tools/nbtools.py exercises`) -----------------

NOTEBOOKS_SUBDIR = "exercises"


def notebook_name(ex) -> str:
    return f"{ex.order:02d}-{ex.id}.ipynb"


def notebook_cells(ex) -> list[tuple]:
    """The cells of one exercise's notebook: ("md"|"code", source[, tags])."""
    checks = ", ".join(f"{c.id} ({c.type}, {c.points:g})" for c in ex.checks)
    return [
        ("md", f"# Exercise {ex.order}: {ex.title}\n\n{ex.goal}\n\n"
               f"The folder `rocmlab/exercises/{ex.id}/` holds the README (description, application flow, key APIs),"
               f" the CUDA starter and the grader's spec. Checks and points: {checks}.\n\n"
               "How it works: the next cells write the CUDA starter and its port into your folder "
               f"(`my-work/{ex.id}/` beside this notebook). The port is PyTorch's hipify plus rocmlab's own fix "
               "pass (64-bit warp masks; plain hipify keeps `0xffffffff`). Open "
               f"`{ex.program}.hip` with the **open in the editor** link under the grade, edit it, save, and "
               "press **Grade again**: it grades the file as it is now. "
               "**Show a hint** reveals the graded hints one level at a time. Without a GPU the run and compare "
               "checks run your program on rocmlab's CPU simulator with MI300X's wavefronts of 64 (labelled "
               "`[cpu: wave64 simulator]`). A check this machine cannot run (timing, MFMA, hipBLAS) is "
               "*skipped* and says why: it neither earns nor loses points, and the score line says how many "
               "points were not checked on this machine and the reason (no AMD GPU for a timing, MFMA or "
               "hipBLAS check, or timings too noisy to judge). Your best grade is kept: `rocmlab progress` "
               "lists it."),
        ("code", "quick = None  # None means quick sizes on a CPU or when ROCMLAB_QUICK is 1", ["parameters"]),
        ("code", "from IPython.display import HTML, Markdown, display\n\n"
                 "from rocmlab.course.exercise import Workbench, busy_machine\n"
                 "from rocmlab.cuda2hip import hipify\n"
                 "from rocmlab.machine.detect import current\n"
                 "from rocmlab.course.headline import headline, resolve_quick\n\n"
                 "quick = resolve_quick(quick)\n"
                 "plat = current()\n"
                 "print(plat.summary())\n"
                 f"bench = Workbench({ex.id!r})\n"
                 "# keeps your edits if the file exists; bench.start(overwrite=True) starts over\n"
                 "path = bench.start()\n"
                 "print('edit this file:', path)"),
        ("md", "## The CUDA starter and what the port makes of it\n\nLeft: CUDA; right: the HIP file you edit (as "
               "the port wrote it). Yellow lines are the traps the port scanner knows."),
        ("code", "port = hipify.hipify_source(bench.exercise.starter, bench.starter_path.name)\n"
                 "display(HTML(port.side_by_side_html()))"),
        ("md", "## Grade your file\n\nRun the cell, open the file (the link), edit it, save, press **Grade again**."),
        ("code", "display(bench.widget())", ["graded"]),
        ("md", "## Hints, one level at a time\n\nEach run of this cell shows one more (level 1 nudges, the last nearly "
               "gives the answer)."),
        ("code", "h = bench.hint()\n"
                 "print(f'hint {h.level} ({h.check}): {h.text}' if h else 'no more hints')"),
        ("md", "## What full marks look like on this machine\n\nThe reference solution through the same grader "
               "(its score only, not its source): the most this machine can award."),
        ("code", "solution = bench.grade_solution()\n"
                 "print(bench.score(solution))\n"
                 "if busy_machine(solution):\n"
                 "    print('not graded: this machine was too busy twice (never scored); run the cell again later')\n"
                 "else:\n"
                 "    assert solution.full_marks, solution.to_text()\n"
                 "    points = f'{solution.earned:g}/{solution.available:g} (of {solution.possible:g})'\n"
                 f"    headline({(ex.id + ' solution').__repr__()}, points, 'points')"),
    ]
