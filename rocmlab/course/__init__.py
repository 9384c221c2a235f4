"""What only the notebooks need: lab helpers, puzzles and widgets. The only rocmlab modules that may
import IPython, ipywidgets or plotly; toolkit modules never import this package.

Importing it leaves ``rfc3987_syntax`` out of the kernel (:data:`SKIPPED_IMPORTS`, see
:mod:`rocmlab.optional_imports`): jsonschema, which plotly's notebook renderer reaches through nbformat at a lab's
first figure, would import it for its optional "iri" format checker: 0.75 s of a kernel's first plot on 2 cores.
In a kernel it also shows pandas tables with their values kept whole (:mod:`rocmlab.course.table_style`).
"""

from rocmlab.course import table_style
from rocmlab.optional_imports import SKIPPED as SKIPPED_IMPORTS, skip

__all__ = ["SKIPPED_IMPORTS"]

skip()
table_style.register()
