"""Issue 56, hostile learners round 4 (part C): what was left of parts A and B. Each attack has its control: the
honest answer scores, or the same thing without the defence shows what the attack got.

- Lab 05's answer was one call of the readable task module (``reference_choose(s)``, or ``best(s, errors(kind,
  seed))``): the measurements and the rule now live in a withheld module (``lab05 .../reference.py``, in the lock;
  the scenario, zones and cost-model time it shares with the task in ``scenario.py``);
  a learner's preview grades the answers' form and says plainly that the instructor judges the choices; the
  instructor's grade is the one it was;
- ``__has_include("/etc/passwd")`` (and ``#include "/etc/passwd"``) in a learner's source: a compile sees only the
  loader's files of ``/etc`` (the host's, or the offline root's), so a probe of the machine's files finds nothing;
  a Python answer in the re-grade likewise cannot read the grading machine's /etc and hand it back in its feedback;
- Lab 07 and Lab 08: no single toolkit call answers the task (Lab 07: the inverse the calculator does not compute;
  Lab 08: a kernel that calls the toolkit is refused);
- Triton: "is it a Triton kernel" is decided from the kernel object the grader launches, with triton's own classes
  taken before the answer's file is loaded (a replaced ``JITFunction`` is refused even by the runner alone);
- the hub tests put back the modes of the checkout they lock.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from rocmlab import sandbox
from rocmlab.grader import items
from rocmlab.hip import build
from rocmlab.hip import compile as driver
from rocmlab.workshop import references as R

ROOT = Path(__file__).resolve().parents[3]


# --- 1. Lab 05: nothing a learner reads computes the answer ------------------------------------------------------

LAB05 = "05-quickreduce-tuning/codec-per-message"

#: The honest method, written with the toolkit a learner has (torch_codec, costmodel): measure each option on a
#: sample of one's own, keep those within the budget, take the fastest in the cost model.
HONEST05 = textwrap.dedent("""
    from rocmlab.comm import costmodel as CM
    from rocmlab.comm import torch_codec as C


    def choose(s):
        x = C.activations(s.kind, 1 << 15, seed=20261206)
        best = None
        for name in C.CODECS:
            codec0 = C.get_codec(name)
            for block in (C.BLOCK_SIZES if codec0.quantized else (32,)):
                codec = C.get_codec(name, block)
                err = C.error_metrics(x, C.decode_reference(C.encode_reference(x, codec))).rel_l2
                if err > s.budget:
                    continue
                t = CM.latency(codec, s.message_bytes, s.system, s.world)["total_s"]
                if best is None or t < best[0]:
                    best = (t, name, block)
        return best[1], best[2]
""")

#: The attack of the issue: one call of the task module a learner can read.
ONE_CALL05 = textwrap.dedent("""
    from rocmlab.course.labs.lab05_quickreduce_tuning import task


    def choose(s):
        return task.reference_choose(s)
""")

#: The same through the grader's own measurements and rule, as the task module shipped them.
TWO_CALLS05 = textwrap.dedent("""
    from rocmlab.course.labs.lab05_quickreduce_tuning import task


    def choose(s):
        return task.best(s, task.errors(s.kind, 1))[0]
""")

PREVIEW05 = textwrap.dedent("""
    import json, sys
    from rocmlab.workshop import references
    references.install()
    from rocmlab.course.labs.lab05_quickreduce_tuning import task
    ns = {}
    exec(sys.stdin.read(), ns)
    rep = task.grade(ns["choose"], seed=int(sys.argv[1]), record=False)
    print("RESULT " + json.dumps([rep.earned, rep.available, rep.possible,
                                  [[c.id, c.status, c.message] for c in rep.checks]]))
