"""Measure the package's house rules: import loops, upward imports, literal defaults, local imports, names, imports
for a side effect (a module imported only so that importing it registers something: :func:`side_effect_imports`).

    python tools/architecture.py [--json] [--root rocmlab]

The layers (README, "Architecture"): toolkits (everything in ``rocmlab/`` except ``course/``,
``commands/`` and ``cli.py``) never import ``rocmlab.course`` (its ``widgets/`` included) nor the
presentation libraries (IPython, ipywidgets, plotly); ``course/`` is the only importer
of those. Some rooms sit below others (:data:`BELOW`): ``cuda2hip/`` (the translation and the trap
scanner) imports neither ``hip/`` nor ``port/``, and ``hip/`` never imports ``port/``, so ``port`` and
``hip`` never import each other. The course has one package per lab notebook (``labs/NN-name.ipynb`` ->
``rocmlab.course.labs.labNN_name``): a lab package never imports another lab's package, and a notebook imports
from ``rocmlab.course`` only its own lab's package and the shared machinery (everything in ``course/`` outside
``course/labs/``); an exercise notebook (``labs/exercises/``) only the shared machinery.
``tests/project/test_architecture.py`` fails when a rule is broken; this
script prints the counts, with the map of rooms (a room: a package or module directly in ``rocmlab/``;
an arrow: one room importing another, lazily too; a loop: rooms that reach each other by arrows).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PRESENTATION_LIBS = ("IPython", "ipywidgets", "plotly", "anywidget")
#: Packages of the presentation layer: only they may import PRESENTATION_LIBS.
PRESENTATION_PACKAGES = ("rocmlab.course",)
#: Front ends: may import anything.
FRONT_ENDS = ("rocmlab.commands", "rocmlab.cli", "rocmlab.course", "rocmlab")
#: Modules allowed to import presentation libraries lazily, because they are IPython glue by definition.
GLUE: tuple[str, ...] = ()   # none left: the magics live in course/
#: Rooms below others: each never imports the rooms listed (lazily neither). What two rooms both use lives
#: below both, so they never import each other.
BELOW: dict[str, tuple[str, ...]] = {
    "rocmlab.cuda2hip": ("rocmlab.hip", "rocmlab.port"),   # the translation and the trap scanner: text only
    "rocmlab.hip": ("rocmlab.port",),                        # the compiler driver; port builds on it
}

#: Where the labs' packages live: one per notebook of ``labs/``.
LAB_PACKAGES = "rocmlab.course.labs"
#: Where the course machinery every lab shares lives (everything in it outside LAB_PACKAGES).
COURSE = "rocmlab.course"


@dataclass
class Module:
    name: str
    path: Path
    imports: list[tuple[str, int, bool]] = field(default_factory=list)   # (module, line, inside a function)
    private_uses: list[tuple[str, str, int]] = field(default_factory=list)  # (module, name, line)


def module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(mod: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))


def _collect_imports(node, m: Module, is_pkg: bool, in_func: bool) -> None:
    """Every import under ``node`` into ``m.imports`` (inside a function or not), and the ``_private`` names
    imported from rocmlab modules into ``m.private_uses``; ``if TYPE_CHECKING:`` blocks are skipped."""
    for child in ast.iter_child_nodes(node):
        inside = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.Import):
            for a in child.names:
                m.imports.append((a.name, child.lineno, in_func))
        elif isinstance(child, ast.ImportFrom):
            target = _resolve(m.name, child, is_pkg)
            for a in child.names:
                m.imports.append((f"{target}.{a.name}", child.lineno, in_func))
                if a.name.startswith("_") and not a.name.startswith("__") and target.startswith("rocmlab"):
                    m.private_uses.append((target, a.name, child.lineno))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            continue
        _collect_imports(child, m, is_pkg, inside)


def parse(root: Path) -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        if "_datasets" in path.parts or "_labs" in path.parts:
            continue
        name = module_name(root, path)
        m = Module(name, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_pkg = path.name == "__init__.py"
        _collect_imports(tree, m, is_pkg, False)
        # module._private attribute uses: `build._platform(...)` where `build` is an imported rocmlab module
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(name, node, is_pkg)
                for a in node.names:
                    aliases[a.asname or a.name] = f"{target}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                owner = aliases.get(node.value.id, "")
                if owner.startswith("rocmlab") and owner != name:
                    m.private_uses.append((owner, node.attr, node.lineno))
        mods[name] = m
    return mods


def _is_type_checking(test) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _owner(mods: dict[str, Module], target: str) -> str | None:
    """The rocmlab module an import names (``rocmlab.hip.build`` or its package)."""
    t = target
    while t:
        if t in mods:
            return t
        t = t.rpartition(".")[0]
    return None


def graph(mods: dict[str, Module], top_level_only: bool = True) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {n: set() for n in mods}
    for n, m in mods.items():
        for target, _line, in_func in m.imports:
            if top_level_only and in_func:
                continue
            if not target.startswith("rocmlab"):
                continue
            o = _owner(mods, target)
            if o and o != n and not n.startswith(o + ".") and o != "rocmlab":
                g[n].add(o)
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        work = [(v, iter(sorted(g[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


def is_toolkit(name: str) -> bool:
    return not any(name == p or name.startswith(p + ".") for p in FRONT_ENDS if p != "rocmlab") and name != "rocmlab"


def upward_imports(mods: dict[str, Module]) -> list[tuple[str, str, int]]:
    """Toolkit modules importing the presentation layer or its libraries (anywhere, lazily too)."""
    bad = []
    for n, m in mods.items():
        if not is_toolkit(n):
            continue
        for target, line, _in_func in m.imports:
            root = target.split(".")[0]
            if root in PRESENTATION_LIBS and n in GLUE:
                continue
            if root in PRESENTATION_LIBS or any(target == p or target.startswith(p + ".") for p in PRESENTATION_PACKAGES):
                bad.append((n, target, line))
    return bad


def room(name: str) -> str:
    """The room a module is in: ``rocmlab.hip.sim.wave`` -> ``rocmlab.hip``; ``rocmlab.settings`` is its own."""
    return ".".join(name.split(".")[:2])


def room_graph(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded to rooms: room -> the other rooms it imports (``rocmlab/__init__.py``, the
    front door, is no room)."""
    rooms: dict[str, set[str]] = {}
    for n, targets in g.items():
        if n == "rocmlab":
            continue
        rooms.setdefault(room(n), set()).update(room(t) for t in targets if room(t) != room(n))
    return rooms


