"""rocmlab.profile: timing, counted workloads, the roofline and its cache, trace readers, monitors.

Everything runs on the CPU with fresh random inputs; GPU-only paths are marked gpu."""

from __future__ import annotations

import json
import random
import statistics
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest
import torch

from rocmlab.machine.detect import current
from rocmlab.profile import monitor as mon_mod
from rocmlab.profile import ops, roofline, traces
from rocmlab.profile.timing import BenchError, BenchResult, bench, rotation_count

gpu_only = pytest.mark.skipif(not current().is_gpu, reason="needs a GPU backend (rocm or cuda); this is a CPU")


# --- timing ------------------------------------------------------------------------------------

def test_result_statistics_match_their_definitions():
    times = tuple(random.uniform(1e-4, 1e-2) for _ in range(random.randint(5, 40)))
    r = BenchResult("x", times, "wall", 1, 1, bytes=random.uniform(1e6, 1e9), flops=random.uniform(1e6, 1e12))
    assert r.median_s == statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    assert r.spread == pytest.approx((q3 - q1) / r.median_s)
    assert r.bandwidth_tbs == pytest.approx(r.bytes / r.median_s / 1e12)
    assert r.tflops == pytest.approx(r.flops / r.median_s / 1e12)
    assert r.intensity == pytest.approx(r.flops / r.bytes)
    assert "median of" in str(r)


def test_bench_rotates_inputs_and_counts_runs():
    n_sets, warmup, reps = random.randint(2, 6), random.randint(1, 4), random.randint(3, 12)
    seen = []
    sets = [(i,) for i in range(n_sets)]
    r = bench(lambda i: seen.append(i) or i, inputs=sets, warmup=warmup, reps=reps, label="test")
    assert seen == [i % n_sets for i in range(warmup)] + [i % n_sets for i in range(reps)]
    assert r.reps == reps and r.rotation == n_sets and r.timer.startswith("wall clock")
    assert all(t >= 0 for t in r.times_s)


def test_bench_times_the_call():
    r = bench(lambda: time.sleep(0.01) or 1, warmup=1, reps=3, label="test")
    assert 0.009 < r.median_s < 1.0


def test_bench_stops_at_max_time():
    r = bench(lambda: time.sleep(0.002) or 1, warmup=0, reps=1000, max_time_s=0.0, label="test")
    assert r.reps == 3


def test_bench_refuses_a_function_that_returns_nothing():
    calls = []
    with pytest.raises(BenchError, match="returned None") as e:
        bench(lambda: calls.append(1), label="test")
    assert "allow_none=True" in str(e.value) and len(calls) == 1      # checked on the first call, not timed
    r = bench(lambda: None, allow_none=True, reps=2, label="test")
    assert r.reps == 2


def test_bench_says_when_it_was_given_a_value_not_a_function():
    with pytest.raises(BenchError, match="Did you call it"):
        bench(torch.ones(2))


def test_bench_reports_a_function_that_raises():
    def bad():
        raise ZeroDivisionError("boom")
    with pytest.raises(BenchError, match="ZeroDivisionError.*boom") as e:
        bench(bad)
    assert isinstance(e.value.__cause__, ZeroDivisionError)


def test_bench_bad_arguments():
    with pytest.raises(BenchError, match="empty inputs"):
        bench(lambda x: x, inputs=[])
    with pytest.raises(BenchError, match="reps >= 1"):
        bench(lambda: 1, reps=0)


def test_rotation_count_exceeds_the_cache():
    cache = random.randint(1, 512) * 2 ** 20
    per = random.randint(1, 64) * 2 ** 20
    n = rotation_count(per, cache_bytes=cache, max_sets=10 ** 6)
    assert n * per >= 2 * cache and (n - 1) * per < 2 * cache or n == 1
    assert rotation_count(10 * cache, cache_bytes=cache) == 1
    with pytest.raises(BenchError):
        rotation_count(0, cache_bytes=cache)