""")


def _preview05(source: str, seed: int, withheld: bool) -> tuple:
    """Lab 05's grade in a learner's own process (a preview), with or without ROCMLAB_REFERENCES=off."""
    env = {**os.environ, R.ENV: "off" if withheld else ""}
    done = subprocess.run([sys.executable, "-c", PREVIEW05, str(seed)], input=source, env=env, capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, done.stdout[-2000:] + done.stderr[-3000:]
    return tuple(json.loads(line[len("RESULT "):]))


def test_lab05_the_readable_task_module_holds_no_answer_and_the_preview_says_what_it_cannot_check():
    """Before: ``task.reference_choose(s)`` (or ``task.best(s, task.errors(kind, seed))``) in a learner's answer:
    10/10 in the learner's preview and, pasted, in the instructor's re-grade. Now the task module holds neither; in a
    workshop learner's server both calls are refused, and the preview grades what it can (the answers' form, 2
    points), showing each choice's error and saying that the instructor's grader judges the choices (8 points)."""
    from rocmlab.course.labs.lab05_quickreduce_tuning import reference, scenario, task

    for name in ("errors", "spread", "best", "judge", "choose"):          # the modules a learner reads hold none
        assert name in vars(reference) and name not in vars(task) and name not in vars(scenario), name
    assert "rocmlab.course.labs.lab05_quickreduce_tuning.reference" in R.KERNEL_MODULES       # in the lock
    seed = random.randrange(10**6)
    for attack, refusal in ((ONE_CALL05, "held by the instructor"), (TWO_CALLS05, "has no attribute 'best'")):
        earned, available, possible, checks = _preview05(attack, seed, withheld=True)
        assert earned == 0 and possible == 10, checks
        assert checks[0][1] == "failed" and refusal in checks[0][2], checks[0]
    earned, available, possible, checks = _preview05(HONEST05, seed, withheld=True)
    assert (earned, available, possible) == (2, 2, 10), checks
    assert checks[0][:2] == ["answers", "passed"]
    for cid, status, message in checks[1:]:
        assert status == "skipped" and "on one fresh sample" in message and task.HELD in message, (cid, message)
    # controls: where references are kept (the instructor, self-study) the same honest answer earns every point in
    # the preview, and in the instructor's sandboxed re-grade; the task module's old one call still earns every
    # point there in self-study (a reference, as Labs 03 and 07 keep theirs)
    earned, available, possible, checks = _preview05(HONEST05, seed, withheld=False)
    assert earned == available == possible == 10, checks
    assert _preview05(ONE_CALL05, seed, withheld=False)[0] == 10
    regrade = items.get(LAB05).regrade(HONEST05, seed, 300)
    assert regrade.full_marks and regrade.earned == 10, regrade.to_text()
    # the re-grade runs the answer without the course: an import of the task module is the learner's error
    attack = items.get(LAB05).regrade(ONE_CALL05, seed, 300)
    assert attack.earned == 0 and "No module named 'rocmlab.course'" in attack.to_text(), attack.to_text()


def test_lab05_a_locked_reference_file_is_the_same_plain_preview():
    """A learner who clears ROCMLAB_REFERENCES meets the lock (PermissionError on the file): the grade still ends
    as the preview, not with a traceback. Staged by making the import fail as the lock makes it."""
    from rocmlab.course.labs.lab05_quickreduce_tuning import task

    script = textwrap.dedent("""
        import importlib.abc, json, sys

        class Locked(importlib.abc.MetaPathFinder):      # what opening a 0600 root file gives another uid
            def find_spec(self, name, path=None, target=None):
                if name.endswith("lab05_quickreduce_tuning.reference"):
                    raise PermissionError(13, "Permission denied", "reference.py")

        sys.meta_path.insert(0, Locked())
        from rocmlab.course.labs.lab05_quickreduce_tuning import task
        rep = task.grade(lambda s: ("q8", 32), seed=3, record=False)
        print("RESULT " + json.dumps([rep.earned, rep.available, [c.status for c in rep.checks]]))
    """)
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, R.ENV: ""}, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, done.stderr[-3000:]
    earned, available, statuses = json.loads(line[len("RESULT "):])
    assert (earned, available) == (2, 2) and statuses == ["passed"] + ["skipped"] * 4, statuses
    # control: unlocked, the same answer is judged (q8 block 32 is not the fastest within every budget)
    rep = task.grade(lambda s: ("q8", 32), seed=3, record=False)
    assert rep.available == 10 and "skipped" not in [c.status for c in rep.checks], rep.to_text()


# --- 2. a compile sees nothing of the machine's /etc -------------------------------------------------------------

def _probe(path: str) -> str:
    return (f'#include <hip/hip_runtime.h>\n#if __has_include("{path}")\n#error PROBE_FOUND\n'
            "#else\n#error PROBE_MISSING\n#endif\nint main() { return 0; }\n")


def _found(source: str, toolchain: str, lang: str = "hip", target: str | None = None) -> str:
    res = build.compile(source, toolchain=toolchain, lang=lang, target=target, use_cache=False)
    text = res.log + " ".join(d.message for d in res.diagnostics)
    return "found" if "PROBE_FOUND" in text else "missing" if "PROBE_MISSING" in text else f"neither: {text[-800:]}"


def _toolchains() -> list[tuple[str, str, str | None]]:
    from rocmlab.hip import simulate

    out = [(k, "hip", None) for k in ("offline", "rocm") if driver.find_toolchain(k) is not None]
    if driver.find_toolchain("nvcc") is not None:
        out.append(("nvcc", "cuda", None))
    if not simulate.problem():
        out.append((simulate.KIND, "hip", None))
    return out


@pytest.mark.skipif(sandbox.isolation().level != sandbox.BWRAP,
                    reason="the compile's own /etc needs bubblewrap (the fallbacks show /etc as the uid reads it)")
def test_has_include_finds_nothing_of_the_machines_etc_and_the_course_still_compiles(monkeypatch):
    """Before: ``__has_include("/etc/passwd")`` was true in every compile (the host's /etc where the compiler is
    the host's, nvcc or ROCm; the offline root's otherwise), and ``#include "/etc/passwd"`` showed its lines in the
    diagnostics. Now a compile's /etc holds the loader's files only (sandbox.TOOL_ETC)."""
    chains = _toolchains()
    if not chains:
        pytest.skip("no compiler here")
    etc_files = [p for p in ("/etc/passwd", "/etc/group", "/etc/hostname", "/etc/hosts", "/etc/machine-id")
                 if os.path.isfile(p)]
    for kind, lang, target in chains:
        src = _probe("PATH") if lang == "hip" else _probe("PATH").replace("#include <hip/hip_runtime.h>\n", "")
        for path in etc_files:
            assert _found(src.replace("PATH", path), kind, lang, target) == "missing", (kind, path)
        # controls: the toolchain's own headers are found, and the defence is what hides /etc: without it the
        # same probe finds the file
        header = "cuda_runtime.h" if lang == "cuda" else "hip/hip_runtime.h"
        assert _found(src.replace('"PATH"', f"<{header}>"), kind, lang, target) == "found", kind
        with monkeypatch.context() as m:
            m.setattr(sandbox, "TOOL_ETC", None)
            assert _found(src.replace("PATH", "/etc/passwd"), kind, lang, target) == "found", kind


@pytest.mark.skipif(sandbox.isolation().level != sandbox.BWRAP,
                    reason="the run's own /etc needs bubblewrap (the fallbacks show /etc as the uid reads it)")
def test_a_python_answer_cannot_hand_back_the_grading_machines_etc(monkeypatch):
    """Before: a Lab 05 answer that raised with the text of /etc/passwd showed the grading machine's users in its
    feedback. Now the answer's sandbox shows the same /etc as a compile's: the file is not there. Control: without
    the defence the feedback holds the file's first line; an honest answer is graded in full (test above)."""
    leak = textwrap.dedent("""
        def choose(s):
            raise ValueError(open("/etc/passwd").read().replace(chr(10), " ")[:120])
    """)
    first = open("/etc/passwd").readline().strip()
    seed = random.randrange(10**6)
    got = items.get(LAB05).regrade(leak, seed, 300).to_text()
    assert "No such file or directory: '/etc/passwd'" in got and first not in got, got[-1500:]
    with monkeypatch.context() as m:
        m.setattr(sandbox, "TOOL_ETC", None)
        before = items.get(LAB05).regrade(leak, seed, 300).to_text()
    assert first[:40] in before, before[-1500:]


