"""Reference answers and reference kernels stay with the instructor in a workshop (issue 38).

Self-study installs keep the course's references (the puzzles' and Labs 08-10's reference kernels, the speed
ladders' kernels, the lab tasks' reference answers, the exercises' ``solution.*`` files): a learner alone may read
them, and the labs label them as references.

In a workshop two things keep them from a learner:

- the setting ``ROCMLAB_REFERENCES=off`` in the learner's server environment: the reference kernel modules
  refuse to load (``ReferencesWithheld``, "references are held by the instructor on this hub"). A setting only stops
  the course's own imports: a learner who can read the files can still open them with ``cat``.
- file permissions, the real fix: ``lock(paths)`` (run as root by the node's set-up) makes each reference
  file readable by its owner only (0600, owner root), so a learner's process gets ``PermissionError``
  while the instructor's grader, running as root, reads and re-grades with them. Where the package runs from a
  checkout (an editable install), its ``.git`` (every reference ever committed, readable with ``git show``) and
  ``tests/`` (a right answer for every graded item) are locked too: folders 0700 (their owner kept), so nothing
  under them can be reached by a learner (:func:`checkout_dirs`).

The instructor's server and ``rocmlab grade --exchange`` run without the setting.

On Kubernetes every pod runs as the same uid (jovyan, 1000), so the lock is a group's: the workshop's image is
built with ``--build-arg REFERENCES=withheld`` (binder/Dockerfile.rocm), which runs
``rocmlab references lock --group 2000``: each reference file root-owned, group
:data:`GRADER_GID`, mode 0640. Only the grading profile's pod has that group (binder/jupyterhub/values.yaml).

The hub recipe (:mod:`rocmlab.workshop.hubconfig`, mode ``users``) does both: every learner's server gets the
setting, and the hub, as root, locks the files of the package the servers run (:func:`lock`, with the modules'
compiled ``__pycache__`` copies, which hold the same code). In a learner's process :func:`install` (run when
``rocmlab.course.needs`` is imported: every lab imports it) puts a finder first on ``sys.meta_path`` that
refuses the reference modules before Python opens their files, so a locked file gives the same plain message,
not a ``PermissionError``; :class:`ReferencesWithheld` shows in a notebook as that message alone, without a
traceback, and ``needs.module`` turns it into a stand-in so that a lab's other cells still run.

Functions only: the command line is ``rocmlab references lock|list`` (:mod:`rocmlab.commands.references`).
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from pathlib import Path

from rocmlab.withheld import MESSAGE

ENV = "ROCMLAB_REFERENCES"
#: The group that reads the locked references on Kubernetes (the grading pod's supplemental group).
GRADER_GID = 2000
#: The modules that hold reference answers (what a learner could hand back as their own): the puzzles' and labs'
#: reference kernels, the speed ladders' kernels (each switched off is the puzzle's plain solution) and the lab
#: tasks' reference answers.
KERNEL_MODULES = ("rocmlab.course.labs.lab06_triton_on_amd.kernels", "rocmlab.course.labs.lab08_mi300x_package.kernels",
                  "rocmlab.course.labs.lab09_attention_on_mi300x.kernels", "rocmlab.course.labs.lab10_fp8_gemm.kernels",
                  "rocmlab.course.labs.lab09_attention_on_mi300x.ladder_kernels",
                  "rocmlab.course.labs.lab10_fp8_gemm.ladder_kernels",
                  "rocmlab.course.labs.lab03_pytorch_on_rocm.reference",
                  "rocmlab.course.labs.lab05_quickreduce_tuning.reference",
                  "rocmlab.course.labs.lab07_matrix_cores.reference")
#: Folders of the checkout the package runs from (an editable install) that hold answers: the git history
#: (every reference ever committed: ``git show HEAD:rocmlab/exercises/NAME/solution.hip``) and the test suite
#: (a right answer for every graded item). Locked whole: a folder a learner cannot enter hides all it holds.
CHECKOUT_DIRS = (".git", "tests")


class ReferencesWithheld(ImportError):
    """A reference module was asked for where references are withheld (a workshop learner's server)."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook: the message alone (it is not a bug, so no traceback)."""
        return [f"{type(self).__name__}: {self}"]


class _Withholder(importlib.abc.MetaPathFinder):
    """Refuses the reference modules before any file is opened (a locked file would raise PermissionError)."""

    names = frozenset(KERNEL_MODULES)

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.names and withheld():
            raise ReferencesWithheld(MESSAGE.format(what=fullname), name=fullname)
        return None


def withheld() -> bool:
    """True where this process must not load references: ``ROCMLAB_REFERENCES=off``."""
    return os.environ.get(ENV, "").strip().lower() == "off"


def guard(module: str) -> None:
    """Called at the top of each reference module: refuses to load it where references are withheld."""
    if withheld():
        raise ReferencesWithheld(MESSAGE.format(what=module), name=module)


def install() -> None:
    """Where references are withheld, refuse the reference modules before Python opens their files (once)."""
    if withheld() and not any(isinstance(f, _Withholder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Withholder())


def reference_files(package: Path | None = None) -> list[Path]:
    """The reference files of an installed package: the reference kernel modules, their compiled copies in
    ``__pycache__`` (the same code, readable by anyone who can read the file), and every exercise's
    ``solution.*`` file."""
    root = Path(package) if package is not None else Path(__file__).resolve().parents[1]
    mods = [root.joinpath(*m.split(".")[1:]).with_suffix(".py") for m in KERNEL_MODULES]
    compiled = [c for m in mods for c in sorted((m.parent / "__pycache__").glob(f"{m.stem}.*.pyc"))]
    return [p for p in mods if p.is_file()] + compiled + sorted((root / "exercises").glob("*/solution.*"))


def checkout_dirs(package: Path | None = None) -> list[Path]:
    """:data:`CHECKOUT_DIRS` of the checkout holding the package (its parent, when that has the project's
    ``pyproject.toml``: an editable install); none for an installed package. ``.git`` may be a file (a
    worktree's pointer): it is locked like a folder's."""
    root = Path(package) if package is not None else Path(__file__).resolve().parents[1]
    checkout = root.parent
    if not (checkout / "pyproject.toml").is_file():
        return []
    return [checkout / d for d in CHECKOUT_DIRS if (checkout / d).exists() and not (checkout / d).is_symlink()]


def locked_paths(package: Path | None = None) -> list[Path]:
    """Everything a workshop's lock takes from learners: :func:`reference_files` and :func:`checkout_dirs`."""
    return reference_files(package) + checkout_dirs(package)


def lock(paths, uid: int = 0, gid: int = 0, group_reads: bool = False) -> list[Path]:
    """Make each file readable by ``uid`` only (0600), or with ``group_reads`` by ``uid`` and group ``gid`` (0640):
    a learner's process cannot read it, the instructor's grader (that uid, or that group) can. A folder (the
    checkout's ``.git`` and ``tests``, which no grade reads) becomes its owner's alone (0700, the owner kept: the
    instructor who owns the checkout keeps their git), so nothing under it can be reached by others. Links are
    refused, never followed. Returns the paths locked."""
    import stat

    done = []
    for p in map(Path, paths):
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.fchmod(fd, 0o700)
            else:
                os.fchown(fd, uid, gid)
                os.fchmod(fd, 0o640 if group_reads else 0o600)
        finally:
            os.close(fd)
        done.append(p)
    return done


def compile_references(package: Path | None = None) -> None:
    """Write the reference modules' compiled copies now, so that :func:`lock` locks them too (a copy Python wrote
    later, as the grader imports them, takes the locked file's mode)."""
    import py_compile

    root = Path(package) if package is not None else Path(__file__).resolve().parents[1]
    for m in KERNEL_MODULES:
        src = root.joinpath(*m.split(".")[1:]).with_suffix(".py")
        if src.is_file():
            py_compile.compile(str(src), doraise=True)