# --- counted workloads ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [("fp32", 1e-5), ("bf16", 2e-2), ("fp16", 5e-3)])
def test_gemm_case_computes_a_matrix_product(dtype, tol):
    n = random.choice([32, 48, 64])
    case = ops.gemm_case(n, dtype, device="cpu", rotate=False)
    a, b = case.inputs[0]
    out = case.fn(a, b)
    ref = a.double() @ b.double()
    assert (out.double() - ref).norm() / ref.norm() < tol
    assert case.flops == 2 * n ** 3 and case.bytes == 3 * n * n * a.element_size()


def test_gemm_case_refuses_what_a_cpu_cannot_do():
    with pytest.raises(ops.Unsupported, match="CPU"):
        ops.gemm_case(64, "tf32", device="cpu")
    with pytest.raises(ops.Unsupported, match="FP8"):
        ops.gemm_case(64, "fp8", device="cpu")
    with pytest.raises(ValueError, match="unknown precision"):
        ops.gemm_case(64, "fp64", device="cpu")


def test_copy_case_copies_and_counts_both_directions():
    nbytes = random.randint(1, 64) * 1024
    case = ops.copy_case(nbytes, device="cpu", rotate=False)
    dst, src = case.inputs[0]
    assert torch.equal(case.fn(dst, src), src)
    assert case.bytes == 2 * nbytes and case.flops == 0


def test_gemm_sweep_gives_a_reason_for_skipped_precisions():
    df, results = ops.gemm_sweep([32], dtypes=("fp32", "tf32"), reps=2)
    assert len(results) == 1 and results[0].tflops > 0
    tf32 = df[df["dtype"] == "tf32"].iloc[0]
    assert tf32["TFLOP/s"] is None or tf32["TFLOP/s"] != tf32["TFLOP/s"]
    assert "CPU" in tf32["note"]


def test_fusion_example_matches_its_definition():
    x, b, y = (torch.randn(1000) for _ in range(3))
    ref = 0.5 * (x + b) * (1 + torch.erf((x + b) / 2 ** 0.5)) * y
    torch.testing.assert_close(ops.gelu_bias_mul(x, b, y), ref)


@pytest.mark.gpu
@gpu_only
def test_gemm_case_on_the_gpu_uses_device_events():
    r = ops.gemm_case(1024, "bf16").run(reps=3)
    assert r.timer.startswith("device events") and r.tflops > 0


# --- roofline ------------------------------------------------------------------------------------

def _roof(bw, peak):
    return roofline.Roofline("test: device", "X", bw * 1.2, {"bf16": peak * 1.1, "fp32": None},
                             bandwidth_tbs=bw, tflops={"bf16": peak})


def test_roofline_model():
    bw, peak = random.uniform(0.5, 6), random.uniform(50, 2000)
    roof = _roof(bw, peak)
    ridge = peak / bw
    assert roof.ridge("bf16") == pytest.approx(ridge)
    for inten in (ridge / random.uniform(2, 100), ridge * random.uniform(2, 100)):
        assert roof.attainable(inten, "bf16") == pytest.approx(min(peak, bw * inten))
    assert roof.bound(ridge / 3, "bf16") == "memory" and roof.bound(ridge * 3, "bf16") == "compute"
    assert roof.attainable(10, "bf16", measured=False) == pytest.approx(min(peak * 1.1, bw * 1.2 * 10))
    assert roof.attainable(10, "fp32") is None and roof.bound(10, "fp32") == "unknown"


def test_roofline_places_points_and_flags_impossible_ones():
    bw, peak = 2.0, 400.0
    roof = _roof(bw, peak)
    t = random.uniform(1e-4, 1e-2)
    flops = 0.5 * peak * 1e12 * t                 # half the compute roof, at high intensity
    ok = BenchResult("gemm bf16 n", (t,), "wall", 0, 1, bytes=flops / 1000, flops=flops)
    too_fast = BenchResult("gemm bf16 m", (t,), "wall", 0, 1, bytes=flops / 1000, flops=3 * flops)
    copy = BenchResult("copy", (t,), "wall", 0, 1, bytes=bw * 1e12 * t / 2, flops=0.0)
    df = roof.place([ok, too_fast, copy])
    assert df.loc[0, "of roof"] == pytest.approx(0.5) and df.loc[0, "bound"] == "compute"
    assert df.loc[0, "note"] == "" and "above the measured roof" in df.loc[1, "note"]
    assert df.loc[2, "of roof"] == pytest.approx(0.5) and df.loc[2, "bound"] == "memory"


