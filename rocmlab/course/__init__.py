"""What only the notebooks need: lab helpers, puzzles and widgets. The only rocmlab modules that may
import IPython, ipywidgets or plotly; toolkit modules never import this package.

Importing it leaves ``rfc3987_syntax`` out of the kernel (:data:`SKIPPED_IMPORTS`): jsonschema, which plotly's
notebook renderer reaches through nbformat at a lab's first figure, imports it if it can, for its optional "iri"
format checker, and the import compiles an RFC 3987 grammar: 0.75 s of a kernel's first plot on 2 cores.
Nothing in a course kernel validates IRIs; the workshop hub leaves it out of learners' servers the same way
(rocmlab.workshop.hub.SKIP_RFC3987).
"""

import sys

#: Optional imports a course kernel goes without (``import`` of one raises ImportError; who needs it, asks first).
SKIPPED_IMPORTS = ("rfc3987_syntax",)

for _name in SKIPPED_IMPORTS:
    sys.modules.setdefault(_name, None)
