"""The sandbox must stop hangs, report crashes, cap output and memory, and keep warnings harmless."""

from __future__ import annotations

import sys

from rocmlab.sandbox import run_limited

PY = sys.executable


def test_ok_and_stderr_warning_is_not_failure():
    r = run_limited([PY, "-c", "import sys; print('hi'); print('warning: x', file=sys.stderr)"])
    assert r.ok and r.stdout == "hi\n" and "warning" in r.stderr


def test_timeout_kills_the_group():
    r = run_limited([PY, "-c", "import subprocess,time; subprocess.Popen(['sleep','60']); time.sleep(60)"],
                    timeout_s=1.0)
    assert r.timed_out and not r.ok and r.returncode is None
    assert r.duration_s < 10 and "time limit" in r.explain()


def test_segfault_is_explained():
    r = run_limited([PY, "-c", "import ctypes; ctypes.string_at(0)"])
    assert r.signal == "SIGSEGV" and "segmentation fault" in r.explain()


def test_output_cap():
    r = run_limited([PY, "-c", "print('x' * 5_000_000)"], output_bytes=1000)
    assert r.ok and len(r.stdout) == 1000 and r.stdout_truncated and "truncated" in r.explain()


def test_memory_limit():
    r = run_limited([PY, "-c", "b = bytearray(2 << 30)"], memory_bytes=512 << 20)
    assert not r.ok and ("MemoryError" in r.stderr or r.signal)


def test_exit_status():
    r = run_limited([PY, "-c", "import sys; print('bad input', file=sys.stderr); sys.exit(3)"])
    assert r.returncode == 3 and "status 3" in r.explain() and "bad input" in r.explain()


def test_missing_program():
    import pytest
    with pytest.raises(FileNotFoundError, match="not found"):
        run_limited(["/nonexistent/program"])
