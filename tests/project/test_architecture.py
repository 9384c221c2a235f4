"""The house rules (README, "Architecture"), measured by tools/architecture.py on the real package, each
with a failing control: a small planted package that breaks the rule, which the same measure must catch."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("architecture", ROOT / "tools" / "architecture.py")
arch = importlib.util.module_from_spec(_spec)
sys.modules["architecture"] = arch          # dataclasses look their module up while the class is made
_spec.loader.exec_module(arch)


@pytest.fixture(scope="module")
def measured():
    return arch.measure(ROOT / "rocmlab")


def test_no_import_loops(measured):
    assert measured["import_loops"] == [], measured["import_loops"]


def test_toolkits_never_import_the_course_layer_or_its_libraries(measured):
    assert measured["upward_imports"] == [], measured["upward_imports"]


def test_no_private_names_across_modules(measured):
    assert measured["private_names_across_modules"] == [], measured["private_names_across_modules"]


def test_one_timing_helper(measured):
    assert measured["timing_implementations"] == ["rocmlab/profile/timing.py"]


def test_time_limit_defaults_only_in_settings(measured):
    assert measured["time_limit_default_definitions"] == []


def test_target_names_only_in_the_target_records(measured):
    """A GPU target's name is written in rocmlab/targets.py only (one record per target); every other module asks
    the records or rocmlab.settings (``target: str = settings.DEFAULT_TARGET``)."""
    from rocmlab import targets

    assert measured["target_names"] == sorted(t.name for t in targets.ALL if t.is_amd)   # the rule knows each record
    assert measured["literal_target_names"] == [], measured["literal_target_names"]


def test_control_a_planted_target_name_is_caught(tmp_path):
    name = random.choice(["gfx942", "gfx950", "gfx90a"])
    spelling = random.choice([f'def occupancy(vgprs, target="{name}"):\n    return vgprs\n',
                              f'WAVE = {{"{name}": 64}}\n',
                              f'def lds(target):\n    return 163840 if target == "{name}" else 65536\n',
                              f'COMBOS = (("{name}", "e4m3fn"),)\n'])
    clean = ('from rocmlab import settings\n\n\ndef occupancy(vgprs, target=settings.DEFAULT_TARGET):\n'
             f'    """For {name} (a docstring is text)."""\n    return vgprs\n')
    files = {
        "targets.py": ('GFX942 = Target("gfx942", "AMD", "MI300X / MI325X")\nGFX950 = replace(GFX942, name="gfx950")\n'
                       'GFX90A = Target("gfx90a", "AMD", "MI200 series")\nSM_90 = Target("sm_90", "NVIDIA", "H100")\n'),
        "settings.py": "from rocmlab import targets\n\nDEFAULT_TARGET = targets.GFX942.name\n",
        # text that names a target, a target id with features, an NVIDIA target: none is an AMD target's name
        "course/task.py": f'TITLE = "the VGPR budget ({name})"\nASAN = "{name}:xnack+"\nNV = "sm_90"\n',
    }
    r = arch.measure(_plant(tmp_path / "bad", {**files, "hip/occupancy.py": spelling}))
    assert r["target_names"] == ["gfx90a", "gfx942", "gfx950"]
    assert [(f, n) for f, _, n in r["literal_target_names"]] == [("rocmlab/hip/occupancy.py", name)], r
    r = arch.measure(_plant(tmp_path / "good", {**files, "hip/occupancy.py": clean}))
    assert r["literal_target_names"] == []


def _an_import(module: str, name: str) -> str:
    """``from MODULE import NAME`` as a planted module's text: at its top or, drawn at random, inside a function
    (the measure must count both)."""
    if random.choice([True, False]):
        return f"def g():\n    from {module} import {name}\n    return {name}\n"
    return f"from {module} import {name}\n"


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "rocmlab"
    for rel, text in {"__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.parent != root and not (p.parent / "__init__.py").exists():
            (p.parent / "__init__.py").write_text("")
        p.write_text(text)
    return root


def test_control_a_planted_loop_an_upward_import_and_a_private_use_are_caught(tmp_path):
    tk = random.choice(["hip", "port", "grader", "serve", "comm"])      # any toolkit package
    b_body = _an_import(f"rocmlab.{tk}.a", "f")                         # a lazy import is still a loop
    root = _plant(tmp_path, {
        f"{tk}/a.py": f"from rocmlab.{tk} import b\nfrom rocmlab.course import widget\n\ndef f():\n    return b._hidden()\n",
        f"{tk}/b.py": b_body + "\ndef _hidden():\n    return 1\n",
        f"{tk}/c.py": "def plot():\n    import plotly.graph_objects as go\n    return go\n",
        "course/widget.py": "import ipywidgets\n",
        "profile/timing.py": "def t(torch):\n    return torch.cuda.Event(enable_timing=True)\n",
        f"{tk}/d.py": "def t(torch):\n    return torch.cuda.Event(enable_timing=True)\n",
        f"{tk}/e.py": "def grade(time_limit_s: float = 20.0):\n    return time_limit_s\n",
    })
    r = arch.measure(root)
    assert r["import_loops"] == [[f"rocmlab.{tk}.a", f"rocmlab.{tk}.b"]]
    upward = {(n, t) for n, t, _ in r["upward_imports"]}
    assert (f"rocmlab.{tk}.a", "rocmlab.course.widget") in upward
    assert (f"rocmlab.{tk}.c", "plotly.graph_objects") in upward
    assert not any(n.startswith("rocmlab.course") for n, _ in upward)   # the course layer may use them
    assert [(n, t) for n, t, _ in r["private_names_across_modules"]] == [(f"rocmlab.{tk}.a", f"rocmlab.{tk}.b._hidden")]
    assert r["timing_implementations"] == sorted([f"rocmlab/{tk}/d.py", "rocmlab/profile/timing.py"])
    assert len(r["time_limit_default_definitions"]) == 1


def test_control_a_clean_planted_package_passes(tmp_path):
    root = _plant(tmp_path, {
        "hip/a.py": "from rocmlab.hip import b\n\ndef f():\n    return b.public()\n",
        "hip/b.py": "def public():\n    return 1\n",
        "course/view.py": "import plotly.graph_objects as go\nfrom rocmlab.hip import a\n",
    })
    r = arch.measure(root)
    assert r["import_loops"] == [] and r["upward_imports"] == [] and r["private_names_across_modules"] == []


def test_port_and_hip_do_not_import_each_other(measured):
    """What both use (the translation and the trap scanner) lives below both, in cuda2hip/."""
    assert measured["below_violations"] == [], measured["below_violations"]
    assert ("rocmlab.hip", "rocmlab.port") not in measured["rooms_importing_each_other"]
    assert measured["rooms"] >= 10 and measured["arrows"] > 0


def test_control_port_and_hip_importing_each_other_is_caught(tmp_path):
    up = _an_import("rocmlab.port", "build")         # a lazy import is still an arrow
    below = random.choice(["hip", "port"])           # the shared room importing either of the rooms above it
    root = _plant(tmp_path, {
        "hip/compile.py": up,
        "port/build.py": "from rocmlab.hip import compile\nfrom rocmlab.cuda2hip import scan\n",
        "cuda2hip/scan.py": f"from rocmlab.{below}.x import y\n",
        f"{below}/x.py": "y = 1\n",
    })
    r = arch.measure(root)
    assert ("rocmlab.hip", "rocmlab.port") in r["rooms_importing_each_other"]
    assert sorted((n, t) for n, t, _ in r["below_violations"]) == sorted(
        [("rocmlab.hip.compile", "rocmlab.port.build"), ("rocmlab.cuda2hip.scan", f"rocmlab.{below}.x.y")])
    assert any({"rocmlab.hip", "rocmlab.port"} <= set(c) for c in r["room_loops"]), r["room_loops"]


def test_no_rooms_reach_each_other(measured):
    """No loop of rooms: the doctor, which checks every room, is a room above them (it was machine/doctor.py,
    which made hip -> machine -> serve -> machine a loop)."""
    assert measured["room_loops"] == [], measured["room_loops"]
    assert measured["rooms_importing_each_other"] == [], measured["rooms_importing_each_other"]


def test_control_a_loop_of_three_rooms_is_caught(tmp_path):
    back = _an_import("rocmlab.hip", "toolchain")    # a lazy import is still an arrow
    root = _plant(tmp_path, {
        "hip/toolchain.py": "from rocmlab.machine import detect\n",
        "machine/detect.py": "from rocmlab.serve import env\n",
        "serve/env.py": back,
    })
    r = arch.measure(root)
    assert r["rooms_importing_each_other"] == []          # no pair imports each other: only the loop says it
    assert [sorted(c) for c in r["room_loops"]] == [["rocmlab.hip", "rocmlab.machine", "rocmlab.serve"]], r["room_loops"]


def test_control_port_above_hip_above_cuda2hip_passes(tmp_path):
    root = _plant(tmp_path, {
        "cuda2hip/scan.py": "from rocmlab import settings\n",
        "settings.py": "",
        "hip/hipify.py": "from rocmlab.cuda2hip import scan\n",
        "port/project.py": "from rocmlab.cuda2hip import scan\nfrom rocmlab.hip import hipify\n",
    })
    r = arch.measure(root)
    assert r["below_violations"] == [] and r["rooms_importing_each_other"] == [] and r["room_loops"] == []
    assert (r["rooms"], r["arrows"]) == (4, 4)


def test_one_name_per_idea(measured):
    assert measured["stdlib_shadows"] == [], measured["stdlib_shadows"]
    assert measured["names_used_twice"] == {}, measured["names_used_twice"]
    assert measured["arch_names"] == [], measured["arch_names"]
    assert measured["stray_status_words"] == [], measured["stray_status_words"]


def test_control_names_that_break_the_rules_are_caught(tmp_path):
    stdlib = random.choice(["inspect", "platform", "io", "codecs", "trace"])
    twice = random.choice(["build", "spec", "report"])
    word = random.choice(["succeeded", "PASS", "broken"])
    root = _plant(tmp_path, {
        "status.py": 'VERDICTS = ("passed", "failed")\n',
        f"hip/{stdlib}.py": "",
        f"hip/{twice}.py": "",
        f"port/{twice}.py": "def compile_all(archs):\n    return archs\n",
        "grader/result.py": f"class R:\n    arch: str\n\ndef ok(r):\n    return r.status == {word!r}\n",
        "course/build.py": "",            # a front end may mirror a toolkit name
    })
    r = arch.measure(root)
    assert r["stdlib_shadows"] == [f"rocmlab/hip/{stdlib}.py"]
    assert r["names_used_twice"] == {twice: sorted([f"rocmlab/hip/{twice}.py", f"rocmlab/port/{twice}.py"])}
    assert sorted(n for _, _, n in r["arch_names"]) == ["arch", "archs"]
    assert [(w) for _, _, w in r["stray_status_words"]] == [word]


def test_every_result_type_refuses_a_word_outside_its_vocabulary():
    from rocmlab import status
    from rocmlab.grader.report import CheckResult, Report
    from rocmlab.doctor import Check
    from rocmlab.port.unit_build import LinkResult, UnitResult
    from rocmlab.preflight import LabResult

    makers = [
        (status.VERDICTS, lambda s: CheckResult("c", "run", s, 0.0, 1.0, "m")),
        (status.REPORT, lambda s: Report("ex", "t", "cpu", "cpu", 1, [], status=s)),
        (status.HEALTH, lambda s: Check("backend", s, "m")),
        (status.BUILD, lambda s: UnitResult("a.hip", "a.cu", s, "ok")),
        (status.BUILD, lambda s: LinkResult("bin/a", "a.hip", s, "ok")),
        (status.VERDICTS, lambda s: LabResult("lab", s, 0.0, "cpu", "out.ipynb")),
    ]
    others = {w for v in status.ALL.values() for w in v}
    for words, make in makers:
        for w in words:
            make(w)                                          # every word of its own vocabulary is taken
        stray = random.choice(sorted(others - set(words)) + ["PASS", "succeeded"])
        with pytest.raises(ValueError, match="is not one of"):
            make(stray)


def test_one_package_per_lab_and_none_imports_another(measured):
    """Each lab's code lives in one package named like its notebook; a lab package never imports another's, and a
    notebook imports from rocmlab.course only its own lab's package and the shared machinery."""
    assert measured["cross_lab_imports"] == [], measured["cross_lab_imports"]
    assert measured["notebook_imports_outside_own_lab"] == [], measured["notebook_imports_outside_own_lab"]
    assert measured["lab_packages_without_notebook"] == [], measured["lab_packages_without_notebook"]
    notebooks = {p.stem for p in (ROOT / "labs").glob("*.ipynb")} - {"00-setup"}
    assert {arch.package_for_notebook(s) for s in notebooks} == set(measured["lab_packages"])


