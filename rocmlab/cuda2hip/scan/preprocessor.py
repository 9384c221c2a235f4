"""The scanner's preprocessor: folds ``#if/#ifdef/#elif/#else/#endif`` the way the AMD compiler does.

``#define``/``#undef`` with object- and function-like macros, ``defined``, ``__has_include`` and a full
``#if`` expression evaluator (:func:`eval_tokens`); ``#include "..."`` and ``<...>`` are followed only
into the project's own folders (the scanner resolves them), system headers are never expanded but
define what :data:`~rocmlab.cuda2hip.scan.predefined.SYSTEM_HEADER_MACROS` says. The result per file
is a :class:`Unit`: its token lines, which of them are compiled in this pass, and its directives.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmlab.cuda2hip.scan.predefined import SYSTEM_HEADER_MACROS
from rocmlab.cuda2hip.scan.stream import split_args
from rocmlab.cuda2hip.scan.tokens import Tok, int_value, tokenize

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

MAX_INCLUDE_DEPTH = 64
_EXPAND_BUDGET = 20000   # tokens one #if expansion may produce


@dataclass
class _Macro:
    name: str
    params: list[str] | None     # None: object-like
    body: list[Tok]
    file: str
    line: int


class _ExprError(Exception):
    pass


def eval_tokens(toks: list[Tok]) -> int:
    """Evaluate a #if expression whose identifiers are already replaced (remaining ones are 0)."""
    vals: list = []
    for t in toks:
        if t.kind == "num":
            v = int_value(t.text)
            if v is None:
                raise _ExprError(f"not an integer: {t.text}")
            vals.append(v)
        elif t.kind == "id":
            vals.append(1 if t.text == "true" else 0)
        elif t.kind == "str" and t.text.startswith("'"):
            v = int_value(t.text)
            vals.append(0 if v is None else v)
        else:
            vals.append(t.text)
    pos = 0
    prec = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
            "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}

    def peek():
        return vals[pos] if pos < len(vals) else None

    def unary():
        nonlocal pos
        v = peek()
        if v is None:
            raise _ExprError("expression ends early")
        pos += 1
        if isinstance(v, int):
            return v
        if v == "(":
            r = ternary()
            if peek() != ")":
                raise _ExprError("missing )")
            pos += 1
            return r
        if v == "!":
            return int(not unary())
        if v == "~":
            return ~unary()
        if v == "-":
            return -unary()
        if v == "+":
            return unary()
        raise _ExprError(f"unexpected {v!r}")

    def binary(min_prec):
        nonlocal pos
        left = unary()
        while True:
            op = peek()
            p = prec.get(op) if isinstance(op, str) else None
            if p is None or p < min_prec:
                return left
            pos += 1
            right = binary(p + 1)
            if op == "||":
                left = int(bool(left) or bool(right))
            elif op == "&&":
                left = int(bool(left) and bool(right))
            elif op in ("/", "%"):
                if right == 0:
                    raise _ExprError("division by zero")
                left = int(left / right) if op == "/" else left - right * int(left / right)
            else:
                left = {"|": left | right, "^": left ^ right, "&": left & right, "==": int(left == right),
                        "!=": int(left != right), "<": int(left < right), ">": int(left > right),
                        "<=": int(left <= right), ">=": int(left >= right), "<<": left << min(right, 128),
                        ">>": left >> min(right, 128), "+": left + right, "-": left - right,
                        "*": left * right}[op]

    def ternary():
        nonlocal pos
        c = binary(1)
        if peek() == "?":
            pos += 1
            a = ternary()
            if peek() != ":":
                raise _ExprError("missing : in ?:")
            pos += 1
            b = ternary()
            return a if c else b
        return c

    r = ternary()
    if pos != len(vals):
        raise _ExprError(f"unexpected {vals[pos]!r}")
    return r


@dataclass
class Unit:
    """One file as seen in one pass of one translation unit: its lines' tokens and whether each is compiled."""
    path: str                     # display name
    lines: list[list[Tok]]
    active: list[bool]            # per logical line index
    directives: list[tuple]   # (line idx, directive, tokens after it, line reached, branch taken after it)


