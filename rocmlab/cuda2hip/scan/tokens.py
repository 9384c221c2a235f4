"""The scanner's tokenizer: C/C++/CUDA source as logical lines of tokens, read in one linear pass.

One master regular expression splits the text into identifiers, numbers, strings (raw strings too),
operators (``<<<`` and ``>>>`` included) and comments; comments are dropped, a backslash-newline
joins two lines, and a block comment or raw string that spans lines keeps the line numbers right.
:func:`strip_comments_and_strings` blanks comments and literals for the few text-level edits of the
translation, and :func:`int_value` reads an integer literal the way C does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"""
  (?P<nl>\r?\n)
 |(?P<ws>[ \t\f\v\r]+|\\\r?\n)
 |(?P<lc>//[^\n]*)
 |(?P<bc>/\*.*?(?:\*/|\Z))
 |(?P<str>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)"|(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*"?|(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*'?)
 |(?P<num>\.?\d(?:[eEpP][+-]|[\w.']){0,64})
 |(?P<id>[A-Za-z_$][\w$]*)
 |(?P<op><<<|>>>|<<=|>>=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\#\#|[^\s])
""", re.VERBOSE | re.DOTALL)


@dataclass(slots=True)
class Tok:
    kind: str      # id | num | str | op
    text: str
    line: int
    col: int


def tokenize(text: str) -> list[list[Tok]]:
    """The file as logical lines of tokens (continuations joined, comments dropped; a block comment
    spanning lines keeps the line numbers right). Linear in the file size."""
    lines: list[list[Tok]] = [[]]
    line, line_start = 1, 0
    for m in _TOKEN.finditer(text):
        k = m.lastgroup
        if k == "nl":
            line += 1
            line_start = m.end()
            lines.append([])
            continue
        if k == "ws":
            if m.group().startswith("\\"):
                line += 1
                line_start = m.end()
            continue
        if k == "lc":
            continue
        if k == "bc":
            n = m.group().count("\n")
            if n:
                line += n
                line_start = m.start() + m.group().rfind("\n") + 1
            continue
        if k == "delim":
            k = "str"
        s = m.group()
        lines[-1].append(Tok(k, s, line, m.start() - line_start + 1))
        if k == "str" and "\n" in s:           # raw string over lines
            line += s.count("\n")
            line_start = m.start() + s.rfind("\n") + 1
    return lines


def strip_comments_and_strings(src: str) -> str:
    """``src`` with comments and string/char literals replaced by spaces (newlines and columns kept):
    for the few text-level edits (translation) that must not look inside them."""
    out = []
    pos = 0
    for m in _TOKEN.finditer(src):
        k = m.lastgroup
        if k in ("lc", "bc"):
            out.append(src[pos:m.start()])
            out.append("".join(ch if ch == "\n" else " " for ch in m.group()))
            pos = m.end()
        elif k in ("str", "delim"):
            g = m.group()
            q = g.find('"') if '"' in g[:4] or g.startswith(("R", "u8R", "uR", "UR", "LR")) else g.find("'")
            q = max(q, 0)
            out.append(src[pos:m.start()])
            inner = "".join(ch if ch == "\n" else " " for ch in g[q + 1:-1]) if len(g) - q >= 2 else ""
            out.append(g[:q + 1] + inner + (g[-1] if len(g) - q >= 2 else ""))
            pos = m.end()
    out.append(src[pos:])
    return "".join(out)


def int_value(text: str) -> int | None:
    """The value of an integer literal (32, 0x1fU, 5u, 0b11, '0'), else None."""
    t = text.replace("'", "") if not text.startswith("'") else text
    if t.startswith("'") and len(t) >= 3:
        body = t[1:-1]
        if len(body) == 1:
            return ord(body)
        return {"\\n": 10, "\\t": 9, "\\0": 0}.get(body)
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)([uUlLzZ]*)", t)
    if not m:
        return None
    v = m.group(1)
    if v[:2] in ("0x", "0X"):
        return int(v, 16)
    if v[:2] in ("0b", "0B"):
        return int(v, 2)
    if len(v) > 1 and v[0] == "0":
        try:
            return int(v, 8)
        except ValueError:
            return None
    return int(v)
