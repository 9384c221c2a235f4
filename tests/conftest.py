"""The suite's one conftest: the tier rule (which tests ``./go test`` runs), the session's own ROCMLAB_HOME, the
parallel schedule, and the shared fixtures. Helper modules live in tests/helpers/ (tests/README.md)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest


def _own_rocmlab_home() -> Path:
    """The whole session (and every program it starts: notebooks, the CLI, pytest-xdist's workers) gets its own
    ROCMLAB_HOME and ROCMLAB_PROGRESS, so that no test reads or writes the user's real progress record. The
    user's small caches (compiled headers, the tiny model: tens of MB) are copied in, never their records; the
    offline ROCm root is used where it is (ROCMLAB_ROCM_ROOT). The folder sits beside the real home, not in
    /tmp (a sandboxed program gets a /tmp of its own, which would hide it), and is removed at the end."""
    import atexit
    import os
    import shutil
    import tempfile

    if os.environ.get("ROCMLAB_TEST_HOME"):            # a worker or a program of this session: already set
        return Path(os.environ["ROCMLAB_TEST_HOME"])
    from rocmlab.settings import OFFLINE_ROCM_VERSION

    real = Path(os.environ.get("ROCMLAB_HOME") or Path.home() / ".cache" / "rocmlab")
    real.parent.mkdir(parents=True, exist_ok=True)
    for old in real.parent.glob("rocmlab-test-home-*"):       # left by a session that was killed
        try:
            os.kill(int((old / ".session-pid").read_text()), 0)
        except ProcessLookupError:
            shutil.rmtree(old, True)
        except (OSError, ValueError):
            pass
    home = Path(tempfile.mkdtemp(prefix="rocmlab-test-home-", dir=real.parent))
    os.chmod(home, 0o755)
    (home / ".session-pid").write_text(str(os.getpid()))
    atexit.register(shutil.rmtree, home, True)
    if real.is_dir():
        for entry in real.iterdir():
            if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith(("rocm-", ".")):
                try:                # a cache: what another program removes while it is copied is not needed
                    shutil.copytree(entry, home / entry.name, symlinks=True,
                                    ignore=shutil.ignore_patterns("tmp-*"))
                except shutil.Error:
                    pass
        root = real / f"rocm-{OFFLINE_ROCM_VERSION}"
        if not os.environ.get("ROCMLAB_ROCM_ROOT") and root.is_dir():
            os.environ["ROCMLAB_ROCM_ROOT"] = str(root)
    os.environ["ROCMLAB_HOME"] = os.environ["ROCMLAB_TEST_HOME"] = str(home)
    os.environ["ROCMLAB_PROGRESS"] = str(home / "progress.json")
    os.environ.pop("ROCMLAB_EXCHANGE", None)
    return home


TEST_HOME = _own_rocmlab_home()


def _one_thread_per_worker() -> None:
    """Under pytest-xdist each worker is a process of its own, one per core (and one more): torch's and OpenMP's
    own pools of one thread per core in every worker oversubscribe the cores, and small tensor work then waits on
    spinning threads (a Lab 05 grade: 7x slower at 3 workers on 2 cores). Each worker, and the programs it starts,
    get one thread unless the caller set OMP_NUM_THREADS. Set here, before any test imports torch."""
    import os

    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("MKL_NUM_THREADS", "1")


_one_thread_per_worker()


@pytest.fixture
def machine(tmp_path):
    """A fake machine's filesystem root (tests/helpers/fake_machine.py)."""
    from tests.helpers.fake_machine import FakeMachine

    return FakeMachine(tmp_path / "root")


@pytest.fixture
def rng():
    return random.Random()


def pytest_terminal_summary(terminalreporter):
    """The fuzz tests' case counts of this run (tests/serve/whole/test_sse_fuzz.py), in the summary without -s."""
    for name, mod in list(sys.modules.items()):
        counts = getattr(mod, "FUZZ_COUNTS", None) if name.endswith("test_sse_fuzz") else None
        if counts:
            terminalreporter.write_line(f"SSE fuzz: {sum(counts.values())} cases this run ({counts})")


_TIMELINE: list[dict] = []


def pytest_runtest_logreport(report):
    """Each test phase's start, stop and worker, kept for test-artifacts/suite-timeline.json (where the suite's
    time goes, and which worker waits at the end)."""
    _TIMELINE.append({"test": report.nodeid, "when": report.when, "start": report.start, "stop": report.stop,
                      "worker": getattr(report, "node", None) and report.node.gateway.id or "main"})


def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput") or not _TIMELINE:
        return                     # a pytest-xdist worker: the controller writes the one timeline
    out = Path(session.config.rootpath) / "test-artifacts" / "suite-timeline.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_TIMELINE))


@pytest.fixture
def fake():
    """make(**kw) -> a started rocmlab.serve.fakeserver.FakeServer; all are closed after the test."""
    from rocmlab.serve.fakeserver import FakeServer

    servers = []

    def make(**kw):
        s = FakeServer(**kw)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


@pytest.fixture(autouse=True)
def _own_progress_record(tmp_path_factory, monkeypatch):
    """Tests never write the user's progress record (rocmlab.course.progress): each test gets its own file."""
    from rocmlab.course import progress

    path = tmp_path_factory.mktemp("progress") / "progress.json"
    monkeypatch.setattr(progress, "progress_file", lambda: path)
    return path


#: The tier rule, in one place: a test's tier is its folder's. Every test file sits in a room, ``tests/<room>/``
#: (named as the package's parts are). ``./go test`` runs the quick tier (marker ``quick``); ``./go test all`` runs
#: every tier. Whole-suite-only (marker ``whole``): the rooms in :data:`WHOLE_ROOMS`, and a room's ``whole/``
#: folder (its servers, browsers, every-notebook runs, sweeps). A file anywhere else has no tier: collecting it is
#: an error that names the file and the fix (tests/project/test_tiers.py checks every file).
ROOMS = ("attacks", "browser", "comm", "course", "docs", "grader", "hip", "hub", "labs", "machine", "notebooks", "port",
         "profile", "project", "sandbox", "serve", "setup", "sim")
WHOLE_ROOMS = ("browser", "hub")
TIERS = ("quick", "whole")


def tier_of(path: str) -> str | None:
    """``"quick"``, ``"whole"``, or None (no tier) for a test file's path relative to the repository."""
    parts = Path(path.replace("\\", "/")).parts
    if len(parts) < 3 or parts[0] != "tests" or parts[1] not in ROOMS:
        return None
    if parts[1] in WHOLE_ROOMS:
        return "whole"
    if len(parts) == 3:
        return "quick"
    return "whole" if len(parts) == 4 and parts[2] == "whole" else None


def pytest_ignore_collect(collection_path, config):
    """With ``-m quick`` (./go test) the whole suite's files are not even imported: they may need what only
    ``./go test all`` installs (jupyterhub, playwright, nbval)."""
    if config.getoption("markexpr", "") != "quick" or not collection_path.name.startswith("test_"):
        return None
    try:
        rel = collection_path.resolve().relative_to(Path(config.rootpath)).as_posix()
    except ValueError:
        return None
    return True if tier_of(rel) == "whole" else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test gets its tier's marker (and ``hub`` / ``browser`` for those rooms) before ``-m`` selects."""
    root = Path(config.rootpath)
    untiered = set()
    for item in items:
        try:
            rel = Path(str(item.path)).resolve().relative_to(root).as_posix()
        except ValueError:                      # a file outside the repository (a test's own planted suite)
            continue
        if not Path(rel).name.startswith("test_"):
            continue                            # a helper run by path (tests/helpers/grades_of_record_cases.py)
        tier = tier_of(rel)
        if tier is None:
            untiered.add(rel)
            continue
        item.add_marker(tier)
        if rel.split("/")[1] in WHOLE_ROOMS:
            item.add_marker(rel.split("/")[1])
    items[:] = sorted(items, key=_start_rank)     # stable: the long ones first, the rest in collection order
    if untiered:
        raise pytest.UsageError(
            "these test files have no tier: " + ", ".join(sorted(untiered)) + ". Fix: move each into its room, "
            "tests/<room>/ (quick) or tests/<room>/whole/ (whole suite only), with git mv; rooms: "
            + ", ".join(ROOMS) + " (tests/README.md)")


#: The longest units of work, measured (test-artifacts/suite-timeline.json of a fresh-clone run), in the order they
#: start: pytest-xdist hands out units in collection order, so a long unit collected last runs alone at the end
#: while the other workers idle (the wheel's 12-lab preflight did: 11 min of tail). Started first, they overlap the
#: rest. Prefixes of test ids; a test not listed keeps its place after them.
_LONG_FIRST = ("tests/hub/", "tests/setup/whole/test_setup.py",           # one unit, "machine-wide": ~25 min
               "tests/project/whole/test_wheel.py", "tests/sandbox/whole/test_container_fallback.py",
               "tests/docs/whole/test_site.py", "tests/setup/whole/test_binder.py",
               "tests/grader/whole/test_untouched_starters.py",
               "tests/browser/test_browser_views.py",
               # the quick tier's longest
               "tests/labs/test_lab_tasks.py", "tests/sim/test_sim_sanitizer.py", "tests/sim/whole/test_sim_trust.py",
               "tests/grader/test_grader.py")


def _start_rank(item) -> int:
    nodeid = item.nodeid.replace("\\", "/")
    return next((i for i, p in enumerate(_LONG_FIRST) if nodeid.startswith(p)), len(_LONG_FIRST))


#: Tests that change the machine itself (Unix users and their homes, apt's state, system services): under
#: pytest-xdist they run one at a time, in one worker; everything else is spread test by test.
_MACHINE_WIDE = ("tests/hub/", "tests/setup/whole/test_setup.py")
#: Modules whose tests share a module fixture that takes 10-30 s (the ported corpus, a live vLLM server, the
#: import graph, a binder environment): each runs in one worker, so the fixture is built once, not once per worker.
_ONE_WORKER = ("tests/port/whole/test_port.py", "tests/serve/whole/test_serve_live.py",
               "tests/project/test_architecture.py", "tests/setup/whole/test_binder.py",
               # the site's build writes docs/reference/generated: two workers building at once broke each other
               "tests/docs/whole/test_site.py",
               # every exercise's untouched starter and port graded once for the module
               "tests/grader/whole/test_untouched_starters.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler, with the machine-wide tests as one unit of work and each :data:`_ONE_WORKER`
    module as one; every other test is a unit of its own. (Not ``xdist_group`` marks with ``--dist loadgroup``:
    on pytest 9.2 their grouping is silently lost, pytest-dev/pytest-xdist#1386.)"""
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of_work(nodeid)

    return SuiteScheduling(config, log)


def unit_of_work(nodeid: str) -> str:
    """The unit a test is scheduled in: "machine-wide", its module for :data:`_ONE_WORKER`, else the test itself."""
    path = nodeid.replace("\\", "/")
    if path.startswith(_MACHINE_WIDE):
        return "machine-wide"
    module = path.split("::")[0]
    return module if module in _ONE_WORKER else nodeid