def _notebook(path: Path, *sources: str) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None} for s in sources]
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Lab"}, *cells],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_control_a_lab_importing_another_lab_and_notebooks_importing_others_labs_are_caught(tmp_path):
    up = _an_import("rocmlab.course.labs.lab04_vllm_on_rocm", "plots")   # a lazy import still ties the labs together
    root = _plant(tmp_path, {
        "course/labs/__init__.py": "",
        "course/labs/lab04_vllm_on_rocm/plots.py": "from rocmlab.course import verdict\n",
        "course/labs/lab05_quickreduce_tuning/task.py": up,
        "course/labs/lab05_quickreduce_tuning/plots.py": "from rocmlab.course.labs.lab05_quickreduce_tuning import task\n",
        "course/labs/lab99_no_notebook/lab.py": "",
        "course/verdict.py": "",
    })
    labs = tmp_path / "labs"
    # another lab's package, in one of the ways a notebook can name it
    other = random.choice(["from rocmlab.course.labs.lab04_vllm_on_rocm import plots as viz",
                           "import rocmlab.course.labs.lab04_vllm_on_rocm.plots",
                           "from rocmlab.course.labs import lab04_vllm_on_rocm",
                           'L = needs.module("rocmlab.course.labs.lab04_vllm_on_rocm.plots", lab="Lab 05")'])
    _notebook(labs / "04-vllm-on-rocm.ipynb", "from rocmlab.course.labs.lab04_vllm_on_rocm import plots")
    _notebook(labs / "05-quickreduce-tuning.ipynb",
              "%load_ext rocmlab\nfrom rocmlab.course import needs, verdict\n"
              "from rocmlab.course.labs.lab05_quickreduce_tuning import task as task05",
              "%%hip\n__global__ void k() {}\n", other)
    _notebook(labs / "exercises" / "01-vector-add.ipynb", "from rocmlab.course.labs.lab05_quickreduce_tuning import task")
    r = arch.measure(root, labs)
    assert [(n, t) for n, t, _ in r["cross_lab_imports"]] == [
        ("rocmlab.course.labs.lab05_quickreduce_tuning.task", "rocmlab.course.labs.lab04_vllm_on_rocm.plots")]
    caught = sorted((nb, cell) for nb, cell, _ in r["notebook_imports_outside_own_lab"])
    assert caught == [("labs/05-quickreduce-tuning.ipynb", 3), ("labs/exercises/01-vector-add.ipynb", 1)], r
    assert r["lab_packages_without_notebook"] == ["rocmlab.course.labs.lab99_no_notebook"]


