"""Kernel inspector view: a resource table per kernel and an ISA listing with the teaching highlights."""

from __future__ import annotations

import html

from rocmlab.hip import occupancy as occ
from rocmlab.hip.inspector import Inspection
from rocmlab.hip.resources import CATEGORY_HELP
from rocmlab.html_table import html_table
from rocmlab.machine.detect import current

COLOURS = {"shuffle": "#8250df", "global": "#0969da", "lds": "#1a7f37", "wait": "#9a6700",
           "barrier": "#cf222e", "matrix": "#bf3989"}


def resources_table(ins: Inspection) -> str:
    """One column per kernel, one row per resource: narrow enough for a notebook whatever the kernel count."""
    if not ins.kernels:
        return "<p>no kernels found</p>"
    amd = ins.kernels[0].is_amd
    names = [r[0] for r in ins.kernels[0].rows()]
    columns = []
    for k in ins.kernels:
        col = [r[1] for r in k.rows()]
        if amd and k.target.split(":")[0] in occ.known():
            o = occ.from_kernel(k)
            col.append(f"{o.waves_per_simd} ({o.limiting})")
        elif amd:
            col.append("n/a")
        columns.append(col)
    if amd:
        names.append("occupancy (calculator)")
    rows = [[name, *(col[i] for col in columns)] for i, name in enumerate(names)]
    return html_table(["resource", *(k.name for k in ins.kernels)], rows)


def legend() -> str:
    items = "".join(f"<li><span style='color:{COLOURS[c]};font-weight:bold'>{c}</span>: {html.escape(t)}</li>"
                    for c, t in CATEGORY_HELP.items())
    return f"<ul style='margin:4px 0'>{items}</ul>"


def _listing(lines) -> str:
    return "\n".join(
        (f"<span style='color:{COLOURS[ln.category]};font-weight:bold'>{html.escape(ln.text)}</span>"
         if ln.category else html.escape(ln.text)) for ln in lines)


def isa_html(ins: Inspection, kernel: str | None = None, max_lines: int = 120, only_highlighted: bool = False) -> str:
    parts = []
    for k in ins.isa:
        if kernel and kernel not in (k.name, k.symbol, k.name.split("(")[0]):
            continue
        lines = [ln for ln in k.lines if ln.category] if only_highlighted else k.lines
        shown, rest = lines[:max_lines], lines[max_lines:]
        counts = ", ".join(f"{c}: {n}" for c, n in sorted(k.counts.items())) or "none"
        pre = "<pre style='font-size:12px;line-height:1.25;white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0'>"
        note = ""
        if rest:
            hidden_hl = sum(1 for ln in rest if ln.category)
            note = (f"<details style='margin:2px 0'><summary style='cursor:pointer;color:#0969da'>{len(rest)} more "
                    f"lines hidden ({hidden_hl} of them highlighted): show them</summary>{pre}{_listing(rest)}</pre>"
                    f"</details>")
        head = (f"lines 1-{len(shown)} of {len(lines)}" + (f"; {len(rest)} hidden below" if rest else ""))
        parts.append(f"<h4 style='margin:8px 0 2px'>{html.escape(k.name)}</h4>"
                     f"<div style='text-align:left'>highlighted: {counts} ({head})</div>{pre}{_listing(shown)}</pre>{note}")
    return "".join(parts) or "<p>no listing</p>"


def inspection_html(ins: Inspection, kernel: str | None = None, max_lines: int = 120, plat_label: str = "") -> str:
    if not ins.ok:
        errs = "<br>".join(html.escape(str(d)) for d in ins.diagnostics[:10])
        return f"<div style='color:#cf222e'><b>does not compile for {html.escape(ins.target)}</b><br>{errs}</div>"
    where = f" [{html.escape(plat_label)}]" if plat_label else ""
    return (f"<div><b>{html.escape(ins.target)}</b> with {html.escape(ins.toolchain)}; listing: "
            f"{html.escape(ins.listing)}{where}</div>{resources_table(ins)}{legend()}"
            f"{isa_html(ins, kernel, max_lines)}")


def show(ins: Inspection, kernel: str | None = None, max_lines: int = 120):
    from IPython.display import HTML, display

    display(HTML(inspection_html(ins, kernel, max_lines, f"compiled on {current().label}")))
