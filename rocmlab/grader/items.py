"""Every graded item of the course, in one registry that ``rocmlab handin``, ``rocmlab grade`` and
``rocmlab progress`` all use.

An item is what a learner hands in and an instructor re-grades:

==========  =============================================  =========  =============================================
kind        id                                             answer     re-graded by
==========  =============================================  =========  =============================================
exercise    ``vector-add`` (the exercise id)               ``.hip``   :func:`rocmlab.grader.check` (compile, run,
                                                                      compare), the program in the sandbox
task        ``LAB/TASK``: ``08-mi300x-package/xcd-remap``  ``.py``    the task's checker; the answer runs in the
                                                                      sandbox (:mod:`rocmlab.grader.pyanswer`)
task        ``04-vllm-on-rocm/meet-a-serving-target``      ``.json``  measured again on the grader's live server
                                                                      (a value: no learner code runs)
puzzle      ``LAB/KEY``: ``06-triton-on-amd/softmax``      ``.py``    the puzzle's checker; the kernel runs in the
                                                                      sandbox (Triton's CPU interpreter there)
question    ``11-counters-and-faults/oob_write-line``      ``.json``  the question's checker (a value: no code runs)
==========  =============================================  =========  =============================================

``LAB`` is the notebook's file stem and ``TASK`` the task's name in the progress record, so an id names its row
in ``rocmlab progress``; an id has at most one ``/``, which file names write as ``+`` (:func:`flat`). A ``.py``
answer defines the function or kernel the item names (:attr:`Item.name`); a ``.json`` answer is an object
(``{"line": 19}``).

The exercises are known here; lab tasks, puzzles and questions are declared by the course layer, since their
checkers live there: :data:`ITEM_MODULES` names the course modules that register them (:func:`register`) when
imported, and this module imports them itself, once, the first time anyone lists the items or asks for one not
registered yet (:func:`all_items`, :func:`get`, :func:`item_for`). No front end imports anything to make the
items known. Every re-grade draws a fresh seed unless one is given; the in-notebook checks are previews.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from rocmlab.grader.report import CheckResult, Report
from rocmlab.grader.spec import ExerciseError

EXERCISES = "exercises"     # the progress record's "lab" of exercise rows (rocmlab.course.progress.EXERCISES)
#: An answer file's suffix per kind.
SUFFIX = {"exercise": ".hip", "task": ".py", "puzzle": ".py", "question": ".json"}
#: Suffixes a hand-in may have (a HIP exercise also as .cu or .cpp).
SUFFIXES = (".hip", ".cpp", ".cu", ".py", ".json")


class UnknownItem(ExerciseError):
    """No graded item by that id: the message lists what is close."""


@dataclass(frozen=True)
class Item:
    id: str
    kind: str           # exercise | task | puzzle | question
    lab: str            # the progress record's lab (a notebook stem, or "exercises")
    task: str           # the progress record's task
    possible: float
    title: str
    name: str = ""      # the function or kernel a .py answer defines; the key a .json answer holds
    #: (answer text, seed, time limit) -> Report, in the grader's process; None for an exercise (grader.check)
    regrade: Callable | None = field(default=None, compare=False, repr=False)
    answer_suffix: str = ""     # the answer file's suffix where it is not its kind's (a task answered by a value)

    @property
    def suffix(self) -> str:
        return self.answer_suffix or SUFFIX[self.kind]

    def accepts(self, suffix: str) -> bool:
        return suffix == self.suffix or (self.kind == "exercise" and suffix in (".hip", ".cpp", ".cu"))


#: Every graded item beyond the exercises, declared by the modules that define it: each module registers its items
#: (:func:`register`) when imported. Named here as text and imported by :func:`_load` at the first ask, so that this
#: toolkit imports no course module (``tools/architecture.py``: toolkits never import ``rocmlab.course``) and no
#: front end imports one for its side effect. A new lab with graded items adds its module here.
ITEM_MODULES: tuple[str, ...] = (
    "rocmlab.course.items",                                    # Lab 01's three, the lab tasks, Lab 11's questions
    "rocmlab.course.labs.lab06_triton_on_amd.puzzles",         # the Triton puzzles, each lab's own
    "rocmlab.course.labs.lab09_attention_on_mi300x.puzzles",
    "rocmlab.course.labs.lab10_fp8_gemm.puzzles",
    "rocmlab.course.labs.lab11_counters_and_faults.counters",  # Lab 11's diagnosis
)

_REGISTERED: dict[str, Item] = {}
#: (lab, task) of a progress row -> the item id it is graded as (Lab 02's port is an exercise's grade)
_ALIASES: dict[tuple[str, str], str] = {}
#: Whether :data:`ITEM_MODULES` are loaded (``done``) or being loaded by the thread holding ``_LOAD_LOCK``.
_LOAD = {"done": False, "loading": False}
_LOAD_LOCK = threading.RLock()


def _load() -> None:
    """Import :data:`ITEM_MODULES` once, so that every item is registered. Another thread asking meanwhile waits
    for the whole list; a module of the list asking for an item while it loads sees what is registered so far
    (no second import). An import that fails raises, and the next ask tries again (it fails the same way)."""
    if _LOAD["done"]:
        return
    with _LOAD_LOCK:
        if _LOAD["done"] or _LOAD["loading"]:
            return
        _LOAD["loading"] = True
        try:
            for name in ITEM_MODULES:
                importlib.import_module(name)     # registers the module's items (already imported: nothing to do)
            _LOAD["done"] = True
        finally:
            _LOAD["loading"] = False


def register(item: Item, *aliases: tuple[str, str]) -> Item:
    """Add a lab task, puzzle or question (a module of :data:`ITEM_MODULES` does, when imported); ``aliases`` are
    progress rows that are this item's grade. Registering an id again replaces it: idempotent."""
    if (item.kind not in SUFFIX or item.id.count("/") > 1 or (item.kind != "exercise" and item.regrade is None)
            or item.suffix not in SUFFIXES):
        raise ValueError(f"item {item.id!r}: a kind of {list(SUFFIX)}, at most one '/', a re-grade, and an answer "
                         f"suffix of {SUFFIXES}")
    _REGISTERED[item.id] = item
    for row in aliases:
        _ALIASES[row] = item.id
    return item


