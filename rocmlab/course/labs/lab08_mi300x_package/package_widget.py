"""Lab 08's widget: play with the MI300X package model (rocmlab.machine.topology) and see which XCD computes
which GEMM tile, and how much every XCD's L2 must fetch, per mapping. plotly + ipywidgets."""

from __future__ import annotations

from rocmlab.machine import topology as T

XCD_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def tile_xcd_grid(grid_m: int, grid_n: int, mapping: str, xcds: int = 8, group_m: int = 8,
                  programs: int | None = None) -> list[list[int | None]]:
    """grid[row][col] = the XCD that computes the tile, for the first ``programs`` programs (None: later)."""
    n = grid_m * grid_n
    grid = [[None] * grid_n for _ in range(grid_m)]
    for p in range(min(n, programs if programs is not None else n)):
        r, c = T.tile_of(p, grid_m, grid_n, mapping, xcds, group_m)
        grid[r][c] = T.xcd_of(p, xcds)
    return grid


def figure(M: int = 4096, N: int = 8192, K: int = 4096, BM: int = 256, BN: int = 256, mapping: str = "row-major",
           group_m: int = 8, device: str = "MI300X"):
    """Left: the output tiles of the first wave coloured by XCD. Right: L2 fill per mapping (GB)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    pkg = T.package(device)
    gm, gn = -(-M // BM), -(-N // BN)
    grid = tile_xcd_grid(gm, gn, mapping, pkg.xcds, group_m, programs=pkg.cus)
    rows = T.compare_mappings(M, N, K, BM, BN, group_m=group_m, pkg=pkg)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4],
                        subplot_titles=(f"first wave ({pkg.cus} programs): {mapping}", "L2 fill, all XCDs (GB)"),
                        horizontal_spacing=0.12)
    fig.add_trace(go.Heatmap(z=[[(-1 if v is None else v) for v in r] for r in grid], zmin=-1, zmax=pkg.xcds - 1,
                             colorscale=[[0, "#eeeeee"], [1 / pkg.xcds, "#eeeeee"]] +
                             [[(i + 1) / pkg.xcds, XCD_COLORS[i]] for i in range(pkg.xcds)],
                             # the colour key sits at the far right, clear of the bar chart's axis
                             colorbar=dict(title="XCD", x=1.02, len=0.9, tickvals=list(range(pkg.xcds))),
                             hovertemplate="row %{y} col %{x}: XCD %{z}<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Bar(x=[r["mapping"] for r in rows], y=[r["L2 fill, all XCDs (GB)"] for r in rows],
                         marker_color=["#d62728" if r["mapping"] == mapping else "#888" for r in rows],
                         name="L2 fill (GB)"), row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_layout(height=440, showlegend=False, margin=dict(t=90, l=40, r=70, b=40),
                      title=dict(text=f"{device} package model: C = A @ B, {M} x {N} x {K}, {BM} x {BN} tiles, "
                                      "tile -> XCD [model]", font=dict(size=14)))
    return fig


def package_widget(device: str = "MI300X"):
    """Sliders for the GEMM shape and tiles, a mapping dropdown, and the figure (a plotly FigureWidget)."""
    import ipywidgets as W
    import plotly.graph_objects as go

    fw = go.FigureWidget(figure(device=device))
    m = W.IntSlider(value=4096, min=1024, max=32768, step=1024, description="M")
    n = W.IntSlider(value=8192, min=1024, max=32768, step=1024, description="N")
    bm = W.Dropdown(options=[64, 128, 256], value=256, description="BM = BN")
    mapping = W.Dropdown(options=list(T.MAPPINGS), value="row-major", description="mapping")
    group = W.IntSlider(value=8, min=1, max=16, description="GROUP_M")

    def update(_=None):
        new = figure(m.value, n.value, 4096, bm.value, bm.value, mapping.value, group.value, device)
        with fw.batch_update():
            for old, tr in zip(fw.data, new.data, strict=False):
                old.update(tr.to_plotly_json())
            fw.layout.annotations[0].text = new.layout.annotations[0].text
            fw.layout.title.text = new.layout.title.text

    for w in (m, n, bm, mapping, group):
        w.observe(update, names="value")
    return W.VBox([W.HBox([m, n]), W.HBox([bm, mapping, group]), fw])
