"""Helpers over a unit's flat token stream, each with a bounded look-around so a scan stays linear on
any input: matching brackets, a call's arguments, the statement around a token, the names of an
operand, the type and name of a declaration, and the operator context of a number.
"""

from __future__ import annotations

from rocmlab.cuda2hip.scan.tokens import Tok, int_value


def split_args(toks: list[Tok], start: int, limit: int = 2000) -> tuple[list[list[Tok]], int] | None:
    """Arguments of a call whose '(' is at toks[start]; returns (args, index after ')'). Looks at most
    ``limit`` tokens ahead (keeps the scan linear on unbalanced input)."""
    depth, args, cur = 0, [], []
    i = start
    end = min(len(toks), start + limit)
    while i < end:
        t = toks[i].text
        if t in ("(", "[", "{"):
            depth += 1
            if depth > 1:
                cur.append(toks[i])
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args, i + 1
            cur.append(toks[i])
        elif t == "," and depth == 1:
            args.append(cur)
            cur = []
        else:
            cur.append(toks[i])
        i += 1
    return None


def matching(flat, i: int, limit: int = 4000) -> int:
    """Index of the bracket closing the one at flat[i] (or len(flat))."""
    open_, close = flat[i].text, {"(": ")", "{": "}", "[": "]"}[flat[i].text]
    depth = 0
    for k in range(i, min(len(flat), i + limit)):
        if flat[k].text == open_:
            depth += 1
        elif flat[k].text == close:
            depth -= 1
            if depth == 0:
                return k
    return len(flat)


def statement(flat, i) -> list[Tok]:
    """The tokens of the statement around flat[i] (bounded)."""
    a = i
    while a > 0 and a > i - 60 and flat[a - 1].text not in (";", "{", "}"):
        a -= 1
    b = i
    while b < len(flat) and b < i + 60 and flat[b].text not in (";", "{", "}"):
        b += 1
    return flat[a:b]


def left_names(flat, i) -> list[str]:
    """Identifiers of the operand ending just before flat[i] (bounded look-back)."""
    j = i - 1
    if j < 0:
        return []
    if flat[j].text in (")", "]"):
        close, open_ = flat[j].text, "(" if flat[j].text == ")" else "["
        depth, names, k = 0, [], j
        while k >= 0 and k > j - 64:
            if flat[k].text == close:
                depth += 1
            elif flat[k].text == open_:
                depth -= 1
                if depth == 0:
                    break
            elif flat[k].kind == "id":
                names.append(flat[k].text)
            k -= 1
        if k > 0 and flat[k - 1].kind == "id":
            names.append(flat[k - 1].text)
        return names
    names = []
    k = j
    while k >= 0 and k > j - 8 and (flat[k].kind == "id" or flat[k].text in (".", "->", "::")):
        if flat[k].kind == "id":
            names.append(flat[k].text)
        k -= 1
    return names


def right_names(flat, i) -> list[str]:
    """Identifiers of the operand starting at flat[i] (bounded look-ahead)."""
    names, k = [], i
    while k < len(flat) and k < i + 8 and (flat[k].kind == "id" or flat[k].text in (".", "->", "::", "(")):
        if flat[k].kind == "id":
            names.append(flat[k].text)
        k += 1
    return names


def decl_before(flat, i) -> tuple[str | None, str | None]:
    """For `T name = ...` with '=' at flat[i]: (type text, name)."""
    if i < 2 or flat[i - 1].kind != "id":
        return None, None
    name = flat[i - 1].text
    ty = []
    k = i - 2
    while k >= 0 and k > i - 8 and flat[k].kind == "id" and flat[k].text not in ("return", "else"):
        ty.append(flat[k].text)
        k -= 1
    if not ty and k >= 0 and flat[k].text == ",":
        return first_declarator_type(flat, k), name
    return (" ".join(reversed(ty)) if ty else None), name


def first_declarator_type(flat, comma) -> str | None:
    """The type of a declaration with several declarators (``int devID = 0, warp_size = 32;``): the words
    before its first declarator, found back from the ``,`` at flat[comma] (None: not a declaration)."""
    depth, k = 0, comma - 1
    while k >= 0 and comma - k < 200:
        x = flat[k].text
        if x in (")", "]", "}"):
            depth += 1
        elif x in ("(", "[", "{"):
            if depth == 0:
                break
            depth -= 1
        elif x == ";" and depth == 0:
            break
        k -= 1
    words = []
    for t in flat[k + 1:comma]:
        if t.kind != "id" or t.text in ("return", "else", "case"):
            break
        words.append(t.text)
    if len(words) < 2:
        return None      # `x = 1, y = 32;` (a comma expression) declares nothing
    return " ".join(words[:-1])


def number_around(flat, i) -> tuple[int | None, str, int, int, str]:
    """For the number at flat[i]: (its value, the operator before it, the index of that operator, the
    index after the number, the token after it), looking through one pair of parentheses: ``(32)``."""
    n = len(flat)
    v = int_value(flat[i].text)
    prev = flat[i - 1].text if i > 0 else ""
    j = i - 1
    closes = i + 1
    if prev == "(" and i + 1 < n and flat[i + 1].text == ")":
        j = i - 2
        prev = flat[j].text if j >= 0 else ""
        closes = i + 2
    nxt = flat[closes].text if closes < n else ""
    return v, prev, j, closes, nxt
