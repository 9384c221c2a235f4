"""Hardware counters that show why a kernel is slow: rocprofv3 ``--pmc`` on MI300X, Nsight Compute on NVIDIA.

Three causes, each with the counters that show it (the names are gfx942's, as rocprofv3 and
rocprof-compute spell them; see :data:`SOURCES`):

- **uncoalesced global access**: many L1 (TCP) cache-line accesses per memory instruction:
  ``TCP_TOTAL_CACHE_ACCESSES_sum / (SQ_INSTS_VMEM_RD + SQ_INSTS_VMEM_WR)`` (and the requests TCP sends to L2,
  ``TCP_TCC_READ_REQ_sum``; L2 hits ``TCC_HIT_sum`` / misses ``TCC_MISS_sum``);
- **LDS bank conflicts**: ``SQ_LDS_BANK_CONFLICT`` (cycles stalled on conflicts) against ``SQ_LDS_IDX_ACTIVE``
  (cycles the LDS was busy), with ``SQ_INSTS_LDS`` (LDS instructions);
- **low occupancy**: ``SQ_WAVES`` (waves launched), ``SQ_WAVE_CYCLES`` / ``SQ_BUSY_CYCLES`` (wave-cycles resident
  per busy cycle: the mean number of resident waves), with ``GRBM_GUI_ACTIVE`` (GPU busy cycles) for the duration.

:func:`pmc_command` builds the rocprofv3 command, :func:`read_counter_csv` reads its ``*_counter_collection.csv``
into a DataFrame (one row per dispatch, one column per counter) and :func:`collect` does both on a ROCm
machine. :func:`ncu_command` / :func:`read_ncu_csv` / :func:`collect_ncu` are the NVIDIA counterparts
(:data:`NCU_METRICS`); where the driver does not allow counters (``ERR_NVGPUCTRPERM``) they raise
:class:`CountersNotPermitted` and the caller times before and after instead. Where neither tool runs (a CPU),
nothing here pretends: the lab shows the commands and the offline evidence (ISA, resources).
"""

from __future__ import annotations

import csv
import glob
import io
import os
import shutil
import tempfile
from dataclasses import dataclass

from rocmlab.sandbox import run_limited

#: Where the names and meanings come from (read them there; counters differ between GPU generations).
SOURCES = {
    "rocprofv3": "https://rocm.docs.amd.com/projects/rocprofiler-sdk/en/latest/how-to/using-rocprofv3.html",
    "counters (gfx942)": "https://rocm.docs.amd.com/en/docs-6.1.1/conceptual/gpu-arch/mi300-mi200-performance-counters.html",
    "rocprof-compute LDS": "https://rocm.docs.amd.com/projects/rocprofiler-compute/en/latest/conceptual/local-data-share.html",
    "rocprof-compute CLI": "https://rocm.docs.amd.com/projects/rocprofiler-compute/en/latest/how-to/analyze/cli.html",
    "Nsight Compute metrics": "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#metrics-reference",
    "ncu permissions": "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
}


@dataclass(frozen=True)
class Counter:
    name: str
    block: str        # the hardware block that counts it
    meaning: str


#: The gfx942 (MI300X) counters this lab reads, by name.
GFX942: dict[str, Counter] = {c.name: c for c in (
    Counter("GRBM_GUI_ACTIVE", "GRBM", "cycles the GPU was busy (the kernel's duration in cycles)"),
    Counter("SQ_WAVES", "SQ", "wavefronts launched"),
    Counter("SQ_WAVE_CYCLES", "SQ", "wave-cycles: waves resident, summed over cycles"),
    Counter("SQ_BUSY_CYCLES", "SQ", "cycles the sequencers reported busy"),
    Counter("SQ_INSTS_VMEM_RD", "SQ", "vector memory read instructions issued (per wavefront)"),
    Counter("SQ_INSTS_VMEM_WR", "SQ", "vector memory write instructions issued (per wavefront)"),
    Counter("SQ_INSTS_LDS", "SQ", "LDS instructions issued"),
    Counter("SQ_LDS_BANK_CONFLICT", "SQ", "cycles LDS was stalled by bank conflicts"),
    Counter("SQ_LDS_IDX_ACTIVE", "SQ", "cycles LDS was active with indexed (ds_*) operations"),
    Counter("TCP_TOTAL_CACHE_ACCESSES_sum", "TCP (vector L1)", "vector L1 cache-line accesses, all CUs"),
    Counter("TCP_TCC_READ_REQ_sum", "TCP (vector L1)", "read requests vL1 sent to L2 (its read misses)"),
    Counter("TCC_HIT_sum", "TCC (L2)", "L2 hits, all channels"),
    Counter("TCC_MISS_sum", "TCC (L2)", "L2 misses, all channels"),
)}


