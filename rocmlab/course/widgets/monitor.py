"""A live GPU (or CPU) monitor widget: utilisation, memory, power and temperature, updated from the
sampling thread of :class:`rocmlab.profile.Monitor`, so the notebook never blocks. Start and Stop
buttons; the header names the source (amdsmi, nvml or psutil) and the device."""

from __future__ import annotations

import html

from rocmlab.profile.monitor import Monitor, MonitorUnavailable

PANELS = (("util_pct", "utilisation (%)"), ("mem_used_gb", "memory used (GB)"),
          ("power_w", "power (W)"), ("temp_c", "temperature (°C)"))


def _status(mon, state: str) -> str:
    n = len(mon.samples)
    last = mon.samples[-1] if n else None
    bits = [f"<b>source: {html.escape(mon.source)}</b>", state, f"{n} samples every {mon.interval_s:g} s"]
    if last is not None:
        vals = []
        for key, label in PANELS:
            v = getattr(last, key)
            vals.append(f"{label.split(' (')[0]} {'n/a' if v is None else f'{v:.3g}'}")
        bits.append(", ".join(vals))
    if mon.errors:
        bits.append(f"<span style='color:#cf222e'>last error: {html.escape(mon.errors[-1])}</span>")
    return " · ".join(bits)


def monitor_widget(source: str | None = None, interval_s: float = 1.0, window: int = 120, autostart: bool = True,
                   monitor=None, **monitor_kw):
    """A VBox with the live figure; ``box.monitor`` is the :class:`Monitor` (``box.monitor.stop()``).

    With no supported library it returns an HTML widget carrying the :class:`MonitorUnavailable`
    message (which names the library to install) instead of raising into the notebook."""
    import ipywidgets as w
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    try:
        mon = monitor or Monitor(source, interval_s=interval_s, history=window, **monitor_kw)
    except MonitorUnavailable as exc:
        box = w.HTML("<pre class='rocmlab-monitor-unavailable'>" + html.escape(str(exc)) + "</pre>")
        box.monitor = None
        box.error = str(exc)
        return box
    fig = go.FigureWidget(make_subplots(rows=1, cols=4, subplot_titles=[p[1] for p in PANELS]))
    for i, (_key, label) in enumerate(PANELS):
        fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name=label, showlegend=False), row=1, col=i + 1)
    fig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30},
                      title={"text": f"{mon.source}", "font": {"size": 12}})
    status = w.HTML(_status(mon, "stopped"))
    start, stop = w.Button(description="Start", icon="play"), w.Button(description="Stop", icon="stop")

    def redraw(_sample=None):
        samples = list(mon.samples)
        xs = [s.t for s in samples]
        with fig.batch_update():
            for trace, (key, _label) in zip(fig.data, PANELS, strict=True):
                trace.x = xs
                trace.y = [getattr(s, key) for s in samples]
        status.value = _status(mon, "running" if mon.running else "stopped")

    def on_start(_=None):
        mon.start()
        status.value = _status(mon, "running")

    def on_stop(_=None):
        ended = mon.stop()
        status.value = _status(mon, "stopped" if ended else "stopping (the thread has not ended yet)")

    mon.listeners.append(redraw)
    start.on_click(on_start)
    stop.on_click(on_stop)
    box = w.VBox([status, w.HBox([start, stop]), fig])
    box.monitor, box.figure, box.status, box.redraw = mon, fig, status, redraw
    box.start_button, box.stop_button, box.stop_monitor = start, stop, on_stop
    if autostart:
        on_start()
    return box
