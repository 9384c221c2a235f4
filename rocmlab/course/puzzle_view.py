"""What a Triton kernel touched, per program: the picture GPU-Puzzles and Triton-Puzzles draw.

While a puzzle's kernel runs in Triton's CPU interpreter, :func:`recording` wraps the interpreter's masked
load and store (``tl.load`` / ``tl.store`` end there, with or without a mask) and keeps, for every call, the
program id, the addresses and the mask. :func:`accesses` maps the addresses back to the puzzle's named
buffers: an element of ``x`` (its index), a guard zone just before or after it (out of bounds), or memory
that is none of them. :func:`view_html` draws one small grid per buffer, each cell coloured by the program
that stored (or, for an input, loaded) it, and lists per program what it loaded, stored, masked off and
touched out of bounds.

Triton-Viz draws the same per-program picture, but its 3.0 release brings a Flask server, a Cloudflare
tunnel and a WebGL page: too much for a course install, so the course draws its own. On a GPU nothing is
recorded (the kernel is compiled, not interpreted) and :func:`recording` yields an empty trace.
"""

from __future__ import annotations

import contextlib
import html
import os
from dataclasses import dataclass, field

import numpy as np

#: One colour per program (cycled); a cell two programs stored is drawn in :data:`CLASH`.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac",
           "#86bcb6", "#d37295", "#a0cbe8", "#8cd17d")
CLASH, UNTOUCHED, OUTSIDE = "#cf222e", "#eeeeee", "#cf222e"


@dataclass
class Call:
    """One masked load or store of one program: absolute addresses, the mask, the element size."""
    program: tuple
    kind: str               # "load" | "store"
    addrs: np.ndarray       # uint64, flattened
    mask: np.ndarray        # bool, flattened
    itemsize: int


@dataclass
class Trace:
    calls: list = field(default_factory=list)
    interpreted: bool = False     # False: the kernel did not run in the interpreter (nothing was seen)


