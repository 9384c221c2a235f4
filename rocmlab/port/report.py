"""The port report: JSON for tools, one HTML page for people (a browser or JupyterLab).

The HTML page is readable without JavaScript: every figure is also a table. With JavaScript,
three plotly charts summarise it (files by status, traps by level, first errors by category).
plotly.js is embedded once in the page, so it works offline; in a notebook,
:mod:`rocmlab.port.notebook` shows the same figures as live plotly figures.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from rocmlab.port import build

LEVEL_COLOURS = {"error": "#cf222e", "warning": "#9a6700", "info": "#0969da"}
STATUS_COLOURS = {"ok": "#1a7f37", "failed": "#cf222e", "timeout": "#8250df", "not-linked": "#6e7781"}


def figures(result) -> dict:
    """{name: plotly Figure} for the summary charts."""
    import plotly.graph_objects as go

    figs = {}
    status = {}
    for u in result.units:
        status[u.status] = status.get(u.status, 0) + 1
    if status:
        figs["files"] = go.Figure(go.Bar(x=list(status), y=list(status.values()),
                                         marker_color=[STATUS_COLOURS.get(k, "#888") for k in status]),
                                  layout=dict(title=f"Files by status ({', '.join(result.archs)})",
                                              yaxis_title="files", height=320, width=380, margin=dict(t=50, b=40, l=50, r=10)))
    levels = result.traps_by_level()
    figs["traps"] = go.Figure(go.Bar(x=list(levels), y=list(levels.values()),
                                     marker_color=[LEVEL_COLOURS[k] for k in levels]),
                              layout=dict(title="Traps by severity", yaxis_title="traps", height=320, width=380,
                                          margin=dict(t=50, b=40, l=50, r=10)))
    cats = {k: v for k, v in result.categories().items() if k != "ok"}
    for link in result.links:
        if link.status != "ok":
            cats[link.category] = cats.get(link.category, 0) + 1
    if cats:
        figs["categories"] = go.Figure(go.Bar(y=list(cats), x=list(cats.values()), orientation="h",
                                              marker_color="#cf222e"),
                                       layout=dict(title="First error of each failed file, by category",
                                                   xaxis_title="files", height=max(320, 120 + 30 * len(cats)),
                                                   width=420, margin=dict(t=50, b=40, l=150, r=10)))
    return figs


def _table(header, rows, cls="") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(c if isinstance(c, _Raw) else f"<td>{html.escape(str(c))}</td>" for c in r)
                   + "</tr>" for r in rows)
    return f"<table class='rp {cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Raw(str):
    """A pre-rendered <td>."""


def _badge(text, colour) -> _Raw:
    return _Raw(f"<td><span style='color:{colour};font-weight:bold'>{html.escape(text)}</span></td>")


CSS = """
.rocmlab-port{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:14px;color:#1f2328;max-width:1300px}
.rocmlab-port h1{font-size:22px}.rocmlab-port h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d0d7de}
.rocmlab-port table.rp{border-collapse:collapse;margin:8px 0;font-size:13px}
.rocmlab-port table.rp th,.rocmlab-port table.rp td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
.rocmlab-port table.rp th{background:#f6f8fa}.rocmlab-port code{font-size:12px}
.rocmlab-port .note{background:#fff8c5;padding:6px 10px;border-left:4px solid #9a6700}
.rocmlab-port .charts{display:flex;flex-wrap:wrap;gap:12px}.rocmlab-port .charts>div{flex:0 0 auto}
"""


def body_html(result, charts: str = "") -> str:
    """The report's content as an HTML fragment (used by the page and by the notebook view)."""
    s = result.summary()
    tr = s["traps"]
    parts = [f"<div class='rocmlab-port'><style>{CSS}</style>",
             f"<h1>rocmlab port: {html.escape(Path(result.src).name)}</h1>",
             "<p>" + html.escape(f"{result.src} → {result.out}") + "<br>"
             + html.escape(f"toolchain: {result.toolchain}; targets: {', '.join(result.archs)}; "
                           f"{result.workers} worker(s)") + "</p>"]
    if result.compat_used:
        parts.append(f"<p class='note'>{html.escape(result.compat_note)}.</p>")
    elif result.compat_note:
        parts.append(f"<p>{html.escape(result.compat_note)}.</p>")
    if result.compiled:
        parts.append(f"<p><b>{s['compiled']}/{s['translation_units']}</b> translation units compiled "
                     f"({100 * result.compile_fraction:.0f}%), <b>{s['linked']}/{s['programs']}</b> programs linked; "
                     f"<b>{s['fixes']}</b> mechanical fixes; traps: "
                     f"<span style='color:{LEVEL_COLOURS['error']}'>{tr['error']} error</span>, "
                     f"<span style='color:{LEVEL_COLOURS['warning']}'>{tr['warning']} warning</span>, "
                     f"{tr['info']} info.</p>")
    else:
        parts.append(f"<p>Not compiled (translation and trap scan only). {s['fixes']} mechanical fixes; traps: "
                     f"{tr['error']} error, {tr['warning']} warning, {tr['info']} info.</p>")
    if charts:
        parts.append(f"<div class='charts'>{charts}</div>")
    if result.units:
        parts.append("<h2>Translation units</h2>")
        rows = []
        for u in result.units:
            means, fix = build.CATEGORIES.get(u.category, ("", ""))
            rows.append([u.path, _badge(u.status, STATUS_COLOURS.get(u.status, "#000")), u.category,
                         u.error or "", "" if u.status == "ok" else f"{means}. Fix: {fix}", f"{u.duration_s:.1f} s"])
        parts.append(_table(["file", "status", "category", "first error", "what it means / fix", "time"], rows))
    if result.links:
        parts.append("<h2>Programs (files with a main)</h2>")
        parts.append(_table(["main", "program", "status", "category", "error"],
                            [[link.main, link.program, _badge(link.status, STATUS_COLOURS.get(link.status, "#000")),
                              link.category, link.error] for link in result.links]))
    parts.append("<h2>Traps</h2>")
    if result.traps:
        rows = [[f"{t.path}:{t.line}", f"{t.src_path}:{t.src_line}" if t.src_line else "(new line)",
                 _badge(t.level, LEVEL_COLOURS[t.level]), t.rule, _Raw(
            f"<td><code>{html.escape(t.snippet[:120])}</code></td>"), t.why, t.fix] for t in result.traps]
        parts.append(_table(["where (port)", "CUDA source", "severity", "trap", "code", "explanation", "fix"], rows))
    else:
        parts.append("<p>No traps found.</p>")
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
                            [list(build.LIBRARIES[k][:5]) for k in result.libraries]))
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


def page_html(result) -> str:
    import plotly.io as pio

    charts = []
    for i, (name, fig) in enumerate(figures(result).items()):
        charts.append(pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"rocmlab-port-{name}",
                                  config={"displaylogo": False}))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>rocmlab port: {html.escape(Path(result.src).name)}</title></head><body>"
            + body_html(result, "".join(f"<div>{c}</div>" for c in charts)) + "</body></html>")


def write_reports(result, html_path: Path) -> tuple[Path, Path]:
    html_path = Path(html_path).resolve()
    src = Path(result.src)
    if src == html_path or src in html_path.parents:
        from rocmlab.port.inputs import PortInputError

        raise PortInputError(f"--report {html_path} is inside SRC ({src}): the port never writes into SRC; "
                             "put the report elsewhere (the default is OUT/rocmlab-port.html)")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    json_path = html_path.with_suffix(".json")
    result.report_html, result.report_json = str(html_path), str(json_path)
    json_path.write_text(json.dumps(result.to_json(), indent=1))
    html_path.write_text(page_html(result), encoding="utf-8")
    return html_path, json_path
