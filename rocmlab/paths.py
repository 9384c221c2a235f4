"""Where rocmlab's data lives: the repository checkout, or the copies packed into a wheel."""

from __future__ import annotations

import os
from pathlib import Path

from rocmlab import settings

_PKG = Path(__file__).resolve().parent


def _first_existing(*candidates: Path) -> Path:
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


def repo_root() -> Path:
    """The checkout holding this package (for an editable install), else the package folder."""
    parent = _PKG.parent
    return parent if (parent / "pyproject.toml").is_file() else _PKG


def datasets_dir() -> Path:
    return _first_existing(_PKG.parent / "datasets", _PKG / "_datasets")


def labs_dir() -> Path:
    return _first_existing(_PKG.parent / "labs", _PKG / "_labs")


def setup_dir() -> Path:
    """The set-up scripts (a checkout's ``scripts/setup``; a wheel's ``rocmlab/_setup``), which ``rocmlab setup``
    runs."""
    return _first_existing(_PKG.parent / "scripts" / "setup", _PKG / "_setup")


def kernels_dir() -> Path:
    """The example HIP kernels the labs and the inspector's tests compile (``rocmlab/hip/kernels``)."""
    return _PKG / "hip" / "kernels"


def exercises_dir() -> Path:
    """The exercise folders (``rocmlab/exercises/<id>/``: spec.yaml, starter, solution, reference)."""
    return _PKG / "exercises"


class HomeError(ValueError):
    """ROCMLAB_HOME (or ~/.cache/rocmlab) is not a folder that can be used; the message names the fix."""


def cache_dir() -> Path:
    """Per-user cache (compiled kernels, measured ceilings). ROCMLAB_HOME overrides it. Raises HomeError when it is
    not a folder (a file) or cannot be made."""
    explicit = settings.env("ROCMLAB_HOME")
    base = explicit or os.path.join(os.path.expanduser("~"), ".cache", "rocmlab")
    path = Path(base)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what = f"ROCMLAB_HOME={base}" if explicit else f"the cache folder {base}"
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            raise HomeError(f"{what} is not a folder (a file is in the way): set ROCMLAB_HOME to a folder"
                            + ("" if explicit else ", or move that file")) from None
        raise HomeError(f"{what} cannot be made ({exc.strerror}): set ROCMLAB_HOME to a folder this user can "
                        "write") from None
    return path


def home() -> Path:
    """``ROCMLAB_HOME``, else ``~/.cache/rocmlab`` (same folder as :func:`cache_dir`)."""
    return cache_dir()


def rocm_root() -> Path:
    """The offline ROCm root file system: ``ROCMLAB_ROCM_ROOT``, else ``ROCMLAB_HOME/rocm-<version>``."""
    explicit = settings.env("ROCMLAB_ROCM_ROOT")
    return Path(explicit) if explicit else cache_dir() / f"rocm-{settings.OFFLINE_ROCM_VERSION}"
