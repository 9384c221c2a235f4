"""Every lab and exercise notebook runs headless without an error, as a learner's Run All would: papermill
with quick sizes (``quick=True``; ``ROCMLAB_QUICK=1``). Notebooks are found on disk, so labs added later are
covered. The run is the session's one run of each notebook: the browser's view test (tests/browser) opens the
same executed copy (test-artifacts/browser/executed/) instead of running it again. A lab runs from the session's
installed wheel, in its venv's kernel (tests/helpers/wheel_env.py; the wheel test checks that every lab's kernel was
that venv's), so what is checked here is the course as a learner installs it; an exercise notebook runs from
this checkout.

Teaching facts are checked by ``assert`` in the notebooks' own cells, so a wrong fact fails here. What a lab
*shows* is checked as ``pytest --nbval-lax labs/`` checks it, from the same run: every cell tagged
``nbval-check-output`` must print the text stored in the notebook, compared by nbval's own code after the rules of
``labs/nbval_sanitize.cfg`` (tools/nbtools.py ``output_differences``; tests/notebooks/whole/test_nbval.py runs nbval itself)."""

from __future__ import annotations

import pytest
from nbtools import output_differences   # tools/ is on the path: pyproject.toml, [tool.pytest.ini_options]

from tests.helpers.views import ROOT, discover, executed

NOTEBOOKS = discover()


def test_there_are_notebooks_to_run():
    assert len(NOTEBOOKS) >= 12, NOTEBOOKS


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "labs")))
def test_notebook_runs_and_shows_its_checked_outputs(path):
    out = executed(path)
    assert out.is_file()
    differ = output_differences(path, out)
    assert not differ, ("a checked cell shows another text than the one stored (nbval's diff below); if the new "
                        f"text is right, record it: python tools/nbtools.py record-outputs {path.relative_to(ROOT)}"
                        "\n\n" + "\n\n".join(differ))
