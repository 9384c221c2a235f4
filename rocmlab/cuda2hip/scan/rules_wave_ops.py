"""Trap rules, wave64: the warp-level operations a 32-lane warp gets right and a 64-lane wavefront does not.

Ballots kept in 32 bits (``ballot-in-32-bits``) and counted with 32-bit ``__popc`` (``popc-on-mask``);
``*_sync`` shuffles and votes given a 32-bit lane mask (``shfl-sync-32-bit-mask``: ROCm 7.2 rejects it);
shuffles of width 32 or by 16/32 lanes (``shuffle-width-32``, ``lane-offset-16-or-32``); cooperative-groups
tiles of 32 (``cg-tile-32``), ``__syncwarp`` (``syncwarp``); a device warp size compared with 32
(``warp-size-check``), and ``warpSize`` used as a compile-time constant, which it is not since ROCm 7
(``warpsize-not-constant``). Code only the first 32 threads run, or a tail after a fold to 32 values, is
right on wave64 and is left alone (:mod:`~rocmlab.cuda2hip.scan.contexts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmlab.cuda2hip.scan.predefined import wavefront_size
from rocmlab.cuda2hip.scan.rules_wave_constants import FULL32
from rocmlab.cuda2hip.scan.stream import decl_before, split_args
from rocmlab.cuda2hip.scan.tokens import int_value

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

SHFL = {"__shfl": 2, "__shfl_up": 2, "__shfl_down": 2, "__shfl_xor": 2}
SYNC = ("__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
        "__all_sync", "__match_any_sync", "__match_all_sync", "__reduce_add_sync", "__reduce_min_sync",
        "__reduce_max_sync", "__syncwarp", "__uni_sync")
BALLOTS = ("__ballot", "__ballot_sync", "__activemask", "__lanemask_lt", "__lanemask_gt", "__match_any_sync",
           "__match_any", "ballot")
T32 = {"int", "unsigned", "uint32_t", "int32_t", "uint", "u32", "DWORD", "unsigned int"}
T64 = {"long", "uint64_t", "int64_t", "size_t", "auto", "lanemask_t", "ull", "u64"}


def id_rules(s: Scanner, u, flat, i, a):
    """The wave rules of the identifier at flat[i] (``a``: its line is compiled)."""
    t = flat[i]
    tx = t.text
    n = len(flat)
    nxt = flat[i + 1].text if i + 1 < n else ""
    W = wavefront_size(s.target)
    if tx in BALLOTS and nxt == "(" and (tx != "ballot" or (i > 0 and flat[i - 1].text in (".", "->"))):
        ballot_rule(s, u, flat, i, a)
    if tx in ("__popc", "__ffs", "__clz", "__brev", "__fns") and nxt == "(":
        sp = split_args(flat, i + 1)
        if sp and sp[0]:
            arg = sp[0][0]
            names = {x.text for x in arg if x.kind == "id"}
            if names & set(BALLOTS) or names & s.masks64 or names & s.masks32:
                s.add(u.path, t.line, t.col, "popc-on-mask", "warp", "error",
                      f"{tx}() works on 32 bits, but a ballot on {s.target} has {W} bits: lanes 32-63 "
                      "are not counted.", f"use {tx}ll() on the 64-bit (unsigned long long) mask.", a)
    if tx in SHFL and nxt == "(":
        shfl_rule(s, u, flat, i, a, sync=False)
    elif tx in SYNC and nxt == "(":
        shfl_rule(s, u, flat, i, a, sync=True)
    if tx in ("tiled_partition", "thread_block_tile") and nxt == "<":
        v, _ = s.value_at(flat, i + 2)
        if v == 32:
            s.add(u.path, t.line, t.col, "cg-tile-32", "warp", "warning",
                  f"a cooperative-groups tile of 32 is a whole warp on NVIDIA but half a wavefront on "
                  f"{s.target}: code that treats it as the whole warp (ballots, one shared slot per warp) "
                  "breaks.", "use tiles of warpSize where you mean a wavefront, or keep the code tile-local.", a)
    if tx == "__syncwarp" and nxt == "(":
        s.add(u.path, t.line, t.col, "syncwarp", "warp", "warning",
              "__syncwarp assumes warps of 32; a wavefront runs in lock-step on AMD.",
              "use __syncthreads() where threads of different wavefronts share data.", a)
    if tx == "warpSize" and i > 0 and flat[i - 1].text in (".", "->"):
        v, _ = s.value_at(flat, i + 2) if nxt in ("==", "!=", "<", ">", "<=", ">=") else (None, 0)
        if v == 32:
            s.add(u.path, t.line, t.col, "warp-size-check", "warp", "error",
                  f"the program compares the device's warp size with 32 (.warpSize {nxt} 32); a "
                  f"{s.target} wavefront has {W} lanes, so this test decides differently on AMD.",
                  "size and check with the warpSize the device reports, for every value it may have.", a)
        # reading prop.warpSize at run time (to print it, or to size with it) is right on any GPU
    if tx == "warpSize" and in_constant_context(flat, i):
        s.add(u.path, t.line, t.col, "warpsize-not-constant", "warp", "error",
              "since ROCm 7 warpSize is not a compile-time constant: it cannot size an array or be a "
              "template argument / constexpr.",
              f"size for the largest wavefront ({W}) or use blockDim.x / 32 slots, and use warpSize at run "
              "time.", a)


def in_constant_context(flat, i) -> bool:
    """warpSize inside [..] of a declaration, in <...> template arguments, or after constexpr / static_assert."""
    k = i - 1
    depth_sq = 0
    while k >= 0 and k > i - 24:
        x = flat[k].text
        if x in (";", "{", "}"):
            return False
        if x == "]":
            depth_sq += 1
        if x == "[":
            if depth_sq == 0:
                j = k - 1
                while j >= 0 and j > k - 12 and flat[j].text not in (";", "{", "}"):
                    if flat[j].text in ("__shared__", "static", "constexpr", "__constant__"):
                        return True
                    j -= 1
                return False
            depth_sq -= 1
        if x in ("constexpr", "static_assert"):
            return True
        k -= 1
    return False


def ballot_rule(s: Scanner, u, flat, i, a):
    t = flat[i]
    W = wavefront_size(s.target)
    k = i - 1
    if k >= 0 and flat[k].text in (".", "->"):
        k -= 2
    # casts: (unsigned) __ballot(...)
    if k >= 2 and flat[k].text == ")" and flat[k - 1].text in T32 | {"int"} and flat[k - 2].text == "(":
        s.add(u.path, t.line, t.col, "ballot-in-32-bits", "warp", "error",
              f"the {W}-bit ballot is cast to 32 bits: lanes 32-63 are dropped.",
              "keep it in unsigned long long and count it with __popcll.", a)
        return
    if k < 0 or flat[k].text not in ("=", "(", ","):
        return
    if flat[k].text == "=":
        ty, name = decl_before(flat, k)
        if name is None:
            return
        ty = ty or s.decl_type.get(name, "")
        words = set(ty.replace("const", "").split())
        if ty:
            s.decl_type[name] = ty
        if ("long" in words) or (words & T64):
            s.masks64.add(name)
        elif words & T32 or ty.strip() == "unsigned":
            s.masks32.add(name)
            s.add(u.path, t.line, t.col, "ballot-in-32-bits", "warp", "error",
                  f"{t.text}() returns a {W}-bit mask on {s.target}; '{ty} {name}' keeps 32 bits and drops "
                  "lanes 32-63.", f"declare it unsigned long long (uint64_t) {name} and count it with "
                  "__popcll / __ffsll.", a)
        else:
            s.masks64.add(name)


def shfl_rule(s: Scanner, u, flat, i, a, sync):
    t = flat[i]
    sp = split_args(flat, i + 1)
    if sp is None:
        return
    args = sp[0]
    W = wavefront_size(s.target)
    if sync and args and args[0]:
        m = args[0]
        v = None
        names = [x.text for x in m if x.kind == "id"]
        if len(m) in (1, 3):
            v, _ = s.value_at(m, 0)
        if len(m) == 2 and m[0].text == "~" and int_value(m[1].text) == 0 and not m[1].text.lower().endswith(("ll", "ull")):
            v = FULL32
        in32 = [nm for nm in names if nm in s.masks32]
        if v is not None and v <= FULL32 or in32:
            src = ""
            if len(m) == 1 and m[0].kind == "id" and m[0].text in s.values:
                _, f, ln = s.values[m[0].text]
                src = f" ({m[0].text} is {v:#x}, {f}:{ln})"
            elif in32:
                src = f" ({in32[0]} holds a ballot kept in 32 bits)"
            s.add(u.path, t.line, t.col, "shfl-sync-32-bit-mask", "warp", "error",
                  f"{t.text} gets a 32-bit lane mask{src}: it covers lanes 0-31 only; a {s.target} wavefront "
                  f"has {W} lanes, and ROCm 7.2 rejects it at compile time (\"The mask must be a 64-bit "
                  "integer\").", "pass a 64-bit mask: __activemask() or 0xffffffffffffffffull "
                  "(or drop the mask: __shfl_down(v, offset)).", a)
    if t.text.startswith("__shfl"):
        base = t.text[:-5] if sync else t.text
        off_i, width_i = (2, 3) if sync else (1, 2)
        if len(args) > width_i and args[width_i] and not s.g32[i]:
            v, end = s.value_at(args[width_i], 0)
            if v == 32 and end == len(args[width_i]):
                s.add(u.path, t.line, t.col, "shuffle-width-32", "warp", "error",
                      f"{t.text} with width 32 shuffles within groups of 32 lanes: on {s.target} the two "
                      "halves of the wavefront never exchange data.",
                      "leave the width out (it defaults to warpSize) or pass warpSize.", a)
        if base in ("__shfl_down", "__shfl_xor", "__shfl_up") and len(args) > off_i and args[off_i] \
                and not s.g32[i]:
            v, end = s.value_at(args[off_i], 0)
            if v in (16, 32) and end == len(args[off_i]) and not (v == 16 and s.fold[i]):
                s.add(u.path, t.line, t.col, "lane-offset-16-or-32", "warp", "error",
                      f"{t.text} by {v}: a reduction or scan that starts at {v} covers {2 * v} lanes, but a "
                      f"{s.target} wavefront has {W}.",
                      "start at warpSize / 2 and loop: for (int o = warpSize / 2; o > 0; o /= 2).", a)
