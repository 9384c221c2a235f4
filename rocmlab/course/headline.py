"""Headline figures: every number a lab prints names the backend and device that produced it.

``headline("copy bandwidth", 4.21, "TB/s")`` prints
``copy bandwidth: 4.21 TB/s  [cuda: NVIDIA H200]`` and, when ``rocmlab preflight`` runs
the lab, appends the figure to the file named by ``ROCMLAB_HEADLINES`` so the summary
table can show it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from rocmlab import settings
from rocmlab.machine.detect import current


@dataclass(frozen=True)
class Headline:
    name: str
    value: float | str
    unit: str
    backend: str
    device: str
    note: str = ""

    def _ipython_display_(self):
        """Already printed by :func:`headline`: a cell ending in ``headline(...)`` shows it once, not twice."""

    def __str__(self) -> str:
        v = f"{self.value:.4g}" if isinstance(self.value, float) else str(self.value)
        note = f" ({self.note})" if self.note else ""
        return f"{self.name}: {v} {self.unit}{note}  [{self.backend}: {self.device}]"


def headline(name: str, value, unit: str = "", note: str = "", plat=None, quiet: bool = False) -> Headline:
    """Print a figure with its backend and device, and record it for preflight."""
    plat = plat or current()
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    h = Headline(name, value, unit, plat.backend, plat.device_name, note)
    if not quiet:
        print(h)
    path = settings.env(settings.HEADLINES_ENV)
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(asdict(h)) + "\n")
    return h


def resolve_quick(quick=None) -> bool:
    """A lab's ``quick`` parameter: explicit True/False wins; None means quick when
    ``ROCMLAB_QUICK=1`` (tests, preflight) or when there is no GPU (small sizes on a CPU)."""
    if quick is not None:
        return bool(quick)
    if (settings.env("ROCMLAB_QUICK") or "").strip() in ("1", "true", "yes"):
        return True
    return not current().is_gpu
