"""Figures for Lab 05: the two-shot algorithm step by step, accuracy against compression, and the
alpha-beta cost model's latency curves (:mod:`rocmlab.comm.costmodel`)."""

from __future__ import annotations

import textwrap

from rocmlab.comm import costmodel

STEPS = (
    "1. each rank holds its whole tensor",
    "2. encode segment s, send it to rank s",
    "3. rank s decodes and sums its segment",
    "4. re-encode the sum, all-gather",
    "5. every rank decodes every segment",
)


def two_shot_figure(world: int = 4, codec: str = "Q4"):
    """A row of W x W grids (rank x segment): what each rank holds or sends at each step."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    # each step's title on two lines: five side by side in about 1000 px
    titles = [textwrap.fill(t, 22).replace("\n", "<br>") for t in STEPS]
    fig = make_subplots(rows=1, cols=len(STEPS), subplot_titles=titles, horizontal_spacing=0.03)
    for col in range(1, len(STEPS) + 1):
        z, text = [], []
        for r in range(world):
            zr, tr = [], []
            for s in range(world):
                if col == 1:
                    v, t = 0, f"x{r}[{s}]"
                elif col == 2:
                    v, t = 1 + (s == r) * 0.2, f"{codec}→r{s}"
                elif col == 3:
                    v, t = (2, f"Σ seg {s}") if s == r else (0.3, "")
                elif col == 4:
                    v, t = (3, f"{codec}(Σ{s})") if s == r else (2.6, f"←r{s}")
                else:
                    v, t = 4, f"S[{s}]"
                zr.append(v)
                tr.append(t)
            z.append(zr)
            text.append(tr)
        fig.add_trace(go.Heatmap(z=z, text=text, texttemplate="%{text}", textfont={"size": 9}, showscale=False, zmin=0, zmax=4,
                                 colorscale="Viridis", x=[f"seg {s}" for s in range(world)],
                                 y=[f"rank {r}" for r in range(world)], hoverinfo="text"), row=1, col=col)
        fig.update_yaxes(autorange="reversed", showticklabels=col == 1, row=1, col=col)
    # no fixed width: the figure takes the output area's width (a 1280-px JupyterLab gives it about 1000 px)
    fig.update_layout(height=360, title=f"QuickReduce two-shot all-reduce on {world} ranks ({codec})<br>"
                      "<sup>rows are ranks, columns are segments</sup>", margin=dict(t=90, l=60, r=10))
    fig.update_annotations(font_size=10)
    return fig


def accuracy_figure(rows):
    """rows: dicts with codec, kind, compression, rel L2."""
    import plotly.express as px

    fig = px.scatter(rows, x="compression", y="rel L2", color="kind", symbol="codec", log_y=True,
                     hover_data=["codec", "kind"], title="Accuracy against compression (one encode/decode)")
    fig.update_traces(marker_size=11)
    return fig


def costmodel_figure(world: int = 8, overlap: str = "serial", measured: list[dict] | None = None, measured_label: str = ""):
    """Plotly: predicted latency per size and codec on MI300X and H200, with the published points
    and (optionally) latencies measured on the machine at hand."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"{world} x MI300X (xGMI), model",
                                                        f"{world} x H200 (NVSwitch), model"), shared_yaxes=True)
    colors = {"fp": "#444", "fp8": "#9467bd", "q8": "#1f77b4", "q6": "#2ca02c", "q4": "#d62728"}
    for col, sysname in ((1, "MI300X"), (2, "H200")):
        rows = costmodel.sweep(sysname, world, overlap=overlap)
        for c in colors:
            pts = [r for r in rows if r["codec"] == c]
            fig.add_trace(go.Scatter(x=[r["nbytes"] / costmodel.MB for r in pts], y=[r["total_s"] * 1e6 for r in pts],
                                     name=c.upper(), legendgroup=c, showlegend=col == 1,
                                     line=dict(color=colors[c])), row=1, col=col)
    pub = [p for p in costmodel.published() if int(p["gpus"]) in (world,)]
    if pub:
        fig.add_trace(go.Scatter(x=[float(p["size_mb"]) for p in pub], y=[float(p["latency_us"]) for p in pub],
                                 mode="markers+text", text=[p["impl"] for p in pub], textposition="top center",
                                 marker=dict(symbol="x", size=10, color="black"),
                                 name="published (QuickReduce README)"), row=1, col=1)
    if measured:
        for c in sorted({m["codec"] for m in measured}):
            pts = [m for m in measured if m["codec"] == c]
            fig.add_trace(go.Scatter(x=[m["size_bytes"] / costmodel.MB for m in pts], y=[m["median_s"] * 1e6 for m in pts],
                                     mode="markers", marker=dict(symbol="circle-open", size=8,
                                                                 color=colors.get(c, "#ff7f0e")),
                                     name=f"{c} measured {measured_label}"), row=1, col=2 if "cuda" in measured_label else 1)
    fig.update_xaxes(type="log", title="message size (MB, float16)")
    fig.update_yaxes(type="log", title="latency (us)", col=1)
    fig.update_layout(height=420, title=f"Two-shot all-reduce latency, alpha-beta model ({overlap} codec)")
    return fig