def test_control_labs_that_keep_to_their_own_package_pass(tmp_path):
    root = _plant(tmp_path, {
        "course/labs/__init__.py": "",
        "course/labs/lab05_quickreduce_tuning/task.py": "from rocmlab.course import verdict\n",
        "course/labs/lab05_quickreduce_tuning/plots.py": "from rocmlab.course.labs.lab05_quickreduce_tuning import task\n",
        "course/verdict.py": "from rocmlab.course import progress\n",
        "course/progress.py": "",
    })
    labs = tmp_path / "labs"
    _notebook(labs / "05-quickreduce-tuning.ipynb",
              "from rocmlab.course import verdict\nfrom rocmlab.course.labs.lab05_quickreduce_tuning import plots, task",
              'T = needs.module("rocmlab.course.labs.lab05_quickreduce_tuning.task", lab="Lab 05")')
    _notebook(labs / "exercises" / "01-vector-add.ipynb", "from rocmlab.course.exercise import Workbench")
    r = arch.measure(root, labs)
    assert r["cross_lab_imports"] == [] and r["notebook_imports_outside_own_lab"] == []
    assert r["lab_packages_without_notebook"] == [] and r["lab_packages"] == ["rocmlab.course.labs.lab05_quickreduce_tuning"]


def test_no_imports_for_a_side_effect(measured):
    """No module imports another only for what importing it does (the graded items were registered so: every
    front end imported rocmlab.course.every_item; rocmlab.grader.items now loads its list itself)."""
    assert measured["side_effect_imports"] == [], measured["side_effect_imports"]


