"""Trap rules, wave64: lane and warp arithmetic written for 32 lanes.

``lane = tid % 32``, ``warp = tid / 32``, ``tid & 31``, ``tid >> 5`` (``lane-arithmetic-32``), ``32 - lane``
(``warp-32-minus``), and shuffle/scan loops over 32 lanes: ``for (o = 16; o > 0; o /= 2)``,
``for (o = 1; o < 32; o *= 2)`` (``lane-offset-16-or-32``, ``lane-loop-32``). What the value is used for
decides the severity (:func:`lane_use`): an error when the names say lane, warp or thread index, a
warning when they do not say, nothing for bit positions in 32-bit words, for host code of a program
that is not warp-level, and for code only the first 32 threads run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rocmlab.cuda2hip.scan.contexts import LANEISH, WARP_NAME
from rocmlab.cuda2hip.scan.predefined import wavefront_size
from rocmlab.cuda2hip.scan.stream import left_names, right_names, split_args, statement

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

#: Names that say "a thread, lane or warp index" for sure (a lone i / idx / n does not).
STRONG_LANE = re.compile(r"(?i)^(?:threadIdx|lane\w*|\w*_lane\w*|\w*Lane\w*|warp\w*|\w*_warp\w*|\w*Warp\w*|"
                         r"wave\w*|tid|tid_\w+|\w*_tid|ltid|thread_?id\w*|threadId\w*|wid|w_id)$")
#: Names of bit-level work on 32-bit words (bit packing, shifts): never a wavefront question.
BIT_NAME = re.compile(r"(?i)bit|word|byte|shift|len$|pack|rot")


def num_rules(s: Scanner, u, flat, i, a, v, prev, j, closes, nxt):
    """Lane arithmetic on the number at flat[i] (its context from
    :func:`~rocmlab.cuda2hip.scan.stream.number_around`): ``x / 32``, ``x % 32``, ``x & 31``, ``x >> 5``,
    ``32 - lane``."""
    t = flat[i]
    W = wavefront_size(s.target)
    # x / 32, x % 32, x & 31, x & 0x1f, x >> 5
    if (prev in ("/", "%", "/=", "%=") and v == 32) or (prev in ("&", "&=") and v == 31) or \
            (prev in (">>", ">>=") and v == 5):
        names = left_names(flat, j)
        if any(LANEISH.search(nm) for nm in names) or any(nm in ("threadIdx", "blockDim") for nm in names):
            sev = lane_use(s, flat, i, names)
            if sev:
                what = {"/": "a warp index", "%": "a lane index", "&": "a lane index",
                        ">>": "a warp index"}[prev.rstrip("=")]
                s.add(u.path, t.line, t.col, "lane-arithmetic-32", "warp", sev,
                      f"`{'.'.join(names[::-1][:2])} {prev} {t.text}` computes {what} for warps of 32; on "
                      f"{s.target} a wavefront has {W} lanes."
                      + ("" if sev == "error" else " (Check it: the names do not say whether this is a lane "
                         "or warp index; bit positions in 32-bit words are fine.)"),
                      "use warpSize: lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize.", a)
            return
    # 32 - maskLength, 32 - lane
    if v == 32 and nxt == "-" and prev not in ("*", "/", "%", ".", "->"):
        right = right_names(flat, closes + 1)
        if right and (STRONG_LANE.match(right[0]) or re.search(r"(?i)mask", right[0])) \
                and not BIT_NAME.search(right[0]) \
                and (s.dev[i] or s.warp_unit) and not s.g32[i]:
            s.add(u.path, t.line, t.col, "warp-32-minus", "warp", "error",
                  f"32 - {right[0]} assumes 32 lanes (or 32-bit masks); on {s.target} a wavefront has {W} "
                  "lanes and its masks are 64-bit.", f"use warpSize - {right[0]} (and 64-bit masks).", a)
            return


def for_rule(s: Scanner, u, flat, i, a):
    """``for`` loops over 32 lanes: ``for (o = 16; o > 0; o /= 2)``, ``for (o = 1; o < 32; o *= 2)``, ``lane < 32``."""
    sp = split_args(flat, i + 1)
    if sp is None:
        return
    # split the header by ';' at depth 0
    header = sp[0][0] if len(sp[0]) == 1 else [x for arg in sp[0] for x in arg]
    parts, cur, depth = [], [], 0
    for x in header:
        if x.text in ("(", "[", "{"):
            depth += 1
        elif x.text in (")", "]", "}"):
            depth -= 1
        if x.text == ";" and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(x)
    parts.append(cur)
    if len(parts) != 3:
        return
    init, cond, step = parts
    texts = [x.text for x in header]
    if "warpSize" in texts:
        return
    halving = any(x.text in ("/=", ">>=") for x in step) or \
        (len(step) >= 5 and step[1].text == "=" and step[3].text in ("/", ">>"))
    doubling = any(x.text in ("*=", "<<=") for x in step) or \
        (len(step) >= 5 and step[1].text == "=" and step[3].text in ("*", "<<"))
    bound = None
    for k, x in enumerate(cond):
        if x.text in ("<", "<=", "!=", ">", ">="):
            v, _ = s.value_at(cond, k + 1)
            if v in (16, 32):
                bound = v
    start = None
    for k, x in enumerate(init):
        if x.text == "=":
            v, end = s.value_at(init, k + 1)
            if v in (16, 32) and end == len(init):
                start = v
    var = next((x.text for x in reversed(init) if x.kind == "id"), "")
    t = flat[i]
    W = wavefront_size(s.target)
    if s.g32[i] or not (s.dev[i] or s.warp_unit):
        return     # a fold on the first 32 threads after a shared-memory stage (right on wave64), or host code
    if halving and start == 16 and not bound and s.fold[i]:
        return     # the 16/8/4/2/1 tail after the block was folded to 32 values: right on wave64
    if (doubling and bound) or (halving and start):
        n = bound or start * 2
        s.add(u.path, t.line, t.col, "lane-loop-32" if bound else "lane-offset-16-or-32", "warp", "error",
              f"this shuffle/scan loop ({'up to' if bound else 'down from'} {bound or start}) covers {n} lanes; "
              f"a {s.target} wavefront has {W}, so lanes {n}-{W - 1} are left out.",
              "loop over warpSize: for (int o = 1; o < warpSize; o *= 2) or "
              "for (int o = warpSize / 2; o > 0; o /= 2).", a)
    elif bound == 32 and LANEISH.search(var or "") and re.search(r"(?i)lane|warp", var or ""):
        s.add(u.path, t.line, t.col, "lane-loop-32", "warp", "error",
              f"this loop walks {var} over 32 lanes; a {s.target} wavefront has {W}.",
              "loop to warpSize.", a)


def lane_use(s: Scanner, flat, i, names) -> str | None:
    """The severity of `x / 32`, `x % 32`, `x & 31`, `x >> 5` at flat[i] by what the value is used for:
    None for host code of a unit that is not warp-level, for bit positions in 32-bit words (names of
    bits/words, shifts of 1, atomicOr/|= in the statement) and for code only the first 32 threads run;
    "error" when the names say lane/warp/thread index; else "warning"."""
    st = statement(flat, i)
    dev = s.dev[i] or any(x.text in ("threadIdx", "blockIdx", "blockDim") for x in st)   # device-only names
    if not dev and not s.warp_unit:
        return None
    texts = [x.text for x in st]
    lhs = [x.text for x in st[:texts.index("=")] if x.kind == "id"] if "=" in texts else []
    if any(BIT_NAME.search(nm) for nm in names + lhs) or any(x in ("|=", "^=", "<<", "atomicOr", "atomicAnd",
                                                                    "atomicXor") for x in texts):
        return None
    if s.g32[i]:
        return None
    if any(STRONG_LANE.match(nm) for nm in names + lhs[-1:]):
        return "error" if dev or any(WARP_NAME.search(nm) for nm in names + lhs) else "warning"
    return "warning" if dev else None
