"""The layers of docs/architecture.md hold: imports only go down, and no modules import each other."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "mnistforge"

#: unit -> layer (a unit is a top-level module or folder of mnistforge/), as in docs/architecture.md
LAYERS = {
    "_version": 0, "errors": 0, "log": 0, "settings": 0, "progress": 0,
    "io": 1,
    "plotting": 1.5,  # every picture drawn: writes through io.atomic, knows no dataset
    "registry": 2,
    "cache": 3, "sd19": 3, "classifiers": 3,
    "gate": 3.5,  # the trust gate: between the cache and the loaders
    "loaders": 4,
    "builders": 5, "checks": 5, "hub": 5, "evaluators": 5, "layouts": 5, "compat": 5,
    "demo": 6,
    "commands": 7, "cli": 8,
}
#: imports allowed within layer 0 (it has an order of its own)
BASE_ORDER = {"_version": 0, "errors": 0, "log": 0, "settings": 1, "progress": 2}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per test process (the tests below walk every module)."""
    return ast.parse(path.read_text())


def _type_only(tree: ast.AST) -> set[int]:
    """The import nodes under ``if TYPE_CHECKING:`` (read by type checkers, never run)."""
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for stmt in node.body for n in ast.walk(stmt)}


@functools.lru_cache(maxsize=None)
def imports(path: Path, *, run_only: bool = False) -> frozenset[str]:
    """Every mnistforge module imported by ``path``, at module level or inside functions
    (``run_only``: leaving out the imports for type checkers only)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    tree = _tree(path)
    skip = _type_only(tree) if run_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("mnistforge"):
                continue
            for alias in node.names:  # `from pkg import module` names a module
                sub = f"{target}.{alias.name}"
                out.add(sub if (PKG.parent / (sub.replace(".", "/") + ".py")).is_file()
                        or (PKG.parent / sub.replace(".", "/")).is_dir() else target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("mnistforge")}
    return frozenset(out)


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def graph(*, run_only: bool = False) -> dict[str, set[str]]:
    return {module_name(p): imports(p, run_only=run_only) for p in sorted(PKG.rglob("*.py"))
            if p.name != "__main__.py"}


def test_every_unit_has_a_layer():
    units = {unit(m) for m in graph()} - {"__init__"}
    assert units <= set(LAYERS), f"add {sorted(units - set(LAYERS))} to LAYERS and docs/architecture.md"


def test_imports_only_go_down():
    upward = []
    for mod, targets in graph().items():
        a = unit(mod)
        if a == "__init__":  # the package root only re-exports load(), lazily
            continue
        for t in targets:
            b = unit(t)
            if b in (a, "__init__") or b not in LAYERS:
                continue
            if LAYERS[b] > LAYERS[a] or (LAYERS[b] == LAYERS[a] and (
                    a not in BASE_ORDER or BASE_ORDER[b] >= BASE_ORDER[a])):
                upward.append(f"{mod} -> {t}")
    assert not upward, "imports that do not go down a layer:\n  " + "\n  ".join(sorted(upward))


def test_no_import_circle():
    g = graph()   # every import: in functions and for type checkers only too (issue 40)
    # modules only: a package's __init__ importing its own modules is not a circle of concern
    edges = {m: {t for t in ts if t in g and t != m and not m.startswith(t + ".")} for m, ts in g.items()}
    state: dict[str, int] = {}
    circles = []

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                circles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
    assert not circles, "import circles:\n  " + "\n  ".join(circles)


@pytest.mark.parametrize("limit", [600])
def test_no_module_over_the_limit_without_a_reason(limit):
    long = []
    for p in PKG.rglob("*.py"):
        text = p.read_text()
        if text.count("\n") > limit and "Why this module is long" not in text[:3000]:
            long.append(f"{p.relative_to(PKG)} ({text.count(chr(10))} lines)")
    assert not long, f"modules over {limit} lines without 'Why this module is long' at the top: {long}"


def test_the_error_table_of_the_architecture_page_is_errors_py():
    """docs/architecture.md lists every error class of errors.py, in order, with its bases."""
    import re

    import mnistforge.errors as errors

    doc = (PKG.parent / "docs" / "architecture.md").read_text()
    table = doc[doc.index("| class | also a | raised when |"):]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", table[:table.index("\n\n")], re.M)
    documented = [(name, [b.strip(" `") for b in bases.split(",")]) for name, bases in rows]
    actual = [(n, [b.__name__ for b in c.__bases__ if b is not errors.MnistforgeError])
              for n, c in vars(errors).items()
              if isinstance(c, type) and issubclass(c, errors.MnistforgeError)
              and c is not errors.MnistforgeError]
    assert documented == actual


def _imports_in_functions(path: Path) -> list[ast.ImportFrom]:
    tree = _tree(path)
    seen: set[int] = set()
    out = []
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(f):
                if id(n) not in seen and isinstance(n, ast.ImportFrom) and (
                        n.level or (n.module or "").startswith("mnistforge")):
                    seen.add(id(n))
                    out.append(n)
    return out


#: imports of the package's own modules inside functions, at most (issue 40: imports at the top;
#: the CLI's commands import late)
IN_FUNCTION_LIMIT = 150


def test_imports_of_the_package_sit_at_the_top_of_modules():
    found = {str(p.relative_to(PKG)): len(_imports_in_functions(p)) for p in PKG.rglob("*.py")}
    total = sum(found.values())
    worst = sorted(((n, f) for f, n in found.items() if n), reverse=True)[:8]
    assert total <= IN_FUNCTION_LIMIT, f"{total} imports of mnistforge modules inside functions " \
                                       f"(at most {IN_FUNCTION_LIMIT}); most in {worst}"


def test_no_type_only_import_within_a_folder():
    """A module names another of its own folder's types by importing it for real: an import
    under ``if TYPE_CHECKING:`` inside one folder hides a circle."""
    found = []
    for p in PKG.rglob("*.py"):
        tree = _tree(p)
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip and isinstance(node, ast.ImportFrom) and node.level == 1 \
                    and node.module != "types":   # io/types: annotations only, imports nothing
                found.append(f"{p.relative_to(PKG)}: from .{node.module} import ...")
    assert not found, "type-only imports within a folder:\n  " + "\n  ".join(sorted(found))


#: what finds a dataset's folder or reads its manifest: the resolve step's (gate/source), and the
#: loaders' that call it; io reads the format
FINDERS = ("find_dataset_folder", "candidate_folders")


def test_only_the_resolve_step_finds_folders():
    """Commands, checks, the export and the evaluators take the resolved source (``load``,
    ``resolve_target``, ``gate.source.resolve``): none finds a dataset's folder or reads a build
    manifest itself."""
    found = []
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG)
        if rel.parts[0] in ("gate", "loaders", "io"):
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
                if name in FINDERS or (owner, name) == ("Manifest", "read"):
                    found.append(f"{rel}:{node.lineno}: {owner + '.' if owner else ''}{name}()")
    assert not found, "folders found outside the resolve step:\n  " + "\n  ".join(found)
