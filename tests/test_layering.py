"""The layering rules of docs/design.md §8.1, checked from the code's own imports.

Every ``import`` and ``from ... import`` of every module of ``planner`` and ``formulations``, of ``cli.py`` and
of the benchmark scripts is read with :mod:`ast`: module level, inside functions and under ``TYPE_CHECKING``
alike, since an import inside a function still ties the two modules together. A failure names the file, the
line and the offending import. The tests' own rule is read the same way: no file imports a test module
(``tests.test_*``); what two of them share lives in ``tests/helpers`` (issue 42, item 4).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SOLVER_LIBRARIES = ("highspy", "ortools", "pulp", "pyscipopt")
"""Import names of the solver libraries: only ``formulations.backends`` loads them."""
FRONT_DOOR = "planner.planning"
"""The only module outside ``formulations`` that may import ``formulations``."""

LAYERS: dict[str, int] = {
    "planner.contracts": 0,
    "planner.files": 1,
    "planner.console": 1,
    "planner.core": 2,
    "planner.profile_library": 3,
    "planner.rounds": 4,
    "planner.profiling": 4,
    "formulations": 5,
    "planner.planning": 6,
    "planner.plan_options": 7,
    "planner.executor": 6,
    "planner.launch": 7,
    "planner.sim": 7,
    "planner.bench": 7,
    "planner.agent": 8,
    "planner.control": 9,
    "planner.cluster": 10,
    "planner.cli": 11,
    "cli": 12,
    "planner.__main__": 12,
}
"""Each layer by rank (docs/design.md §8.1): a module imports its own layer or layers of lower rank only, so
two layers of one rank (``sim`` and ``bench``, say) never import each other."""
NEVER = {("planner.launch", "planner.planning"): "planner.launch reads plans and never plans"}
"""Imports the ranks would allow but the design forbids."""


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target module, where it stands and whether it is inside a function."""

    source: str
    target: str
    file: Path
    line: int

    def where(self) -> str:
        """``path:line imports target`` for a failure message."""
        return f"{self.file.relative_to(ROOT)}:{self.line} imports {self.target}"


def module_name(path: Path) -> str:
    """``planner/core/validate.py`` -> ``planner.core.validate``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    """Every Python file the rules cover: both packages, the checkout's ``cli.py`` and the benchmark scripts."""
    files = [*sorted((ROOT / "planner").rglob("*.py")), *sorted((ROOT / "formulations").rglob("*.py"))]
    return [*files, ROOT / "cli.py", *sorted((ROOT / "benchmarks").glob("*.py"))]


MODULES = {module_name(p): p for p in source_files()}


PACKAGE = "wattplan"
"""The installed import package: ``planner`` and ``formulations`` are imported as ``wattplan.planner`` and
``wattplan.formulations`` (pyproject.toml); the rules below name modules relative to it, as their folders do."""


def local_name(name: str) -> str:
    """``wattplan.planner.core.validate`` -> ``planner.core.validate``; any other name as it is."""
    head, _, rest = name.partition(".")
    return rest if head == PACKAGE and rest.split(".")[0] in ("planner", "formulations") else name


