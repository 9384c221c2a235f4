"""Write and check course notebooks: no outputs, standard metadata, a parameters cell.

``python tools/nbtools.py clean labs/*.ipynb`` strips outputs and execution counts and
resets metadata to the standard kernel, in place. Tests use :func:`problems`.
``python tools/nbtools.py exercises`` writes one thin notebook per exercise to ``labs/exercises/``.
"""

from __future__ import annotations

import sys

import nbformat

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}
ALLOWED_CELL_METADATA = {"tags", "jupyter", "editable", "deletable"}


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
            if c.get("outputs"):
                out.append(f"cell {i} has stored outputs")
            if c.get("execution_count") is not None:
                out.append(f"cell {i} has an execution count")
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
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
        c.metadata = {k: v for k, v in c.metadata.items() if k in ALLOWED_CELL_METADATA}
    nbformat.write(nb, path)


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
        nbformat.write(nb, str(out / name))
    return sorted(books)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "exercises":
        target = sys.argv[2] if len(sys.argv) > 2 else "labs/exercises"
        for name in write_exercise_notebooks(target):
            print(f"wrote {target}/{name}")
        sys.exit(0)
    if len(sys.argv) < 3 or sys.argv[1] != "clean":
        sys.exit("usage: python tools/nbtools.py clean NOTEBOOK... | python tools/nbtools.py exercises [DIR]")
    for p in sys.argv[2:]:
        clean(p)
        print(f"cleaned {p}")
