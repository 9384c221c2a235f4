"""Figures for Lab 05: the two-shot algorithm step by step, and accuracy against compression."""

from __future__ import annotations

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

    fig = make_subplots(rows=1, cols=len(STEPS), subplot_titles=list(STEPS), horizontal_spacing=0.03)
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
        fig.add_trace(go.Heatmap(z=z, text=text, texttemplate="%{text}", showscale=False, zmin=0, zmax=4,
                                 colorscale="Viridis", x=[f"seg {s}" for s in range(world)],
                                 y=[f"rank {r}" for r in range(world)], hoverinfo="text"), row=1, col=col)
        fig.update_yaxes(autorange="reversed", showticklabels=col == 1, row=1, col=col)
    fig.update_layout(height=330, width=1250, title=f"QuickReduce two-shot all-reduce on {world} ranks ({codec}): "
                      "rows are ranks, columns are segments", margin=dict(t=90))
    fig.update_annotations(font_size=10)
    return fig


def accuracy_figure(rows):
    """rows: dicts with codec, kind, compression, rel L2."""
    import plotly.express as px

    fig = px.scatter(rows, x="compression", y="rel L2", color="kind", symbol="codec", log_y=True,
                     hover_data=["codec", "kind"], title="Accuracy against compression (one encode/decode)")
    fig.update_traces(marker_size=11)
    return fig