@dataclass(frozen=True)
class Diagnosis:
    cause: str
    exercise: str               # the graded exercise that fixes it
    mi300x: tuple[str, ...]     # rocprofv3 --pmc counters (at most a few: they must fit in one pass)
    ratio: str                  # the derived figure that tells slow from fixed, as a formula over those counters
    nvidia: tuple[str, ...]     # Nsight Compute metrics
    offline: str                # what the offline compiler shows on any machine


DIAGNOSES: tuple[Diagnosis, ...] = (
    Diagnosis("uncoalesced global access", "lab11-coalesce",
              ("TCP_TOTAL_CACHE_ACCESSES_sum", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "TCP_TCC_READ_REQ_sum"),
              "TCP_TOTAL_CACHE_ACCESSES_sum / (SQ_INSTS_VMEM_RD + SQ_INSTS_VMEM_WR): cache lines per memory instruction",
              ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
               "gpu__time_duration.sum"),
              "the access width in the ISA: global_load_dword (4 B per lane) against global_load_dwordx4 (16 B)"),
    Diagnosis("LDS bank conflicts", "lab11-lds-banks",
              ("SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE", "SQ_INSTS_LDS"),
              "SQ_LDS_BANK_CONFLICT / SQ_LDS_IDX_ACTIVE: the share of LDS cycles lost to conflicts",
              ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "gpu__time_duration.sum"),
              "the LDS layout: the tile's bytes in the resources and the ds_* instructions in the ISA; the bank of "
              "each lane's word address (w % 32) follows from the declared row length"),
    Diagnosis("occupancy limited by LDS", "lab11-occupancy",
              ("SQ_WAVES", "SQ_WAVE_CYCLES", "SQ_BUSY_CYCLES", "GRBM_GUI_ACTIVE"),
              "SQ_WAVE_CYCLES / SQ_BUSY_CYCLES: waves resident on average (per SE); GRBM_GUI_ACTIVE: cycles",
              ("sm__warps_active.avg.pct_of_peak_sustained_active", "launch__occupancy_limit_shared_mem",
               "launch__shared_mem_per_block_static", "gpu__time_duration.sum"),
              "the resources: LDS bytes per block and the compiler's waves per SIMD"),
)


def diagnosis(exercise_or_cause: str) -> Diagnosis:
    for d in DIAGNOSES:
        if exercise_or_cause in (d.exercise, d.cause):
            return d
    raise KeyError(f"no diagnosis {exercise_or_cause!r}: one of {', '.join(d.exercise for d in DIAGNOSES)}")


class CounterError(RuntimeError):
    """The counters could not be collected; the message says why and what to do."""


class CountersNotPermitted(CounterError):
    """The profiler runs, but the driver does not let this user read the GPU's counters."""


# --- rocprofv3 (ROCm) ----------------------------------------------------------------------------

def pmc_command(counters, out_dir: str, cmd, rocprofv3: str = "rocprofv3") -> list[str]:
    """``rocprofv3 --pmc C1 C2 ... --output-format csv -d OUT -o counters -- CMD...``."""
    counters = [str(c) for c in counters]
    if not counters:
        raise ValueError("name at least one counter (e.g. SQ_WAVES)")
    return [rocprofv3, "--pmc", *counters, "--output-format", "csv", "-d", str(out_dir), "-o", "counters",
            "--", *[str(c) for c in cmd]]


def read_counter_csv(path):
    """A rocprofv3 ``*_counter_collection.csv`` as a DataFrame: one row per dispatch (``Dispatch_Id``,
    ``Kernel_Name``), one column per counter (values summed over the counter's dimensions)."""
    import pandas as pd

    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        need = {"Kernel_Name", "Counter_Name", "Counter_Value"}
        if not need <= set(reader.fieldnames or ()):
            raise CounterError(f"{path} is not a rocprofv3 counter collection: expected columns {sorted(need)}, "
                               f"found {(reader.fieldnames or [])[:8]}")
        rows = [{"dispatch": int(float(r.get("Dispatch_Id") or r.get("Correlation_Id") or 0)),
                 "kernel": r["Kernel_Name"], "counter": r["Counter_Name"], "value": float(r["Counter_Value"])}
                for r in reader]
    if not rows:
        raise CounterError(f"{path} has no counter rows: did the program launch a kernel?")
    df = pd.DataFrame(rows)
    wide = df.pivot_table(index=["dispatch", "kernel"], columns="counter", values="value", aggfunc="sum")
    wide.columns.name = None
    return wide.reset_index()


