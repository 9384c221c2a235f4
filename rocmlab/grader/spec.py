"""Exercises: ``rocmlab/exercises/<id>/`` with spec.yaml, starter.cu, solution.hip, reference.py, README.md."""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

import yaml

from rocmlab import paths

EXERCISES_DIR = paths.exercises_dir()
COMMON_DIR = EXERCISES_DIR / "common"
CHECK_TYPES = ("static", "compile", "run", "compare", "perf", "isa", "speedup")


class ExerciseError(ValueError):
    pass


@dataclass(frozen=True)
class CheckSpec:
    id: str
    type: str
    points: float
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Hint:
    check: str
    level: int
    text: str


@dataclass
class Exercise:
    id: str
    folder: Path
    title: str
    goal: str
    article: str
    program: str
    order: int
    sizes: dict
    tolerance: dict
    outputs: list
    libraries: list
    checks: list
    hints: list

    @property
    def starter(self) -> str:
        return (self.folder / "starter.cu").read_text()

    @property
    def solution(self) -> str:
        try:
            return (self.folder / "solution.hip").read_text()
        except PermissionError:       # a workshop learner's server: the file is locked (rocmlab.workshop.references)
            from rocmlab.withheld import SolutionWithheld

            raise SolutionWithheld(f"the solution of {self.id}") from None

    @property
    def readme(self) -> str:
        return (self.folder / "README.md").read_text()

    @property
    def possible(self) -> float:
        return sum(c.points for c in self.checks)

    def reference_module(self):
        return _load_reference(str(self.folder / "reference.py"))

    def hints_for(self, check_id: str) -> list[Hint]:
        return sorted((h for h in self.hints if h.check == check_id), key=lambda h: h.level)

    def hint(self, level: int) -> Hint | None:
        """Hints are graded: level 1 nudges, level 3 nearly gives the answer."""
        for h in sorted(self.hints, key=lambda h: h.level):
            if h.level == level:
                return h
        return None


@cache
def _load_reference(path: str):
    spec = importlib.util.spec_from_file_location(f"rocmlab_exercise_ref_{hashlib.md5(path.encode()).hexdigest()[:8]}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in ("make_inputs", "reference"):
        if not hasattr(mod, name):
            raise ExerciseError(f"{path} defines no {name}()")
    return mod


def _parse(folder: Path) -> Exercise:
    raw = yaml.safe_load((folder / "spec.yaml").read_text())
    checks = []
    for c in raw.get("checks", []):
        c = dict(c)
        cid, ctype, points = c.pop("id"), c.pop("type"), float(c.pop("points"))
        if ctype not in CHECK_TYPES:
            raise ExerciseError(f"{folder.name}: check {cid} has unknown type {ctype!r} (one of {CHECK_TYPES})")
        checks.append(CheckSpec(cid, ctype, points, c))
    hints = [Hint(h["check"], int(h["level"]), h["text"]) for h in raw.get("hints", [])]
    for f in ("starter.cu", "solution.hip", "reference.py", "README.md"):
        if not (folder / f).is_file():
            raise ExerciseError(f"exercise {folder.name} has no {f}")
    return Exercise(raw["id"], folder, raw["title"], raw["goal"], raw.get("article", ""), raw["program"],
                    int(raw.get("order", 99)), raw.get("sizes", {}), raw.get("tolerance", {}),
                    list(raw.get("outputs", [])), list(raw.get("libraries", [])), checks, hints)


@lru_cache(maxsize=1)
def _all() -> dict:
    out = {}
    for d in sorted(EXERCISES_DIR.iterdir()):
        if (d / "spec.yaml").is_file():
            ex = _parse(d)
            if ex.id != d.name:
                raise ExerciseError(f"exercise folder {d.name} has id {ex.id}: they must match")
            out[ex.id] = ex
    return out


def exercises() -> list[Exercise]:
    return sorted(_all().values(), key=lambda e: e.order)


def load(exercise_id: str) -> Exercise:
    ex = _all().get(exercise_id)
    if ex is None:
        raise ExerciseError(f"no exercise {exercise_id!r}: choose one of {', '.join(e.id for e in exercises())}")
    return ex


def common_header_hash() -> str:
    return hashlib.sha256((COMMON_DIR / "exercise_io.h").read_bytes()).hexdigest()[:12]