def raw_imports_of(path: Path) -> Iterator[tuple[str, int]]:
    """Every module name ``path`` imports, as written, with its line (``from a import b`` gives ``a.b``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                yield f"{node.module}.{a.name}", node.lineno


def imports_of(path: Path) -> Iterator[Import]:
    """Every module ``path`` imports, at any depth of its syntax tree (``from a import b`` is ``a.b`` if a module)."""
    source = module_name(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(source, local_name(alias.name), path, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = local_name(node.module)
            if module == PACKAGE:  # from wattplan import planner
                names = [local_name(f"{PACKAGE}.{a.name}") for a in node.names]
                submodules = [n for n in names if n in MODULES]
            else:
                submodules = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES]
            for target in submodules or [module]:
                yield Import(source, target, path, node.lineno)


ALL_IMPORTS = [imp for path in source_files() for imp in imports_of(path)]


def layer_of(module: str) -> str | None:
    """The layer a module belongs to: the longest key of :data:`LAYERS` it starts with, None outside them."""
    keys = [k for k in LAYERS if module == k or module.startswith(k + ".")]
    return max(keys, key=len) if keys else None


def test_the_packages_are_imported_by_their_installed_names_only() -> None:
    """No file imports ``planner`` or ``formulations`` as top-level names: installed, they are ``wattplan.*``."""
    files = [*source_files(), *sorted((ROOT / "wattplan").glob("*.py")), *sorted((ROOT / "tests").rglob("*.py"))]
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in files
        for name, line in raw_imports_of(path)
        if name.split(".")[0] in ("planner", "formulations")
    ]
    assert not bad, "import wattplan.planner / wattplan.formulations instead:\n" + "\n".join(bad)


def _internal(imp: Import) -> bool:
    return imp.target.split(".")[0] in ("planner", "formulations") and imp.target != "planner"


def test_every_module_has_a_layer() -> None:
    """A new sub-package of planner must be given its place in :data:`LAYERS` (and in docs/design.md §8.1)."""
    loose = [m for m in MODULES if m.split(".")[0] in ("planner", "formulations", "cli") and layer_of(m) is None]
    assert loose == ["planner"], f"modules without a layer: {loose}"


def test_only_the_front_door_imports_formulations() -> None:
    bad = [
        imp.where()
        for imp in ALL_IMPORTS
        if imp.target.split(".")[0] == "formulations"
        and imp.source.split(".")[0] != "formulations"
        and imp.source != FRONT_DOOR
    ]
    assert not bad, f"only {FRONT_DOOR} may import formulations (docs/design.md §8.1):\n" + "\n".join(bad)


def test_only_backends_import_solver_libraries() -> None:
    bad = [
        imp.where()
        for imp in ALL_IMPORTS
        if imp.target.split(".")[0] in SOLVER_LIBRARIES and not imp.source.startswith("formulations.backends")
    ]
    assert not bad, "only formulations.backends may import a solver library:\n" + "\n".join(bad)


def test_layers_import_only_lower_layers() -> None:
    bad = []
    for imp in ALL_IMPORTS:
        if not _internal(imp) or imp.source.startswith("benchmarks"):
            continue
        a, b = layer_of(imp.source), layer_of(imp.target)
        if a is None or b is None or a == b:
            continue
        if LAYERS[b] >= LAYERS[a]:
            bad.append(f"{imp.where()}: layer {b} (rank {LAYERS[b]}) is not below {a} (rank {LAYERS[a]})")
        elif (a, b) in NEVER:
            bad.append(f"{imp.where()}: {NEVER[(a, b)]}")
    assert not bad, "imports against the layering of docs/design.md §8.1:\n" + "\n".join(bad)


def _closure(start: str) -> dict[str, Import]:
    """Every module ``start`` loads, directly or not, with the import that first reached it."""
    by_source: dict[str, list[Import]] = {}
    for imp in ALL_IMPORTS:
        by_source.setdefault(imp.source, []).append(imp)
    seen: dict[str, Import] = {}
    todo = [start]
    while todo:
        for imp in by_source.get(todo.pop(), []):
            if imp.target not in seen:
                seen[imp.target] = imp
                todo.append(imp.target)
    return seen


@pytest.mark.parametrize("module", ["planner.core.validate", "planner.core.evaluate"])
def test_validator_and_evaluator_never_reach_a_solver(module: str) -> None:
    reached = _closure(module)
    bad = [
        reached[t].where() for t in reached if t.split(".")[0] in (*SOLVER_LIBRARIES, "formulations") or t == FRONT_DOOR
    ]
    assert not bad, f"{module} reaches a solver through:\n" + "\n".join(bad)


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a list of module names."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in ALL_IMPORTS:
        if imp.target in MODULES and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == [], "modules that import each other (directly or around a loop)"


def test_planner_top_level_stays_small() -> None:
    """planner/ keeps at most 8 modules at its top (docs/design.md §8.1); the rest live in sub-packages."""
    top = sorted(p.name for p in (ROOT / "planner").glob("*.py"))
    assert len(top) <= 8, top


def test_no_command_line_function_is_over_60_lines() -> None:
    """The command line only parses, calls and prints: no function of ``planner/cli`` is over 60 lines.

    Counted from its ``def`` to its last line; options are their records', never written out (docs/design.md §8.5).
    """
    long = []
    for path in sorted((ROOT / "planner" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                if (length := node.end_lineno - node.lineno + 1) > 60:
                    long.append(f"{path.name}:{node.lineno} {node.name}: {length} lines")
    assert not long, long


def test_every_sub_package_opens_with_its_map() -> None:
    """Each sub-package's ``__init__`` docstring names its modules, so a newcomer finds the way."""
    for init in sorted((ROOT / "planner").glob("*/__init__.py")) + sorted(
        (ROOT / "formulations").glob("*/__init__.py")
    ):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        modules = sorted(p.stem for p in init.parent.glob("*.py") if p.stem != "__init__")
        modules += sorted(p.parent.name for p in init.parent.glob("*/__init__.py"))
        missing = [m for m in modules if not re.search(rf"(?<![\w]){m}(?![\w])", doc)]
        assert not missing, f"{init.relative_to(ROOT)} does not name {missing}"