def test_for_device_reads_the_spec_row():
    from rocmlab.machine import hardware

    spec = hardware.lookup("NVIDIA H200")
    plat = SimpleNamespace(label="cuda: NVIDIA H200", device=SimpleNamespace(spec=spec))
    roof = roofline.Roofline.for_device(plat=plat)
    assert roof.peak_bandwidth_tbs == spec["bandwidth_tbs"]
    assert roof.peak_tflops["bf16"] == spec["bf16_dense_tflops"]
    assert roof.ridge("bf16", measured=False) == pytest.approx(spec["bf16_dense_tflops"] / spec["bandwidth_tbs"])
    assert roof.ridge("bf16") is None                                   # nothing measured yet


def test_ceilings_are_measured_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMLAB_HOME", str(tmp_path))
    sizes = {"copy_bytes": 64 * 1024, "gemm_n": 32}
    c1 = roofline.measure_ceilings(quick=True, dtypes=("fp32",), sizes=sizes, reps=2, verbose=False)
    assert c1.bandwidth_tbs > 0 and c1.tflops["fp32"] > 0
    saved = json.loads((tmp_path / "ceilings.json").read_text())
    assert c1.key in saved and saved[c1.key]["sizes"] == sizes

    def no_measuring(*a, **k):
        raise AssertionError("measured again instead of using the cache")
    monkeypatch.setattr(roofline, "_quick_copy_tbs", lambda sizes, plat: c1.bandwidth_tbs)   # machine as fast as then
    monkeypatch.setattr(ops, "copy_case", no_measuring)
    c2 = roofline.measure_ceilings(quick=True, dtypes=("fp32",), sizes=sizes, verbose=False)
    assert c2.tflops == c1.tflops and c2.bandwidth_tbs == c1.bandwidth_tbs
    c3 = roofline.measure_ceilings(quick=True, dtypes=("fp32", "bf16", "tf32"), sizes=sizes, reps=2, verbose=False)
    assert "bf16" in c3.tflops and "tf32" in c3.notes and c3.tflops["fp32"] == c1.tflops["fp32"]
    with pytest.raises(AssertionError, match="measured again"):
        roofline.measure_ceilings(quick=True, dtypes=("fp32",), sizes=sizes, force=True, verbose=False)


def test_ceilings_cached_on_a_busy_machine_are_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMLAB_HOME", str(tmp_path))
    sizes = {"copy_bytes": 64 * 1024, "gemm_n": 32}
    c1 = roofline.measure_ceilings(quick=True, dtypes=("fp32",), sizes=sizes, reps=2, verbose=False)
    calls = []
    real = ops.copy_case
    monkeypatch.setattr(ops, "copy_case", lambda n: calls.append(n) or real(n))
    factor = random.uniform(1.0, roofline.STALE_FACTOR * 0.99)
    monkeypatch.setattr(roofline, "_quick_copy_tbs", lambda sizes, plat: factor * c1.bandwidth_tbs)
    roofline.measure_ceilings(quick=True, dtypes=("fp32",), sizes=sizes, verbose=False)
    assert calls == []                             # close enough to the cached figures: the cache stands
    monkeypatch.setattr(roofline, "_quick_copy_tbs", lambda sizes, plat: 10 * c1.bandwidth_tbs)
    roofline.measure_ceilings(quick=True, dtypes=("fp32",), sizes=sizes, reps=2, verbose=False)
    assert calls == [sizes["copy_bytes"]]          # the cached figures were no ceiling: measured again


