"""The atomics exercises give the same output with the sanitizer's checks on and off (atomics take part in lockstep
either way): each reference solution runs on fresh random inputs of the exercise's run size, with one CPU thread
running the blocks (with two, blocks' float atomics interleave in another order from run to run, on and off alike),
and the two outputs are equal to the bit. The lockstep difference itself, with its failing control, is
tests/sim/test_sim_atomic_lockstep.py."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from rocmlab.grader import libs
from rocmlab.grader import rlx as gio
from rocmlab.grader.spec import load
from rocmlab.grader.static import include_dir
from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")


@pytest.mark.parametrize("exercise", ["fp-atomics", "histogram-atomics"])
def test_the_atomics_exercises_give_the_same_output_with_the_checks_on_and_off(exercise, tmp_path):
    ex = load(exercise)
    extra, _ = libs.flags(ex.libraries, False)
    res = build.compile(ex.solution, toolchain=simulate.KIND, flags=["-I", include_dir(), *extra],
                        name=f"{ex.id}-checks-off")
    assert res.ok, res.summary()
    inputs = ex.reference_module().make_inputs(np.random.default_rng(random.getrandbits(32)), dict(ex.sizes["run"]))
    inp = str(tmp_path / "input.bin")
    gio.write_arrays(inp, inputs.values())
    outputs = {}
    for checks in ("1", "0"):
        out = str(tmp_path / f"out-{checks}.bin")
        done = build.run(res, [inp, out], env={"HIPSIM_CHECKS": checks, "HIPSIM_WORKERS": "1"})
        assert done.returncode == 0 and simulate.findings(done.stderr) == [], done.stderr
        with open(out, "rb") as fh:
            outputs[checks] = fh.read()
    assert os.path.getsize(tmp_path / "out-1.bin") > 0 and outputs["1"].strip(b"\0")
    assert outputs["1"] == outputs["0"]
