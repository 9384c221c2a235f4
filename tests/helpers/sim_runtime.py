"""The CPU simulator's runtime object for a fresh ROCMLAB_HOME, copied from the session's cache.

Every simulator program links ``cache_dir()/hipsim/VERSION/runtime.o`` (``rocmlab.hip.compile.simulator_runtime``:
rocmlab/hip/sim/runtime.cpp at -O2, 5 s of a 2-core machine's time, and each grading process of a cold
``rocmlab grade --workers 2`` compiles it). A test that gives a program a home of its own, for what it checks there
(a cold build cache, the folders left after an interrupt), does not check this object: it gets the session's copy,
built there once if it is not yet (the session's other simulator builds use it too)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def seed_simulator_runtime(home) -> Path | None:
    """Copy the session's simulator runtime into ``home`` (a ROCMLAB_HOME folder); its path there, or None where
    the simulator cannot build here (no offline root: nothing to seed)."""
    from rocmlab.hip import compile as driver
    from rocmlab.hip import simulate

    sim = driver.find_toolchain(simulate.KIND)
    if sim is None:
        return None
    dest = Path(home) / "hipsim" / sim.version / "runtime.o"
    if dest.is_file():
        return dest
    session = os.environ.get("ROCMLAB_TEST_HOME")          # tests/conftest.py: the session's own home
    with pytest.MonkeyPatch.context() as mp:
        if session:
            mp.setenv("ROCMLAB_HOME", session)
        built = Path(driver.simulator_runtime(sim))
    if built.resolve() == dest.resolve():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".runtime.o.{os.getpid()}")
    shutil.copyfile(built, part)
    os.replace(part, dest)
    return dest
