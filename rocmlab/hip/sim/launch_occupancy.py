"""Occupancy on the simulator: waves per SIMD of a simulated launch, from the kernel's resources for gfx942.

A run with ``HIPSIM_COUNTERS=1`` prints, per kernel, what its launches used (``runtime.cpp``, "resources"):
threads per workgroup, the static LDS its threads touched and the launch's dynamic shared memory. Registers are
the one resource a host build cannot show, so they come from the offline compiler's gfx942 listing of the same
source (:mod:`rocmlab.hip.inspector`); :func:`rocmlab.hip.occupancy.occupancy` (the calculator that reproduces the
compiler's ``Occupancy [waves/SIMD]``) combines both. The result is labelled "counted by the wave64 simulator"
(the launch) "with the gfx942 compiler's registers": never measured hardware. On an MI300X, ``SQ_WAVE_CYCLES /
SQ_BUSY_CYCLES`` measures the waves that really stayed resident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmlab import settings
from rocmlab.hip import occupancy as calculator

_RESOURCES = re.compile(r"^\[cpu: wave64 simulator\] resources: kernel (?P<kernel>\S+) \(launched at line "
                        r"(?P<line>\d+)\): workgroup_size=(?P<wg>\d+) lds_static_bytes=(?P<lds>\d+) "
                        r"lds_dynamic_bytes=(?P<dyn>\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class LaunchResources:
    """What a kernel's simulated launches used (the largest of them)."""

    kernel: str
    workgroup_size: int         # threads per workgroup
    lds_static_bytes: int       # the static __shared__ variables its threads touched
    lds_dynamic_bytes: int      # the launch's dynamic shared memory (its third launch argument)

    @property
    def lds_bytes(self) -> int:
        return self.lds_static_bytes + self.lds_dynamic_bytes


def resources(stderr: str) -> dict[str, LaunchResources]:
    """Per kernel (all launch lines together): the resources a ``HIPSIM_COUNTERS=1`` run printed."""
    out: dict[str, LaunchResources] = {}
    for m in _RESOURCES.finditer(stderr):
        k, old = m.group("kernel"), out.get(m.group("kernel"))
        new = LaunchResources(k, int(m.group("wg")), int(m.group("lds")), int(m.group("dyn")))
        if old is not None:
            new = LaunchResources(k, max(old.workgroup_size, new.workgroup_size),
                                  max(old.lds_static_bytes, new.lds_static_bytes),
                                  max(old.lds_dynamic_bytes, new.lds_dynamic_bytes))
        out[k] = new
    return out


@dataclass(frozen=True)
class LaunchOccupancy:
    """Waves per SIMD of one kernel's simulated launch on ``target``, and where each figure comes from."""

    kernel: str
    target: str
    launch: LaunchResources
    vgprs: int
    agprs: int
    sgprs: int
    compiler_lds_bytes: int | None     # the compiler's static LDS for the kernel (its listing)
    compiler_occupancy: int | None     # the compiler's waves per SIMD (for its largest workgroup size)
    result: calculator.Occupancy

    @property
    def waves_per_simd(self) -> int:
        return self.result.waves_per_simd

    @property
    def limiting(self) -> str:
        return self.result.limiting

    def counts(self) -> dict:
        """The figures as counter-like entries (the simulator's own names: no single hardware counter)."""
        return {"workgroup_size": self.launch.workgroup_size, "lds_bytes_per_workgroup": self.launch.lds_bytes,
                "VGPRs (gfx942 compiler)": self.vgprs, "waves_per_simd": self.waves_per_simd,
                "occupancy_limited_by": self.limiting}


def from_run(source: str, stderr: str, kernel: str, *, target: str = settings.DEFAULT_TARGET,
             flags=()) -> LaunchOccupancy:
    """The occupancy of ``kernel``'s simulated launch (``stderr`` of its ``HIPSIM_COUNTERS=1`` run) with the
    registers the offline compiler gives ``source`` for ``target``. Raises KeyError when the run did not launch
    ``kernel``, :class:`rocmlab.hip.build.HipError` when the source does not compile for ``target``."""
    from rocmlab.hip import build, inspector

    launches = resources(stderr)
    if kernel not in launches:
        raise KeyError(f"no kernel {kernel!r} was launched (launched: {', '.join(launches) or 'none'})")
    ins = inspector.inspect(source, target, flags=tuple(flags))
    if not ins.ok:
        raise build.HipError(f"{kernel} does not compile for {target}: "
                             + "; ".join(str(d) for d in ins.diagnostics[:3]))
    k = ins.kernel(kernel)
    launch = launches[kernel]
    occ = calculator.occupancy(k.vgprs or 0, k.agprs or 0, k.sgprs or 0, launch.lds_bytes, launch.workgroup_size,
                               target)
    return LaunchOccupancy(kernel, target, launch, k.vgprs or 0, k.agprs or 0, k.sgprs or 0, k.lds_bytes,
                           k.occupancy, occ)
