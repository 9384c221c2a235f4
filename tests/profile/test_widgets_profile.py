"""The profiling widgets: roofline (slider and hover), kernel table + timeline, live monitor."""

from __future__ import annotations

import json
import random
import time

import pandas as pd
import pytest

from rocmlab.profile import roofline, traces
from rocmlab.profile.timing import BenchResult
from rocmlab.course.widgets.monitor import monitor_widget
from rocmlab.course.widgets.roofline import (describe_intensity, no_gpu_note, points_table, roofline_figure,
                                             roofline_widget)
from rocmlab.course.widgets.timeline import kernel_table_widget, timeline_figure


def _strict_json(fig):
    def reject(c):
        raise ValueError(f"{c} in figure JSON: the browser cannot parse it")
    return json.loads(fig.to_json(), parse_constant=reject)


def _roof():
    bw, peak = random.uniform(1, 5), random.uniform(100, 1000)
    return roofline.Roofline("test: device", "X", bw * 1.1, {"bf16": peak * 1.2, "fp16": peak * 1.2, "fp32": None},
                             bandwidth_tbs=bw, tflops={"bf16": peak})


def _points(roof):
    res = []
    for i in range(4):
        t, inten = random.uniform(1e-4, 1e-2), random.uniform(1, 2000)     # below the roof at its intensity
        flops = random.uniform(0.1, 0.9) * roof.attainable(inten, "bf16") * 1e12 * t
        res.append(BenchResult(f"gemm bf16 {i}", (t,), "wall", 0, 1, bytes=flops / inten, flops=flops))
    res.append(BenchResult("gemm fp32 x", (1e-3,), "wall", 0, 1, bytes=1e6, flops=1e9))     # no fp32 roof at all
    res.append(BenchResult("copy", (1e-3,), "wall", 0, 1, bytes=1e9, flops=0.0))            # not on a log axis
    return roof.place(res)


def test_roofline_figure_has_roofs_and_hoverable_points():
    roof = _roof()
    pts = _points(roof)
    fig = roofline_figure(roof, pts)
    names = [t.name for t in fig.data]
    assert "bf16 roof (measured)" in names and "bf16 roof (spec)" in names and "fp16 roof (spec)" in names
    assert "fp16 roof (measured)" not in names
    bf16 = next(t for t in fig.data if t.name == "measured bf16")
    assert list(bf16.text) == [f"gemm bf16 {i}" for i in range(4)] and "%{text}" in bf16.hovertemplate
    measured_roof = next(t for t in fig.data if t.name == "bf16 roof (measured)")
    assert max(measured_roof.y) == pytest.approx(roof.compute("bf16"))
    # the copy (no FLOP/byte) and the fp32 point (no fp32 roof) are left off, and the widget says why
    assert sum(len(t.x) for t in fig.data if t.name.startswith("measured")) == 4
    assert "gemm fp32 x (no fp32 ceiling measured here)" in no_gpu_note(roof, pts)
    _strict_json(fig)
    assert fig.layout.xaxis.type == "log" and "test: device" in fig.layout.title.text


def test_roofline_slider_moves_the_marker_and_the_readout():
    roof = _roof()
    box = roofline_widget(roof, _points(roof))
    marker = box.figure.data[-1]
    assert marker.name == "your kernel"
    r = roof.ridge("bf16")
    box.slider.value = r / 20
    assert marker.y[0] == pytest.approx(roof.attainable(box.slider.value, "bf16"))
    assert "memory bound" in box.readout.value
    box.slider.value = min(r * 20, 9999)
    assert marker.y[0] == pytest.approx(roof.compute("bf16"))
    assert "compute bound" in box.readout.value
    box.dropdown.value = "fp16"                         # spec roof only: the marker follows it
    assert marker.y[0] == pytest.approx(roof.attainable(box.slider.value, "fp16", measured=False))