def find_counter_csv(out_dir) -> str | None:
    hits = sorted(glob.glob(os.path.join(str(out_dir), "**", "*counter_collection.csv"), recursive=True))
    return hits[0] if hits else None


def collect(cmd, counters, out_dir: str | None = None, timeout_s: float = 300.0, which=shutil.which):
    """Run ``cmd`` (a trusted program: the lab's own kernels) under rocprofv3 ``--pmc`` and return the
    DataFrame of :func:`read_counter_csv`. Raises :class:`CounterError` where rocprofv3 is missing or fails."""
    tool = which("rocprofv3")
    if tool is None:
        raise CounterError("rocprofv3 is not on PATH: it ships with ROCm (export PATH=$PATH:/opt/rocm/bin); "
                           "on other machines read the counters' names and the commands instead")
    out_dir = out_dir or tempfile.mkdtemp(prefix="rocmlab-pmc-")
    res = run_limited(pmc_command(counters, out_dir, cmd, tool), timeout_s=timeout_s, memory_bytes=None)
    if not res.ok:
        raise CounterError(f"rocprofv3 --pmc {' '.join(counters)} {res.explain()}; stderr tail: "
                           f"{res.stderr.strip()[-400:]} (too many counters for one pass? `rocprofv3-avail "
                           "pmc-check C1 C2 ...` says which fit together)")
    path = find_counter_csv(out_dir)
    if path is None:
        raise CounterError(f"rocprofv3 finished but wrote no *_counter_collection.csv under {out_dir}")
    return read_counter_csv(path)


def derived(df, d: Diagnosis):
    """The diagnosis's figure for each dispatch (a Series), from the counters in ``df``."""
    c = df
    if d.exercise == "lab11-coalesce":
        return c["TCP_TOTAL_CACHE_ACCESSES_sum"] / (c["SQ_INSTS_VMEM_RD"] + c["SQ_INSTS_VMEM_WR"])
    if d.exercise == "lab11-lds-banks":
        return c["SQ_LDS_BANK_CONFLICT"] / c["SQ_LDS_IDX_ACTIVE"]
    return c["SQ_WAVE_CYCLES"] / c["SQ_BUSY_CYCLES"]


# --- Nsight Compute (NVIDIA) --------------------------------------------------------------------

NCU_METRICS = {d.exercise: d.nvidia for d in DIAGNOSES}
NOT_PERMITTED = ("ERR_NVGPUCTRPERM", "does not have permission to access NVIDIA GPU Performance Counters")


def ncu_command(metrics, cmd, kernel: str | None = None, ncu: str = "ncu", launch_count: int = 1) -> list[str]:
    """``ncu --csv --metrics M1,M2 --launch-count N [--kernel-name K] CMD...`` (the first N launches only: ncu
    replays each profiled launch once per pass)."""
    out = [ncu, "--csv", "--metrics", ",".join(metrics), "--launch-count", str(int(launch_count))]
    if kernel:
        out += ["--kernel-name", kernel]
    return out + [str(c) for c in cmd]


def read_ncu_csv(text: str):
    """ncu ``--csv`` output (after the program's own lines) as a DataFrame: one row per profiled kernel launch
    (``ID``, ``Kernel Name``), one column per metric."""
    import pandas as pd

    if any(s in text for s in NOT_PERMITTED):
        raise CountersNotPermitted("ncu ran, but this user may not read the GPU's performance counters "
                                   "(ERR_NVGPUCTRPERM): an administrator can allow it (see "
                                   f"{SOURCES['ncu permissions']}); time before and after instead")
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise CounterError("no ncu CSV table in the output (did the program launch the kernel?): "
                           + " | ".join(lines[-3:]))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    data = [{"id": int(r["ID"]), "kernel": r["Kernel Name"], "metric": r["Metric Name"],
             "value": float(str(r["Metric Value"]).replace(",", "") or "nan")} for r in rows if r.get("Metric Name")]
    if not data:
        raise CounterError("the ncu table has no metric rows")
    df = pd.DataFrame(data)
    wide = df.pivot_table(index=["id", "kernel"], columns="metric", values="value", aggfunc="first")
    wide.columns.name = None
    return wide.reset_index()


def collect_ncu(cmd, metrics, kernel: str | None = None, timeout_s: float = 300.0, which=shutil.which):
    """Run ``cmd`` under Nsight Compute; :class:`CountersNotPermitted` when the driver refuses counters."""
    tool = which("ncu")
    if tool is None:
        raise CounterError("ncu (Nsight Compute) is not on PATH: it ships with the CUDA toolkit")
    res = run_limited(ncu_command(metrics, cmd, kernel, tool), timeout_s=timeout_s, memory_bytes=None)
    return read_ncu_csv((res.stdout or "") + "\n" + (res.stderr or ""))


