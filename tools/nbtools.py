"""Write and check course notebooks: no outputs (except the checked cells' text), standard metadata, a parameters cell.

``python tools/nbtools.py clean labs/*.ipynb`` strips outputs and execution counts and
resets metadata to the standard kernel, in place; a checked cell keeps its recorded text. Tests use :func:`problems`.
``python tools/nbtools.py exercises`` writes one thin notebook per exercise to ``labs/exercises/``.

Checked cells (nbval): a code cell tagged ``nbval-check-output`` (or with ``NBVAL_CHECK_OUTPUT`` in its source)
stores its reference output, which ``pytest --nbval-lax`` compares with a new run (after the rules of
``labs/nbval_sanitize.cfg``); every other cell stores nothing. The stored text is never edited by hand:

    python tools/nbtools.py mark labs/05-quickreduce-tuning.ipynb "LINE OF THE CELL" ...   # tag, then record
    python tools/nbtools.py record-outputs labs/05-quickreduce-tuning.ipynb ...            # run it, store the text
    python tools/nbtools.py record-outputs --from DIR labs/*.ipynb     # from executed copies (DIR/<name>.ipynb)
    python tools/nbtools.py mark --from DIR labs/X.ipynb "LINE" ...    # tag, record from an executed copy
"""

from __future__ import annotations

import copy
import sys
from collections import OrderedDict
from pathlib import Path

import nbformat

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}
ALLOWED_CELL_METADATA = {"tags", "jupyter", "editable", "deletable"}
#: The tag that makes nbval compare a cell's output (nbval's own name; ``# NBVAL_CHECK_OUTPUT`` in the source too).
CHECK_TAG = "nbval-check-output"
CHECK_COMMENT = "NBVAL_CHECK_OUTPUT"
#: The only outputs a checked cell may store: printed text, or a result's plain text (no images, HTML, widgets).
TEXT_MIME = "text/plain"
#: Characters of stored text per checked cell: small enough to read in a diff.
MAX_CHECKED_CHARS = 4000
ROOT = Path(__file__).resolve().parents[1]
SANITIZER = ROOT / "labs" / "nbval_sanitize.cfg"


def is_checked(cell) -> bool:
    """Whether nbval compares this cell's output (the marks ``pytest --nbval-lax`` honours)."""
    return cell.get("cell_type") == "code" and (
        CHECK_COMMENT in cell.get("source", "") or CHECK_TAG in cell.get("metadata", {}).get("tags", []))


def stored_output_problems(i: int, cell) -> list[str]:
    """What cell ``i`` stores that it must not: any output in an unmarked cell; in a checked cell anything but
    text (images, HTML, widget views, errors), more than :data:`MAX_CHECKED_CHARS`, or no record at all."""
    outs = cell.get("outputs") or []
    if not is_checked(cell):
        found = []
        if outs:
            found.append(f"cell {i} has stored outputs")
        if cell.get("execution_count") is not None:
            found.append(f"cell {i} has an execution count")
        return found
    found, chars = [], 0
    if cell.get("execution_count") is None:
        found.append(f"cell {i} is checked by nbval but its output was never recorded "
                     "(python tools/nbtools.py record-outputs NOTEBOOK)")
    for o in outs:
        kind = o.get("output_type")
        if kind == "stream":
            chars += len(o.get("text", ""))
        elif kind == "execute_result" and set(o.get("data", {})) == {TEXT_MIME}:
            chars += len(o["data"][TEXT_MIME])
        else:
            what = sorted(o.get("data", {})) if kind in ("execute_result", "display_data") else kind
            found.append(f"cell {i} is checked by nbval and stores {kind} {what}: only printed text or a plain-text "
                         "result may be stored (images, HTML, widget views and errors are not)")
    if chars > MAX_CHECKED_CHARS:
        found.append(f"cell {i} stores {chars} characters of checked output (at most {MAX_CHECKED_CHARS}): "
                     "check a shorter text")
    return found


