"""Optional imports a rocmlab process goes without, where nothing it runs needs them.

``rfc3987_syntax``: jsonschema imports it, if it can, for its optional "iri" format checker, and the import
compiles an RFC 3987 grammar: 0.75-0.8 s on 2 cores, paid by every process that reads a notebook with nbformat
(papermill, ``rocmlab preflight``) or shows a plotly figure in a kernel. Nothing in rocmlab validates IRIs.
With it left out, ``import rfc3987_syntax`` raises ImportError and jsonschema goes without that checker, as it
does wherever the package is not installed. The workshop hub leaves it out of learners' servers the same way
(rocmlab.workshop.hub.SKIP_RFC3987)."""

from __future__ import annotations

import sys

SKIPPED = ("rfc3987_syntax",)


def skip() -> None:
    """Leave :data:`SKIPPED` out of this process (a module imported already stays)."""
    for name in SKIPPED:
        sys.modules.setdefault(name, None)
