"""The port report: JSON for tools, one HTML page for people (a browser or JupyterLab).

The HTML page needs no JavaScript and nothing from the network: its three charts (files by
status, traps by severity, first errors by category) are inline SVG bars, and every chart is
also a table, so the page stays small (well under 500 KB). It opens on the project's own traps;
traps in headers read from outside SRC, and traps in code never compiled for the target, are
grouped below and folded (``<details>``). In a notebook, :mod:`rocmlab.course.labs.lab02_porting_cuda_to_hip.port_view` shows the
same page inline.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from rocmlab.html_table import keep_values_whole
from rocmlab.port import diagnose
from rocmlab.port.inputs import PortInputError

SEVERITY_COLOURS = {"error": "#cf222e", "warning": "#9a6700", "info": "#0969da"}
STATUS_COLOURS = {"ok": "#1a7f37", "failed": "#cf222e", "timeout": "#8250df", "not-linked": "#6e7781"}


def _table(header, rows, cls="") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(c if isinstance(c, _Raw) else f"<td>{html.escape(str(c))}</td>" for c in r)
                   + "</tr>" for r in rows)
    # a value (a trap's name, file:line) stays on one line; prose wraps at its spaces
    return keep_values_whole(f"<table class='rp {cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


class _Raw(str):
    """A pre-rendered <td>."""


def _badge(text, colour) -> _Raw:
    return _Raw(f"<td><span style='color:{colour};font-weight:bold'>{html.escape(text)}</span></td>")


CSS = """
.rocmlab-port{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:14px;color:#1f2328;max-width:1300px}
.rocmlab-port h1{font-size:22px}.rocmlab-port h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d0d7de}
.rocmlab-port table.rp{border-collapse:collapse;margin:8px 0;font-size:13px}
.rocmlab-port table.rp th,.rocmlab-port table.rp td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top;overflow-wrap:break-word}
.rocmlab-port table.rp code{white-space:pre-wrap;overflow-wrap:anywhere}.rocmlab-port table.rp{max-width:100%}
.rocmlab-port table.rp td:nth-child(n+5){overflow-wrap:anywhere}
.rocmlab-port table.rp th{background:#f6f8fa}.rocmlab-port code{font-size:12px}
.rocmlab-port .note{background:#fff8c5;padding:6px 10px;border-left:4px solid #9a6700}
.rocmlab-port .charts{display:flex;flex-wrap:wrap;gap:12px}.rocmlab-port .charts>div{flex:0 0 auto}
"""


def _trap_rows(traps) -> list:
    return [[f"{t.path}:{t.line}", f"{t.src_path}:{t.src_line}" if t.src_line else "(new line)",
             _badge(t.severity, SEVERITY_COLOURS[t.severity]), t.rule, _Raw(f"<td><code>{html.escape(t.snippet[:120])}</code></td>"),
             t.message, t.fix] for t in traps]


_TRAP_HEAD = ["where (port)", "CUDA source", "severity", "trap", "code", "explanation", "fix"]


def _traps_html(result) -> str:
    """The project's own compiled traps first; included headers and never-compiled code grouped and folded."""
    own = [t for t in result.traps if t.origin == "own" and t.compiled]
    inc = [t for t in result.traps if t.origin != "own" and t.compiled]
    never = [t for t in result.traps if not t.compiled]
    parts = ["<h2 id='traps'>Traps in the project's own code</h2>"]
    cfg = getattr(result, "scan_config", {}) or {}
    if cfg:
        dev = cfg.get("device_pass", {})
        parts.append("<p style='color:#57606a'>" + html.escape(
            f"Judged on the code the AMD compiler compiles for {cfg.get('target')} (wavefront "
            f"{cfg.get('wavefront_size')}): device pass with "
            + ", ".join(f"{k}={v}" for k, v in dev.items() if k.startswith(("__HIP", "__AMDGCN", "__gfx")))
            + "; host pass without the device macros. System headers are not read.") + "</p>")
    parts.append(_table(_TRAP_HEAD, _trap_rows(own)) if own else "<p>No traps in the project's own compiled code.</p>")
    if inc:
        by_file: dict[str, int] = {}
        for t in inc:
            by_file[t.path] = by_file.get(t.path, 0) + 1
        parts.append(f"<details><summary><b>{len(inc)} trap(s) in headers read from outside SRC</b> ("
                     + html.escape(", ".join(f"{k}: {v}" for k, v in by_file.items())) + ")</summary>"
                     + _table(_TRAP_HEAD, _trap_rows(inc)) + "</details>")
    if never:
        by_file = {}
        for t in never:
            by_file[t.path] = by_file.get(t.path, 0) + 1
        parts.append(f"<details><summary><b>{len(never)} finding(s) in code never compiled for the target</b> "
                     "(#if 0, #ifdef'd library tables, branches HIP never takes: info only) ("
                     + html.escape(", ".join(f"{k}: {v}" for k, v in by_file.items())) + ")</summary>"
                     + _table(_TRAP_HEAD, _trap_rows(never)) + "</details>")
    if getattr(result, "outside_src", None):
        parts.append("<details><summary>Headers read (never written) from outside SRC: "
                     f"{len(result.outside_src)}</summary><ul>"
                     + "".join(f"<li><code>{html.escape(p)}</code></li>" for p in result.outside_src) + "</ul></details>")
    if getattr(result, "not_followed", None):
        parts.append("<p class='note'>Not followed (symlinks that leave SRC): "
                     + html.escape(", ".join(result.not_followed)) + "</p>")
    return "".join(parts)


_YES = {True: ("yes", "#1a7f37"), False: ("no", "#cf222e"), None: ("-", "#6e7781")}


def _runs_html(result) -> str:
    """--run: compiles / runs / matches the original per run, the first difference, and the traps it exposed."""
    parts = ["<h2 id='runs'>Runs: does the port compute what the CUDA original computes?</h2>"]
    rows = []
    for r in result.runs:
        traps = [f"{t['path']}:{t['line']} {t['rule']} ({t['how']})" for t in r.exposed]
        traps += [f"{t['path']}:{t['line']} {t['rule']} (flagged in its files)" for t in r.suspects[:6]]
        rows.append([r.program, " ".join(r.args), r.backend or "-", *[_badge(*_YES[v]) for v in
                     (r.compiles, r.runs, r.matches)],
                     "; ".join(x for x in (r.first_difference or r.note,
                                           *(f"the port's own change: {c}" for c in r.port_changes),
                                           f"not compared: {r.not_compared_why}" if r.not_compared_why else "") if x),
                     r.reference, "; ".join(traps)])
    parts.append(_table(["program", "arguments", "ran on", "compiles", "runs", "matches the original",
                         "first difference", "compared with", "traps"], rows))
    return "".join(parts)


def body_html(result, charts: str = "") -> str:
    """The report's content as an HTML fragment (used by the page and by the notebook view)."""
    s = result.summary()
    tr = result.traps_by_severity("own", True)
    parts = [f"<div class='rocmlab-port'><style>{CSS}</style>",
             f"<h1>rocmlab port: {html.escape(Path(result.src).name)}</h1>",
             "<p>" + html.escape(f"{result.src} → {result.out}") + "<br>"
             + html.escape(f"toolchain: {result.toolchain}; targets: {', '.join(result.targets)}; "
                           f"{result.workers} worker(s)") + "</p>"]
    if result.compat_used:
        parts.append(f"<p class='note'>{html.escape(result.compat_note)}.</p>")
    elif result.compat_note:
        parts.append(f"<p>{html.escape(result.compat_note)}.</p>")
    if result.compiled:
        parts.append(f"<p><b>{s['compiled']}/{s['translation_units']}</b> translation units compiled "
                     f"({100 * result.compile_fraction:.0f}%), <b>{s['linked']}/{s['programs']}</b> programs linked; "
                     f"<b>{s['fixes']}</b> mechanical fixes; traps in the project's own compiled code: "
                     f"<span style='color:{SEVERITY_COLOURS['error']}'>{tr['error']} error</span>, "
                     f"<span style='color:{SEVERITY_COLOURS['warning']}'>{tr['warning']} warning</span>, "
                     f"{tr['info']} info.</p>")
    else:
        parts.append(f"<p>Not compiled (translation and trap scan only). {s['fixes']} mechanical fixes; traps: "
                     f"{tr['error']} error, {tr['warning']} warning, {tr['info']} info.</p>")
    if charts:
        parts.append(f"<div class='charts'>{charts}</div>")
    parts.append(_traps_html(result))
    if result.units:
        parts.append("<h2>Translation units</h2>")
        rows = []
        for u in result.units:
            means, fix = diagnose.CATEGORIES.get(u.category, ("", ""))
            rows.append([u.path, _badge(u.status, STATUS_COLOURS.get(u.status, "#000")), u.category,
                         u.error or "", "" if u.status == "ok" else f"{means}. Fix: {fix}", f"{u.duration_s:.1f} s"])
        parts.append(_table(["file", "status", "category", "first error", "what it means / fix", "time"], rows))
    if result.links:
        parts.append("<h2>Programs (files with a main)</h2>")
        parts.append(_table(["main", "program", "status", "category", "error"],
                            [[link.main, link.program, _badge(link.status, STATUS_COLOURS.get(link.status, "#000")),
                              link.category, link.error] for link in result.links]))
    if getattr(result, "ran", False):
        parts.append(_runs_html(result))
    parts.append("<h2>Mechanical fixes</h2>")
    if result.fixes:
        parts.append(_table(["where", "fix", "before", "after", "why"],
                            [[f"{f.path}:{f.line}", f.kind, _Raw(f"<td><code>{html.escape(f.before.strip())}</code></td>"),
                              _Raw(f"<td><code>{html.escape(f.after.strip())}</code></td>"), f.why]
                             for f in result.fixes]))
    else:
        parts.append("<p>None needed.</p>")
    parts.append("<h2>Libraries the project needs on ROCm</h2>")
    if result.libraries:
        parts.append(_table(["CUDA", "ROCm", "header", "link", "how to get it"],
                            [list(diagnose.LIBRARIES[k][:5]) for k in result.libraries]))
    else:
        parts.append("<p>None beyond the HIP runtime.</p>")
    parts.append("<h2>Files</h2>")
    parts.append(_table(["source", "ported as", "role", "fixes", "traps", "compile"],
                        [[f["source"], f["ported"], f["role"], f["fixes"], f["traps"], f.get("compile", "")]
                         for f in result.files]))
    if result.problems:
        parts.append("<h2>Files not ported</h2>")
        parts.append(_table(["file", "problem", "message", "fix"],
                            [[p.path, p.kind, p.message, p.fix] for p in result.problems]))
    if result.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in result.notes) + "</ul>")
    t = result.timings
    if t:
        parts.append("<p style='color:#6e7781'>" + html.escape(
            f"hipify {t.get('hipify_s', 0):.1f} s, fixes and scan {t.get('fix_and_scan_s', 0):.1f} s, "
            f"compile {t.get('compile_s', 0):.1f} s, link {t.get('link_s', 0):.1f} s, "
            f"total {t.get('total_s', 0):.1f} s") + "</p>")
    parts.append("</div>")
    return "\n".join(parts)


