"""The course's graded items beyond the exercises, registered in :mod:`rocmlab.grader.items`: Lab 01's three
exercises, the lab tasks (Labs 03, 04, 05, 07, 08) and Lab 11's questions. The Triton puzzles (Labs 06, 09, 10)
register themselves when they are defined (:func:`rocmlab.course.puzzles.register`).

Importing this module registers them; :mod:`rocmlab.grader.items` does, the first time anyone asks for an item
(this module is one of its :data:`~rocmlab.grader.items.ITEM_MODULES`): nothing else imports it to make the
items known. Each item's re-grade runs the same checker as the notebook's preview, with the learner's answer in
the sandbox (:class:`rocmlab.grader.pyanswer.Answer`): the checker, its seed and the references stay in the
grader's process. Lab 04's task is answered by a value (its settings, ``.json``): its re-grade measures them again on
the grader's own live server (:func:`rocmlab.course.labs.lab04_vllm_on_rocm.task.regrade`).
"""

from __future__ import annotations

import importlib
import json
import time

from rocmlab.course import progress
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.grader import items
from rocmlab.grader.items import Item
from rocmlab.grader.report import CheckResult

#: Lab tasks whose answer is a Python function (or, for Lab 08, a Triton kernel), graded by the task's
#: ``grade(answer, seed=, record=False)``: (lab, task, the name the answer defines, "module:function", title).
TASKS = (
    ("01-hip-programming-model", "launch-shape", "launch_shape", "rocmlab.course.labs.lab01_hip_programming_model.lab:grade_launch_shape",
     "Lab 01: blocks, wavefronts and warps for a launch"),
    ("01-hip-programming-model", "occupancy", "occupancy", "rocmlab.course.labs.lab01_hip_programming_model.lab:grade_occupancy",
     "Lab 01: waves per SIMD and the limiting resource"),
    ("03-pytorch-on-rocm", "fix-the-slow-step", "fast_scores", "rocmlab.course.labs.lab03_pytorch_on_rocm.task:grade",
     "Lab 03: fix the slow step"),
    ("05-quickreduce-tuning", "codec-per-message", "choose", "rocmlab.course.labs.lab05_quickreduce_tuning.task:grade",
     "Lab 05: a codec and block size per message"),
    ("07-matrix-cores", "waves-per-simd", "vgpr_budget", "rocmlab.course.labs.lab07_matrix_cores.task:grade",
     "Lab 07: the VGPR budget for a number of waves per SIMD"),
    ("08-mi300x-package", "xcd-remap", "xcd_remap_kernel", "rocmlab.course.labs.lab08_mi300x_package.task:grade",
     "Lab 08: the XCD-aware remap of the program id"),
)
TRITON_TASKS = ("08-mi300x-package/xcd-remap",)
#: Lab 04's task, answered by its settings (.json): Lab 04's task.ITEM (named here: that module imports torch)
SERVING = "04-vllm-on-rocm/meet-a-serving-target"
#: Lab 01's wave sum: HIP source graded in the gfx942 ISA (an exercise-like item with its own checker).
WAVE_SUM = "01-hip-programming-model/wave-sum"


def _function(path: str):
    mod, _, fn = path.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _task_regrade(item_id: str, name: str, checker: str):
    def regrade(source: str, seed: int, time_limit_s):
        from rocmlab.grader.pyanswer import Answer

        answer = Answer(source, name, triton=item_id in TRITON_TASKS, time_limit_s=time_limit_s)
        return _function(checker)(answer, seed=seed, record=False)
    return regrade


def _question_regrade(fault: str):
    def regrade(source: str, seed: int, time_limit_s):
        started = time.monotonic()
        item = items.get(f"{lab11.LAB}/{fault}-line")
        try:
            value = json.loads(source)
            answer = value.get(item.name) if isinstance(value, dict) else None
            problem = "" if answer is not None else f'give an object with "{item.name}", e.g. {{"{item.name}": 19}}'
        except ValueError:
            answer, problem = None, f'not JSON: hand in a file holding {{"{item.name}": N}}'
        if problem:
            check = CheckResult("answer", "compare", "not run", 0.0, item.possible, problem)
        else:
            v = lab11.check_faulting_line(fault, answer, record=False)
            check = CheckResult("answer", "compare", "passed" if v.ok else "failed", v.earned, item.possible,
                                v.message)
        rep = items.report(item, [check], "none (a value: no code is run)", seed, started)
        rep.isolation = "none needed: the answer is a value, no learner code runs"
        return rep
    return regrade


def _serving_regrade(source: str, seed: int, time_limit_s):
    return _function("rocmlab.course.labs.lab04_vllm_on_rocm.task:regrade")(source, seed, time_limit_s)


def _wave_sum_regrade(source: str, seed: int, time_limit_s):
    return _function("rocmlab.course.labs.lab01_hip_programming_model.lab:grade_wave_sum")(source, seed=seed)


def _register() -> None:
    for lab, task, name, checker, title in TASKS:
        iid = f"{lab}/{task}"
        items.register(Item(iid, "task", lab, task, float(progress.LAB_TASKS[lab][task]), title, name,
                            _task_regrade(iid, name, checker)))
    lab01_points = progress.LAB_TASKS["01-hip-programming-model"]
    items.register(Item(WAVE_SUM, "exercise", "01-hip-programming-model", "wave-sum", float(lab01_points["wave-sum"]),
                        "Lab 01: a wave sum for any wavefront size (graded in the gfx942 ISA)", "", _wave_sum_regrade))
    for fault in lab11.FAULTS:
        items.register(Item(f"{lab11.LAB}/{fault}-line", "question", lab11.LAB, f"{fault}-line",
                            float(progress.LAB_TASKS[lab11.LAB][f"{fault}-line"]),
                            f"Lab 11: the line of {lab11.FAULTS[fault][0]} named by the question", "line",
                            _question_regrade(fault)))
    lab, task = SERVING.split("/")
    items.register(Item(SERVING, "task", lab, task, float(progress.LAB_TASKS[lab][task]),
                        "Lab 04: client settings that meet a serving target (measured on the grader's server)", "",
                        _serving_regrade, answer_suffix=".json"))
    items.alias("02-porting-cuda-to-hip", "port-block-reduction", "block-reduction")


_register()
