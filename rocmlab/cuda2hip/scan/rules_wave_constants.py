"""Trap rules, wave64: constants that spell a warp of 32 lanes.

``#define WARP_SIZE 32``, ``constexpr int kLogWarp = 5``, ``const unsigned LANE_MASK = 31``,
``#define FULL_MASK 0xffffffff`` (rules ``hard-coded-warp-size``, ``hard-coded-warp-log2``,
``hard-coded-lane-mask``, ``full-mask-32``). Every such constant is also remembered (``s.values``) so
the other rules read ``x % WARP_SIZE`` as ``x % 32``. A constant is judged when its unit has been read:
at its level where the unit is warp-level (ballots, votes, shuffles, warpSize, tiles) or the name is used
in device code; host code that sizes something per warp is judged once the whole project is read; any
other host constant is only ``info`` (a host program that merely has the number 32 in it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rocmlab.cuda2hip.scan.contexts import WARP_NAME
from rocmlab.cuda2hip.scan.predefined import wavefront_size
from rocmlab.cuda2hip.scan.stream import decl_before
from rocmlab.cuda2hip.scan.tokens import int_value

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

MASKISH = re.compile(r"(?i)mask|lane|width|shift|bits?$|^m$")
LOG_NAME = re.compile(r"(?i)log|shift|bits")
FULL32 = 0xFFFFFFFF


def define_rule(s: Scanner, u, d, rest, active):
    """``#define NAME 32`` (or ``(32)``): a constant to judge."""
    if d != "define" or not rest or rest[0].kind != "id":
        return
    name = rest[0].text
    body = rest[1:]
    if len(body) == 3 and body[0].text == "(" and body[2].text == ")":
        body = body[1:2]
    if len(body) != 1 or body[0].kind != "num":
        return
    v = int_value(body[0].text)
    const_rule(s, u, name, v, rest[0].line, rest[0].col, active, "#define")


def variable_rule(s: Scanner, u, flat, i, a, v, prev, j, nxt):
    """``int warp_size = 32;``, ``constexpr unsigned kWarp = 32;``, ``const int LOG_WARP = 5;`` (the number at
    flat[i], ``prev``/``j``/``nxt`` from :func:`~rocmlab.cuda2hip.scan.stream.number_around`): the value is
    tracked, and the constant judged."""
    t = flat[i]
    if prev == "=" and nxt in (";", ",") and j >= 1:
        ty, name = decl_before(flat, j)
        k0 = j - 2 - len((ty or "").split())
        in_for = k0 >= 1 and flat[k0].text == "(" and flat[k0 - 1].text == "for"
        if name and not in_for:
            if ty is not None:
                s.values[name] = (v, u.path, t.line)
                const_rule(s, u, name, v, flat[j - 1].line, flat[j - 1].col, a,
                           (ty + " =") if ty else "variable =")
            if v == FULL32 and ty is not None:
                s.masks32.add(name)


def const_rule(s: Scanner, u, name, v, line, col, active, how):
    """A constant that spells a warp of 32 (32, log2 5, lane mask 31, full mask 0xffffffff). Judged when
    the unit has been read (:func:`judge_constants`): host code counts only where it sizes or checks
    warp-level results."""
    if v is not None:
        s.constants.append((u, name, v, line, col, active, how))


def judge_constants(s: Scanner, flat, dev):
    """Report the constants :func:`const_rule` saw: at their level when the unit is warp-level (it uses
    ballots, votes, shuffles, warpSize, cooperative tiles) or the name is used in device code; else as
    info (a host program that merely has the number 32 in it)."""
    used_on_device = {t.text for t, d in zip(flat, dev, strict=True) if d and t.kind == "id"}
    sizes = {t.text for k, t in enumerate(flat) if t.kind == "id" and (
        (k > 0 and flat[k - 1].text in ("/", "*", "%")) or (k + 1 < len(flat) and flat[k + 1].text in ("/", "*", "%")))}
    s.project_warp = s.project_warp or s.warp_unit
    todo, s.constants = s.constants, []
    for u, name, v, line, col, active, how in todo:
        warp_level = s.warp_unit or name in used_on_device
        if not warp_level and name in sizes and WARP_NAME.search(name):
            # host code that sizes something per warp: judged once the whole project is read (finish)
            s.sizing.append((u, name, v, line, col, active, how))
            continue
        emit_constant(s, u, name, v, line, col, active, how, warp_level)


def emit_constant(s: Scanner, u, name, v, line, col, active, how, warp_level):
    host_note = "" if warp_level else (
        "[host code that neither sizes nor checks warp-level results: no wavefront question here] ")
    add = s.add if warp_level else (
        lambda file, line, col, rule, kind, severity, message, fix, compiled:
        s.add(file, line, col, rule, kind, "info", host_note + message, fix, compiled))
    warpish = bool(WARP_NAME.search(name))
    if warpish and v == 32 and not LOG_NAME.search(name):
        add(u.path, line, col, "hard-coded-warp-size", "warp", "error",
            f"{how} {name} 32: a warp of 32 lanes is hard-coded; a {s.target} wavefront has "
            f"{wavefront_size(s.target)} lanes.",
            "use warpSize in device code (not a compile-time constant since ROCm 7: size arrays for the "
            "largest case) or hipDeviceProp_t::warpSize on the host.", active)
    elif warpish and v == 5 and LOG_NAME.search(name):
        add(u.path, line, col, "hard-coded-warp-log2", "warp", "error",
            f"{how} {name} 5 is log2(32): a warp of 32 lanes; a {s.target} wavefront is 64 (log2 6).",
            "derive it from warpSize (__builtin_ctz(warpSize)) or use 6 for wave64 targets.", active)
    elif (warpish or MASKISH.search(name)) and v in (31,) and re.search(r"(?i)lane|warp|wave", name):
        add(u.path, line, col, "hard-coded-lane-mask", "warp", "error",
            f"{how} {name} 31 masks a lane index of a 32-lane warp; on {s.target} lanes go to 63.",
            "use (warpSize - 1).", active)
    elif v == FULL32 and re.search(r"(?i)mask|full|all", name):
        add(u.path, line, col, "full-mask-32", "warp", "warning",
            f"{how} {name} 0xffffffff is 'all lanes' only for 32-lane warps.",
            "use a 64-bit mask (~0ull / __activemask()).", active)