def test_control_an_import_for_a_side_effect_is_caught_and_re_exports_and_probes_pass(tmp_path):
    spelling = random.choice([
        "import rocmlab.course.every_item  # noqa: F401 - registers every graded item\n",
        "from rocmlab.course import every_item  # noqa: F401\n",
        "from rocmlab.course import every_item as _registers\n",
        "def run(args):\n    import rocmlab.course.every_item  # noqa: F401\n    return 0\n",     # lazily too
    ])
    root = _plant(tmp_path, {
        "commands/handin.py": spelling,
        "course/every_item.py": "from rocmlab.course import items, puzzles  # noqa: F401 - importing registers them\n",
        # the root name used, the module imported never: still only for its effect
        "course/widget.py": "import rocmlab.course.items\n\ndef f():\n    return rocmlab.course.progress.x\n",
        "course/items.py": "", "course/puzzles.py": "", "course/progress.py": "x = 1\n",
        # these pass: a package's re-exports, __all__, a probe, dotted modules used, __future__
        "grader/__init__.py": "from rocmlab.grader.items import get\n",
        "grader/items.py": "from __future__ import annotations\n\ndef get():\n    return 1\n",
        "grader/api.py": "from rocmlab.grader.items import get\n\n__all__ = ['get']\n",
        "serve/tinymodel.py": ("def can_build():\n    try:\n        import torch  # noqa: F401\n"
                               "    except (ImportError, OSError):\n        return False\n    return True\n"),
        "hip/build.py": "import importlib.util\nimport os.path\n\ndef f(x):\n"
                        "    return importlib.util.find_spec(x), os.path.join(x)\n",
    })
    r = arch.measure(root)
    caught = sorted((f, t) for f, _line, t in r["side_effect_imports"])
    assert caught == sorted([("rocmlab/commands/handin.py", "rocmlab.course.every_item"),
                             ("rocmlab/course/every_item.py", "rocmlab.course.items"),
                             ("rocmlab/course/every_item.py", "rocmlab.course.puzzles"),
                             ("rocmlab/course/widget.py", "rocmlab.course.items")]), r["side_effect_imports"]


def test_the_report_lists_functions_over_the_limit_and_the_largest_files(tmp_path):
    # a function of exactly the limit is not listed, one line more is (the control: the same body one line shorter)
    limit = arch.LONG_FUNCTION_LINES
    over = "def over():\n" + "    x = 1\n" * limit                     # limit + 1 lines with its def
    at = "def at():\n" + "    x = 1\n" * (limit - 1)                      # limit lines
    root = _plant(tmp_path, {"hip/big.py": over + "\n\n" + at, "hip/small.py": "x = 1\n"})
    r = arch.measure(root)
    assert r["long_functions"] == [("rocmlab/hip/big.py:over", limit + 1)], r["long_functions"]
    assert r["largest_files"][0][0] == "rocmlab/hip/big.py", r["largest_files"]
    assert dict(r["largest_files"])["rocmlab/hip/small.py"] == 1
