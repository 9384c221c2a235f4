"""No reference table is written by hand anywhere in the repository: the site generates each from the code
(docs/reference/*.rst use the generating directives), and a typed copy fails here, naming the file."""

from __future__ import annotations

import random

from rocmlab import settings
from rocmlab.grader.spec import CHECK_TYPES
from tests.docs.handwritten import ROOT, handwritten_tables, tracked_text_files

NAMES = {v.name for v in settings.VARIABLES}


def test_no_reference_table_is_written_by_hand_in_the_repository():
    found = handwritten_tables(tracked_text_files(), NAMES, CHECK_TYPES)
    assert found == [], "generated reference tables copied by hand (delete them and link the site's " \
                        "Reference page instead):\n" + "\n".join(found)


def test_control_a_pasted_copy_of_the_variables_table_is_found(tmp_path):
    """The table as `rocmlab doctor --env` or the old README printed it, pasted into a page of the docs."""
    page = tmp_path / "setup.md"
    page.write_text("# Set up\n\nSome text.\n\n" + settings.variables_table() + "\n\nMore text.\n")
    found = handwritten_tables([page], NAMES, CHECK_TYPES)
    assert len(found) == 1 and "ROCMLAB_* variables" in found[0] and str(page) in found[0]


def test_control_a_few_hand_typed_rows_in_rest_are_found_and_a_mention_is_not(tmp_path):
    picked = random.sample(sorted(NAMES), 3)
    rst = tmp_path / "vars.rst"
    rst.write_text(".. list-table::\n\n" + "".join(f"   * - ``{n}``\n     - what it does\n" for n in picked))
    prose = tmp_path / "prose.md"
    prose.write_text(f"Set `{picked[0]}` and `{picked[1]}` as the table of variables says.\n"
                     f"| `{picked[2]}` | one row alone is a mention |\n")
    assert len(handwritten_tables([rst], NAMES, CHECK_TYPES)) == 1
    assert handwritten_tables([prose], NAMES, CHECK_TYPES) == []


def test_control_the_check_kinds_and_exit_tables_are_found(tmp_path):
    kinds = tmp_path / "kinds.md"
    kinds.write_text("| kind | what |\n|---|---|\n" + "".join(f"| `{k}` | ... |\n" for k in CHECK_TYPES))
    exits = tmp_path / "exits.md"
    exits.write_text("| command | 0 | 1 | 2 |\n|---|---|---|---|\n| `doctor` | ok | a check failed | - |\n")
    assert [f.split(": ", 1)[1] for f in handwritten_tables([kinds, exits], NAMES, CHECK_TYPES)] == [
        "a hand-written table of the grader's check kinds", "a hand-written table of exit statuses per command"]


def test_the_reference_pages_generate_their_tables():
    ref = ROOT / "docs" / "reference"
    assert ".. rocmlab-env::" in (ref / "environment.rst").read_text()
    assert ".. rocmlab-check-kinds::" in (ref / "check-kinds.rst").read_text()
    assert ".. rocmlab-exit-statuses::" in (ref / "exit-statuses.rst").read_text()
    assert ".. rocmlab-cli::" in (ref / "cli.rst").read_text()
