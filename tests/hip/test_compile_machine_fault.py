"""A fault of the machine is never cached and never scored: a header the compiler's user may not read (the modes of
files on this machine, not the source) fails the build without a cache entry, and after the fix the next build
succeeds without clearing any cache. Its control: a source error is cached."""

from __future__ import annotations

import os
import secrets

import pytest

from rocmlab.hip import build
from rocmlab.hip import compile as driver

pytestmark = pytest.mark.skipif(driver.find_toolchain("offline") is None,
                                reason="no offline ROCm root (bash scripts/setup/20-rocm-root.sh)")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMLAB_HOME", str(tmp_path / "home"))


def _source(token: str) -> str:
    return (f'#include <hip/hip_runtime.h>\n#include "fault_{token}.h"\n'
            "__global__ void k(int* p) { p[0] = VALUE; }\nint main() { return 0; }\n")


def test_unreadable_header_is_not_cached_and_builds_after_the_fix(tmp_path):
    token = secrets.token_hex(6)
    inc = tmp_path / "inc"
    inc.mkdir()
    os.chmod(tmp_path, 0o755)
    header = inc / f"fault_{token}.h"
    header.write_text(f"#define VALUE {int(token[:4], 16)}\n")
    os.chmod(header, 0o000 if os.geteuid() else 0o600)      # the compiler's user may not read it
    src = _source(token)
    first = build.compile(src, flags=[f"-I{inc}"])
    assert not first.ok and first.machine_fault and str(header) in first.machine_fault
    assert any("cannot read" in d.message for d in first.errors)
    again = build.compile(src, flags=[f"-I{inc}"])
    assert not again.cached and not again.ok                   # not cached: tried again, still refused
    os.chmod(header, 0o644)                                     # the fix; no cache is cleared
    fixed = build.compile(src, flags=[f"-I{inc}"])
    assert fixed.ok and not fixed.cached and not fixed.machine_fault, fixed.summary()


def test_control_a_source_error_is_cached_and_not_the_machines(tmp_path):
    token = secrets.token_hex(6)
    src = f"#include <hip/hip_runtime.h>\n__global__ void k(int* p) {{ p[0] = undeclared_{token}; }}\n"
    first = build.compile(src)
    assert not first.ok and not first.machine_fault
    second = build.compile(src)
    assert second.cached and not second.ok
