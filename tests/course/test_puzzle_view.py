"""rocmlab.course.puzzle_view: what each Triton program loaded and stored, recorded in the CPU interpreter.
An unmasked load past the end is named with its program; a kernel that forgets its program id shows every
program storing the same elements; the reference kernel (the control) touches nothing out of bounds. Runs in
a child process: the interpreter must be chosen before triton is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("triton")

CHILD = textwrap.dedent("""
    import json, sys
    import torch
    from rocmlab.course import puzzles as P
    from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06
    P.setup()
    import triton, triton.language as tl
    from rocmlab.course import puzzle_view as V

    @triton.jit
    def unmasked_load(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
        offs = tl.program_id(0) * B0 + tl.arange(0, B0)
        x = tl.load(x_ptr + offs)                       # the bug: no mask
        y = tl.load(y_ptr + offs, mask=offs < N0)
        tl.store(z_ptr + offs, x + y, mask=offs < N0)

    @triton.jit
    def no_pid(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
        offs = tl.arange(0, B0)                         # the bug: every program does block 0
        m = offs < N0
        tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    out = {}
    seed = int(sys.argv[1])
    for name, k in (("reference", P.reference_kernel("add-vectors")), ("unmasked", unmasked_load),
                    ("no_pid", no_pid)):
        p = P.find("add-vectors")
        g = torch.Generator().manual_seed(seed)
        sizes = p.draw(g)
        case = p.build(sizes, g)
        with V.recording() as tr:
            k[case.grid](*case.args, **case.meta)
        bufs = [V.Buffer.of(n, v, v._rocmlab_guard) for n, v in case.inputs.items() if isinstance(v, torch.Tensor)]
        bufs.append(V.Buffer.of("z", case.out, case.out_buf))
        accs, unknown = V.accesses(tr, bufs)
        stores = [a for a in accs if a.kind == "store"]
        out[name] = dict(n=sizes["N0"], programs=case.grid[0], oob=V.out_of_bounds(tr, bufs), unknown=unknown,
                         stored=sorted(int(i) for a in stores for i in a.indices),
                         html=V.view_html(tr, bufs))
    with V.recording() as nothing:
        pass
    out["empty"] = V.view_html(nothing, [])
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def views():
    seed = str(int.from_bytes(os.urandom(4), "little"))
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", CHILD, seed], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_reference_stores_every_element_once_and_touches_nothing_out_of_bounds(views):
    ref = views["reference"]
    assert ref["oob"] == [] and ref["unknown"] == 0
    assert ref["stored"] == list(range(ref["n"]))                      # each element of z, exactly once
    assert ref["html"].count("<svg class='rocmlab-puzzle-grid'") == 3  # x, y and z
    assert ref["html"].count("<tr>") == 1 + min(ref["programs"], 12)   # header + one row per program


def test_an_unmasked_load_past_the_end_is_named_with_its_program(views):
    bad = views["unmasked"]
    last = bad["programs"] - 1
    past = bad["programs"] * 256 - bad["n"]
    if past == 0:
        pytest.skip("the drawn size is a multiple of the block: nothing is past the end")
    assert bad["oob"] == [f"program ({last}): load: {past} past the end of x"], bad["oob"]
    assert "past the end of x" in bad["html"]


def test_a_kernel_without_its_program_id_stores_the_same_elements_from_every_program(views):
    bad = views["no_pid"]
    assert len(bad["stored"]) == bad["programs"] * 256 and len(set(bad["stored"])) == 256
    assert "fill='#cf222e'" in bad["html"]                             # cells drawn as stored twice
    assert "fill='#cf222e'" not in views["reference"]["html"]          # the control: none in the reference


def test_nothing_recorded_draws_nothing(views):
    assert views["empty"] == ""
