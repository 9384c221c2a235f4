"""Finds reference tables written by hand: copies of what the documentation site generates from the code.

The site's Reference pages are generated at build time (docs/_ext/rocmlab_docs.py): the environment variables
from ``rocmlab.settings.VARIABLES``, the grader's check kinds from its table, each command's exit statuses from
its documentation. A copy of one of those tables typed into a Markdown, reST or text file anywhere in the
repository goes stale silently; these functions find one.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = (".md", ".rst", ".txt", ".ipynb", ".html", ".py", ".yml", ".yaml")
#: a table row in Markdown (``| a | b |``), a reST list-table (``* - a``) or a reST grid/simple table line
_ROW = re.compile(r"^\s*(\|.*\||\*\s+-\s+.*|[-\s]{0,4}-\s+.*)$")


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if _ROW.match(line)]


def variable_rows(text: str, names: set[str]) -> list[str]:
    """The table rows of ``text`` whose first cell is a ROCMLAB_* variable's name."""
    out = []
    for row in _rows(text):
        first = re.split(r"\s\|\s|\|", row.strip().strip("|"), maxsplit=1)[0] if row.lstrip().startswith("|") else \
            row.strip().lstrip("*- ").split(" ")[0]
        if first.strip(" `*") in names:
            out.append(row)
    return out


def check_kind_rows(text: str, kinds: tuple[str, ...]) -> list[str]:
    """Markdown table rows whose first cell is one of the grader's check kinds."""
    out = []
    for row in _rows(text):
        if row.lstrip().startswith("|"):
            first = row.strip().strip("|").split("|")[0].strip(" `")
            if first in kinds:
                out.append(row)
    return out


def exit_table_headers(text: str) -> list[str]:
    """Markdown table headers of the per-command exit-status table (``| command | 0 | 1 | 2 |``)."""
    return [line for line in text.splitlines()
            if re.match(r"^\s*\|\s*command\s*\|\s*`?0`?\s*\|\s*`?1`?\s*\|\s*`?2`?\s*\|", line)]


def handwritten_tables(paths, variables: set[str], kinds: tuple[str, ...]) -> list[str]:
    """One finding per file that holds a hand-written copy of a generated reference table: three or more rows
    naming ROCMLAB_* variables, four or more rows naming check kinds, or the exit-status table's header."""
    found = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        var = variable_rows(text, variables)
        if len(var) >= 3:
            found.append(f"{path}: a hand-written table of {len(var)} ROCMLAB_* variables (first: {var[0].strip()[:80]})")
        chk = check_kind_rows(text, kinds)
        if len({r.strip().strip('|').split('|')[0].strip(' `') for r in chk}) >= 4:
            found.append(f"{path}: a hand-written table of the grader's check kinds")
        if exit_table_headers(text):
            found.append(f"{path}: a hand-written table of exit statuses per command")
    return found


def tracked_text_files() -> list[Path]:
    """The repository's text files, tracked or new but not ignored (git ls-files), test data excluded."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [ROOT / f for f in out.decode().split("\0") if f]
    return [f for f in files if f.suffix in TEXT_SUFFIXES and f.is_file() and "tests/data/" not in f.as_posix()]