def test_a_cpu_roofline_says_it_has_no_gpu_roofs_and_draws_no_point_above_its_roof():
    roof = _roof()
    roof.gpu, roof.spec_name, roof.peak_bandwidth_tbs, roof.peak_tflops = False, None, None, {}
    res = [BenchResult("gemm bf16 fine", (1e-3,), "wall", 0, 1, bytes=1e6, flops=0.5 * roof.compute("bf16") * 1e9),
           BenchResult("gemm bf16 above", (1e-3,), "wall", 0, 1, bytes=1e3, flops=34 * roof.compute("bf16") * 1e9),
           BenchResult("gemm fp16 none", (1e-3,), "wall", 0, 1, bytes=1e6, flops=1e6)]
    pts = roof.place(res)
    box = roofline_widget(roof, pts)
    assert "No GPU roofs here" in box.note.value and "gemm bf16 above (above the measured roof" in box.note.value
    assert [list(t.text) for t in box.figure.data if t.name.startswith("measured")] == [["gemm bf16 fine"]]
    assert "no GPU" in box.figure.layout.title.text
    table = points_table(pts)
    assert "nan" not in table.lower() and "white-space:nowrap" in table and "no roof" in table and "—" in table
    gpu = _roof()
    assert not roofline_widget(gpu, _points(gpu)).note.value.startswith("<b>No GPU")


def test_roofline_widget_without_any_roof():
    empty = roofline.Roofline("test: cpu", None, None, {})
    assert "No roof" in roofline_widget(empty).value
    assert "no roof" in describe_intensity(empty, 1.0, "bf16")


def _profile():
    rows = []
    for lane in ("gpu 0 stream 7", "gpu 0 stream 13"):
        t = 0.0
        for _ in range(random.randint(3, 20)):
            d = random.uniform(1, 100)
            rows.append({"name": random.choice(["gemm", "softmax", "add", "mul", "layernorm"]), "cat": "kernel",
                         "lane": lane, "start_us": t, "dur_us": d, "self_us": d, "depth": 0})
            t += d + random.uniform(0, 5)
    return traces.KernelProfile(pd.DataFrame(rows, columns=traces.EVENT_COLUMNS), "gpu", "test", "test: device")


def test_timeline_has_one_bar_per_event_in_its_stream():
    prof = _profile()
    fig = timeline_figure(prof.events, "gpu", top=3)
    assert sum(len(t.x) for t in fig.data) == len(prof.events)
    assert {y for t in fig.data for y in t.y} == set(prof.events["lane"])
    assert len(fig.data) <= 4 and (len(fig.data) < 4 or fig.data[-1].name == "other")
    for t in fig.data:
        assert all(b >= 0 for b in t.base) and "%{text}" in t.hovertemplate
    _strict_json(fig)


def test_kernel_table_widget_shows_the_table_and_the_timeline():
    prof = _profile()
    box = kernel_table_widget(prof)
    table_html = box.children[1].value
    for name in prof.table["name"]:
        assert name in table_html
    assert "test: device" in box.children[0].value and box.figure is box.children[2]


def test_cpu_timeline_shows_nesting_levels():
    tr = [{"ph": "X", "cat": "cpu_op", "name": "outer", "tid": 1, "ts": 0, "dur": 100},
          {"ph": "X", "cat": "cpu_op", "name": "inner", "tid": 1, "ts": 10, "dur": 50}]
    events, kind = traces.read_chrome_trace({"traceEvents": tr})
    fig = timeline_figure(events, kind)
    assert {y for t in fig.data for y in t.y} == {"cpu thread 1", "cpu thread 1 · level 1"}


def test_monitor_widget_updates_in_the_background_and_stops():
    box = monitor_widget("psutil", interval_s=0.05)
    mon = box.monitor
    try:
        assert "source: psutil" in box.status.value
        deadline = time.monotonic() + 5
        while len(box.figure.data[0].x) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(box.figure.data[0].x) >= 3             # the thread redrew the figure
        assert len(box.figure.data[0].y) == len(box.figure.data[0].x)
    finally:
        box.stop_button.click()
    assert not mon.running and "stopped" in box.status.value
    n = len(mon.samples)
    time.sleep(0.2)
    assert len(mon.samples) == n                           # really stopped
    box.start_button.click()
    assert mon.running
    mon.close()
    assert not mon.running


def test_monitor_widget_with_no_library_shows_the_message():
    def nothing(name):
        raise ImportError(name)
    box = monitor_widget(importer=nothing)
    assert box.monitor is None and "pip install nvidia-ml-py" in box.value and "amdsmi" in box.error
