"""The roofline as a plotly FigureWidget inside ipywidgets: measured ceilings (solid), spec peaks from
datasets/hardware.csv (dashed), measured points with hover (kernel, FLOP/byte, TFLOP/s, time, share of
the roof), and an intensity slider that says whether a kernel of that intensity is memory or compute bound.
"""

from __future__ import annotations

import math

COLOURS = {"fp32": "#1f77b4", "tf32": "#17becf", "bf16": "#d62728", "fp16": "#ff7f0e", "fp8": "#9467bd"}


def _roof_xy(bw, peak, x_min, x_max):
    ridge = peak / bw
    xs = [x_min] + ([ridge] if x_min < ridge < x_max else []) + [x_max]
    return xs, [min(peak, bw * x) for x in xs]


def drawable(points):
    """The points a plot may draw: a FLOP/byte and a rate, a roof of their own precision, and not above
    it (a point above its roof is a ceiling measured under other load, not a kernel beating the hardware)."""
    share = points["of roof"].astype(float)
    return points[(points["FLOP/byte"].fillna(0) > 0) & (points["TFLOP/s"] > 0) & share.notna() & (share <= 1.1)]


def no_gpu_note(roof, points=None) -> str:
    """What a CPU's roofline is and is not, and which points were left off the plot, grouped by why
    (empty on a GPU with every point drawn)."""
    why: dict[str, list[str]] = {}
    if points is not None and len(points):
        kept = set(drawable(points)["name"])
        for _, r in points.iterrows():
            if r["name"] not in kept and (r["FLOP/byte"] or 0) > 0:
                why.setdefault(r["note"] or "no FLOP/byte", []).append(r["name"])
    text = ""
    if not roof.gpu:
        text = ("<b>No GPU roofs here</b>: this machine has no GPU. The solid lines are this CPU's own ceilings "
                "(a copy and a GEMM measured here), which move with the load on a shared CPU; a GPU's roofs "
                "appear when this lab runs on one.")
    if why:
        text += (" " if text else "") + "Not drawn: " + "; ".join(
            f"{', '.join(names)} ({reason})" for reason, names in why.items()) + "."
    return text


def points_table(points) -> str:
    """The placed points as an HTML table: numbers formatted and kept on one line, '—' where there is no
    value; only the note wraps, and prose reads from the left."""
    import html

    def f(v, fmt, suffix=""):
        return "—" if v is None or v != v else format(v, fmt) + suffix

    cols = ["kernel", "dtype", "FLOP/byte", "TFLOP/s", "TB/s", "ms", "roof TFLOP/s", "roof", "of roof", "bound", "note"]
    one_line = "white-space:nowrap;padding:2px 5px"
    head = "".join(f"<th style='padding:2px 5px;text-align:left;vertical-align:bottom'>{c}</th>" for c in cols)
    body = []
    for _, r in points.iterrows():
        share = None if r["of roof"] is None else 100 * r["of roof"]
        cells = [r["name"], r["dtype"], f(r["FLOP/byte"], ".3g"), f(r["TFLOP/s"], ".3g"), f(r["TB/s"], ".3g"),
                 f(r["time_ms"], ".3g"), f(r["roof TFLOP/s"], ".3g"), r["roof"] or "—", f(share, ".0f", "%"),
                 r["bound"]]
        tds = "".join(f"<td style='{one_line};text-align:{'left' if i < 2 or i > 6 else 'right'}'>"
                      f"{html.escape(str(v))}</td>" for i, v in enumerate(cells))
        tds += f"<td style='text-align:left;padding:2px 5px;min-width:12em'>{html.escape(r['note'] or '')}</td>"
        body.append(f"<tr>{tds}</tr>")
    return (f"<table class='rocmlab-table rocmlab-roofline-points' style='border-collapse:collapse;font-size:12px'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def roofline_figure(roof, points=None, dtypes=None, x_range=(0.01, 10000.0)):
    """A ``go.FigureWidget`` of the roof and the points (a DataFrame from ``Roofline.place``)."""
    import plotly.graph_objects as go

    x_min, x_max = x_range
    fig = go.FigureWidget()
    dtypes = dtypes or [d for d in COLOURS if roof.compute(d) or roof.compute(d, measured=False)]
    for d in dtypes:
        for measured in (True, False):
            bw, peak = roof.bandwidth(measured), roof.compute(d, measured)
            if not bw or not peak:
                continue
            xs, ys = _roof_xy(bw, peak, x_min, x_max)
            kind = "measured" if measured else "spec"
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", name=f"{d} roof ({kind})",
                line={"color": COLOURS.get(d, "#444"), "dash": "solid" if measured else "dash",
                      "width": 2 if measured else 1},
                hovertemplate=(f"{d} roof ({kind})<br>%{{x:.3g}} FLOP/byte → %{{y:.4g}} TFLOP/s"
                               f"<br>ridge {peak / bw:.3g} FLOP/byte<extra></extra>")))
    if points is not None and len(points):
        pts = drawable(points)
        for d, grp in pts.groupby("dtype", sort=False):
            share = [(-1.0 if v != v or v is None else 100 * float(v)) for v in grp["of roof"]]
            fig.add_trace(go.Scatter(
                x=grp["FLOP/byte"], y=grp["TFLOP/s"], mode="markers", name=f"measured {d}",
                text=grp["name"], marker={"size": 10, "color": COLOURS.get(d, "#444"), "symbol": "circle",
                                          "line": {"width": 1, "color": "#000"}},
                customdata=list(zip(grp["time_ms"], share, grp["bound"], strict=True)),
                hovertemplate=("<b>%{text}</b><br>%{x:.3g} FLOP/byte<br>%{y:.4g} TFLOP/s"
                               "<br>%{customdata[0]:.3g} ms per call<br>%{customdata[1]:.0f}% of the roof (-1: no roof)"
                               "<br>%{customdata[2]} bound<extra></extra>")))
    fig.update_layout(
        title=f"Roofline  [{roof.label}]" + ("" if roof.spec_name else
                                              ("  (no GPU: this CPU's measured roof)" if not roof.gpu
                                               else "  (no spec row: measured roof only)")),
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP/byte)", "range": [math.log10(x_min),
                                                                                     math.log10(x_max)]},
        yaxis={"type": "log", "title": "TFLOP/s"}, height=480, margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"font": {"size": 10}}, hovermode="closest")
    return fig


