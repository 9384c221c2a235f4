"""``pytest --nbval-lax labs/``: every lab and exercise notebook runs (each cell must not raise), and the cells
tagged ``nbval-check-output`` must show the text stored in the notebook.

Loaded by pytest for notebooks under labs/ only (the project's own suite, tests/, does not collect them). It
gives nbval what the course needs, unless the command line says otherwise:

- quick sizes (``ROCMLAB_QUICK=1``, which the labs' ``quick = None`` parameter reads): a CI run takes minutes on
  a CPU or a GPU; ``ROCMLAB_QUICK=0 pytest --nbval-lax labs/`` runs the full sizes on a GPU;
- the course's sanitizer, ``labs/nbval_sanitize.cfg`` (backend labels, timings, addresses, temporary paths), as if
  ``--nbval-sanitize-with labs/nbval_sanitize.cfg`` were given.
"""

from __future__ import annotations

import os
from pathlib import Path

SANITIZER = Path(__file__).resolve().parent / "nbval_sanitize.cfg"


def pytest_configure(config):
    os.environ.setdefault("ROCMLAB_QUICK", "1")       # the kernels nbval starts inherit it
    if hasattr(config.option, "nbval_sanitize_with") and config.option.nbval_sanitize_with is None:
        config.option.nbval_sanitize_with = str(SANITIZER)