class Preprocessor:
    """Folds one translation unit for one pass: ``#if`` and friends decided with the pass's macros,
    ``#define``/``#undef`` tracked, the project's own ``#include`` files followed (through the scanner,
    which owns the files); each file read becomes a :class:`Unit` whose lines say whether they are compiled."""

    def __init__(self, scanner: Scanner, config: dict[str, str]):
        self.s = scanner
        self.macros: dict[str, _Macro] = {}
        for k, v in config.items():
            self.define_text(k, v, "<config>")
        self.once: set[str] = set()
        self.units: list[Unit] = []

    def define_text(self, name, value, file):
        body = [t for line in tokenize(str(value)) for t in line]
        self.macros[name] = _Macro(name, None, body, file, 0)

    # expression evaluation --------------------------------------------------------------
    def _expand(self, toks: list[Tok], hide: frozenset, budget: list[int]) -> list[Tok]:
        out: list[Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            budget[0] -= 1
            if budget[0] < 0:
                raise _ExprError("macro expansion too large")
            if t.kind == "id" and t.text == "defined":
                j = i + 1
                paren = j < len(toks) and toks[j].text == "("
                if paren:
                    j += 1
                name = toks[j].text if j < len(toks) else ""
                if paren:
                    j += 1
                out.append(Tok("num", "1" if name in self.macros else "0", t.line, t.col))
                i = j + 1
                continue
            if t.kind == "id" and t.text in ("__has_include", "__has_include_next") and i + 1 < len(toks):
                sp = split_args(toks, i + 1)
                if sp is None:
                    raise _ExprError("bad __has_include")
                arg = "".join(x.text for x in (sp[0][0] if sp[0] else []))
                out.append(Tok("num", "1" if self.s.has_include(arg) else "0", t.line, t.col))
                i = sp[1]
                continue
            if t.kind == "id" and t.text.startswith("__has_") and i + 1 < len(toks) and toks[i + 1].text == "(":
                sp = split_args(toks, i + 1)
                out.append(Tok("num", "0", t.line, t.col))
                i = sp[1] if sp else len(toks)
                continue
            m = self.macros.get(t.text) if t.kind == "id" and t.text not in hide else None
            if m is None:
                out.append(t)
                i += 1
                continue
            if m.params is None:
                out += self._expand(m.body, hide | {m.name}, budget)
                i += 1
                continue
            if i + 1 >= len(toks) or toks[i + 1].text != "(":
                out.append(t)
                i += 1
                continue
            sp = split_args(toks, i + 1)
            if sp is None:
                raise _ExprError(f"unterminated call of macro {m.name}")
            args, i = sp
            sub = {p: self._expand(a, hide, budget) for p, a in zip(m.params, args, strict=False)}
            body: list[Tok] = []
            for b in m.body:
                body += sub.get(b.text, [b]) if b.kind == "id" else [b]
            out += self._expand(body, hide | {m.name}, budget)
        return out

    def evaluate(self, toks: list[Tok]) -> bool:
        return bool(eval_tokens(self._expand(toks, frozenset(), [_EXPAND_BUDGET])))

    # files ------------------------------------------------------------------------------------
    def run_file(self, path: Path, depth: int):
        key = str(path)
        if key in self.once:
            return
        if depth > MAX_INCLUDE_DEPTH:
            self.s.note_depth(path)
            return
        lines = self.s.lines_of(path)
        name = self.s.display(path)
        active = [False] * len(lines)
        directives = []
        unit = Unit(name, lines, active, directives)
        self.units.append(unit)
        stack: list[list[bool]] = []      # [parent_active, this_active, any_taken]
        cur = True
        for idx, toks in enumerate(lines):
            if toks and toks[0].text == "#" and toks[0].kind == "op":
                d = toks[1].text if len(toks) > 1 else ""
                rest = toks[2:]
                was = cur
                if d in ("if", "ifdef", "ifndef"):
                    val = False
                    if cur:
                        val = self._cond(d, rest, unit, idx)
                    stack.append([cur, cur and val, cur and val])
                    cur = cur and val
                elif d in ("elif", "elifdef", "elifndef") and stack:
                    fr = stack[-1]
                    val = False
                    if fr[0] and not fr[2]:
                        val = self._cond({"elif": "if", "elifdef": "ifdef", "elifndef": "ifndef"}[d], rest, unit, idx)
                    fr[1] = fr[0] and not fr[2] and val
                    fr[2] = fr[2] or fr[1]
                    cur = fr[1]
                    was = fr[0]
                elif d == "else" and stack:
                    fr = stack[-1]
                    fr[1] = fr[0] and not fr[2]
                    fr[2] = True
                    cur = fr[1]
                    was = fr[0]
                elif d == "endif" and stack:
                    fr = stack.pop()
                    cur = fr[0]
                    was = fr[0]
                elif cur:
                    self._directive(d, rest, path, unit, idx, depth)
                directives.append((idx, d, rest, was, cur))
                active[idx] = was
                continue
            active[idx] = cur

    def _cond(self, d, rest, unit, idx) -> bool:
        if d in ("ifdef", "ifndef"):
            name = rest[0].text if rest else ""
            return (name in self.macros) == (d == "ifdef")
        try:
            return self.evaluate(rest)
        except (_ExprError, RecursionError, IndexError) as exc:
            self.s.note_bad_if(unit, idx, rest, str(exc))
            return False

    def _directive(self, d, rest, path: Path, unit, idx, depth):
        if d == "define" and rest and rest[0].kind == "id":
            name = rest[0].text
            params, body = None, rest[1:]
            if len(rest) > 1 and rest[1].text == "(" and rest[1].col == rest[0].col + len(name) \
                    and rest[1].line == rest[0].line:
                j = 2
                params = []
                while j < len(rest) and rest[j].text != ")":
                    if rest[j].kind == "id" or rest[j].text == "...":
                        params.append(rest[j].text)
                    j += 1
                body = rest[j + 1:]
            self.macros[name] = _Macro(name, params, body, unit.path, rest[0].line)
            if params is None:
                self.s.note_define(name, body, unit, rest[0].line)
        elif d == "undef" and rest:
            self.macros.pop(rest[0].text, None)
        elif d == "pragma" and rest and rest[0].text == "once":
            self.once.add(str(path))
        elif d in ("include", "include_next") and rest:
            spec = "".join(t.text for t in rest)
            if rest[0].kind == "id":            # #include MACRO
                try:
                    spec = "".join(t.text for t in self._expand(rest, frozenset(), [_EXPAND_BUDGET]))
                except _ExprError:
                    return
            found = self.s.resolve(spec, path)
            if found is None:
                for k, v in SYSTEM_HEADER_MACROS.get(spec[1:-1], {}).items():
                    self.define_text(k, v, "<" + spec[1:-1] + ">")
                return
            self.run_file(found, depth + 1)