# ----------------------------------------------------------------------------- tests import no test module

TEST_FILES = [*sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]
"""Every file that could import a test module: the tests, their helpers and the benchmark scripts."""


def _is_test_module(name: str) -> bool:
    """``tests.test_x`` or anything in it (``tests.test_x.f``)."""
    parts = name.split(".")
    return len(parts) > 1 and parts[0] == "tests" and parts[1].startswith("test_")


def _code_in_strings(tree: ast.Module) -> Iterator[tuple[int, ast.Module]]:
    """Python code held in string constants (a ``python -c`` script, say), with the line where each string starts."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            try:
                yield node.lineno, ast.parse(textwrap.dedent(node.value))
            except (SyntaxError, ValueError):
                continue


def imported_test_modules(source: str) -> list[tuple[str, int]]:
    """Every test module ``source`` imports, with its line: module level, in functions and in code held in strings.

    ``from .test_x import y`` is read as a test module too, since the only package of tests is ``tests``.
    """
    tree = ast.parse(source)
    found: list[tuple[str, int]] = []
    for offset, module in [(1, tree), *_code_in_strings(tree)]:
        for node in ast.walk(module):
            line = offset + node.lineno - 1 if isinstance(node, ast.Import | ast.ImportFrom) else 0
            if isinstance(node, ast.Import):
                found += [(a.name, line) for a in node.names if _is_test_module(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if _is_test_module(node.module):
                    found.append((node.module, line))
                elif node.module == "tests":
                    found += [(f"tests.{a.name}", line) for a in node.names if a.name.startswith("test_")]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                names = [node.module] if node.module else [a.name for a in node.names]
                found += [(f"{'.' * node.level}{n}", line) for n in names if n.split(".")[0].startswith("test_")]
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from tests.{mod} import job", ["tests.test_golden"]),
        ("import tests.{mod}", ["tests.test_golden"]),
        ("import tests.{mod} as g", ["tests.test_golden"]),
        ("from tests import {mod}, helpers", ["tests.test_golden"]),
        ("from .{mod} import job", [".test_golden"]),
        ("def f():\n    from tests.{mod} import job", ["tests.test_golden"]),
        ('SCRIPT = """\nimport sys\nfrom tests.{mod} import job\n"""', ["tests.test_golden"]),
        ("from tests.helpers.instances import job", []),
        ("from tests.sim_helpers import hand_job\nimport tests.conftest", []),
        ("x = 'tests.{mod} is a module'", []),
    ],
    ids=["from", "import", "import-as", "from-tests", "relative", "in-def", "in-string", "helper", "other", "prose"],
)
def test_the_test_import_reader_sees_every_form(source: str, expected: list[str]) -> None:
    """Each form of import is seen; ``{mod}`` stands for ``test_golden`` (else this file would import it)."""
    assert [name for name, _ in imported_test_modules(source.format(mod="test_golden"))] == expected


def test_no_file_imports_a_test_module() -> None:
    """Builders two test modules share live in ``tests/helpers`` (or ``tests/conftest.py``), never in a test module.

    A test module imported by another ties the two together: renaming a helper of one, or moving one of its tests,
    breaks the other, and a ``python -c`` script importing one loads every test's imports with it.
    """
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in TEST_FILES
        for name, line in imported_test_modules(path.read_text(encoding="utf-8"))
    ]
    assert not bad, "move what is shared to tests/helpers (issue 42, item 4):\n" + "\n".join(bad)


def test_the_test_helpers_open_with_their_map() -> None:
    """``tests/helpers/__init__.py``'s docstring names each of its modules, as the product's sub-packages do."""
    init = ROOT / "tests" / "helpers" / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    modules = sorted(p.stem for p in init.parent.glob("*.py") if p.stem != "__init__")
    missing = [m for m in modules if not re.search(rf"(?<![\w]){m}(?![\w])", doc)]
    assert modules and not missing, f"tests/helpers/__init__.py does not name {missing}"
