"""Shared fixtures: fake machines for platform detection (fake /dev, /sys trees and torch modules)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))   # nbtools


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
                shutil.copytree(entry, home / entry.name, symlinks=True)
        root = real / f"rocm-{OFFLINE_ROCM_VERSION}"
        if not os.environ.get("ROCMLAB_ROCM_ROOT") and root.is_dir():
            os.environ["ROCMLAB_ROCM_ROOT"] = str(root)
    os.environ["ROCMLAB_HOME"] = os.environ["ROCMLAB_TEST_HOME"] = str(home)
    os.environ["ROCMLAB_PROGRESS"] = str(home / "progress.json")
    os.environ.pop("ROCMLAB_EXCHANGE", None)
    return home


TEST_HOME = _own_rocmlab_home()


def fake_torch(hip=None, cuda=None, devices=(), version="2.99.0"):
    """A stand-in for the torch module with the attributes platform detection reads."""
    props = list(devices)
    return SimpleNamespace(
        __version__=version,
        __file__="/nonexistent/torch/__init__.py",
        version=SimpleNamespace(hip=hip, cuda=cuda),
        backends=SimpleNamespace(),
        cuda=SimpleNamespace(is_available=lambda: bool(props), device_count=lambda: len(props),
                             get_device_properties=lambda i: props[i]),
    )


def amd_props(name="AMD Instinct MI300X", target_id="gfx942:sramecc+:xnack-", cus=304, mem_gb=192.0, warp=64):
    return SimpleNamespace(name=name, gcnArchName=target_id, multi_processor_count=cus,
                           total_memory=int(mem_gb * 2**30), warp_size=warp, major=9, minor=4)


def nvidia_props(name="NVIDIA H200", major=9, minor=0, sms=132, mem_gb=141.0):
    return SimpleNamespace(name=name, multi_processor_count=sms, total_memory=int(mem_gb * 2**30),
                           warp_size=32, major=major, minor=minor)


class FakeMachine:
    """A filesystem root under tmp_path with the files detection reads."""

    def __init__(self, root: Path):
        self.root = root
        self.write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9000\nprocessor\t: 1\n")
        self.write("proc/meminfo", "MemTotal:       16000000 kB\n")
        self.write("proc/sys/kernel/osrelease", "6.1.0-test-amd64\n")

    def write(self, rel: str, text: str = "") -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def add_kfd_gpu(self, node: int, target_version: int, simds: int, wave: int, mem_bytes: int, name="gpu"):
        self.write("dev/kfd")
        self.write(f"dev/dri/renderD{128 + node}")
        base = f"sys/class/kfd/kfd/topology/nodes/{node}"
        self.write(f"{base}/properties",
                   f"cpu_cores_count 0\nsimd_count {simds}\nsimd_per_cu 4\nwave_front_size {wave}\n"
                   f"gfx_target_version {target_version}\n")
        self.write(f"{base}/name", name + "\n")
        self.write(f"{base}/mem_banks/0/properties", f"heap_type 1\nsize_in_bytes {mem_bytes}\n")

    def add_kfd_cpu_node(self):
        self.write("sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n")
        self.write("sys/class/kfd/kfd/topology/nodes/0/name", "\n")


@pytest.fixture
def machine(tmp_path):
    return FakeMachine(tmp_path / "root")


@pytest.fixture
def rng():
    return random.Random()


def pytest_terminal_summary(terminalreporter):
    """The fuzz tests' case counts of this run (tests/test_sse_fuzz.py), in the summary without -s."""
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


#: Tests that change the machine itself (Unix users and their homes, apt's state, system services): under
#: pytest-xdist they run one at a time, in one worker; everything else is spread test by test.
_MACHINE_WIDE = ("tests/hub/", "tests/test_setup.py")
#: Modules whose tests share a module fixture that takes 10-30 s (the ported corpus, a live vLLM server, the
#: import graph, a binder environment): each runs in one worker, so the fixture is built once, not once per worker.
_ONE_WORKER = ("tests/test_port.py", "tests/test_serve_live.py", "tests/test_architecture.py", "tests/test_binder.py")


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
