"""Occupancy explorer: sliders for a kernel's resources -> waves per SIMD, with the limiting resource named.

A plotly ``FigureWidget`` (bars: the waves per SIMD each resource alone allows; the lowest bar
is the occupancy) driven by ipywidgets sliders. The first slider, "VGPRs per lane", moves in
the allocation granule of 8, so every step right past 64 changes the VGPR bar.
"""

from __future__ import annotations

from rocmlab import settings
from rocmlab.hip import occupancy as occ

BAR_ORDER = ("VGPRs", "SGPRs", "LDS", "workgroup size")
COLOUR = "#4c78a8"
LIMIT_COLOUR = "#e45756"


def _title(o: occ.Occupancy) -> str:
    # two short lines: one long line ran past the figure's width and was cut off
    return (f"{o.target}: {o.waves_per_simd} of {o.max_waves} waves per SIMD ({o.fraction:.0%})"
            f"<br><span style='font-size:13px'>limited by {o.limiting}</span>")


def figure_data(o: occ.Occupancy) -> tuple[list[str], list[int], list[str]]:
    ys = [o.limits[k] for k in BAR_ORDER]
    colours = [LIMIT_COLOUR if v == o.waves_per_simd else COLOUR for v in ys]
    return list(BAR_ORDER), ys, colours


class OccupancyExplorer:
    """``OccupancyExplorer().widget`` is the ipywidgets box; ``.set(vgprs=...)`` moves sliders from code."""

    def __init__(self, target: str = settings.DEFAULT_TARGET, vgprs: int = 64, agprs: int = 0, sgprs: int = 24,
                 lds_bytes: int = 0, workgroup_size: int = 256):
        import ipywidgets as w
        import plotly.graph_objects as go

        style = {"description_width": "170px"}
        layout = w.Layout(width="560px")
        self.sliders = {
            "vgprs": w.IntSlider(value=vgprs, min=8, max=256, step=8, description="VGPRs per lane",
                                 style=style, layout=layout, continuous_update=True),
            "agprs": w.IntSlider(value=agprs, min=0, max=256, step=4, description="AGPRs per lane",
                                 style=style, layout=layout, continuous_update=True),
            "sgprs": w.IntSlider(value=sgprs, min=8, max=106, step=2, description="SGPRs per wave",
                                 style=style, layout=layout, continuous_update=True),
            "lds_bytes": w.IntSlider(value=lds_bytes, min=0, max=65536, step=1024,
                                     description="LDS bytes per workgroup", style=style, layout=layout,
                                     continuous_update=True),
            "workgroup_size": w.IntSlider(value=workgroup_size, min=64, max=1024, step=64,
                                          description="threads per workgroup", style=style, layout=layout,
                                          continuous_update=True),
        }
        self.target = w.Dropdown(options=[(f"{t} ({settings.TARGET_NAMES[t]})", t) for t in settings.AMD_TARGETS],
                                 value=target, description="target", style=style, layout=layout)
        self.result = w.HTML()
        o = self.compute()
        xs, ys, colours = figure_data(o)
        self.figure = go.FigureWidget(
            data=[go.Bar(x=xs, y=ys, marker_color=colours, text=ys, textposition="outside",
                         name="waves per SIMD allowed")],
            layout=go.Layout(title=_title(o), yaxis=dict(title="waves per SIMD", range=[0, 9], dtick=1),
                             xaxis=dict(title="resource"), height=360, width=620,
                             margin=dict(l=60, r=20, t=80, b=50)))
        for s in (*self.sliders.values(), self.target):
            s.observe(self._changed, names="value")
        self._render(o)
        # Sliders above the plot: side by side they overflow a notebook's width and hide the value readouts.
        self.widget = w.VBox([self.target, *self.sliders.values(), self.figure, self.result])

    def compute(self) -> occ.Occupancy:
        v = {k: s.value for k, s in self.sliders.items()}
        return occ.occupancy(v["vgprs"], v["agprs"], v["sgprs"], v["lds_bytes"], v["workgroup_size"], self.target.value)

    def set(self, **values) -> occ.Occupancy:
        for k, v in values.items():
            if k == "target":
                self.target.value = v
            else:
                self.sliders[k].value = v
        return self.compute()

    def _changed(self, _change=None):
        self._render(self.compute())

    def _render(self, o: occ.Occupancy):
        xs, ys, colours = figure_data(o)
        if hasattr(self, "figure"):
            with self.figure.batch_update():
                self.figure.data[0].y = ys
                self.figure.data[0].text = ys
                self.figure.data[0].marker.color = colours
                self.figure.layout.title = _title(o)
        notes = "".join(f"<br>note: {n}" for n in o.notes)
        self.result.value = (f"<b>{o.waves_per_simd} waves per SIMD</b> limited by <b>{o.limiting}</b>; "
                             f"{o.vgprs_allocated} VGPRs allocated per lane (unified file, granule 8); "
                             f"{o.workgroups_per_cu} workgroups = {o.waves_per_cu} waves per CU{notes}")


def occupancy_explorer(**kw):
    """Display-ready explorer widget (see :class:`OccupancyExplorer` for the arguments)."""
    return OccupancyExplorer(**kw).widget
