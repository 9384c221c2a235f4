"""Peak hardware figures from ``datasets/hardware.csv``, each with its source.

The CSV has one row per device and, for every figure column ``X``, a column ``X_source``
naming a row of ``datasets/sources.csv``. Figures are vendor peaks (dense, no sparsity):
leads to measure against, never results.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache

from rocmlab.paths import datasets_dir

FIGURES = (
    "memory_gb", "bandwidth_tbs", "fp16_dense_tflops", "bf16_dense_tflops", "fp8_dense_tflops",
    "tf32_dense_tflops", "fp32_vector_tflops", "compute_units", "wavefront_size", "lds_per_cu_kib",
    "l2_mb", "infinity_cache_mb", "compute_dies", "l2_count",
)
#: ``l2_mb`` is the package's total L2; ``l2_count`` how many separate L2s it is made of. MI300X:
#: 32 MB = 8 x 4 MB, one L2 per XCD, not shared between XCDs (a workgroup only hits its own XCD's).


@dataclass(frozen=True)
class Spec:
    device: str
    vendor: str
    target: str
    memory_type: str
    figures: dict   # name -> float or None (None: not supported / not published)
    sources: dict   # name -> source key

    def __getitem__(self, name: str):
        return self.figures[name]

    def l2_per_instance_mb(self) -> float | None:
        """The L2 one compute die's workgroups share (MI300X: 4 MB of the 32 MB)."""
        total, count = self.figures.get("l2_mb"), self.figures.get("l2_count")
        return total / count if total is not None and count else None

    def source(self, name: str) -> str:
        key = self.sources[name]
        src = sources().get(key, {})
        return f"{src.get('title', key)} ({src.get('url') or 'no URL'})"


@lru_cache(maxsize=1)
def specs() -> dict[str, Spec]:
    """All rows of hardware.csv keyed by device name."""
    out = {}
    with open(datasets_dir() / "hardware.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            figures = {f: (float(row[f]) if row[f].strip() else None) for f in FIGURES}
            out[row["device"]] = Spec(
                device=row["device"], vendor=row["vendor"], target=row["target"],
                memory_type=row["memory_type"], figures=figures,
                sources={f: row[f + "_source"] for f in FIGURES},
            )
    return out


@lru_cache(maxsize=1)
def sources() -> dict[str, dict]:
    with open(datasets_dir() / "sources.csv", newline="") as fh:
        return {row["key"]: row for row in csv.DictReader(fh)}


def table():
    """hardware.csv as a pandas DataFrame (figures only; sources in ``<figure>_source``)."""
    import pandas as pd

    return pd.read_csv(datasets_dir() / "hardware.csv")


# Marketing names as they appear in torch / rocminfo / nvidia-smi device names.
_NAME_PATTERNS = (
    ("MI355X", r"MI35[05]"),
    ("MI325X", r"MI325"),
    ("MI300X", r"MI300X|MI300\b"),
    ("MI250X", r"MI250"),
    ("H200", r"H200"),
    ("H100 SXM", r"H100"),
)


def lookup(name: str | None = None, target: str | None = None, memory_gib: float | None = None) -> Spec | None:
    """The spec row for a device, from its name, else its architecture and memory size.

    ``target`` may carry target features (``gfx942:sramecc+:xnack-``); they are ignored.
    Returns None for devices the table does not cover (a consumer GPU, the CPU).
    """
    table_ = specs()
    for device, pattern in _NAME_PATTERNS:
        if name and re.search(pattern, name, re.IGNORECASE):
            return table_[device]
    if target:
        base = target.split(":")[0]
        rows = [s for s in table_.values() if s.target == base]
        if memory_gib is not None and rows:   # vendors' "192 GB" is about 192 GiB of usable memory
            return min(rows, key=lambda s: abs(s["memory_gb"] - memory_gib))
        if len(rows) == 1:
            return rows[0]
    return None
