"""Every module of the package imports on its own, with no other module of the course loaded before it (whole
suite), and its control: a loop through a package's __init__ fails such a cold import.

Each module is imported in a child forked from one parent interpreter that has imported only third-party packages
(numpy and torch: about 2 s of every torch-using module's cold start, which is not what is checked here) and no
module of ``rocmlab``, so the child starts as cold as a fresh interpreter as far as the course is concerned. Triton is
not imported in the parent: the course sets Triton's interpreter mode before Triton's first import
(``rocmlab.course.puzzles.setup``). The rest of the architecture's rules are in tests/project/test_architecture.py
(quick tier)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("architecture", ROOT / "tools" / "architecture.py")
arch = importlib.util.module_from_spec(_spec)
sys.modules["architecture"] = arch          # dataclasses look their module up while the class is made
_spec.loader.exec_module(arch)

#: The parent: imports the third-party packages named in argv[1] (comma-separated), then forks one child per module
#: named after it; prints [[module, error], ...] for the modules whose import failed.
_PARENT = r"""
import json, os, signal, sys
for pre in filter(None, sys.argv[1].split(",")):
    __import__(pre)
assert not [m for m in sys.modules if m.split(".")[0] in sys.argv[2:]], "the parent imported a module under test"
failed = []
for name in sys.argv[2:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.alarm(120)
        code = 0
        try:
            __import__(name)
        except BaseException as exc:
            os.write(w, f"{type(exc).__name__}: {exc}".encode()[:2000])
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r) as said:
        msg = said.read()
    _, status = os.waitpid(pid, 0)
    if status:
        failed.append([name, msg or f"wait status {status}"])
print(json.dumps(failed))
"""


def cold_imports(names: list[str], path: Path, preload: str = "numpy,torch", parents: int = 2) -> list:
    """[module, error] for each of ``names`` that fails to import with no other module of its package loaded."""
    env = {**os.environ, "PYTHONPATH": str(path) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def run(part):
        done = subprocess.run([sys.executable, "-c", _PARENT, preload, *part], capture_output=True, text=True,
                              env=env, cwd=path, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    parts = [names[i::parents] for i in range(parents)]
    with ThreadPoolExecutor(parents) as pool:
        return [f for part in pool.map(run, [p for p in parts if p]) for f in part]


def test_every_module_imports_on_its_own():
    """A loop through a package's __init__ shows only in some import orders: start each module cold."""
    names = sorted(n for n in arch.parse(ROOT / "rocmlab") if "exercises." not in n)
    failed = cold_imports(names, ROOT)
    assert len(names) > 50 and failed == [], failed


def _loopy(tmp_path: Path, loop: bool) -> Path:
    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from loopy.a import f\n")
    (pkg / "a.py").write_text("from loopy.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text(("from loopy import f\n" if loop else "") + "\ndef g():\n    return 1\n")
    return tmp_path


def test_control_a_loop_through_a_package_init_fails_a_cold_import(tmp_path):
    failed = cold_imports(["loopy.a", "loopy.b"], _loopy(tmp_path, loop=True), preload="numpy", parents=1)
    assert "loopy.b" in [n for n, _ in failed] and all("circular import" in e for _, e in failed), failed
    r = subprocess.run([sys.executable, "-c", "import loopy.b"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode != 0 and "circular import" in r.stderr        # as a fresh interpreter sees it


def test_control_the_same_package_without_the_loop_imports(tmp_path):
    assert cold_imports(["loopy", "loopy.a", "loopy.b"], _loopy(tmp_path, loop=False), preload="numpy") == []