def mutual_rooms(rg: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of rooms that import each other directly."""
    return sorted({tuple(sorted((a, b))) for a, targets in rg.items() for b in targets if a in rg.get(b, ())})


def below_violations(mods: dict[str, Module]) -> list[tuple[str, str, int]]:
    """(module, what it imports, line) where a room of :data:`BELOW` imports a room above it (lazily too)."""
    bad = []
    for n, m in mods.items():
        above = BELOW.get(room(n), ())
        for target, line, _in_func in m.imports:
            if target.startswith("rocmlab.") and room(target) in above:
                bad.append((n, target, line))
    return bad


# --- the course: one package per lab ----------------------------------------------------------------------------

def lab_package(name: str) -> str | None:
    """The lab package a module belongs to (``rocmlab.course.labs.lab05_quickreduce_tuning.task`` ->
    ``rocmlab.course.labs.lab05_quickreduce_tuning``), or None for anything else."""
    parts = name.split(".")
    base = LAB_PACKAGES.split(".")
    if parts[: len(base)] == base and len(parts) > len(base):
        return ".".join(parts[: len(base) + 1])
    return None


def package_for_notebook(stem: str) -> str:
    """The package a lab notebook's code lives in: ``05-quickreduce-tuning`` -> ``rocmlab.course.labs.lab05_quickreduce_tuning``."""
    return f"{LAB_PACKAGES}.lab" + stem.replace("-", "_")


def cross_lab_imports(mods: dict[str, Module]) -> list[tuple[str, str, int]]:
    """(module, what it imports, line) where one lab's package imports another lab's package (lazily too)."""
    bad = []
    for n, m in mods.items():
        mine = lab_package(n)
        if mine is None:
            continue
        for target, line, _in_func in m.imports:
            theirs = lab_package(target)
            if theirs is not None and theirs != mine:
                bad.append((n, target, line))
    return bad


def lab_packages(mods: dict[str, Module]) -> list[str]:
    return sorted({p for p in map(lab_package, mods) if p})


def _cell_code(source: str) -> str:
    """A code cell as Python: IPython's line magics and shell escapes become ``pass``; a cell magic cell
    (``%%hip``, ...) holds no Python: ''."""
    if source.lstrip().startswith("%%"):
        return ""
    return "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _names_in_cell(tree) -> list[tuple[str, int]]:
    """(module, line) for every import in a cell, and every string naming a rocmlab module (``needs.module("...")``,
    ``importlib.import_module("...")``: an import by name)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and re.fullmatch(r"rocmlab(\.\w+)+", node.args[0].value)):
            found.append((node.args[0].value, node.lineno))
    return found


def notebook_imports(labs_dir: Path) -> list[tuple[str, int, str]]:
    """(notebook, cell, module) where a notebook imports from ``rocmlab.course`` something other than its own lab's
    package and the shared machinery: another lab's package (an exercise notebook: any lab's package)."""
    bad = []
    books = sorted(labs_dir.glob("*.ipynb")) + sorted((labs_dir / "exercises").glob("*.ipynb"))
    for nb in books:
        own = package_for_notebook(nb.stem) if nb.parent == labs_dir else None
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            try:
                tree = ast.parse(_cell_code(source))
            except SyntaxError:
                continue
            for target, _line in _names_in_cell(tree):
                if target == LAB_PACKAGES or target.startswith(LAB_PACKAGES + ".") and lab_package(target) != own:
                    bad.append((str(nb.relative_to(labs_dir.parent)), i, target))
    return bad


def lab_packages_without_notebook(mods: dict[str, Module], labs_dir: Path) -> list[str]:
    """Lab packages not named like any notebook of ``labs/``."""
    named = {package_for_notebook(nb.stem) for nb in labs_dir.glob("*.ipynb")}
    return [p for p in lab_packages(mods) if p not in named]


#: The module (relative to the package) holding one record per GPU target: the only one that writes a target's name.
RECORD_MODULE = "targets.py"
#: An AMD target's name, as the record module writes it (gfx942, gfx90a).
AMD_TARGET_NAME = re.compile(r"gfx[0-9a-f]+")


def _code_strings(path: Path) -> list[tuple[str, int]]:
    """(value, line) of every string constant in a module's code (docstrings not counted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    doc_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                doc_nodes.add(id(body[0].value))
    return [(node.value, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in doc_nodes]


def literal_count(root: Path, literal: str, allowed: tuple[str, ...] = (RECORD_MODULE,)) -> list[tuple[str, int]]:
    """Where a string literal (e.g. "gfx942") is written in code, outside the allowed modules (paths relative to
    ``root``; docstrings not counted)."""
    return [(str(path), line) for path in sorted(root.rglob("*.py")) if path.relative_to(root).as_posix() not in allowed
            for value, line in _code_strings(path) if value == literal]


def target_names(root: Path) -> list[str]:
    """The AMD target names the record module (:data:`RECORD_MODULE`) writes: each string of its code that is one."""
    path = root / RECORD_MODULE
    if not path.is_file():
        return []
    return sorted({v for v, _ in _code_strings(path) if AMD_TARGET_NAME.fullmatch(v)})


def literal_target_names(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, name) wherever a module other than the record module writes an AMD target's name as a whole
    string (``"gfx942"``; text that mentions one, such as ``"gfx942 (MI300X)"``, is not counted)."""
    names = set(target_names(root))
    return [(path.relative_to(root.parent).as_posix(), line, value) for path in sorted(root.rglob("*.py"))
            if path.relative_to(root).as_posix() != RECORD_MODULE
            for value, line in _code_strings(path) if value in names]


TIME_LIMIT_DEFAULT = re.compile(r"\b(time_limit_s|timeout_s|time_limit)\b\s*(?::\s*float)?\s*=\s*20(?:\.0)?\b")


def time_limit_definitions(root: Path) -> list[tuple[str, int]]:
    hits = []
    for path in sorted(root.rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TIME_LIMIT_DEFAULT.search(line) or re.search(r"default=20(?:\.0)?\b", line):
                hits.append((str(path), i))
    return hits


TIMER_CALLS = re.compile(r"\btorch\.cuda\.Event\(|\bdo_bench\(|\.elapsed_time\(")


def timing_implementations(root: Path) -> list[str]:
    """Modules that time GPU work themselves (device events, triton's do_bench): the one timing helper
    is rocmlab/profile/timing.py, so every other module here is a second way to do it."""
    return sorted(str(path.relative_to(root.parent)) for path in root.rglob("*.py")
                  if TIMER_CALLS.search(path.read_text(encoding="utf-8")))


def stdlib_shadows(root: Path) -> list[str]:
    """Modules named like a standard-library module (``inspect.py``, ``platform.py``)."""
    names = set(sys.stdlib_module_names)
    return sorted(str(p.relative_to(root.parent)) for p in root.rglob("*.py")
                  if p.stem in names and p.stem != "__init__")


#: Front ends mirror the toolkit's names on purpose (one command module per CLI command, one widget per toolkit; each exercise has its reference.py).
MIRRORS = ("commands", "course", "exercises")


def names_used_twice(root: Path) -> dict[str, list[str]]:
    """Toolkit module names that exist in more than one place (``build`` in hip/ and port/)."""
    seen: dict[str, list[str]] = {}
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        if p.stem == "__init__" or (rel.parts and rel.parts[0] in MIRRORS) or "_datasets" in rel.parts:
            continue
        seen.setdefault(p.stem, []).append(str(p.relative_to(root.parent)))
    return {k: v for k, v in seen.items() if len(v) > 1}


def arch_names(root: Path) -> list[tuple[str, int, str]]:
    """Parameters and fields called ``arch``/``archs``: the idea is called ``target`` everywhere."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and node.arg in ("arch", "archs"):
                hits.append((str(path.relative_to(root.parent)), node.lineno, node.arg))
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                            and item.target.id in ("arch", "archs")):
                        hits.append((str(path.relative_to(root.parent)), item.lineno, item.target.id))
    return hits


def status_vocabulary(root: Path) -> set[str]:
    """The words of every vocabulary in ``rocmlab/status.py`` (its tuple constants)."""
    path = root / "status.py"
    if not path.is_file():
        return set()
    words = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Tuple):
            words |= {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return words


def stray_status_words(root: Path) -> list[tuple[str, int, str]]:
    """Status words written in code (``x.status == "..."``, ``status="..."``, ``.status = "..."``) that
    no vocabulary of rocmlab/status.py has: a second vocabulary growing."""
    words = status_vocabulary(root)
    hits = []

    def lit(node):
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found = []
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "status":
                for c in node.comparators:
                    found += [lit(c)] + [lit(e) for e in getattr(c, "elts", [])]
            elif isinstance(node, ast.keyword) and node.arg == "status":
                found.append(lit(node.value))
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "status"
                                                      for t in node.targets):
                found.append(lit(node.value))
            hits += [(rel, node.lineno, w) for w in found if w is not None and w not in words]
    return hits


