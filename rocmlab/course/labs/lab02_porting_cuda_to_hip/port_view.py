"""The notebook view of ``rocmlab port`` (for Lab 02 and for a learner's own project).

In a JupyterLab cell::

    from rocmlab.course.labs.lab02_porting_cuda_to_hip.port_view import port_view
    result = port_view("coop_streams")          # a bundled sample, or a path to your CUDA project

It ports into a temporary folder (or ``out=``), compiles offline or with ROCm, and shows the
summary line (with the backend and device), the report's charts (inline SVG) and the
report's tables. Nothing is run on a GPU. The full report is also written as HTML + JSON.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from rocmlab import settings
from rocmlab.course.headline import headline
from rocmlab.port import PortRequest, port_project
from rocmlab.port.page import body_html, charts_svg

#: the sample CUDA code bases Lab 02 ports, shipped in the package (see samples/README.md)
SAMPLES_DIR = Path(__file__).resolve().parent / "samples"


def samples() -> list[str]:
    """The bundled sample CUDA code bases (see samples/README.md beside this module)."""
    return sorted(p.name for p in SAMPLES_DIR.iterdir() if p.is_dir()) if SAMPLES_DIR.is_dir() else []


def sample_path(name: str) -> Path:
    p = SAMPLES_DIR / name
    if not p.is_dir():
        raise ValueError(f"no sample code base {name!r}: choose one of {', '.join(samples()) or '(none found)'}")
    return p


def show(result, charts: bool = True, plat=None):
    """Display a :class:`~rocmlab.port.PortResult`: headline, the report's SVG charts and tables."""
    from IPython.display import HTML, display

    if result.compiled and result.units:
        headline(f"translation units compiled after rocmlab port ({Path(result.src).name}, {', '.join(result.targets)})",
                 f"{result.n_compiled}/{result.n_units}", note=f"{100 * result.compile_fraction:.0f}%, compiled "
                 f"with {result.toolchain}, not run", plat=plat)
    display(HTML(body_html(result, charts_svg(result) if charts else "")))
    return result


def port_view(src, out=None, target: str = settings.DEFAULT_TARGET, workers: int | None = None, charts: bool = True, **kwargs):
    """Port ``src`` (a folder, or the name of a bundled sample) and show the result; returns it. ``kwargs``: the
    other fields of :class:`~rocmlab.port.PortRequest`."""

    p = Path(src)
    if not p.exists() and "/" not in str(src):
        p = sample_path(str(src))
    if out is None:
        out = Path(tempfile.mkdtemp(prefix=f"rocmlab-port-{p.name}-")) / "hip"
    request = PortRequest(p, out, target, workers=workers, **kwargs)
    try:
        result = port_project(request)
    except RuntimeError as exc:            # no HIP compiler here: translate and scan only, and say so
        if request.compile is False:
            raise
        print(f"cannot compile on this machine ({exc}); translating and scanning only")
        result = port_project(dataclasses.replace(request, compile=False, force=True))
    return show(result, charts=charts)