# --- traces --------------------------------------------------------------------------------------

def _gpu_trace(names, n):
    events, truth = [], {}
    for i in range(n):
        name = random.choice(names)
        dur = random.uniform(1, 500)
        truth[name] = truth.get(name, 0) + dur
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1000 + i * 600,
                       "dur": dur, "args": {"device": 0, "stream": random.choice([7, 13])}})
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5})
    events.append({"ph": "i", "name": "marker", "ts": 3})
    return {"traceEvents": events}, truth


def test_kernel_table_from_a_gpu_trace(tmp_path):
    tr, truth = _gpu_trace(["gemm", "softmax", "elementwise", "reduce"], random.randint(20, 80))
    path = tmp_path / "t.json"
    path.write_text(json.dumps(tr))
    events, kind = traces.read_chrome_trace(path)
    assert kind == "gpu" and set(events["lane"]) <= {"gpu 0 stream 7", "gpu 0 stream 13"}
    table = traces.kernel_table(events)
    assert dict(zip(table["name"], table["total_us"], strict=True)) == pytest.approx(truth)
    assert table["share"].sum() == pytest.approx(1.0)
    assert list(table["total_us"]) == sorted(table["total_us"], reverse=True)
    assert (table["mean_us"] * table["calls"]).to_list() == pytest.approx(table["total_us"].to_list())
    assert events["start_us"].min() == 0


def test_cpu_operators_are_counted_by_self_time():
    parent, child = random.uniform(100, 200), random.uniform(10, 90)
    tr = [{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "tid": 1, "ts": 0, "dur": parent},
          {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "tid": 1, "ts": 5, "dur": child},
          {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "tid": 1, "ts": parent + 1, "dur": 3}]
    events, kind = traces.read_chrome_trace({"traceEvents": tr})
    assert kind == "cpu"
    assert list(events["depth"]) == [0, 1, 0]
    table = traces.kernel_table(events).set_index("name")
    assert table.loc["aten::linear", "total_us"] == pytest.approx(parent - child)
    assert table.loc["aten::addmm", "total_us"] == pytest.approx(child)
    assert table["share"].sum() == pytest.approx(1.0)


def test_profile_kernels_on_a_real_step(tmp_path):
    m = torch.nn.Linear(32, 32)
    x = torch.randn(16, 32)
    prof = traces.profile_kernels(lambda: m(x).relu().sum().backward(), steps=2, trace_dir=str(tmp_path))
    assert prof.source == "torch.profiler" and (tmp_path / "<lambda>.trace.json").is_file()
    table = prof.table
    assert len(table) and table["share"].sum() == pytest.approx(1.0)
    assert any("mm" in n for n in table["name"])


def test_profile_kernels_on_a_function_that_raises():
    def broken(x):
        raise ValueError("shapes do not match")
    with pytest.raises(traces.ProfileError, match="ValueError in profiled step 1 of 3.*shapes do not match") as e:
        traces.profile_kernels(broken, torch.ones(1), warmup=0)
    assert isinstance(e.value.__cause__, ValueError)
    with pytest.raises(traces.ProfileError, match="warm-up call 1"):
        traces.profile_kernels(broken, torch.ones(1))
    # the profiler was stopped cleanly: profiling works again
    assert len(traces.profile_kernels(lambda: torch.ones(8) * 2, steps=1).table) > 0
    with pytest.raises(traces.ProfileError, match="Did you call it"):
        traces.profile_kernels(torch.ones(2))


def _rocprof_rows(n):
    rows, truth, t = [], {}, 10 ** 12
    for _ in range(n):
        name = random.choice(["Cijk_gemm", "elementwise_kernel", "reduce_kernel"])
        dur = random.randint(1000, 90000)
        truth[name] = truth.get(name, 0) + dur / 1e3
        rows.append((name, t, t + dur))
        t += dur + random.randint(10, 1000)
    return rows, truth


