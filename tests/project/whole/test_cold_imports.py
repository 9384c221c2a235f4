"""Every module of the package imports on its own in a fresh interpreter (whole suite: one interpreter per module,
about 200 of them, minutes of CPU on a 2-core machine), and its control: a loop through a package's __init__ fails
such a cold import. The rest of the architecture's rules are in tests/project/test_architecture.py (quick tier)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("architecture", ROOT / "tools" / "architecture.py")
arch = importlib.util.module_from_spec(_spec)
sys.modules["architecture"] = arch          # dataclasses look their module up while the class is made
_spec.loader.exec_module(arch)


def test_every_module_imports_on_its_own_in_a_fresh_interpreter():
    """A loop through a package's __init__ shows only in some import orders: start each module cold."""
    import os
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(n for n in arch.parse(ROOT / "rocmlab") if "exercises." not in n)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def cold(name):
        r = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, env=env,
                           timeout=120)
        return name, r.returncode, (r.stderr.strip().splitlines() or [""])[-1]

    with ThreadPoolExecutor(4) as pool:
        failed = [(n, err) for n, rc, err in pool.map(cold, names) if rc]
    assert len(names) > 50 and failed == [], failed


def test_control_a_loop_through_a_package_init_fails_a_cold_import(tmp_path):
    import subprocess

    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from loopy.a import f\n")
    (pkg / "a.py").write_text("from loopy.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("from loopy import f\n\ndef g():\n    return 1\n")
    r = subprocess.run([sys.executable, "-c", "import loopy.b"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode != 0 and "circular import" in r.stderr
