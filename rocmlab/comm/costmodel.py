"""An alpha-beta model of the two-shot all-reduce on 8 x MI300X (xGMI mesh) and 8 x H200 (NVSwitch).

Per phase (scatter, then gather) each rank sends (W-1)/W of its encoded tensor:

    t_phase = alpha + bytes_out / B_out

- MI300X: a full mesh, one xGMI link to each peer, so the W-1 pieces go out in parallel over W-1
  links: B_out = (W-1) x link bandwidth (64 GB/s per direction per link).
- H200: NVSwitch, so B_out is the GPU's NVLink bandwidth, 450 GB/s per direction, whatever W is.

Codec time comes from measured codec throughput (bytes read + written per second, as
``benchmarks/codec_bandwidth.py`` counts them, as a share of the copy bandwidth, applied to the
system's memory bandwidth): encode the tensor, decode W received pieces, encode the reduced
piece, decode W gathered pieces. ``overlap="serial"`` adds it, and four kernel launches of a
fixed cost fitted to the same measurements, to the transfer time (separate kernels, as in
:mod:`rocmlab.comm.allreduce`); ``"fused"`` takes the larger of the two (QuickReduce's single
kernel codes data in registers while other blocks' data is in flight). FP sends the data as it
is. Every default comes from ``datasets/comm_interconnects.csv`` with
its source; alpha is our stated assumption there.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from functools import lru_cache

from rocmlab.comm import torch_codec as C
from rocmlab.paths import datasets_dir

MB = 1 << 20


@dataclass(frozen=True)
class System:
    name: str
    gpus: int
    topology: str
    link_gbs: float          # per direction, per link
    links: int
    egress_gbs: float        # per GPU, per direction
    hbm_tbs: float
    alpha_us: float
    source: str
    note: str

    def out_bandwidth(self, world: int) -> float:
        """Bytes/s one rank can send in a phase to its W-1 peers."""
        if self.name.upper().startswith("MI"):
            return (world - 1) * self.link_gbs * 1e9          # one link per peer, all in parallel
        return self.egress_gbs * 1e9                            # through the switch


@lru_cache(maxsize=1)
def systems() -> dict:
    with open(datasets_dir() / "comm_interconnects.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {r["system"]: System(r["system"], int(r["gpus"]), r["topology"], float(r["link_gbs_per_direction"]),
                                int(r["links_per_gpu"]), float(r["gpu_egress_gbs"]), float(r["hbm_tbs"]),
                                float(r["alpha_us"]), r["source"], r["note"]) for r in rows}


def system(name: str, **overrides) -> System:
    s = systems().get(name)
    if s is None:
        raise ValueError(f"unknown system {name!r}: choose one of {sorted(systems())}")
    return replace(s, **overrides)


@lru_cache(maxsize=1)
def measured_codec_throughput() -> dict:
    """{codec: (encode share of copy, decode share of copy)} at the largest measured size, from the
    committed H200 measurement (datasets/comm_codec_h200.csv)."""
    with open(datasets_dir() / "comm_codec_h200.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    best = {}
    for r in rows:
        size = int(r["size_mb"])
        if r["codec"] not in best or size > best[r["codec"]][0]:
            best[r["codec"]] = (size, float(r["encode_pct_of_copy"]) / 100, float(r["decode_pct_of_copy"]) / 100)
    return {c: (e, d) for c, (_, e, d) in best.items()}


@lru_cache(maxsize=1)
def fitted_kernel_us() -> float:
    """A codec kernel's fixed cost (us), fitted to the H200 measurements: the time at 8 MB minus
    what the 256 MB bandwidth would give for 8 MB (median over codecs and directions)."""
    with open(datasets_dir() / "comm_codec_h200.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    fits = []
    for c in {r["codec"] for r in rows}:
        by = {int(r["size_mb"]): r for r in rows if r["codec"] == c}
        if 8 not in by or 256 not in by:
            continue
        for k in ("encode_gbs", "decode_gbs"):
            moved8 = 8 * MB * (1 + C.get_codec(c).wire_bytes(4 * MB) / (8 * MB))
            t8 = moved8 / (float(by[8][k]) * 1e9)
            fits.append(t8 - moved8 / (float(by[256][k]) * 1e9))
    fits.sort()
    return 1e6 * fits[len(fits) // 2] if fits else 3.0


def codec_bytes(codec: C.Codec, nbytes: int, world: int) -> tuple[float, float]:
    """(encode bytes, decode bytes) read + written by one rank over the two phases."""
    c = codec.wire_bytes(nbytes // 2) / nbytes if codec.quantized else 1.0
    enc = (nbytes + c * nbytes) + (nbytes / world) * (1 + c)          # the tensor, then the reduced piece
    dec = (c * nbytes + nbytes) + (c * nbytes + nbytes)                # W pieces in each phase
    return enc, dec


def latency(codec, nbytes: int, system_name: str = "MI300X", world: int = 8, overlap: str = "serial",
            throughput: dict | None = None, copy_share: float = 0.9, kernel_us: float | None = None,
            **overrides) -> dict:
    """Predicted two-shot time (s) for a ``nbytes`` float16 message, with its parts."""
    codec = C.get_codec(codec)
    sysm = system(system_name, **overrides)
    if world < 2 or world > sysm.gpus:
        raise ValueError(f"world size {world} out of range for {sysm.name} (2..{sysm.gpus})")
    wire = codec.wire_bytes(nbytes // 2) if codec.quantized else nbytes
    per_phase_bytes = (world - 1) / world * wire
    comm = 2 * (sysm.alpha_us * 1e-6 + per_phase_bytes / sysm.out_bandwidth(world))
    codec_t = 0.0
    if codec.quantized:        # FP sends the 16-bit data as it is: no codec work
        tp = throughput or measured_codec_throughput()
        # the two FP8 formats run the same bit-level kernel (the same instructions, other constants)
        key = "fp8" if codec.is_fp8 else codec.name
        e_share, d_share = tp.get(key, (copy_share, copy_share))
        enc_b, dec_b = codec_bytes(codec, nbytes, world)
        # a measured share of the copy bandwidth, applied to this system's memory bandwidth
        # (a copy reaches ~88 % of the data-sheet HBM figure on an H200: 4.2 of 4.8 TB/s)
        mem = 0.88 * sysm.hbm_tbs * 1e12
        codec_t = enc_b / (e_share * mem) + dec_b / (d_share * mem)
        if overlap == "serial":    # four separate kernels, each with a fixed cost
            codec_t += 4 * (kernel_us if kernel_us is not None else fitted_kernel_us()) * 1e-6
    if overlap not in ("serial", "fused"):
        raise ValueError(f"overlap must be 'serial' or 'fused', not {overlap!r}")
    total = comm + codec_t if overlap == "serial" else max(comm, codec_t)
    return dict(codec=codec.name, nbytes=nbytes, system=sysm.name, world=world, comm_s=comm, codec_s=codec_t,
                total_s=total, wire_bytes=wire)


def sweep(system_name: str = "MI300X", world: int = 8, sizes=None, codecs=("fp", "fp8", "q8", "q6", "q4"),
          overlap: str = "serial", **kw) -> list[dict]:
    sizes = sizes or [int(2 ** (i / 2)) * 1024 for i in range(10, 40)]   # 32 KB .. ~724 MB
    return [latency(c, s, system_name, world, overlap, **kw) for s in sizes for c in codecs]


def crossovers(system_name: str = "MI300X", world: int = 8, overlap: str = "serial", **kw) -> dict:
    """The smallest message (bytes) from which each codec beats the FP two-shot, by the model."""
    sizes = [int(2 ** (i / 4)) * 1024 for i in range(0, 72)]   # 1 KB .. ~256 GB, quarter octaves
    out = {}
    for c in C.QUANTIZED:
        hit = None
        for s in sizes:
            if latency(c, s, system_name, world, overlap, **kw)["total_s"] < latency("fp", s, system_name, world,
                                                                                     overlap, **kw)["total_s"]:
                hit = s
                break
        out[c] = hit
    return out


def published() -> list[dict]:
    with open(datasets_dir() / "comm_published.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def vllm_min_sizes(tp: int, dtype: str = "float16") -> dict:
    """vLLM's QuickReduce minimum sizes (MB) per codec, for a TP size and dtype."""
    with open(datasets_dir() / "vllm_qr_min_size.csv", newline="") as fh:
        return {r["codec"]: int(r["min_size_mb"]) for r in csv.DictReader(fh)
                if int(r["tp"]) == tp and r["dtype"] == dtype}