def describe_intensity(roof, intensity: float, dtype: str) -> str:
    """One sentence: the roof at this intensity, measured and spec, and what bounds it."""
    got = roof.attainable(intensity, dtype)
    spec = roof.attainable(intensity, dtype, measured=False)
    if got is None and spec is None:
        return f"{dtype}: no roof (not measured here and no spec figure)"
    bound = roof.bound(intensity, dtype, measured=got is not None)
    parts = [f"At {intensity:.3g} FLOP/byte a {dtype} kernel is <b>{bound} bound</b>"]
    if got is not None:
        parts.append(f"the measured roof allows {got:.4g} TFLOP/s (ridge {roof.ridge(dtype):.3g} FLOP/byte)")
    if spec is not None:
        parts.append(f"the spec roof {spec:.4g} TFLOP/s")
    return "; ".join(parts) + f"  [{roof.label}]"


def roofline_widget(roof, points=None, dtype: str | None = None, intensity: float = 10.0):
    """A VBox: precision picker, intensity slider, the readout and the roofline figure.

    The slider moves the 'your kernel' marker along the chosen roof (browser tests drive it)."""
    import ipywidgets as w
    import plotly.graph_objects as go

    choices = [d for d in COLOURS if roof.compute(d) or roof.compute(d, measured=False)]
    if not choices:
        return w.HTML("<b>No roof to draw</b>: measure ceilings first (measure_ceilings()), or use a device "
                      "with a row in datasets/hardware.csv.")
    dtype = dtype if dtype in choices else ("bf16" if "bf16" in choices else choices[0])
    fig = roofline_figure(roof, points)
    fig.add_trace(go.Scatter(x=[intensity], y=[roof.attainable(intensity, dtype) or 0], mode="markers",
                             name="your kernel", marker={"size": 16, "symbol": "star", "color": "#000"},
                             hovertemplate="your kernel<br>%{x:.3g} FLOP/byte → %{y:.4g} TFLOP/s<extra></extra>"))
    marker = fig.data[-1]
    pick = w.Dropdown(options=choices, value=dtype, description="precision")
    slider = w.FloatLogSlider(value=intensity, base=10, min=-2, max=4, step=0.05, description="FLOP/byte",
                              continuous_update=True, readout_format=".3g")
    readout = w.HTML(describe_intensity(roof, intensity, dtype))
    note = w.HTML(no_gpu_note(roof, points))

    def update(_=None):
        x, d = slider.value, pick.value
        y = roof.attainable(x, d)
        if y is None:
            y = roof.attainable(x, d, measured=False)
        with fig.batch_update():
            marker.x, marker.y = [x], [y or 0]
        readout.value = describe_intensity(roof, x, d)

    slider.observe(update, names="value")
    pick.observe(update, names="value")
    box = w.VBox(([note] if note.value else []) + [w.HBox([pick, slider]), readout, fig])
    box.figure, box.slider, box.dropdown, box.readout, box.note = fig, slider, pick, readout, note
    return box