#: A ``try:`` whose handler catches one of these is an import probe ("is it installed?"), not an import for its effect.
PROBE_ERRORS = ("ImportError", "ModuleNotFoundError")


def _dotted(node) -> str:
    """``a.b.c`` for an attribute chain on a name, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def side_effect_imports(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, what it imports) where a module imports something only for what importing it does (a registry
    filled as a module loads): the name the import binds is never used in the module (an ``import a.b.c``: no
    ``a.b.c`` chain), at its top or in a function; ``# noqa: F401`` is how such an import hides from the linter.
    Not counted: ``__init__.py`` files (their imports are the package's public names, re-exported), names in
    ``__all__``, ``from __future__``, and a probe (an import in a ``try:`` whose handler catches ImportError)."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "__init__.py" or "_datasets" in path.parts or "_labs" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        chains = {_dotted(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        probes = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                used |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            elif isinstance(node, ast.Try) and any(
                    _dotted(t) in PROBE_ERRORS for h in node.handlers if h.type is not None
                    for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])):
                probes |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in probes:
                continue
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            for a in node.names:
                if isinstance(node, ast.Import) and a.asname is None and "." in a.name:
                    found = any(c == a.name or c.startswith(a.name + ".") for c in chains)
                    what = a.name
                else:
                    found = a.name == "*" or (a.asname or a.name) in used
                    what = a.name if isinstance(node, ast.Import) else \
                        f"{'.' * node.level}{node.module + '.' if node.module else ''}{a.name}"
                if not found:
                    hits.append((str(path.relative_to(root.parent)), node.lineno, what))
    return hits


#: Sizes the report lists (for reading, not rules): the largest files and the functions longer than this.
LONG_FUNCTION_LINES = 80
LARGEST_FILES = 10


def largest_files(root: Path, n: int = LARGEST_FILES) -> list[tuple[str, int]]:
    """The ``n`` longest source files of the package (Python and the simulator's C++), as (path, lines)."""
    files = [p for p in root.rglob("*") if p.suffix in (".py", ".cpp", ".h") and "__pycache__" not in p.parts]
    sized = [(str(p.relative_to(root.parent)), len(p.read_text(errors="replace").splitlines())) for p in files]
    return sorted(sized, key=lambda t: (-t[1], t[0]))[:n]


def long_functions(root: Path, limit: int = LONG_FUNCTION_LINES) -> list[tuple[str, int]]:
    """Functions and methods longer than ``limit`` lines (their ``def`` to their last line), as
    ("path:name", lines), longest first."""
    found = []
    for p in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append((f"{p.relative_to(root.parent)}:{node.name}", lines))
    return sorted(found, key=lambda t: (-t[1], t[0]))


def measure(root: Path, labs_dir: Path | None = None) -> dict:
    """Every count of the report, for the package at ``root`` and the notebooks in ``labs_dir`` (default: the
    ``labs/`` folder beside the package)."""
    mods = parse(root)
    labs_dir = labs_dir if labs_dir is not None else root.parent / "labs"
    g = graph(mods, top_level_only=False)   # a lazy import still makes a loop of ideas
    loops = cycles(g)
    rg = room_graph(g)
    local = [(n, t, line) for n, m in mods.items() for t, line, f in m.imports if f and t.startswith("rocmlab")]
    private = [(n, f"{o}.{a}", line) for n, m in mods.items() for o, a, line in m.private_uses]
    private = [p for p in private if _owner(mods, p[1].rpartition(".")[0]) not in (p[0], None)]
    return {
        "modules": len(mods),
        "largest_files": largest_files(root),
        "long_functions": long_functions(root),
        "rooms": len(rg),
        "arrows": sum(len(t) for t in rg.values()),
        "room_loops": cycles(rg),
        "rooms_importing_each_other": mutual_rooms(rg),
        "below_violations": below_violations(mods),
        "import_loops": loops,
        "upward_imports": upward_imports(mods),
        "lab_packages": lab_packages(mods),
        "cross_lab_imports": cross_lab_imports(mods),
        "notebook_imports_outside_own_lab": notebook_imports(labs_dir) if labs_dir.is_dir() else [],
        "lab_packages_without_notebook": lab_packages_without_notebook(mods, labs_dir) if labs_dir.is_dir() else [],
        "target_names": target_names(root),
        "literal_target_names": literal_target_names(root),
        "time_limit_default_definitions": time_limit_definitions(root),
        "timing_implementations": timing_implementations(root),
        "imports_inside_functions": len(local),
        "imports_inside_front_ends": sum(1 for n, _t, _l in local if n == "rocmlab" or n.startswith(("rocmlab.commands", "rocmlab.cli"))),
        "private_names_across_modules": private,
        "stdlib_shadows": stdlib_shadows(root),
        "names_used_twice": names_used_twice(root),
        "arch_names": arch_names(root),
        "stray_status_words": stray_status_words(root),
        "side_effect_imports": side_effect_imports(root),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=str(Path(__file__).resolve().parent.parent / "rocmlab"))
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    r = measure(Path(a.root))
    if a.json:
        print(json.dumps(r, indent=1, default=str))
        return 0
    print(f"modules: {r['modules']}")
    print("largest files (lines): " + ", ".join(f"{f} {n}" for f, n in r["largest_files"]))
    print(f"functions over {LONG_FUNCTION_LINES} lines: {len(r['long_functions'])}")
    for f, n in r["long_functions"]:
        print(f"    {n:4d} {f}")
    print(f"rooms: {r['rooms']}, arrows between rooms: {r['arrows']}")
    print(f"loops of rooms: {len(r['room_loops'])}")
    for c in r["room_loops"]:
        print("   ", " -> ".join(c))
    print(f"rooms importing each other: {len(r['rooms_importing_each_other'])}")
    for a_, b_ in r["rooms_importing_each_other"]:
        print(f"    {a_} <-> {b_}")
    print(f"imports upward past a room below (BELOW: {', '.join(BELOW)}): {len(r['below_violations'])}")
    for n, t, line in r["below_violations"]:
        print(f"    {n}:{line} imports {t}")
    print(f"import loops (modules): {len(r['import_loops'])}")
    for c in r["import_loops"]:
        print("   ", " <-> ".join(c))
    print(f"upward imports (toolkit -> presentation): {len(r['upward_imports'])}")
    for n, t, line in r["upward_imports"]:
        print(f"    {n}:{line} imports {t}")
    print(f"lab packages (one per notebook, in {LAB_PACKAGES}): {len(r['lab_packages'])}")
    print(f"lab packages importing another lab's package: {len(r['cross_lab_imports'])}")
    for n, t, line in r["cross_lab_imports"]:
        print(f"    {n}:{line} imports {t}")
    print(f"notebooks importing a lab package not their own: {len(r['notebook_imports_outside_own_lab'])}")
    for nb, cell, t in r["notebook_imports_outside_own_lab"]:
        print(f"    {nb} cell {cell} imports {t}")
    print(f"lab packages named like no notebook: {len(r['lab_packages_without_notebook'])}")
    for p_ in r["lab_packages_without_notebook"]:
        print(f"    {p_}")
    print(f"literal target names ({', '.join(r['target_names'])}) outside {RECORD_MODULE}: "
          f"{len(r['literal_target_names'])}")
    for f, line, name in r["literal_target_names"]:
        print(f"    {f}:{line} {name!r}")
    print(f"time-limit default definitions (=20): {len(r['time_limit_default_definitions'])}")
    print(f"timing implementations (modules that time GPU work themselves): {len(r['timing_implementations'])}")
    for t in r["timing_implementations"]:
        print(f"    {t}")
    print(f"rocmlab imports inside functions: {r['imports_inside_functions']} "
          f"({r['imports_inside_front_ends']} in commands/ and cli.py, lazy on purpose: `rocmlab --help` "
          "loads no toolkit)")
    print(f"private names used across modules: {len(r['private_names_across_modules'])}")
    for n, t, line in r["private_names_across_modules"][:40]:
        print(f"    {n}:{line} uses {t}")
    print(f"modules named like the standard library: {len(r['stdlib_shadows'])}")
    for t in r["stdlib_shadows"]:
        print(f"    {t}")
    print(f"toolkit module names used twice: {len(r['names_used_twice'])}")
    for k, v in r["names_used_twice"].items():
        print(f"    {k}: {', '.join(v)}")
    print(f"parameters/fields named arch (not target): {len(r['arch_names'])}")
    print(f"status words outside rocmlab/status.py: {len(r['stray_status_words'])}")
    for f, line, w in r["stray_status_words"][:40]:
        print(f"    {f}:{line} {w!r}")
    print(f"imports for a side effect (a name never used; __init__.py re-exports and import probes aside): "
          f"{len(r['side_effect_imports'])}")
    for f, line, t in r["side_effect_imports"][:40]:
        print(f"    {f}:{line} imports {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
