"""The MI300X package as a model: XCDs, workgroup dispatch, L2 locality, partition modes.

Facts come from ``datasets/hardware.csv`` (each with its source); the dispatch rule and the partition
modes from AMD's documentation (``datasets/sources.csv``: ``amd-mi300x-workload-guide``,
``amd-mi300x-partitions``). Nothing here was measured on an MI300X: it is a model to reason with.

- An MI300X is **8 XCDs of 38 CUs**; each XCD has its **own 4 MB L2**, not shared with the others; the
  **256 MB Infinity Cache** (MALL) sits on the I/O dies in front of HBM and is shared by all XCDs.
- In SPX mode the hardware dispatches workgroups **round-robin** over the XCDs: workgroup ``i`` runs on
  XCD ``i % 8``. Neighbouring workgroups, which in a tiled GEMM share input panels, land on different
  XCDs, so each XCD's L2 fetches the same panels again.
- :func:`xcd_remap` renumbers programs so that each XCD gets a contiguous range of tiles (the remap
  Triton and hipBLASLt kernels use on MI300X); :func:`gemm_l2_traffic` counts what each L2 must fetch.
- Partitions: compute (SPX 1, DPX 2, QPX 4, CPX 8 logical GPUs per package) and memory (NPS1: one pool
  interleaved over all HBM stacks; NPS4: four 48 GB pools, one per I/O die).

Never imports IPython, ipywidgets or plotly (the widget is ``rocmlab.course.labs.lab08_mi300x_package.package_widget``).
"""

from __future__ import annotations

import functools
import math
import re
import shutil
from dataclasses import dataclass

from rocmlab import sandbox
from rocmlab.machine import hardware


@dataclass(frozen=True)
class Package:
    device: str
    xcds: int
    cus_per_xcd: int
    l2_per_xcd_mb: float
    infinity_cache_mb: float
    hbm_gb: float
    hbm_tbs: float
    lds_per_cu_kib: float

    @property
    def cus(self) -> int:
        return self.xcds * self.cus_per_xcd


def package(device: str = "MI300X") -> Package:
    """The package's figures from hardware.csv (MI300X, MI325X, MI355X)."""
    s = hardware.specs().get(device)
    if s is None or not s["compute_dies"] or s.vendor != "AMD" or s["compute_dies"] < 2:
        known = [d for d, v in hardware.specs().items() if v.vendor == "AMD" and (v["compute_dies"] or 0) >= 8]
        raise ValueError(f"{device!r} is not a multi-XCD AMD package in hardware.csv: use one of {known}")
    x = int(s["compute_dies"])
    return Package(device, x, int(s["compute_units"]) // x, s.l2_per_instance_mb(), s["infinity_cache_mb"] or 0.0,
                   s["memory_gb"], s["bandwidth_tbs"], s["lds_per_cu_kib"])


# --- dispatch ------------------------------------------------------------------------------

def xcd_of(program: int, xcds: int = 8) -> int:
    """The XCD a workgroup runs on in SPX mode: round-robin, ``program % xcds``."""
    return program % xcds


def xcd_remap(program: int, n_programs: int, xcds: int = 8) -> int:
    """The tile a program should compute so that each XCD gets a contiguous range of tiles.

    Program ``p`` runs on XCD ``p % xcds`` as its ``p // xcds``-th program there. Put every program in the order
    (its XCD, its place there) and hand out the tiles 0..n-1 in that order: each XCD's programs get one
    contiguous range, in the order they are dispatched. A bijection on 0..n-1. Computed here by that order (a
    sort, once per grid size), not in closed form: the closed form, one program and one tile at a time, is Lab
    08's task."""
    if not 0 <= program < n_programs:
        raise ValueError(f"program {program} is outside 0..{n_programs - 1}")
    return _dispatch_order_tiles(n_programs, xcds)[program]


