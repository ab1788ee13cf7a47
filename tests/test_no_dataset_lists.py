"""Facts about a dataset live in its registry entry, not in lists in the code (issue 28).

The package's source is parsed (docstrings and their examples are strings the parser sets
apart, so they are free to name datasets) and every place that names registry datasets in a
way that makes a per-dataset list is reported: a list/tuple/set/dict literal holding a
dataset name, a comparison with one (``name == "qmnist"``, ``name in (...)``), a
``startswith``/``endswith`` on one or on a name prefix (``"emnist-"``). Modules whose job is
one named dataset (the builders of QMNIST/MNIST/EMNIST from SD19, the build command, the demo
pipeline, the QMNIST evaluation protocol and Keysers' MNIST error lists) are allowed to, and so
are the few places listed below with the reason. A new list elsewhere fails this test: put
the fact in ``data/registry.json`` and read it through ``mnistforge.registry``.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mnistforge"

#: modules whose job is one named dataset or protocol
ALLOWED_MODULES = {
    "builders/": "the SD19 builders make particular datasets (qmnist, mnist, xnist, emnist-*)",
    "commands/build.py": "`build TARGET`: the builders' targets",
    "demo.py": "the demo pipeline runs named builds",
    "evaluators/": "the QMNIST protocol, Keysers' MNIST test error lists, the results card",
    "commands/evaluate.py": "`evaluate --protocol qmnist`",
    "cli.py": "command names (`sd19` is a command)",
    "checks/femnist.py": "FEMNIST's own checks, of LEAF's JSON layout (a folder that is FEMNIST by its form)",
}

#: single places allowed, (module, start of the code) -> why
ALLOWED_PLACES = {
    ("hub/card.py", "['mnist', 'handwriting'"): "the card's Hub tags, the same for every export",
    ("io/manifest.py", "name.startswith('emnist-')"):
        "EMNIST builds key their manifest entries by the short name (left for the resolved-source "
        "part of issue 28)",
    ("loaders/origins.py", "info.name.startswith('emnist-')"): "the same manifest keys",
}


def _names() -> tuple[set[str], tuple[str, ...]]:
    raw = json.loads((PACKAGE / "data" / "registry.json").read_text(encoding="utf-8"))
    names = set(raw["datasets"]) | {d["group"] for d in raw["datasets"].values()} | {"xnist"}
    names |= {a for d in raw["datasets"].values() for a in d.get("aliases", ())}
    prefixes = tuple(sorted({n.split("-")[0] + "-" for n in raw["datasets"] if "-" in n}))
    return names, prefixes


def _named(node, names, prefixes=()) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value in names or (bool(prefixes) and node.value in prefixes)))


def dataset_lists(source: str, names: set[str], prefixes: tuple[str, ...]) -> list[tuple[int, str]]:
    """``(line, code)`` of every per-dataset list, comparison or name-prefix test in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        hit = False
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            hit = any(_named(e, names) for e in node.elts)
        elif isinstance(node, ast.Dict):
            hit = any(_named(k, names) or _named(v, names) for k, v in zip(node.keys, node.values))
        elif isinstance(node, ast.Compare):
            hit = any(_named(c, names) for c in [node.left, *node.comparators])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("startswith", "endswith"):
            hit = any(_named(a, names, prefixes) for a in node.args)
        if hit:
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_the_scan_finds_the_lists_it_is_meant_to():
    names, prefixes = _names()
    code = ('"""Docs may say mnist, qmnist == "qmnist"."""\n'
            'STYLE = {"mnist": "mnist"}\n'
            'if name in ("mnist", "qmnist"): pass\n'
            'if name.startswith("emnist-"): pass\n'
            'title = "MNIST"\n')
    assert sorted({line for line, _ in dataset_lists(code, names, prefixes)}) == [2, 3, 4]


def test_no_per_dataset_lists_outside_the_registry():
    names, prefixes = _names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "registry.py" or any(rel.startswith(m) for m in ALLOWED_MODULES):
            continue
        for line, code in dataset_lists(path.read_text(encoding="utf-8"), names, prefixes):
            if not any(rel == m and code.startswith(c) for m, c in ALLOWED_PLACES):
                found.append(f"mnistforge/{rel}:{line}: {code[:100]}")
    assert not found, ("per-dataset lists outside the registry (put the fact in "
                       "data/registry.json):\n" + "\n".join(found))


def test_the_allowed_places_still_exist():
    """An allowance that matches nothing any more is stale: drop it."""
    names, prefixes = _names()
    for (module, start), why in ALLOWED_PLACES.items():
        hits = dataset_lists((PACKAGE / module).read_text(encoding="utf-8"), names, prefixes)
        assert any(code.startswith(start) for _, code in hits), (module, start, why)
