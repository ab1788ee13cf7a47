"""A name says one thing: no function or class name is defined at module level in two modules
of mnistforge/ (issue 28: two ``DatasetSplit``, two ``identify``, two ``cache_home``, two
``image_digests`` of different hashes...), apart from the protocol names allowed below.

Counted: every public name (no leading underscore), and every private name that another module
imports (``from .decode import _bounds``): both are part of how modules talk to each other.  A
private name used only in its own module is that module's business.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mnistforge"

#: name -> (the modules that may define it: a name, or a prefix ending in "."; why it is one meaning)
ALLOWED = {
    "add_arguments": (("mnistforge.commands.",),
                      "the command protocol: every commands/<name>.py defines NAME, HELP, "
                      "add_arguments and run; cli.py finds them by these names"),
    "run": (("mnistforge.commands.",), "the command protocol (see add_arguments)"),
    "file_names": (("mnistforge.builders.emnist", "mnistforge.builders.femnist"),
                   "one meaning, once per builder: the output file names that builder writes"),
}


def module_name(path: Path, pkg: Path = PKG) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scan(pkg: Path = PKG) -> tuple[dict[str, set[str]], set[str]]:
    """(name -> modules defining it at module level, names some module imports by name)."""
    defined: dict[str, set[str]] = defaultdict(set)
    imported: set[str] = set()
    for path in sorted(pkg.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined[node.name].add(module_name(path, pkg))
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     for a in node.names}
    return defined, imported


def counted(name: str, imported: set[str]) -> bool:
    if name.startswith("__") and name.endswith("__"):  # module protocol: __getattr__, __dir__
        return False
    return not name.startswith("_") or name in imported


def allowed(name: str, module: str) -> bool:
    return name in ALLOWED and any(module == m or (m.endswith(".") and module.startswith(m))
                                   for m in ALLOWED[name][0])


def clashes(pkg: Path = PKG) -> list[str]:
    defined, imported = scan(pkg)
    return [f"{n}: {', '.join(sorted(ms))}" for n, ms in sorted(defined.items())
            if len(ms) > 1 and counted(n, imported) and not all(allowed(n, m) for m in ms)]


def test_no_name_is_defined_in_two_modules():
    found = clashes()
    assert not found, ("names defined in several modules (rename one for what it is, or add a "
                       "justified entry to ALLOWED):\n  " + "\n  ".join(found))


def test_every_allowed_name_is_still_defined_twice():
    defined, _ = scan()
    stale = [n for n in ALLOWED if len(defined.get(n, ())) < 2]
    assert not stale, f"ALLOWED entries no longer needed (remove them): {stale}"


def test_the_scan_finds_a_clash(tmp_path):
    """Two modules defining one public name, or a private name another module imports, clash;
    a private helper of each module's own, a dunder or an allowed protocol name does not."""
    pkg = tmp_path / "mnistforge"
    (pkg / "commands").mkdir(parents=True)
    (pkg / "__init__.py").write_text("def __getattr__(name):\n    raise AttributeError(name)\n")
    (pkg / "a.py").write_text("def identify(h): ...\ndef _local(): ...\ndef _shared(): ...\n"
                              "def __getattr__(name): ...\n")
    (pkg / "b.py").write_text("from .a import _shared\nclass identify: ...\ndef _local(): ...\n"
                              "def _shared(): ...\n")
    for cmd in ("x", "y"):
        (pkg / "commands" / f"{cmd}.py").write_text("def add_arguments(p): ...\ndef run(args): ...\n")
    assert clashes(pkg) == ["_shared: mnistforge.a, mnistforge.b", "identify: mnistforge.a, mnistforge.b"]
