"""Where a token stands, for the wave64 rules: inside a ``__global__``/``__device__`` function or not,
run only by the first 32 threads (``if (tid < 32) {...}``, or a device function called only there),
and after the block was folded to 32 values in shared memory. A fold on 32 values is right on a
64-lane wavefront too, so the rules stay quiet there.

The name patterns here say what a name means: :data:`LANEISH` a thread/lane count or index,
:data:`WARP_NAME` a warp or wavefront.
"""

from __future__ import annotations

import re

from rocmlab.cuda2hip.scan.stream import matching

LANEISH = re.compile(r"(?i)thread|tid|lane|warp|wave|blocksize|block_size|blockdim|nthreads|num_?threads|idx|"
                     r"^i$|^j$|^t$|^n$")
WARP_NAME = re.compile(r"(?i)warp|wave|simd|lanes")


def guard32(cond, value_at) -> bool:
    """Does an if-condition let only the first 32 threads (or warp 0) through? ``tid < 32``,
    ``threadIdx.x <= 31``, ``warp_id == 0`` ..."""
    for k, x in enumerate(cond):
        if x.text in ("<", "<=", "=="):
            v, _ = value_at(cond, k + 1)
            names = [y.text for y in cond[max(0, k - 4):k] if y.kind == "id"]
            if not names:
                continue
            if (x.text == "<" and v == 32) or (x.text == "<=" and v == 31):
                if any(LANEISH.search(nm) or nm == "threadIdx" for nm in names):
                    return True
            if x.text == "==" and v == 0 and any(WARP_NAME.search(nm) or nm in ("wid", "w_id") for nm in names):
                return True
    return False


def contexts(flat, value_at) -> tuple[list[bool], list[bool]]:
    """Per token: (inside a __global__/__device__ function, only the first 32 threads run it).

    The second holds inside ``if (tid < 32) {...}`` (or one statement), and in a __device__ function whose
    every call in the unit is itself such a place: a fold after a shared-memory stage, correct on wave64."""
    n = len(flat)
    dev, g32 = [False] * n, [False] * n
    bodies: dict[str, list[tuple[int, int]]] = {}        # device function -> body ranges
    calls: dict[str, list[int]] = {}
    stack: list[tuple[bool, bool]] = [(False, False)]
    guard_until = -1
    for i, t in enumerate(flat):
        d, g = stack[-1]
        if t.text == "{":
            k, head = i - 1, []
            while k >= 0 and k > i - 200 and flat[k].text not in (";", "{", "}"):
                head.append(flat[k])
                k -= 1
            head.reverse()
            words = {x.text for x in head}
            is_func = "(" in words and not words & {"if", "for", "while", "switch", "else", "do", "=", "return"}
            if is_func and words & {"__global__", "__device__"}:
                d = True
                name = next((head[j - 1].text for j, x in enumerate(head) if x.text == "(" and j > 0
                             and head[j - 1].kind == "id"), None)
                if name:
                    bodies.setdefault(name, []).append((i, matching(flat, i)))
            elif is_func and "__host__" in words:
                d = False
            if head and head[0].text in ("if", "else") and "if" in words:
                j = next(j for j, x in enumerate(head) if x.text == "if")
                if j + 1 < len(head) and head[j + 1].text == "(" and guard32(head[j + 2:], value_at):
                    g = True
            stack.append((d, g or i <= guard_until))
        elif t.text == "}":
            if len(stack) > 1:
                stack.pop()
        elif t.text == "if" and i + 1 < n and flat[i + 1].text == "(":
            close = matching(flat, i + 1, limit=100)          # bounded: a hostile file cannot make this quadratic
            if close + 1 < n and flat[close + 1].text != "{" and guard32(flat[i + 2:close], value_at):
                k = close + 1
                while k < n and k < close + 200 and flat[k].text != ";":
                    k = matching(flat, k, limit=100) if flat[k].text in ("(", "[", "{") else k + 1
                guard_until = k
        elif t.kind == "id" and i + 1 < n and flat[i + 1].text == "(":
            calls.setdefault(t.text, []).append(i)
        dev[i] = stack[-1][0]
        g32[i] = stack[-1][1] or i <= guard_until
    for name, ranges in bodies.items():
        sites = [c for c in calls.get(name, []) if not any(a <= c <= b for a, b in ranges)
                 and not any(a - 40 <= c < a for a, _ in ranges)]
        if sites and all(g32[c] for c in sites):
            for a, b in ranges:
                for k in range(a, min(b + 1, n)):
                    g32[k] = True
    return dev, g32


def folded_to_32(flat, dev, value_at) -> list[bool]:
    """Per token: inside a __global__/__device__ function, after the block was folded to 32 values in shared
    memory (``s[tid] += s[tid + 32]``, or a loop ``for (...; s > 32; ...)``, ``s >= 32``, ``s > 16``). A 16/8/4/2/1
    tail after that
    (shuffles, or __syncwarp and shared memory) sums those 32 values: right on a 64-lane wavefront too."""
    n = len(flat)
    out = [False] * n
    folded = False
    for i, t in enumerate(flat):
        if not dev[i]:
            folded = False
            continue
        if t.text == "+" and i + 1 < n:
            v, end = value_at(flat, i + 1)
            if v == 32 and end < n and flat[end].text == "]":
                folded = True
        elif t.text in (">", ">=") and i + 1 < n:
            v, end = value_at(flat, i + 1)       # s > 32, s >= 32, s > 16: the loop stops with 32 values left
            if (v == 32 or (v == 16 and t.text == ">")) and end < n and flat[end].text == ";":
                folded = True
        out[i] = folded
    return out
