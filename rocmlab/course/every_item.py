"""Every graded item of the course, registered in :mod:`rocmlab.grader.items`: the exercises (the grader's own),
Lab 01's exercises, the lab tasks and Lab 11's questions (:mod:`rocmlab.course.items`; Lab 11's diagnosis in
:mod:`rocmlab.course.labs.lab11_counters_and_faults.counters`), and the Triton puzzles of
Labs 06, 09 and 10 (registered as their modules define them). The commands that list, hand in or re-grade any item
import this module.
"""

from rocmlab.course import items, puzzles  # noqa: F401 - importing registers them
from rocmlab.course.labs.lab06_triton_on_amd import puzzles as lab06_puzzles  # noqa: F401
from rocmlab.course.labs.lab09_attention_on_mi300x import puzzles as lab09_puzzles  # noqa: F401
from rocmlab.course.labs.lab10_fp8_gemm import puzzles as lab10_puzzles  # noqa: F401
from rocmlab.course.labs.lab11_counters_and_faults import counters as lab11_counters  # noqa: F401
