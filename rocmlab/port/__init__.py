"""``rocmlab port``: port a whole CUDA project to HIP, with a report a developer can act on.

>>> from rocmlab.port import port
>>> result = port("my-cuda-project", "my-hip-project", target="gfx942")   # doctest: +SKIP
>>> print(result.text())                                                  # doctest: +SKIP

``port(src, out, target, **options)`` is the short form of ``port_project(PortRequest(src, out, target,
**options))``: :class:`~.project.PortRequest` holds every option (``rocmlab port`` and Lab 02 build one), and
:func:`~.project.port_project` runs the stages in order.

Steps (each its own module): read SRC safely (:mod:`.inputs`), hipify with torch.utils.hipify
keeping the tree and fix what it leaves mechanically broken (:mod:`rocmlab.cuda2hip.translate`), scan
every file for warp-32 / wave64 and preprocessor traps (:mod:`rocmlab.cuda2hip.scan`), compile every
translation unit in parallel and link each main (:mod:`.unit_build`, through :mod:`rocmlab.hip.compile`),
and write an HTML + JSON report (:mod:`.page`). :mod:`.baseline` runs plain torch.utils.hipify on the same files for
comparison; :mod:`.run_compare` runs each ported program (``--run``: on the AMD GPU, else the wave64 CPU
simulator) and compares it with the CUDA original or its recorded outputs; :mod:`.notebook` shows a port in
JupyterLab.
"""

from rocmlab.port.inputs import PortInputError
from rocmlab.port.project import PortRequest, PortResult, load, port, port_project

__all__ = ["PortInputError", "PortRequest", "PortResult", "load", "port", "port_project"]
