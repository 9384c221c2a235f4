"""Issue 56, part B.3 (and B.2 for Lab 08): the re-grade decides "is it a Triton kernel" from the file the grader
writes, not from a class the learner's process can replace. Before: an answer that set
``triton.runtime.JITFunction`` to its own class, whose launch did the work with torch, passed the softmax puzzle
(1/1), and Lab 08's remap was one call of the toolkit's ``topology.xcd_remap`` inside a kernel (10/10). Now the
sandbox runs only the answer's ``@triton.jit`` functions, constants and triton imports
(:func:`rocmlab.grader.pyanswer.triton_kernel_module`), each body checked to be Triton: both attacks earn 0 with
a message naming the problem. Controls: an honest softmax kernel and an honest remap kernel, handed in the same way
with module-level code of their own around them, earn every point; the course's own reference file, handed in
whole, earns every point."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from rocmlab.course.labs.lab08_mi300x_package import task as lab08_task  # noqa: F401 - the package is there

SOFTMAX_RIGHT = '''import torch
import triton
import triton.language as tl
print("module-level code of the learner's own: dropped by the grader")
SCALE = 1.0


@triton.jit
def softmax_kernel(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, B1)
    x = tl.load(x_ptr + row * T + o, mask=o < T, other=-float("inf")) * SCALE
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(z_ptr + row * T + o, e / tl.sum(e, axis=0), mask=o < T)
'''

# the attack of the issue: the learner's own class stands for the kernel, and triton's class is replaced by it
SOFTMAX_FAKE = '''import torch
import triton
import triton.runtime
from triton.runtime import interpreter


class Kernel:
    def __getitem__(self, grid):
        def launch(x, z, N0, T, B1=None, **kw):
            z.view(-1)[: N0 * T] = torch.softmax(x.view(-1)[: N0 * T].view(N0, T).double(), 1).float().view(-1)
        return launch


triton.runtime.JITFunction = Kernel
interpreter.InterpretedFunction = Kernel
softmax_kernel = Kernel()
'''

REMAP_RIGHT = '''import triton
import triton.language as tl


@triton.jit
def xcd_remap_kernel(tile_ptr, n, XCDS: tl.constexpr):
    pid = tl.program_id(0)
    per = tl.cdiv(n, XCDS)
    tall = n % XCDS
    tall = tl.where(tall == 0, XCDS, tall)
    xcd = pid % XCDS
    local = pid // XCDS
    tile = tl.where(xcd < tall, xcd * per + local, tall * per + (xcd - tall) * (per - 1) + local)
    tl.store(tile_ptr + pid, tile)
'''

# the attack of the issue: the toolkit's function, called inside the kernel (the interpreter runs it as Python)
REMAP_TOOLKIT = '''import triton
import triton.language as tl
from rocmlab.machine.topology import xcd_remap


@triton.jit
def xcd_remap_kernel(tile_ptr, n, XCDS: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(tile_ptr + pid, xcd_remap(pid, n, XCDS))
'''

# the same with the class replaced: the toolkit's function fills the tiles on the host
REMAP_TOOLKIT_CLASS = '''import triton
import triton.runtime
from rocmlab.machine.topology import xcd_remap


class Kernel:
    def __getitem__(self, grid):
        def launch(tile, n, XCDS=8, **kw):
            programs = grid[0] if isinstance(grid, tuple) else int(n)
            for p in range(programs):
                tile[p] = xcd_remap(p, int(n), XCDS)
        return launch


triton.runtime.JITFunction = Kernel
xcd_remap_kernel = Kernel()
'''

SCRIPT = """
import json, sys
from rocmlab.course import puzzles as P; P.setup()
from rocmlab.grader import items
cases, seed = json.loads(sys.stdin.read())
out = {}
for name, (item, source) in cases.items():
    rep = items.get(item).regrade(source, seed, 120)
    out[name] = [rep.earned, rep.possible, " | ".join(c.message for c in rep.checks)[:600]]
print("RESULT " + json.dumps(out))
"""


def _regrade(cases: dict) -> dict:
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], input=json.dumps([cases, random.randrange(10**6)]),
                       env=env, capture_output=True, text=True, timeout=600)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_a_replaced_triton_class_and_a_toolkit_call_earn_nothing_and_honest_kernels_earn_every_point():
    reference = (Path(lab08_task.__file__).parent / "kernels.py").read_text().replace("def remap_kernel(",
                                                                                      "def xcd_remap_kernel(")
    got = _regrade({"softmax right": ("06-triton-on-amd/softmax", SOFTMAX_RIGHT),
                    "softmax fake class": ("06-triton-on-amd/softmax", SOFTMAX_FAKE),
                    "remap right": ("08-mi300x-package/xcd-remap", REMAP_RIGHT),
                    "remap reference file": ("08-mi300x-package/xcd-remap", reference),
                    "remap toolkit call": ("08-mi300x-package/xcd-remap", REMAP_TOOLKIT),
                    "remap toolkit class": ("08-mi300x-package/xcd-remap", REMAP_TOOLKIT_CLASS)})
    for name in ("softmax right", "remap right", "remap reference file"):       # controls
        earned, possible, msg = got[name]
        assert possible > 0 and earned == possible, (name, got[name])
    earned, _, msg = got["softmax fake class"]
    assert earned == 0 and "not a Triton kernel" in msg, got["softmax fake class"]
    earned, _, msg = got["remap toolkit call"]
    assert earned == 0 and "xcd_remap is not available in a Triton kernel" in msg, got["remap toolkit call"]
    earned, _, msg = got["remap toolkit class"]
    assert earned == 0 and "not a Triton kernel" in msg, got["remap toolkit class"]