def test_the_course_headers_and_an_exercise_still_compile():
    """Controls of the defence: HIP's runtime, hipCUB and the simulator's headers compile; an exercise's solution
    compiles and links with the grader's own header (exercise_io.h, bound in from the grader's folder)."""
    from rocmlab.grader.spec import load
    from rocmlab.grader.static import include_dir
    from rocmlab.hip import simulate

    if driver.find_toolchain("offline") is None:
        pytest.skip("no offline ROCm root")
    ok = build.compile("#include <hip/hip_runtime.h>\n#include <hipcub/hipcub.hpp>\n"
                       "__global__ void k(int* p) { p[threadIdx.x] = 1; }\nint main() { return 0; }\n",
                       toolchain="offline", use_cache=False)
    assert ok.ok, ok.summary()[-800:]
    solution = load("vector-add").solution
    flags = (f"-I{include_dir()}",)
    linked = build.compile(solution, toolchain="offline", use_cache=False, link=True, flags=flags)
    assert linked.ok and linked.binary, linked.summary()[-800:]
    if not simulate.problem():
        sim = build.compile(solution, toolchain=simulate.KIND, use_cache=False, flags=flags)
        assert sim.ok, sim.summary()[-800:]


# --- 3. the toolkit's oracles: no single call, no paste, answers a task ----------------------------------------