# --- rocprof-compute (the roofline and the memory chart), for the user to run ---------------------

def rocprof_compute_commands(name: str, cmd) -> list[str]:
    """The commands a user runs on an MI300X for one program: profile it, then the memory chart (block 3)
    and the roofline (block 4) of the same run (``rocprof-compute analyze -h`` lists the blocks)."""
    prog = " ".join(str(c) for c in cmd)
    return [f"rocprof-compute profile -n {name} -- {prog}",
            f"rocprof-compute analyze -p workloads/{name}/MI300X_A1 -b 3     # memory chart",
            f"rocprof-compute analyze -p workloads/{name}/MI300X_A1 -b 4     # roofline",
            f"rocprof-compute profile -n {name}-roof --roof-only -- {prog}   # the roofline alone, faster"]


# --- counted by the wave64 simulator (a CPU, no GPU) ---------------------------------------------------------------

#: The simulator's counts, by the gfx942 counter each stands for (bytes and lanes have no single hardware counter).
SIMULATED = ("SQ_WAVES", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "TCP_TOTAL_CACHE_ACCESSES_sum", "SQ_INSTS_LDS",
             "SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE", "bytes_read", "bytes_written", "active_lanes")
SIMULATED_LABEL = "counted by the wave64 simulator"
#: How the simulator counts each (its model of gfx942, stated so that a learner can derive the numbers by hand).
SIMULATED_MODEL = {
    "SQ_WAVES": "wavefronts of 64 launched",
    "SQ_INSTS_VMEM_RD": "global load instructions, one per wavefront",
    "SQ_INSTS_VMEM_WR": "global store instructions, one per wavefront",
    "TCP_TOTAL_CACHE_ACCESSES_sum": "distinct 128-byte lines each global wave instruction touches, summed",
    "SQ_INSTS_LDS": "LDS (ds_*) instructions, one per wavefront",
    "SQ_LDS_BANK_CONFLICT": "per half-wave (32 lanes, 32 banks x 4 bytes): the most distinct words one bank serves, "
                            "less the passes the words need; summed",
    "SQ_LDS_IDX_ACTIVE": "LDS cycles: per half-wave the passes, or the conflicting bank's words where more",
    "bytes_read": "bytes global loads read (lanes x width)",
    "bytes_written": "bytes global stores wrote",
    "active_lanes": "lanes active in global memory instructions, summed (divide by the instructions for a mean)",
}


@dataclass
class SimulatedCounts:
    """Per kernel: counter -> value, as the wave64 simulator counted them on the CPU (never measured hardware)."""
    kernels: dict
    backend: str = "cpu: wave64 simulator"
    label: str = SIMULATED_LABEL
    stderr: str = ""          # the run's stderr (its launches' resources: rocmlab.hip.sim.launch_occupancy)

    def kernel(self, name: str) -> dict:
        """One kernel's counts, summed over the lines it was launched from (``name@line`` keys)."""
        rows = [v for k, v in self.kernels.items() if k == name or k.startswith(name + "@")]
        if not rows:
            raise KeyError(f"no kernel {name!r} was launched (launched: {', '.join(self.kernels) or 'none'})")
        return {k: sum(r[k] for r in rows) for k in rows[0]}


def simulate_counts(source: str, args=(), *, timeout_s: float = 60.0, flags=(), scratch: str | None = None,
                    file_bytes: int | None = None) -> SimulatedCounts:
    """Build ``source`` (a HIP program) for the CPU simulator, run it with its counters on, and return the counts of
    every kernel it launched. Raises :class:`CounterError` (with the reason) when it cannot build or run here."""
    from rocmlab.hip import build, simulate

    if simulate.problem():
        raise CounterError(f"the simulator cannot run here: {simulate.problem()}")
    res = build.compile(source, toolchain=simulate.KIND, flags=flags)
    if not res.ok:
        raise CounterError("the program does not build for the simulator: " + "; ".join(
            str(d) for d in (res.errors or res.diagnostics)[:3]))
    done = build.run(res, args, timeout_s=timeout_s, env={"HIPSIM_COUNTERS": "1"}, scratch=scratch,
                     file_bytes=file_bytes)
    counts = simulate.counters(done.stderr)
    if done.returncode != 0 or not counts:
        raise CounterError(f"the program {done.explain()}: {done.stderr[-500:]}")
    return SimulatedCounts(counts, stderr=done.stderr)