def svg_bars(title: str, items: dict[str, int], colours: dict[str, str] | None = None, width: int = 360) -> str:
    """A small horizontal bar chart as inline SVG (no JavaScript), with its numbers written on it."""
    items = {k: v for k, v in items.items()}
    n = max(1, len(items))
    top, row = 26, 22
    h = top + row * n + 6
    vmax = max([1, *items.values()])
    label_w = 130
    bars = [f"<text x='0' y='16' font-size='13' font-weight='bold'>{html.escape(title)}</text>"]
    for i, (k, v) in enumerate(items.items()):
        y = top + i * row
        w = int((width - label_w - 40) * v / vmax)
        c = (colours or {}).get(k, "#57606a")
        bars.append(f"<text x='{label_w - 6}' y='{y + 14}' font-size='12' text-anchor='end'>{html.escape(k)}</text>"
                    f"<rect x='{label_w}' y='{y + 3}' width='{max(w, 1)}' height='15' fill='{c}'/>"
                    f"<text x='{label_w + max(w, 1) + 4}' y='{y + 14}' font-size='12'>{v}</text>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{h}' role='img' "
            f"aria-label='{html.escape(title)}'>{''.join(bars)}</svg>")


def charts_svg(result) -> str:
    status: dict[str, int] = {}
    for u in result.units:
        status[u.status] = status.get(u.status, 0) + 1
    cats = {k: v for k, v in result.categories().items() if k != "ok"}
    for link in result.links:
        if link.status != "ok":
            cats[link.category] = cats.get(link.category, 0) + 1
    out = []
    if status:
        out.append(svg_bars(f"Files by status ({', '.join(result.targets)})", status, STATUS_COLOURS))
    out.append(svg_bars("Traps in the project's own files", result.traps_by_severity("own", True), SEVERITY_COLOURS))
    if cats:
        out.append(svg_bars("First error of each failed file", cats, {k: "#cf222e" for k in cats}, 420))
    return "".join(f"<div>{c}</div>" for c in out)


def page_html(result) -> str:
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>rocmlab port: {html.escape(Path(result.src).name)}</title></head><body>"
            + body_html(result, charts_svg(result)) + "</body></html>")


def write_reports(result, html_path: Path) -> tuple[Path, Path]:
    html_path = Path(html_path).resolve()
    src = Path(result.src)
    if src == html_path or src in html_path.parents:
        raise PortInputError(f"--report {html_path} is inside SRC ({src}): the port never writes into SRC; "
                             "put the report elsewhere (the default is OUT/rocmlab-port.html)")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    json_path = html_path.with_suffix(".json")
    result.report_html, result.report_json = str(html_path), str(json_path)
    json_path.write_text(json.dumps(result.to_json(), indent=1))
    html_path.write_text(page_html(result), encoding="utf-8")
    return html_path, json_path