def alias(lab: str, task: str, item_id: str) -> None:
    """The progress row ``lab``/``task`` is graded as ``item_id``."""
    _ALIASES[(lab, task)] = item_id


@cache
def _exercises() -> dict[str, Item]:
    from rocmlab import grader

    return {ex.id: Item(ex.id, "exercise", EXERCISES, ex.id, float(ex.possible), ex.title)
            for ex in grader.exercises()}


def all_items() -> dict[str, Item]:
    """Every graded item, by id: the exercises and what :data:`ITEM_MODULES` register (loaded at the first ask)."""
    _load()
    return {**_exercises(), **_REGISTERED}


def get(item_id: str) -> Item:
    """The item ``item_id``; :class:`UnknownItem` names the ids that are close. An item registered already (a
    notebook's own lab, imported) needs nothing loaded; any other id loads :data:`ITEM_MODULES` first."""
    if isinstance(item_id, str) and item_id in _REGISTERED:     # what all_items() would give for it
        return _REGISTERED[item_id]
    items = all_items()
    if isinstance(item_id, str) and item_id in items:
        return items[item_id]
    import difflib

    close = difflib.get_close_matches(str(item_id)[:200], list(items), n=3)
    near = f" (did you mean {', '.join(close)}?)" if close else ""
    raise UnknownItem(f"no exercise or other graded item {repr(item_id)[:80]}{near}: `rocmlab grade --list` lists "
                      "every item id (an exercise id, or LAB/TASK such as 08-mi300x-package/xcd-remap)")


def flat(item_id: str) -> str:
    """The item id as one file name: its ``/`` written ``+`` (as the workshop exchange writes it)."""
    return str(item_id).replace("/", "+")


def item_for(lab: str, task: str) -> str | None:
    """The id of the item behind a progress row (None: that row cannot be handed in)."""
    items = all_items()
    if (lab, task) in _ALIASES:
        return _ALIASES[(lab, task)]
    if lab == EXERCISES or (task in items and items[task].kind == "exercise"):     # Lab 11's exercises too
        return task if task in items else None
    iid = f"{lab}/{task}"
    return iid if iid in items else None


# ----------------------------------------------------------------------------- re-grading

def report(item: Item, checks: list[CheckResult], backend: str, seed, started: float) -> Report:
    """A re-grade's report, naming the sandbox that ran the learner's code."""
    from rocmlab import sandbox

    return Report(item.id, item.title, backend, "sandboxed re-grade", seed, checks,
                  round(time.monotonic() - started, 2), "graded", "", sandbox.isolation().description)


def refused(item_id: str, reason: str) -> Report:
    """Every check of the item "not run" with ``reason``: a hand-in the grader would not read."""
    from rocmlab import grader

    item = get(item_id)
    if item.regrade is None:
        return grader.refused(item.id, reason)
    return report(item, [CheckResult("answer", "static", "not run", 0.0, item.possible, f"not run: {reason}")],
                  "none", None, time.monotonic())


def not_scored(rep: Report, fault: str) -> Report:
    """``rep`` as a grade a fault of the machine stopped: status "error" (no points, never cached), each check's
    message kept with the reason."""
    import dataclasses

    return dataclasses.replace(rep, checks=[c.not_scored() for c in rep.checks], status="error", error=fault)


def grade(item_id: str, source: str, *, seed: int | None = None, time_limit_s: float | None = None) -> Report:
    """Re-grade ``source`` (the answer file's text) for ``item_id`` with a fresh seed, the learner's code in the
    sandbox. Never raises for a bad answer; a fault of the machine raises or gives a report with status
    "error" (never scored, never cached)."""
    from rocmlab import grader, sandbox

    item = get(item_id)
    seed = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")
    with sandbox.machine_faults() as faults:     # met anywhere in the grade, whatever the item's code caught
        if item.regrade is None:
            rep = grader.check(item.id, source, seed=seed, time_limit_s=time_limit_s)
        else:
            rep = item.regrade(source, seed, time_limit_s)
    if faults and rep.status != "error":
        rep = not_scored(rep, faults[0])
    if item.regrade is None:
        return rep
    rep.exercise, rep.title = item.id, item.title
    if "re-grade" not in rep.device:
        rep.device = f"{rep.device} (sandboxed re-grade)"
    rep.isolation = rep.isolation or sandbox.isolation().description     # set already where no learner code runs
    return rep
