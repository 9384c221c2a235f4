"""Every graded item is declared in one list, :data:`rocmlab.grader.items.ITEM_MODULES`, which the registry
imports itself the first time anyone asks for an item: no front end imports a module to make the items known
(issue 55). The registry holds exactly the items it held when ``rocmlab.course.every_item`` was imported for its
side effect; registration is idempotent; the loader has its controls (a planted list)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmlab.grader import items

ROOT = Path(__file__).resolve().parents[2]

#: Every item id and its kind, as ``import rocmlab.course.every_item`` registered them before the list replaced it
#: (captured from that path, 45 items: 17 exercises of the grader's own, and the course's 28).
BEFORE = {
    '01-hip-programming-model/launch-shape': 'task',
    '01-hip-programming-model/occupancy': 'task',
    '01-hip-programming-model/wave-sum': 'exercise',
    '03-pytorch-on-rocm/fix-the-slow-step': 'task',
    '04-vllm-on-rocm/meet-a-serving-target': 'task',
    '05-quickreduce-tuning/codec-per-message': 'task',
    '06-triton-on-amd/add-constant': 'puzzle',
    '06-triton-on-amd/add-vectors': 'puzzle',
    '06-triton-on-amd/gather': 'puzzle',
    '06-triton-on-amd/matmul': 'puzzle',
    '06-triton-on-amd/outer-sum': 'puzzle',
    '06-triton-on-amd/relu-outer': 'puzzle',
    '06-triton-on-amd/row-sum': 'puzzle',
    '06-triton-on-amd/softmax': 'puzzle',
    '07-matrix-cores/waves-per-simd': 'task',
    '08-mi300x-package/xcd-remap': 'task',
    '09-attention-on-mi300x/attention-tile': 'puzzle',
    '09-attention-on-mi300x/causal': 'puzzle',
    '09-attention-on-mi300x/flash-forward': 'puzzle',
    '09-attention-on-mi300x/gqa': 'puzzle',
    '09-attention-on-mi300x/online-softmax': 'puzzle',
    '09-attention-on-mi300x/paged-decode': 'puzzle',
    '09-attention-on-mi300x/row-softmax': 'puzzle',
    '10-fp8-gemm/fp8-gemm': 'puzzle',
    '10-fp8-gemm/fp8-quantize': 'puzzle',
    '11-counters-and-faults/diagnosis': 'task',
    '11-counters-and-faults/oob_write-line': 'question',
    '11-counters-and-faults/use_after_free-line': 'question',
    'block-reduction': 'exercise',
    'cg-tiles': 'exercise',
    'fp-atomics': 'exercise',
    'hip-graphs': 'exercise',
    'histogram-atomics': 'exercise',
    'lab11-coalesce': 'exercise',
    'lab11-lds-banks': 'exercise',
    'lab11-occupancy': 'exercise',
    'lab11-race': 'exercise',
    'launch-bounds': 'exercise',
    'lds-tiles-prefetch': 'exercise',
    'mfma-gemm': 'exercise',
    'saxpy-events': 'exercise',
    'sgemm-hipblas': 'exercise',
    'stream-overlap': 'exercise',
    'transpose-lds': 'exercise',
    'vector-add': 'exercise',
}
#: The progress rows graded as another item, as that path registered them.
ALIASES_BEFORE = {("02-porting-cuda-to-hip", "port-block-reduction"): "block-reduction"}

FIRST_ASK = """
import json, sys
from rocmlab.grader import items
loaded_early = sorted(m for m in sys.modules if m.startswith("rocmlab.course"))
got = {i.id: i.kind for i in items.all_items().values()}
rows = [[lab, task, items.item_for(lab, task)] for lab, task in %r]
print(json.dumps({"early": loaded_early, "items": got, "rows": rows}))
"""


def test_the_registry_loads_every_item_itself_at_the_first_ask():
    """In a fresh process: importing the registry imports no course module; the first ask loads the list, and the
    registry then holds exactly the items and aliases the side-effect import gave."""
    rows = [list(r) for r in ALIASES_BEFORE]
    out = subprocess.run([sys.executable, "-c", FIRST_ASK % (rows,)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["early"] == [], "importing rocmlab.grader.items imported the course: it should wait for the first ask"
    assert got["items"] == BEFORE, {"missing": sorted(set(BEFORE) - set(got["items"])),
                                    "new": sorted(set(got["items"]) - set(BEFORE))}
    assert {(lab, task): iid for lab, task, iid in got["rows"]} == ALIASES_BEFORE


def test_registering_again_changes_nothing():
    """The registry in this process (loaded through the same list) is the same, and registering every item again,
    or asking the loader again, leaves it as it is."""
    first = items.all_items()
    assert {i: it.kind for i, it in first.items()} == BEFORE
    for it in first.values():
        if it.regrade is not None:          # the grader's own exercises are not registered: they are known here
            items.register(it)
    items._load()
    assert items.all_items() == first
    assert items.item_for("02-porting-cuda-to-hip", "port-block-reduction") == "block-reduction"


PLANTED = '''
from rocmlab.grader import items

items.register(items.Item("planted-lab/task", "task", "planted-lab", "task", 1.0, "a planted task", "f",
                          lambda source, seed, limit: None))
ASKED = sorted(items.all_items())          # asking while the list loads: what is registered so far, no recursion
'''


@pytest.fixture
def planted_list(tmp_path, monkeypatch):
    """The loader on a list of one planted module, with a registry of its own (the real one is restored after)."""
    name = f"rocmlab_planted_items_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLANTED))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(items, "ITEM_MODULES", (name,))
    monkeypatch.setattr(items, "_REGISTERED", {})
    monkeypatch.setattr(items, "_LOAD", {"done": False, "loading": False})
    yield name
    sys.modules.pop(name, None)


def test_control_a_planted_list_is_loaded_at_the_first_ask_and_only_once(planted_list):
    assert planted_list not in sys.modules and "planted-lab/task" not in items._REGISTERED   # not loaded yet
    own = items.register(items.Item("own-lab/task", "task", "own-lab", "task", 1.0, "registered by its module",
                                    "f", lambda source, seed, limit: None))
    assert items.get("own-lab/task") is own and planted_list not in sys.modules  # registered already: no load
    assert items.get("planted-lab/task").title == "a planted task"                      # the first ask loads it
    module = sys.modules[planted_list]
    assert "planted-lab/task" in module.ASKED and "vector-add" in module.ASKED
    assert items.item_for("planted-lab", "task") == "planted-lab/task"
    items.all_items()
    assert sys.modules[planted_list] is module                                          # imported once


def test_control_a_list_that_cannot_load_raises_at_every_ask(planted_list, monkeypatch):
    monkeypatch.setattr(items, "ITEM_MODULES", (planted_list, "rocmlab_no_such_item_module"))
    for _ in range(2):                      # not marked loaded: the next ask tries again, and says why again
        with pytest.raises(ModuleNotFoundError, match="rocmlab_no_such_item_module"):
            items.all_items()
    assert items._LOAD == {"done": False, "loading": False}