@functools.lru_cache(maxsize=64)
def _dispatch_order_tiles(n_programs: int, xcds: int) -> tuple[int, ...]:
    """Each program's tile under :func:`xcd_remap`: its rank in the order (XCD, place on it)."""
    tiles = [0] * n_programs
    for tile, p in enumerate(sorted(range(n_programs), key=lambda q: (q % xcds, q // xcds))):
        tiles[p] = tile
    return tuple(tiles)


def grouped_tile(t: int, grid_m: int, grid_n: int, group_m: int) -> tuple[int, int]:
    """Triton's GROUP_M ordering: tiles run down ``group_m`` rows before moving right (tile index ->
    (row, column) of the output tile)."""
    per_group = group_m * grid_n
    first = (t // per_group) * group_m
    size = min(grid_m - first, group_m)
    return first + (t % per_group) % size, (t % per_group) // size


MAPPINGS = ("row-major", "grouped", "xcd-remap", "xcd-remap+grouped")


def tile_of(program: int, grid_m: int, grid_n: int, mapping: str = "row-major", xcds: int = 8,
            group_m: int = 8) -> tuple[int, int]:
    """(row, column) of the output tile that ``program`` computes under ``mapping``."""
    if mapping not in MAPPINGS:
        raise ValueError(f"mapping {mapping!r}: choose one of {', '.join(MAPPINGS)}")
    n = grid_m * grid_n
    t = xcd_remap(program, n, xcds) if mapping.startswith("xcd-remap") else program
    if mapping.endswith("grouped"):
        return grouped_tile(t, grid_m, grid_n, group_m)
    return divmod(t, grid_n)


@dataclass(frozen=True)
class Traffic:
    mapping: str
    programs: int
    resident: int                 # programs running at once (CUs x workgroups per CU)
    l2_fill_bytes: float          # bytes all XCD L2s fetch, summed (each L2 fetches what its workgroups need)
    shared_l2_bytes: float        # what one shared L2 would fetch for the same waves (the lower bound here)
    per_xcd_bytes: tuple          # first wave: what each XCD's L2 fetches
    per_xcd_panels: tuple         # first wave: (A panels, B panels) of the busiest XCD
    step_working_set_kb: float    # first wave, one K step of BK: the busiest XCD's panel slices, KB
    l2_per_xcd_mb: float

    @property
    def duplication(self) -> float:
        """l2_fill / shared: how many times over the XCDs fetch what one shared L2 would fetch once."""
        return self.l2_fill_bytes / self.shared_l2_bytes if self.shared_l2_bytes else math.nan

    @property
    def fits_l2(self) -> bool:
        """Does one K step's working set of the busiest XCD fit its L2?"""
        return self.step_working_set_kb <= self.l2_per_xcd_mb * 1024


def gemm_l2_traffic(M: int, N: int, K: int, BM: int = 256, BN: int = 256, BK: int = 64, elem_bytes: int = 2,
                    mapping: str = "row-major", group_m: int = 8, wgs_per_cu: int = 1,
                    pkg: Package | None = None, remap=None) -> Traffic:
    """Bytes the XCDs' L2s fetch for ``C = A @ B`` (A ``M x K``, B ``K x N``) tiled ``BM x BN``.

    The model: programs run in waves of ``resident = CUs x wgs_per_cu``, dispatched round-robin over the
    XCDs; a tile needs A's row panel (``BM x K``) and B's column panel (``K x BN``); within a wave an XCD
    fetches each panel its programs need once (later uses hit its L2), and nothing survives from one
    wave to the next. ``shared_l2_bytes`` is the same count for one L2 shared by all XCDs (what a
    monolithic GPU would fetch). Infinity Cache and HBM are not told apart: both are "beyond L2".

    ``remap``: a list giving, for each program, the tile index it computes (a remap of one's own, e.g.
    a learner's kernel's output); the tile index then goes through ``mapping``'s ordering ("row-major"
    or "grouped") in place of the built-in XCD remap."""
    pkg = pkg or package()
    grid_m, grid_n = -(-M // BM), -(-N // BN)
    n = grid_m * grid_n
    resident = pkg.cus * wgs_per_cu
    a_panel, b_panel = BM * K * elem_bytes, K * BN * elem_bytes
    fill = shared = 0.0
    first = panels = None
    for w0 in range(0, n, resident):
        a_sets = [set() for _ in range(pkg.xcds)]
        b_sets = [set() for _ in range(pkg.xcds)]
        for p in range(w0, min(n, w0 + resident)):
            if remap is None:
                r, c = tile_of(p, grid_m, grid_n, mapping, pkg.xcds, group_m)
            elif mapping.endswith("grouped"):
                r, c = grouped_tile(int(remap[p]), grid_m, grid_n, group_m)
            else:
                r, c = divmod(int(remap[p]), grid_n)
            x = xcd_of(p, pkg.xcds)
            a_sets[x].add(r)
            b_sets[x].add(c)
        per = tuple(len(a) * a_panel + len(b) * b_panel for a, b in zip(a_sets, b_sets, strict=False))
        fill += sum(per)
        shared += len(set().union(*a_sets)) * a_panel + len(set().union(*b_sets)) * b_panel
        if first is None:
            first = per
            busiest = max(range(pkg.xcds), key=lambda i: per[i])
            panels = (len(a_sets[busiest]), len(b_sets[busiest]))
    step = (panels[0] * BM + panels[1] * BN) * BK * elem_bytes / 1024
    return Traffic(mapping, n, resident, fill, shared, first, panels, step, pkg.l2_per_xcd_mb)


def compare_mappings(M: int = 8192, N: int = 8192, K: int = 8192, BM: int = 256, BN: int = 256, BK: int = 64,
                     group_m: int = 8, wgs_per_cu: int = 1, pkg: Package | None = None) -> list[dict]:
    """One row per mapping: L2 fill (all XCDs, GB), relative to row-major, and the busiest XCD's panels."""
    ts = [gemm_l2_traffic(M, N, K, BM, BN, BK, mapping=m, group_m=group_m, wgs_per_cu=wgs_per_cu, pkg=pkg)
          for m in MAPPINGS]
    base = ts[0].l2_fill_bytes
    return [{"mapping": t.mapping, "L2 fill, all XCDs (GB)": round(t.l2_fill_bytes / 1e9, 2),
             "vs row-major": round(t.l2_fill_bytes / base, 2), "vs one shared L2": round(t.duplication, 2),
             "busiest XCD panels (A, B)": t.per_xcd_panels, "K-step working set (KB)": round(t.step_working_set_kb),
             "fits 4 MB L2": t.fits_l2} for t in ts]


# --- partitions ---------------------------------------------------------------------------

COMPUTE_MODES = {"SPX": 1, "DPX": 2, "QPX": 4, "CPX": 8}
MEMORY_MODES = {"NPS1": 1, "NPS4": 4}
#: The (compute, memory) pairs AMD's MI300X partitioning guide documents. On a machine the driver's own
#: list is the authority: `amd-smi partition` (or `amd-smi static --partition`) shows what it accepts.
SUPPORTED = {("SPX", "NPS1"), ("DPX", "NPS1"), ("QPX", "NPS1"), ("CPX", "NPS1"), ("CPX", "NPS4")}


@dataclass(frozen=True)
class Partitioning:
    compute: str
    memory: str
    logical_gpus: int
    xcds_each: int
    cus_each: int
    l2_each_mb: float
    memory_each_gb: float
    numa_pools: int
    hbm_tbs_each: float       # its share of the package's peak HBM bandwidth, if all partitions stream at once

    def row(self) -> dict:
        return {"mode": f"{self.compute}/{self.memory}", "logical GPUs per package": self.logical_gpus,
                "XCDs each": self.xcds_each, "CUs each": self.cus_each, "L2 each (MB)": self.l2_each_mb,
                "memory each (GB)": self.memory_each_gb, "memory pools": self.numa_pools,
                "HBM TB/s each (share)": round(self.hbm_tbs_each, 2)}


def partitioning(compute: str = "SPX", memory: str = "NPS1", pkg: Package | None = None) -> Partitioning:
    """What one logical GPU gets in a (compute, memory) partition mode."""
    pkg = pkg or package()
    compute, memory = compute.upper(), memory.upper()
    if compute not in COMPUTE_MODES or memory not in MEMORY_MODES:
        raise ValueError(f"modes are {list(COMPUTE_MODES)} x {list(MEMORY_MODES)}, not {compute}/{memory}")
    if (compute, memory) not in SUPPORTED:
        ok = ", ".join(f"{c}/{m}" for c, m in sorted(SUPPORTED))
        raise ValueError(f"{compute}/{memory} is not a documented MI300X combination: NPS4 needs CPX. Use one of {ok}")
    g = COMPUTE_MODES[compute]
    x = pkg.xcds // g
    return Partitioning(compute, memory, g, x, x * pkg.cus_per_xcd, x * pkg.l2_per_xcd_mb, pkg.hbm_gb / g,
                        MEMORY_MODES[memory], pkg.hbm_tbs / g)


def seats(node_gpus: int = 8, compute: str = "CPX", memory: str = "NPS4", pkg: Package | None = None) -> int:
    """How many learners one node seats with one logical GPU each."""
    return node_gpus * partitioning(compute, memory, pkg).logical_gpus


def amd_smi_commands(compute: str, memory: str) -> list[str]:
    """The commands that set and check a partition mode (as root, with no process on the GPUs)."""
    partitioning(compute, memory)   # validates the pair
    return [f"sudo amd-smi set --memory-partition {memory}    # memory first; may need a driver reload",
            f"sudo amd-smi set --compute-partition {compute}",
            "amd-smi static --partition                        # shows COMPUTE_PARTITION and MEMORY_PARTITION",
            "amd-smi list                                      # one entry per logical GPU"]


def amd_smi_list_illustration(compute: str = "CPX", memory: str = "NPS4", node_gpus: int = 8) -> str:
    """What ``amd-smi list`` enumerates in a mode, as generated by this model (not captured from a machine):
    one GPU entry per logical GPU, numbered 0..N-1, several per physical package (same BDF bus)."""
    p = partitioning(compute, memory)
    lines = [f"# illustration from rocmlab.machine.topology for {compute}/{memory}: not output captured from an MI300X"]
    for g in range(node_gpus * p.logical_gpus):
        pkg, part = divmod(g, p.logical_gpus)
        lines.append(f"GPU: {g:<3d} package {pkg}  partition {part}  ({p.cus_each} CUs, {p.memory_each_gb:g} GB)")
    return "\n".join(lines)


PITFALLS = (
    "Set the memory mode (NPS) before the compute mode, with no process holding a GPU; an NPS change can need a "
    "driver reload (or a reboot); check with `amd-smi static --partition` afterwards.",
    "Partition settings may not survive a reboot or driver reload: make them part of the node's boot setup.",
    "NPS4 needs CPX (on MI300X): every logical GPU then uses the 48 GB pool of its own I/O die, shared with the "
    "other XCD on that die.",
    "Device numbers change: a CPX node shows 64 GPUs, so HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES index 0..63 "
    "and a container needs the right /dev/dri render nodes for each learner.",
    "A kernel tuned for 304 CUs (a persistent grid of 304 x k programs) oversubscribes a 38-CU partition; "
    "size grids from the device's multiProcessorCount, not a constant.",
    "A model that fits in 192 GB does not fit in a 24 GB partition; tensor parallelism across the 8 partitions of "
    "one package goes over the package's internal fabric, not free.",
    "Inside a CPX partition there is one XCD: round-robin dispatch and the L2 locality problem disappear, and a "
    "benchmark there says little about SPX behaviour.",
)


def cache_level(nbytes: float, pkg: Package | None = None, xcds_sharing: int | None = None) -> str:
    """Where a working set of ``nbytes`` read by every XCD can stay: its L2 (4 MB each), the shared
    Infinity Cache (256 MB), or only HBM."""
    pkg = pkg or package()
    if nbytes <= pkg.l2_per_xcd_mb * 2**20:
        return "L2 (each XCD its own copy)"
    if nbytes <= pkg.infinity_cache_mb * 2**20:
        return "Infinity Cache (shared)"
    return "HBM"


def local_partition() -> tuple[dict | None, str]:
    """({'compute': ..., 'memory': ...}, '') read from ``amd-smi static --partition`` on this machine,
    or (None, why not)."""

    exe = shutil.which("amd-smi")
    if exe is None:
        return None, "amd-smi is not on PATH here (it ships with ROCm, in /opt/rocm/bin)"
    done = sandbox.run_limited([exe, "static", "--partition"], timeout_s=30, memory_bytes=None)
    if not done.ok:
        return None, f"amd-smi static --partition failed: {done.explain()} {(done.stderr or '')[-300:]}"
    comp = re.search(r"COMPUTE_PARTITION:\s*(\w+)", done.stdout or "")
    mem = re.search(r"MEMORY_PARTITION:\s*(\w+)", done.stdout or "")
    if not comp and not mem:
        return None, "amd-smi printed no COMPUTE_PARTITION / MEMORY_PARTITION lines (not a partitionable GPU?)"
    return {"compute": comp.group(1) if comp else None, "memory": mem.group(1) if mem else None,
            "raw": done.stdout}, ""