def new_notebook(cells: list[tuple[str, str] | tuple[str, str, list]]) -> nbformat.NotebookNode:
    """cells: ("md"|"code", source[, tags])."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    for spec in cells:
        kind, src = spec[0], spec[1].strip("\n")
        cell = nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
        if len(spec) > 2:
            cell.metadata["tags"] = list(spec[2])
        nb.cells.append(cell)
    nbformat.validator.normalize(nb)
    return nb


def problems(nb: nbformat.NotebookNode) -> list[str]:
    out = []
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        out.append("kernelspec is not python3")
    extra = set(nb.metadata) - {"kernelspec", "language_info"}
    if extra:
        out.append(f"non-standard notebook metadata: {sorted(extra)}")
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            out += stored_output_problems(i, c)
        bad = set(c.get("metadata", {})) - ALLOWED_CELL_METADATA
        if bad:
            out.append(f"cell {i} has non-standard metadata {sorted(bad)}")
    params = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(params) != 1:
        out.append(f"expected exactly one cell tagged 'parameters', found {len(params)}")
    return out


def clean(path: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    for c in nb.cells:
        if c.cell_type == "code" and not is_checked(c):
            c.outputs = []
            c.execution_count = None
        c.metadata = {k: v for k, v in c.metadata.items() if k in ALLOWED_CELL_METADATA}
    nbformat.write(nb, path)


# --- checked cells: record their text from a run, compare a run with it (nbval's own comparison) ------------

class RecordError(Exception):
    """A checked cell that cannot be recorded: the message names the cell and the fix."""


def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def _runs_by_cell(nb, executed) -> dict:
    """id of each code cell of ``nb`` -> its cell in ``executed`` (papermill keeps the ids; its injected
    parameters cell has one of its own)."""
    ran = {c.get("id"): c for c in code_cells(executed)}
    return {c.get("id"): ran.get(c.get("id")) for c in code_cells(nb)}


def text_outputs(cell, n: int, name: str) -> list:
    """A run cell's outputs as they are stored: streams and plain-text results, metadata dropped. Anything else
    (HTML, images, widget views, an error) cannot be checked: :class:`RecordError` names the cell."""
    kept = []
    for o in cell.get("outputs", []):
        kind = o.get("output_type")
        if kind == "stream":
            kept.append(nbformat.v4.new_output("stream", name=o["name"], text=o["text"]))
        elif kind == "execute_result" and set(o.get("data", {})) == {TEXT_MIME}:
            kept.append(nbformat.v4.new_output("execute_result", {TEXT_MIME: o["data"][TEXT_MIME]},
                                               execution_count=n))
        else:
            what = sorted(o.get("data", {})) if "data" in o else o.get("ename", "")
            raise RecordError(f"{name}: code cell {n - 1} is marked {CHECK_TAG} but shows {kind} {what}: a checked "
                              "cell must print text (print(...)); untag it or make it print")
    return kept


def record_outputs(path, executed=None) -> list[int]:
    """Store the output of every checked cell of ``path`` from a run: ``executed`` (a notebook papermill ran from
    this one) or, without it, a fresh run (papermill, quick sizes, in a temporary folder). Other cells are cleaned.
    Returns the numbers (nbval's ``Cell N``, code cells from 0) of the recorded cells."""
    import tempfile

    path = Path(path)
    nb = nbformat.read(str(path), as_version=4)
    checked = [n for n, c in enumerate(code_cells(nb)) if is_checked(c)]
    if checked and executed is None:
        with tempfile.TemporaryDirectory(prefix="nbtools-record-") as tmp:
            executed = Path(tmp) / path.name
            _execute(path, executed)
            ran = nbformat.read(str(executed), as_version=4)
    elif checked:
        ran = nbformat.read(str(executed), as_version=4)
    runs = _runs_by_cell(nb, ran) if checked else {}
    for n, c in enumerate(code_cells(nb)):
        if n not in checked:
            continue
        r = runs[c.get("id")]
        if r is None or r.source != c.source:
            raise RecordError(f"{path.name}: the run {executed} is not of this version of code cell {n}: "
                              "record from a fresh run (leave out --from)")
        c.outputs = text_outputs(r, n + 1, path.name)
        c.execution_count = n + 1
    nbformat.write(nb, str(path))
    clean(str(path))
    return checked


def _execute(src: Path, dest: Path) -> None:
    """Run ``src`` as the suite does: papermill, ``quick=True``, in dest's folder."""
    import papermill

    papermill.execute_notebook(str(src), str(dest), parameters={"quick": True}, cwd=str(dest.parent),
                               kernel_name="python3", progress_bar=False, log_output=False)


def mark(path, lines: list[str]) -> list[int]:
    """Tag the code cell holding each of ``lines`` (a line of its source, exactly one cell each) for nbval."""
    nb = nbformat.read(str(path), as_version=4)
    numbers = []
    for line in lines:
        hits = [n for n, c in enumerate(code_cells(nb)) if line in c.source]
        if len(hits) != 1:
            raise RecordError(f"{Path(path).name}: {len(hits)} code cells hold {line!r}; give a line of exactly one")
        cell = code_cells(nb)[hits[0]]
        tags = cell.metadata.setdefault("tags", [])
        if CHECK_TAG not in tags:
            tags.append(CHECK_TAG)
        numbers.append(hits[0])
    nbformat.write(nb, str(path))
    return numbers


#: nbval 0.11's IPyNbFile.skip_compare (without --nbdime): what it never compares.
NBVAL_SKIP_COMPARE = ("metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                      "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg")


class _NbvalCell:
    """What nbval's IPyNbCell.compare_outputs reads of its cell, so that a run papermill made is compared by
    nbval's own code (the same verdict as ``pytest --nbval-lax``, without running the notebook a second time)."""

    def __init__(self, patterns):
        from types import SimpleNamespace

        from nbval import plugin

        self.parent = SimpleNamespace(skip_compare=NBVAL_SKIP_COMPARE, sanitize_patterns=patterns)
        self.colors = plugin.nocolors
        self.ihook = SimpleNamespace(pytest_assertrepr_compare=lambda **kw: [])    # nbval's plain diff
        self.config = None
        self.comparison_traceback = []

    def compare(self, test, ref) -> bool:
        from nbval import plugin

        return plugin.IPyNbCell.compare_outputs(self, test, ref)

    def sanitize(self, s):
        from nbval import plugin

        return plugin.IPyNbCell.sanitize(self, s)

    def format_output_compare(self, key, left, right):
        from nbval import plugin

        return plugin.IPyNbCell.format_output_compare(self, key, left, right)


def output_differences(path, executed, sanitizer=SANITIZER) -> list[str]:
    """nbval's verdict on a run papermill made of ``path``: for each checked cell whose new output differs from
    the stored one (after the sanitizer's rules), ``"<name>::Cell N: <nbval's diff>"``. Empty: all agree."""
    from nbval import plugin

    nb = nbformat.read(str(path), as_version=4)
    ran = nbformat.read(str(executed), as_version=4)
    patterns = OrderedDict(plugin.get_sanitize_patterns(Path(sanitizer).read_text())) if sanitizer else OrderedDict()
    runs = _runs_by_cell(nb, ran)
    found = []
    for n, c in enumerate(code_cells(nb)):
        if not is_checked(c) or c.get("execution_count") is None:     # nbval compares only recorded cells
            continue
        r = runs[c.get("id")]
        if r is None:
            found.append(f"{Path(path).name}::Cell {n}: not in the run {executed}")
            continue
        cmp = _NbvalCell(patterns)
        test = plugin.coalesce_streams([nbformat.from_dict(copy.deepcopy(o)) for o in r.get("outputs", [])])
        ref = plugin.coalesce_streams([nbformat.from_dict(copy.deepcopy(o)) for o in c.outputs])
        if not cmp.compare(test, ref):
            found.append(f"{Path(path).name}::Cell {n}: Cell outputs differ\n" + "\n".join(cmp.comparison_traceback))
    return found


def exercise_notebooks(out_dir=None) -> dict:
    """name -> notebook: one thin notebook per exercise (rocmlab.course.exercise.notebook_cells)."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from rocmlab import grader
    from rocmlab.course.exercise import notebook_cells, notebook_name

    return {notebook_name(ex): new_notebook(notebook_cells(ex)) for ex in grader.exercises()}


def write_exercise_notebooks(out_dir) -> list[str]:
    """Write labs/exercises/NN-<id>.ipynb for every exercise; remove notebooks of retired exercises."""
    from pathlib import Path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    books = exercise_notebooks()
    for old in out.glob("*.ipynb"):
        if old.name not in books:
            old.unlink()
    for name, nb in books.items():
        if (out / name).exists():
            old_nb = nbformat.read(str(out / name), as_version=4)
            keep_ids(old_nb, nb)
            keep_checked(old_nb, nb)
        nbformat.write(nb, str(out / name))
    return sorted(books)


def keep_ids(old, new) -> None:
    """A regenerated notebook keeps the cell ids of ``old``: the cell at the same place, of the same type,
    keeps its id (links and nbval reports to a cell stay valid; a new cell gets a new id)."""
    for was, c in zip(old.cells, new.cells, strict=False):     # a regenerated notebook may have more or fewer cells
        if was.cell_type == c.cell_type and "id" in was:
            c.id = was.id


def keep_checked(old, new) -> None:
    """Carry the nbval marks and recorded text of ``old``'s cells over to ``new``'s cells of the same source
    (a regenerated exercise notebook keeps its checked cells; a changed cell must be recorded again)."""
    by_source = {c.source: c for c in code_cells(old) if is_checked(c)}
    for c in code_cells(new):
        was = by_source.get(c.source)
        if was is not None:
            tags = c.metadata.setdefault("tags", [])
            if CHECK_TAG in was.metadata.get("tags", []) and CHECK_TAG not in tags:
                tags.append(CHECK_TAG)
            c.outputs, c.execution_count = was.outputs, was.execution_count


USAGE = """usage: python tools/nbtools.py clean NOTEBOOK...
       python tools/nbtools.py exercises [DIR]
       python tools/nbtools.py mark [--from DIR] NOTEBOOK "LINE OF A CELL"...  (tag those cells for nbval, record)
       python tools/nbtools.py record-outputs [--from DIR] NOTEBOOK...  (store the checked cells' text from a run)
   --from DIR: the run is DIR/<path under labs/> (the suite's: test-artifacts/browser/executed), not a new one"""


def executed_name(path) -> Path:
    """Where a run of ``path`` lies in a folder of executed copies: its path under labs/ (exercises/NN-x.ipynb),
    as the suite writes them (test-artifacts/browser/executed/)."""
    p = Path(path).resolve()
    try:
        return p.relative_to(ROOT / "labs")
    except ValueError:
        return Path(p.name)


def main(argv: list[str]) -> int:
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    try:
        if cmd == "exercises":
            target = args[0] if args else "labs/exercises"
            for name in write_exercise_notebooks(target):
                print(f"wrote {target}/{name}")
        elif cmd == "clean" and args:
            for p in args:
                clean(p)
                print(f"cleaned {p}")
        elif cmd in ("mark", "record-outputs"):
            source = None
            if args[:1] == ["--from"]:
                source, args = (Path(args[1]), args[2:]) if len(args) > 1 else (None, [])
            if not args or (cmd == "mark" and len(args) < 2):
                print(USAGE, file=sys.stderr)
                return 2
            books = [args[0]] if cmd == "mark" else args
            runs = {p: source / executed_name(p) if source else None for p in books}
            for executed in runs.values():
                if executed is not None and not executed.is_file():
                    print(f"{executed} does not exist: run the notebook into {source} first, or leave out --from",
                          file=sys.stderr)
                    return 2
            if cmd == "mark":
                print(f"{args[0]}: checked cells {mark(args[0], args[1:])}")
            for p, executed in runs.items():
                print(f"{p}: recorded cells {record_outputs(p, executed)}")
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (RecordError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
