"""rocmlab: a JupyterLab course and helper package for CUDA developers moving to AMD ROCm.

The notebooks in ``labs/`` stay thin and call into this package:

- :mod:`rocmlab.machine.detect`  detects the backend (rocm, cuda or cpu) once, with device facts
- :mod:`rocmlab.doctor`          environment checks, each ok/warn/fail/skip with a concrete fix
- :mod:`rocmlab.preflight` runs every lab headless (the instructor's pre-workshop check)
- :mod:`rocmlab.course.headline`    headline figures that always name their backend and device
- :mod:`rocmlab.sandbox`   runs programs with time, memory and output limits
"""

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # pragma: no cover - exercised through notebooks
    """``%load_ext rocmlab`` registers the cell magics (``%%hip``, ``%%cuda``) where available."""
    try:
        from rocmlab.course import magics
    except ImportError as exc:
        print(f"rocmlab: HIP magics unavailable ({exc})")
        return
    magics.load_ipython_extension(ipython)
