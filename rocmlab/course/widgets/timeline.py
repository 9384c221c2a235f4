"""A kernel table and a per-stream timeline (Gantt chart) for a :class:`rocmlab.profile.KernelProfile`."""

from __future__ import annotations

from rocmlab.html_table import html_table

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#637939")


def table_html(table, top: int = 15) -> str:
    rows = [[r["name"][:90], int(r["calls"]), f"{r['total_us']:.1f}", f"{r['mean_us']:.2f}",
             f"{100 * r['share']:.1f}%"] for _, r in table.head(top).iterrows()]
    return html_table(["kernel / operator", "calls", "total (us)", "mean (us)", "share"], rows,
                      css_class="rocmlab-kernels")


def _lane(row, kind):
    return row["lane"] if kind == "gpu" or row["depth"] == 0 else f"{row['lane']} · level {row['depth']}"


def timeline_figure(events, kind: str = "gpu", top: int = 10, max_events: int = 3000, max_depth: int = 2,
                    title: str = ""):
    """Horizontal bars, one row per stream (GPU) or thread and nesting level (CPU); colour per kernel
    name (the ``top`` longest by total time, the rest 'other'); hover shows name, start and duration."""
    import plotly.graph_objects as go

    ev = events if kind == "gpu" else events[events["depth"] <= max_depth]
    ev = ev.head(max_events)
    totals = ev.groupby("name")["dur_us"].sum().sort_values(ascending=False)
    named = list(totals.index[:top])
    fig = go.FigureWidget()
    groups = [(n, ev[ev["name"] == n]) for n in named]
    rest = ev[~ev["name"].isin(named)]
    if len(rest):
        groups.append(("other", rest))
    for i, (n, g) in enumerate(groups):
        fig.add_trace(go.Bar(
            base=g["start_us"], x=g["dur_us"], y=[_lane(r, kind) for _, r in g.iterrows()], orientation="h",
            name=(n[:40] + "…") if len(n) > 41 else n, text=g["name"], textposition="none",
            marker={"color": PALETTE[i % len(PALETTE)] if n != "other" else "#cccccc"},
            hovertemplate="<b>%{text}</b><br>start %{base:.1f} us<br>%{x:.2f} us<br>%{y}<extra></extra>"))
    fig.update_layout(barmode="overlay", title=title or "timeline", height=160 + 40 * ev["lane"].nunique(),
                      xaxis={"title": "time (us from the first event)"}, yaxis={"autorange": "reversed"},
                      margin={"l": 160, "r": 20, "t": 50, "b": 50}, legend={"font": {"size": 9}})
    return fig


def kernel_table_widget(profile, top: int = 15):
    """A VBox: the profile's summary, its kernel table and its timeline."""
    import ipywidgets as w

    head = w.HTML(f"<b>{profile.summary()}</b>" + (f"<br>trace: <code>{profile.trace_path}</code> (open it in "
                                                    "https://ui.perfetto.dev)" if profile.trace_path else ""))
    table = w.HTML(table_html(profile.table, top))
    fig = timeline_figure(profile.events, profile.kind, title=f"timeline  [{profile.label}]")
    box = w.VBox([head, table, fig])
    box.figure = fig
    return box
