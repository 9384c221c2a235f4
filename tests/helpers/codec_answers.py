"""Lab 05's answers used by the grades-of-record cases and the fallback-sandbox attack: plain constants, no side
effects on import (tests/helpers/grades_of_record_cases.py sets up Triton's interpreter when imported, so only a
process of its own may import it)."""

from __future__ import annotations

import textwrap

CODEC = "05-quickreduce-tuning/codec-per-message"

#: A learner's own answer to Lab 05's task, written with the course's toolkit (rocmlab.comm), as in the lab.
CODEC_RIGHT = textwrap.dedent("""
    from rocmlab.comm import costmodel as CM
    from rocmlab.comm import torch_codec as C

    def choose(s):
        x = C.activations(s.kind, 1 << 15, seed=4242)
        best = None
        for name, block in [("fp", 32)] + [(c, b) for c in C.QUANTIZED for b in C.BLOCK_SIZES]:
            codec = C.get_codec(name, block)
            err = C.error_metrics(x, C.decode_reference(C.encode_reference(x, codec))).rel_l2
            if err <= s.budget:
                t = CM.latency(codec, s.message_bytes, s.system, s.world)["total_s"]
                if best is None or t < best[0]:
                    best = (t, (name, block))
        return best[1]
""")
#: The patched-verdict attack: every check the task makes passes, whatever the answer.
CODEC_PATCH = textwrap.dedent("""
    import rocmlab.course.tasks as T

    T.verdict = lambda ok, cid, ctype, points, good, bad, hint="": T.passed(cid, ctype, points, good)
    T.failed = lambda cid, ctype, points, message, hint="": T.passed(cid, ctype, points, message)

    def choose(s):
        return ("q4", 32)
""")