def _itemsize(ptrs) -> int:
    ty = ptrs.get_element_ty()
    return max(1, int(getattr(ty, "primitive_bitwidth", 8)) // 8)


@contextlib.contextmanager
def recording():
    """Record every tl.load / tl.store the interpreter runs inside the block. Yields a :class:`Trace`
    (empty where the interpreter is off: on a GPU, kernels are compiled and nothing can be seen)."""
    trace = Trace()
    if os.environ.get("TRITON_INTERPRET") != "1":
        yield trace
        return
    try:
        from triton.runtime import interpreter as interp
    except ImportError:        # pragma: no cover - triton is a course dependency
        yield trace
        return
    builder = interp.interpreter_builder
    cls = type(builder)
    if not (hasattr(cls, "create_masked_load") and hasattr(cls, "create_masked_store")):
        yield trace                     # an interpreter this was not written against: no picture, no harm
        return

    def load(ptrs, mask, other, cache_policy, is_volatile):
        trace.calls.append(Call(tuple(builder.grid_idx), "load", np.asarray(ptrs.data).reshape(-1).copy(),
                                np.asarray(mask.data, dtype=bool).reshape(-1).copy(), _itemsize(ptrs)))
        return cls.create_masked_load(builder, ptrs, mask, other, cache_policy, is_volatile)

    def store(ptrs, value, mask, cache_policy):
        trace.calls.append(Call(tuple(builder.grid_idx), "store", np.asarray(ptrs.data).reshape(-1).copy(),
                                np.asarray(mask.data, dtype=bool).reshape(-1).copy(), _itemsize(ptrs)))
        return cls.create_masked_store(builder, ptrs, value, mask, cache_policy)

    builder.create_masked_load, builder.create_masked_store = load, store
    trace.interpreted = True
    try:
        yield trace
    finally:
        del builder.create_masked_load, builder.create_masked_store


@dataclass
class Buffer:
    """A named tensor the kernel was given, and the whole allocation around it (its guard zones)."""
    name: str
    shape: tuple
    base: int          # address of element 0
    numel: int
    itemsize: int
    whole_start: int   # the allocation, guard zones included
    whole_end: int

    @classmethod
    def of(cls, name, view, whole=None) -> Buffer:
        whole = view if whole is None else whole
        start = whole.data_ptr()
        return cls(name, tuple(view.shape), view.data_ptr(), view.numel(), view.element_size(), start,
                   start + whole.numel() * whole.element_size())


@dataclass
class Access:
    """What one program did to one buffer."""
    program: tuple
    buffer: str
    kind: str
    indices: np.ndarray        # flat element indices inside the buffer (in bounds, mask on)
    outside: np.ndarray        # flat offsets from element 0 that fell in the guard zones (mask on)
    masked: int = 0            # lanes whose mask was off (not accessed)


def accesses(trace: Trace, buffers: list[Buffer]) -> tuple[list[Access], int]:
    """Every call of ``trace`` split by buffer. Returns (accesses, lanes that hit none of the buffers)."""
    out: dict[tuple, Access] = {}
    unknown = 0
    for call in trace.calls:
        on = call.mask
        hit = np.zeros(call.addrs.shape, dtype=bool)
        for b in buffers:
            a = call.addrs.astype(np.int64)
            in_whole = (a >= b.whole_start) & (a < b.whole_end)
            if not in_whole.any():
                continue
            hit |= in_whole
            off = (a - b.base) // b.itemsize
            inside = in_whole & (off >= 0) & (off < b.numel)
            key = (call.program, b.name, call.kind)
            acc = out.setdefault(key, Access(call.program, b.name, call.kind, np.empty(0, np.int64),
                                             np.empty(0, np.int64)))
            acc.indices = np.concatenate([acc.indices, off[inside & on]])
            acc.outside = np.concatenate([acc.outside, off[in_whole & ~inside & on]])
            acc.masked += int((in_whole & ~on).sum())
        unknown += int((~hit & on).sum())
    return list(out.values()), unknown


def _ranges(idx: np.ndarray, shape: tuple) -> str:
    """'256 (0..255)' or, for a 2-D buffer, '512 (rows 0..15, cols 0..31)'."""
    if idx.size == 0:
        return ""
    u = np.unique(idx)
    if len(shape) == 2:
        r, c = u // shape[1], u % shape[1]
        return f"{u.size} (rows {r.min()}..{r.max()}, cols {c.min()}..{c.max()})"
    return f"{u.size} ({u.min()}..{u.max()})"


def _outside_text(acc: Access, numel: int) -> str:
    if acc.outside.size == 0:
        return ""
    before = int((acc.outside < 0).sum())
    after = acc.outside.size - before
    parts = ([f"{after} past the end"] if after else []) + ([f"{before} before the start"] if before else [])
    return f"{acc.kind}: {' and '.join(parts)} of {acc.buffer}"


def program_rows(accs: list[Access], buffers: list[Buffer], limit: int = 12) -> tuple[list[list[str]], int]:
    """One row per program (the first ``limit``): loaded, stored, masked off, outside. Returns (rows, total)."""
    shapes = {b.name: b.shape for b in buffers}
    numels = {b.name: b.numel for b in buffers}
    programs = sorted({a.program for a in accs})
    dims = _dims(programs)
    rows = []
    for p in programs[:limit]:
        mine = [a for a in accs if a.program == p]
        cell = {}
        for kind in ("load", "store"):
            cell[kind] = "; ".join(f"{a.buffer}: {_ranges(a.indices, shapes[a.buffer])}"
                                   for a in mine if a.kind == kind and a.indices.size)
        masked = sum(a.masked for a in mine)
        outside = "; ".join(t for t in (_outside_text(a, numels[a.buffer]) for a in mine) if t)
        rows.append([_pid(p, dims), cell["load"] or "-", cell["store"] or "-", str(masked) if masked else "-",
                     outside or "-"])
    return rows, len(programs)


def _dims(programs) -> int:
    """How many grid axes the launch used (1 for a 1-D grid): program ids are shown with that many numbers."""
    return max([1] + [max(i for i, v in enumerate(p) if v) + 1 for p in programs if any(p)])


def _pid(p: tuple, dims: int = 3) -> str:
    return "(" + ", ".join(str(v) for v in p[:dims]) + ")"


def _grid_svg(buf: Buffer, accs: list[Access], colours: dict, width_px: int = 300) -> str:
    """One buffer as a grid of cells, each coloured by the program that stored it (or, if nothing was stored,
    loaded it); a cell stored by two programs in red. 1-D buffers are wrapped in rows of 100."""
    if len(buf.shape) == 2:
        rows, cols = buf.shape
    else:
        cols = min(100, max(1, buf.numel))
        rows = -(-buf.numel // cols)
    kind = "store" if any(a.kind == "store" and a.indices.size for a in accs) else "load"
    owner = np.full(buf.numel, -1, dtype=np.int64)
    count = np.zeros(buf.numel, dtype=np.int64)
    for a in accs:
        if a.kind != kind or a.indices.size == 0:
            continue
        u = np.unique(a.indices)
        owner[u] = colours[a.program]
        count[u] += 1 if kind == "store" else 0      # two programs loading one element is no clash
    cell = max(2, min(8, width_px // max(cols, 1)))
    rows_shown = min(rows, max(1, 240 // cell))
    parts = []
    for r in range(rows_shown):
        c = 0
        while c < cols:
            i = r * cols + c
            if i >= buf.numel:
                break
            colour = (UNTOUCHED if owner[i] < 0 else CLASH if count[i] > 1 else PALETTE[owner[i] % len(PALETTE)])
            run = 1
            while c + run < cols and r * cols + c + run < buf.numel:
                j = r * cols + c + run
                cj = UNTOUCHED if owner[j] < 0 else CLASH if count[j] > 1 else PALETTE[owner[j] % len(PALETTE)]
                if cj != colour:
                    break
                run += 1
            parts.append(f"<rect x='{c * cell}' y='{r * cell}' width='{run * cell}' height='{cell}' "
                         f"fill='{colour}'/>")
            c += run
    w, h = cols * cell, rows_shown * cell
    more = f" (first {rows_shown} of {rows} rows)" if rows_shown < rows else ""
    shape = "x".join(str(s) for s in buf.shape)
    verb = "stored" if kind == "store" else "loaded"
    outside = sum(int(a.outside.size) for a in accs)
    oob = (f" <span style='color:{OUTSIDE};white-space:nowrap'>+ {outside} outside it</span>" if outside else "")
    return (f"<div style='display:inline-block;vertical-align:top;margin:0 16px 6px 0'>"
            f"<div><code>{html.escape(buf.name)}</code> {shape}: {verb}{more}{oob}</div>"
            f"<svg class='rocmlab-puzzle-grid' width='{w}' height='{h}' viewBox='0 0 {w} {h}' "
            f"style='border:1px solid #999'>{''.join(parts)}</svg></div>")


def view_html(trace: Trace, buffers: list[Buffer], limit: int = 12) -> str:
    """The picture and the per-program table; '' when nothing was recorded."""
    if not trace.interpreted or not trace.calls:
        return ""
    accs, unknown = accesses(trace, buffers)
    programs = sorted({a.program for a in accs} | {c.program for c in trace.calls})
    colours = {p: k for k, p in enumerate(programs)}
    dims = _dims(programs)
    grids = "".join(_grid_svg(b, [a for a in accs if a.buffer == b.name], colours) for b in buffers
                    if any(a.buffer == b.name for a in accs))
    legend = " ".join(f"<span style='display:inline-block;white-space:nowrap;margin-right:8px'>"
                      f"<span style='display:inline-block;width:10px;height:10px;background:"
                      f"{PALETTE[colours[p] % len(PALETTE)]}'></span> {_pid(p, dims)}</span>"
                      for p in programs[:limit])
    legend += (f" <span style='white-space:nowrap'>… {len(programs) - limit} more programs</span>"
               if len(programs) > limit else "")
    legend += (f" <span style='white-space:nowrap'><span style='display:inline-block;width:10px;height:10px;"
               f"background:{CLASH}'></span> stored by two programs</span>")
    rows, total = program_rows(accs, buffers, limit)
    keep = "white-space:nowrap;text-align:left;vertical-align:top;padding:1px 8px 1px 0"
    prose = "white-space:normal;text-align:left;vertical-align:top;padding:1px 8px 1px 0"
    head = "".join(f"<th style='{keep}'>{h}</th>" for h in
                   ("program", "loaded (elements)", "stored (elements)", "masked off", "out of bounds"))
    body = "".join("<tr>" + "".join(f"<td style='{keep if i in (0, 3) else prose}'>{html.escape(v)}</td>"
                                    for i, v in enumerate(r)) + "</tr>" for r in rows)
    more = f"<div>… and {total - len(rows)} more programs</div>" if total > len(rows) else ""
    stray = (f"<div style='color:{OUTSIDE}'>{unknown} accesses hit memory that is none of the kernel's "
             f"buffers</div>" if unknown else "")
    return (f"<div class='rocmlab-puzzle-view' style='text-align:left;margin:4px 0'>"
            f"<div><b>What each program touched</b> (recorded in Triton's CPU interpreter; colour = program "
            f"id)</div><div style='margin:2px 0'>{legend}</div><div>{grids}</div>"
            f"<table class='rocmlab-puzzle-programs' style='border-collapse:collapse'><thead><tr>{head}</tr>"
            f"</thead><tbody>{body}</tbody></table>{more}{stray}</div>")


def out_of_bounds(trace: Trace, buffers: list[Buffer]) -> list[str]:
    """One line per program and buffer that touched a guard zone (mask on): what a learner must fix."""
    accs, _ = accesses(trace, buffers)
    numels = {b.name: b.numel for b in buffers}
    dims = _dims({a.program for a in accs})
    return [f"program {_pid(a.program, dims)}: {_outside_text(a, numels[a.buffer])}" for a in accs if a.outside.size]
