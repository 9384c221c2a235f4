"""Latency-throughput curves from sweep results (plotly)."""

from __future__ import annotations


def latency_throughput(results, title: str = "", x: str = "output_throughput",
                       ys=(("median_ttft_ms", "median TTFT (ms)"), ("median_tpot_ms", "median TPOT (ms)"),
                           ("p99_tpot_ms", "p99 TPOT (ms)")),
                       group: str = "label", point_label: str = "max_concurrency"):
    """One panel per latency metric against output throughput; one line per ``group``
    (a label, a request rate ...), points named by ``point_label`` (concurrency by default).
    ``results``: result dicts or a DataFrame from :func:`rocmlab.serve.bench.to_frame`."""
    import pandas as pd
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from rocmlab.serve.bench import to_frame

    df = results if isinstance(results, pd.DataFrame) else to_frame(results)
    if "skipped" in df:
        df = df[df["skipped"].isna() | (df["skipped"] == False)]  # noqa: E712
    df = df[df.get("completed", 0) > 0]
    ys = [y for y in ys if y[0] in df]
    fig = make_subplots(rows=1, cols=len(ys), subplot_titles=[t for _, t in ys])
    groups = df.groupby(group, dropna=False) if group in df else [("", df)]
    for gi, (name, g) in enumerate(groups):
        g = g.sort_values(x)
        text = None
        if point_label in g:
            short = {"max_concurrency": "c=", "request_rate": "", "point": ""}.get(point_label, point_label + "=")
            text = [f"{short}{v:g}" if isinstance(v, float) else f"{short}{v}" for v in g[point_label]]
        for i, (col, _t) in enumerate(ys, 1):
            fig.add_trace(go.Scatter(x=g[x], y=g[col], mode="lines+markers+text", text=text, textposition="top center",
                                     name=str(name), legendgroup=str(name), showlegend=i == 1,
                                     marker={"color": _COLORS[gi % len(_COLORS)]},
                                     line={"color": _COLORS[gi % len(_COLORS)]}), row=1, col=i)
            fig.update_xaxes(title_text="output throughput (tok/s)", row=1, col=i)
    fig.update_layout(title=title, height=380, margin={"t": 70})
    return fig


_COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