def test_read_rocprofv3_and_rocprof_csv(tmp_path):
    rows, truth = _rocprof_rows(random.randint(5, 30))
    v3 = tmp_path / "123_kernel_trace.csv"
    v3.write_text('"Kind","Agent_Id","Queue_Id","Stream_Id","Kernel_Name","Start_Timestamp","End_Timestamp"\n'
                  + "".join(f'"KERNEL_DISPATCH","Agent 4",1,1,"{n}",{s},{e}\n' for n, s, e in rows))
    v1 = tmp_path / "results.csv"
    v1.write_text("Index,KernelName,gpu-id,queue-id,BeginNs,EndNs\n"
                  + "".join(f'{i},"{n}",0,0,{s},{e}\n' for i, (n, s, e) in enumerate(rows)))
    for path in (v3, v1):
        table = traces.kernel_table(traces.read_rocprof_csv(path))
        assert dict(zip(table["name"], table["total_us"], strict=True)) == pytest.approx(truth)
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(traces.ProfileError, match="not a kernel trace"):
        traces.read_rocprof_csv(bad)


def test_run_under_rocprof_without_the_tool():
    with pytest.raises(traces.ProfileError, match="nor rocprof is on PATH"):
        traces.run_under_rocprof(["true"], which=lambda tool: None)