def _paste_of_the_toolkits_remap() -> str:
    """topology.xcd_remap and its helper, pasted into a Triton answer file with @triton.jit, and a kernel that
    stores what the pasted function gives for its program."""
    import inspect

    from rocmlab.machine import topology

    helper = inspect.getsource(topology._dispatch_order_tiles).replace("@functools.lru_cache(maxsize=64)\n", "")
    remap = inspect.getsource(topology.xcd_remap)
    return ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n" + helper + "\n\n@triton.jit\n" + remap
            + "\n\n@triton.jit\ndef xcd_remap_kernel(tile_ptr, n, XCDS: tl.constexpr):\n"
              "    pid = tl.program_id(0)\n    tl.store(tile_ptr + pid, xcd_remap(pid, n, XCDS))\n")


def test_lab08_neither_a_call_nor_a_paste_of_the_toolkits_remap_answers_it():
    """Before: topology.xcd_remap was the task's closed form (one program, one tile): called in a kernel it earned
    10/10, and its body, ported line by line, was the answer. Now a call is refused (the kernel may name only Triton)
    and the toolkit computes the remap by its definition (each program's rank in the order XCD, place on it: a
    sort), which is no Triton kernel when pasted; the closed form stays with the instructor (kernels.py, locked).
    Control: an honest closed-form kernel earns every point, and the toolkit's remap is the one the reference
    kernel computes."""
    from rocmlab.machine import topology
    from tests.attacks.whole.test_attacks_regrade_triton import REMAP_RIGHT, REMAP_TOOLKIT, _regrade

    assert "lab08_mi300x_package.kernels" in " ".join(R.KERNEL_MODULES)
    got = _regrade({"paste": ("08-mi300x-package/xcd-remap", _paste_of_the_toolkits_remap()),
                    "call": ("08-mi300x-package/xcd-remap", REMAP_TOOLKIT),
                    "honest": ("08-mi300x-package/xcd-remap", REMAP_RIGHT)})
    for attack in ("paste", "call"):
        earned, possible, msg = got[attack]
        assert earned == 0 and possible == 10 and "is not" in msg, (attack, got[attack])
    assert got["honest"][0] == got["honest"][1] == 10, got["honest"]
    n = random.randint(9, 400)
    per, tall = -(-n // 8), n % 8 or 8                   # the closed form (the honest kernel's)
    closed = [(p % 8) * per + p // 8 if p % 8 < tall else tall * per + (p % 8 - tall) * (per - 1) + p // 8
              for p in range(n)]
    assert [topology.xcd_remap(p, n) for p in range(n)] == closed, n


def test_lab07_no_single_call_of_the_occupancy_toolkit_is_the_budget():
    """Lab 07 asks the VGPR budget for a number of waves (the inverse of the calculator). Each one-call answer the
    toolkit offers (the calculator's waves, its VGPR limit, the register curve's last point) loses points; the
    honest closed form earns every point (tests/attacks/whole/test_attacks_regrade_lab07.py has the occupancy()
    call of the issue)."""
    from rocmlab.course.labs.lab07_matrix_cores import task as lab07

    calls = {
        "waves_from_vgprs": "from rocmlab.hip import occupancy as o\n\n\ndef vgpr_budget(r, waves):\n"
                            "    return o.waves_from_vgprs(r.vgprs, r.agprs)[1]\n",
        "vgpr_curve": "from rocmlab.hip import occupancy as o\n\n\ndef vgpr_budget(r, waves):\n"
                      "    return o.vgpr_curve(r.agprs)[0][-1]\n",
        "occupancy limits": "from rocmlab.hip import occupancy as o\n\n\ndef vgpr_budget(r, waves):\n"
                            "    return o.occupancy(r.vgprs, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size)"
                            ".limits['VGPRs']\n"}
    seed = random.randrange(10**6)
    for name, source in calls.items():
        rep = items.get(f"{lab07.LAB}/{lab07.TASK}").regrade(source, seed, 300)
        assert rep.earned < rep.available, (name, rep.to_text())
    honest = textwrap.dedent("""
        from rocmlab.hip import occupancy as o


        def vgpr_budget(r, waves):
            others = o.occupancy(1, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size).limits
            if min(v for k, v in others.items() if k != "VGPRs") < waves:
                return 0
            per_wave = 512 // waves // 8 * 8
            budget = (per_wave - r.agprs) // 4 * 4 if r.agprs else per_wave
            return max(0, min(budget, 256))
    """)
    rep = items.get(f"{lab07.LAB}/{lab07.TASK}").regrade(honest, seed, 300)
    assert rep.earned == rep.available > 0, rep.to_text()


# --- 4. Triton: the kernel's class is triton's own, read before the answer runs --------------------------------

FAKE_CLASS = textwrap.dedent("""
    import torch
    import triton
    import triton.runtime
    from triton.runtime import interpreter


    class Kernel:                       # the learner's stand-in: torch does the work
        def __getitem__(self, grid):
            def launch(x, z, N0, T, B1=None, **kw):
                z.view(-1)[: N0 * T] = torch.softmax(x.view(-1)[: N0 * T].view(N0, T), 1).view(-1)
            return launch


    triton.runtime.JITFunction = Kernel
    interpreter.InterpretedFunction = Kernel
    softmax_kernel = Kernel()
""")

HONEST_SOFTMAX = textwrap.dedent("""
    import triton
    import triton.language as tl


    @triton.jit
    def softmax_kernel(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
        row = tl.program_id(0)
        o = tl.arange(0, B1)
        x = tl.load(x_ptr + row * T + o, mask=o < T, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(z_ptr + row * T + o, e / tl.sum(e, axis=0), mask=o < T)
""")


def _runner(tmp: Path, answer: str) -> dict:
    """answer_runner.py alone (not the grader's filter before it), on one launch of ``softmax_kernel``."""
    import torch

    from rocmlab.grader import answer_runner

    tmp.mkdir()
    shutil.copy(answer_runner.__file__, tmp / "answer_runner.py")
    (tmp / "answer.py").write_text(answer)
    x = torch.randn(4 * 16)
    torch.save({"name": "softmax_kernel", "triton": True,
                "calls": [{"op": "launch", "grid": [4], "args": [x, torch.zeros(4 * 16), 4, 16],
                           "meta": {"B1": 16}}]}, tmp / "job.pt")
    done = subprocess.run([sys.executable, "-B", "answer_runner.py", "job.pt", "out.pt"], cwd=tmp,
                          env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = torch.load(tmp / "out.pt", weights_only=True)
    out["x"] = x
    return out


def test_triton_a_replaced_jitfunction_is_refused_by_the_runner_itself(tmp_path):
    """Before the grader's filter (which drops every module-level line but the kernels, constants and triton
    imports), the runner that launches the kernel decides by triton's own classes, read before the answer's file is
    loaded: a file that replaces ``triton.runtime.JITFunction`` and the interpreter's class by its own, run by the
    runner alone, is "not a Triton kernel". Control: the same replacement read after the file ran (the rule as it
    was) takes the stand-in for a kernel; an honest kernel launches and computes the softmax."""
    import torch

    fake = _runner(tmp_path / "fake", FAKE_CLASS)
    assert "not a Triton kernel" in fake.get("load_error", ""), fake
    probe = (FAKE_CLASS + "\nimport triton.runtime as r\nfrom triton.runtime import interpreter as i\n"
             "print('OLD-RULE-ACCEPTS', type(softmax_kernel) in (r.JITFunction, i.InterpretedFunction))\n")
    old = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=300)
    assert "OLD-RULE-ACCEPTS True" in old.stdout, old.stderr[-2000:]
    honest = _runner(tmp_path / "honest", HONEST_SOFTMAX)
    assert "load_error" not in honest, honest
    (ok, ), = [[r["ok"]] for r in honest["results"]]
    z = honest["results"][0]["value"][1]
    assert ok and torch.allclose(z.view(4, 16), torch.softmax(honest["x"].view(4, 16), 1), atol=1e-5)


# --- 5. a test run leaves the checkout's modes as it found them ---------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="the lock gives the files to root")
def test_the_hub_tests_put_back_what_the_lock_changed():
    """A hub in users mode locks the references of the package its servers run (in the suite: this checkout's).
    tests/hub/conftest.py keeps each module's modes with tests/helpers/kept_modes.py: staged here on a copy of a
    checkout, locked as the hub locks it. Control: the same lock without it leaves the files 0600 and the folders
    0700."""
    from tests.helpers.kept_modes import kept_modes

    base = Path(tempfile.mkdtemp(prefix="rocmlab-kept-modes-"))
    try:
        co = base / "co"
        shutil.copytree(Path(R.__file__).resolve().parents[1], co / "rocmlab",
                        ignore=shutil.ignore_patterns("__pycache__", "_datasets", "_labs"))
        (co / "pyproject.toml").write_text("[project]\nname = 'rocmlab'\n")
        for d in ("tests", ".git"):
            (co / d).mkdir()
            os.chmod(co / d, 0o755)
        pkg = co / "rocmlab"
        owner = 4242
        for p in R.locked_paths(pkg):
            os.chown(p, owner, owner)                    # a checkout not root's: the owner must come back too

        def paths():
            return R.locked_paths(pkg)

        def modes():
            return {p: (p.stat().st_mode & 0o777, p.stat().st_uid) for p in paths()}

        found = modes()
        assert {m for m, _ in found.values()} == {0o644, 0o755} and {u for _, u in found.values()} == {owner}
        with kept_modes(paths):
            R.compile_references(pkg)                    # as the hub does: compiled copies, locked with the rest
            R.lock(paths())
            assert {m for m, _ in modes().values()} == {0o600, 0o700}
        after = modes()
        assert {p: after[p] for p in found} == found, after
        assert all(m == 0o644 for p, (m, _) in after.items() if p.suffix == ".pyc"), after
        R.lock(paths())                                  # control: without it the lock stays
        assert {m for m, _ in modes().values()} == {0o600, 0o700}
    finally:
        shutil.rmtree(base, ignore_errors=True)
