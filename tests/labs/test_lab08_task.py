"""Lab 08's graded task (the XCD remap kernel) in Triton's CPU interpreter, in its own process: the
interpreter must be chosen before triton is imported (tests/course/test_course_puzzles.py does the same)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r'''
from rocmlab.course import puzzles as P
P.setup()
from rocmlab.course.labs.lab08_mi300x_package import kernels as K
from rocmlab.course.labs.lab08_mi300x_package import task as X
ok = X.grade(K.remap_kernel, record=False)
assert ok.full_marks and ok.earned == 10, ok.to_text()
ident = X.grade(K.remap_identity_kernel, record=False)
assert ident.check("contiguous-per-xcd").status == "failed", ident.to_text()
assert "not one contiguous range" in ident.check("contiguous-per-xcd").message
assert ident.check("l2-model").status == "failed" and "with the XCD remap" in ident.check("l2-model").message
floor = X.grade(K.remap_floor_kernel, record=False)
assert floor.check("every-tile-once").status == "failed", floor.to_text()
assert "computed more than once" in floor.check("every-tile-once").message
import triton, triton.language as tl
@triton.jit
def raises(tile_ptr, n, XCDS: tl.constexpr):     # a name that does not exist
    tl.store(tile_ptr + tl.program_id(0), tile)
bad = X.grade(raises, record=False)
assert bad.check("runs").status == "not run" and "did not run" in bad.check("runs").message, bad.to_text()
print("ok")
'''


def test_xcd_remap_task_catches_wrong_remaps():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]


def test_l2_model_takes_a_remap_of_ones_own():
    from rocmlab.machine import topology as T
    n = 16 * 20
    ref = [T.xcd_remap(p, n) for p in range(n)]
    a = T.gemm_l2_traffic(4096, 5120, 1024, mapping="xcd-remap+grouped")
    b = T.gemm_l2_traffic(4096, 5120, 1024, mapping="grouped", remap=ref)
    c = T.gemm_l2_traffic(4096, 5120, 1024, mapping="grouped", remap=list(range(n)))
    assert a.l2_fill_bytes == b.l2_fill_bytes < c.l2_fill_bytes
    assert c.l2_fill_bytes == T.gemm_l2_traffic(4096, 5120, 1024, mapping="grouped").l2_fill_bytes