def test_run_under_rocprof_drives_the_tool_and_reads_its_csv(tmp_path):
    # A stand-in rocprofv3 (clearly fake, in tmp_path) that writes a kernel trace where rocprofv3 would,
    # then runs the command: this checks the wrapper's command line and reading, not the profiler.
    fake = tmp_path / "rocprofv3"
    fake.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import os, subprocess, sys
        args = sys.argv[1:]
        assert args[:3] == ["--kernel-trace", "--output-format", "csv"], args
        out = args[args.index("-d") + 1]
        cmd = args[args.index("--") + 1:]
        os.makedirs(os.path.join(out, "host", "42"), exist_ok=True)
        with open(os.path.join(out, "host", "42", "42_kernel_trace.csv"), "w") as fh:
            fh.write('"Agent_Id","Queue_Id","Kernel_Name","Start_Timestamp","End_Timestamp"\\n"Agent 1",0,"k",100,2100\\n')
        sys.exit(subprocess.call(cmd))
        """))
    fake.chmod(0o755)
    prof = traces.run_under_rocprof([sys.executable, "-c", "print('hi')"], out_dir=str(tmp_path / "o"),
                                   which=lambda tool: str(fake) if tool == "rocprofv3" else None)
    assert prof.source == "rocprofv3" and prof.table.loc[0, "total_us"] == pytest.approx(2.0)
    with pytest.raises(traces.ProfileError, match="exited with status 3"):
        traces.run_under_rocprof([sys.executable, "-c", "raise SystemExit(3)"], out_dir=str(tmp_path / "p"),
                                which=lambda tool: str(fake) if tool == "rocprofv3" else None)


def test_run_under_rocprof_needs_an_importable_function():
    def local():
        pass
    with pytest.raises(traces.ProfileError, match="importable"):
        traces._python_command(local)
    cmd = traces._python_command(json.dumps)
    assert cmd[0] == sys.executable and "'json'" in cmd[2]


# --- monitors ------------------------------------------------------------------------------------

def _nothing(name):
    raise ImportError(f"No module named {name!r}")


def test_monitor_with_no_supported_library():
    with pytest.raises(mon_mod.MonitorUnavailable) as e:
        mon_mod.Monitor(importer=_nothing)
    msg = str(e.value)
    for lib, fix in (("amdsmi", "pip install amdsmi"), ("nvml", "pip install nvidia-ml-py"),
                     ("psutil", "pip install psutil")):
        assert lib in msg and fix in msg
    with pytest.raises(mon_mod.MonitorUnavailable, match="unknown monitor source 'rocm-smi'"):
        mon_mod.open_source("rocm-smi")
    with pytest.raises(mon_mod.MonitorUnavailable, match="the nvml monitor"):
        mon_mod.open_source("nvml", importer=_nothing)


def test_nvml_source_converts_units():
    mem_used, mem_total, mw, temp, util = (random.randint(1, 10 ** 11), 141 * 10 ** 9, random.randint(50_000, 700_000),
                                           random.randint(30, 90), random.randint(0, 100))
    h = object()
    fake = SimpleNamespace(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: h, nvmlDeviceGetName=lambda hh: b"NVIDIA H200",
        nvmlDeviceGetUtilizationRates=lambda hh: SimpleNamespace(gpu=util, memory=3),
        nvmlDeviceGetMemoryInfo=lambda hh: SimpleNamespace(used=mem_used, total=mem_total),
        nvmlDeviceGetPowerUsage=lambda hh: mw, nvmlDeviceGetTemperature=lambda hh, s: temp, NVML_TEMPERATURE_GPU=0)
    src = mon_mod.open_source("nvml", importer=lambda name: fake)
    assert src.description == "nvml (NVIDIA H200)"
    v = src.read()
    assert v == pytest.approx({"util_pct": util, "mem_used_gb": mem_used / 1e9, "mem_total_gb": mem_total / 1e9,
                               "power_w": mw / 1e3, "temp_c": temp})


def test_amdsmi_source_reads_mi300x_style_values():
    used_mb, watts, temp, act = random.randint(1, 190_000), random.randint(100, 750), random.randint(30, 95), random.randint(0, 100)
    TT = SimpleNamespace(EDGE="edge", HOTSPOT="hotspot")
    fake = SimpleNamespace(
        amdsmi_init=lambda *a: None, amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_asic_info=lambda h: {"market_name": "AMD Instinct MI300X"},
        amdsmi_get_gpu_activity=lambda h: {"gfx_activity": act, "umc_activity": "N/A", "mm_activity": "N/A"},
        amdsmi_get_gpu_vram_usage=lambda h: {"vram_used": used_mb, "vram_total": 196_592},
        amdsmi_get_power_info=lambda h: {"current_socket_power": "N/A", "average_socket_power": watts},
        amdsmi_get_temp_metric=lambda h, s, m: "N/A" if s == "edge" else temp,       # MI300X: no edge sensor
        AmdSmiTemperatureType=TT, AmdSmiTemperatureMetric=SimpleNamespace(CURRENT="current"))
    src = mon_mod.open_source(importer=lambda name: fake if name == "amdsmi" else _nothing(name))
    assert src.name == "amdsmi" and "MI300X" in src.description
    v = src.read()
    assert v["util_pct"] == act and v["power_w"] == watts and v["temp_c"] == temp
    assert v["mem_used_gb"] == pytest.approx(used_mb * 2 ** 20 / 1e9)


def test_monitor_falls_through_to_the_next_library():
    def importer(name):
        if name == "amdsmi":
            return SimpleNamespace(amdsmi_init=lambda *a: (_ for _ in ()).throw(OSError("libamd_smi.so missing")))
        if name == "pynvml":
            raise ImportError("no pynvml")
        import psutil
        return psutil
    src = mon_mod.open_source(importer=importer)
    assert src.name == "psutil"


def test_monitor_samples_in_the_background_and_stops_cleanly():
    m = mon_mod.Monitor("psutil", interval_s=0.05)
    got = []
    m.listeners.append(got.append)
    m.listeners.append(lambda s: 1 / 0)            # a broken listener must not stop sampling
    with m:
        deadline = time.monotonic() + 5
        while len(m.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert m.running
    assert not m.running and len(m.samples) >= 3 and len(got) == len(m.samples)
    assert any("ZeroDivisionError" in e for e in m.errors)
    df = m.frame()
    assert list(df["source"].unique()) == ["psutil"] and (df["mem_total_gb"] > 0).all()
    assert df["t"].is_monotonic_increasing
    with pytest.raises(RuntimeError, match="closed"):
        m.start()
    with pytest.raises(ValueError):
        mon_mod.Monitor("psutil", interval_s=0)
