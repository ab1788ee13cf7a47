"""The table of checks (``checks/table.py``, rows in ``checks/rows.CHECKS``): the runner, the
rows against what ``verify`` reports, and docs/verify.md's generated section."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mnistforge.checks.result import FAIL, PASS, CheckResult
from mnistforge.checks.rows import CHECKS
from mnistforge.checks.table import (ALL, BEGIN, END, Check, doc_section, checks_markdown,
                                     replace_section, run_checks)

ROOT = Path(__file__).resolve().parents[1]


class _Target:
    """A stand-in for verify's context: a kind and two splits."""

    def __init__(self, kind="folder"):
        self.kind = kind
        self.seen = []

    def items(self, scope):
        if scope == "split":
            return [({"split": s}, s) for s in ("train", "test")]
        if scope == "pair":
            return [({"pair": "train-test"}, ("train", "test"))]
        return [({}, None)]


def _ok(ctx, item):
    ctx.seen.append(item)
    return CheckResult("anything", PASS)


def _boom(ctx, item):
    raise ValueError("broken")


def test_rows_run_in_order_split_by_split_with_kinds_when_and_errors():
    rows = [Check("first", "target", ALL, _ok, "metadata only", "p", "f"),
            Check("a[{split}]", "split", ALL, _ok, "O(n) arrays", "p", "f"),
            Check("b[{split}]", "split", ALL, _boom, "O(n) arrays", "p", "f"),
            Check("c[{split}]", "split", ALL, _ok, "O(n) arrays", "p", "f",
                  when=lambda ctx, s: s == "test"),
            Check("build only", "target", frozenset({"build"}), _ok, "reads files", "p", "f"),
            Check("d.{pair}", "pair", ALL, _ok, "O(n) hashes", "p", "f"),
            Check("many", "target", ALL, lambda ctx, _: [CheckResult("x", PASS),
                                                         CheckResult("y", FAIL)],
                  "O(n) arrays", "p", "f", many=True)]
    out: list[CheckResult] = []
    run_checks(rows, _Target(), out.append)
    assert [r.name for r in out] == ["first", "a[train]", "b[train]", "a[test]", "b[test]",
                                     "c[test]", "d.train-test", "x", "y"]
    # a check that raises is a failure named after its row, the others still run
    assert out[2].status == FAIL and "ValueError: broken" in out[2].message


def _pattern(row: Check) -> re.Pattern:
    parts = [re.escape(p.strip()).replace(r"\{split\}", r"[^\]]+").replace(r"\{pair\}", r"\w+-\w+")
             .replace(r"\*", ".+") for p in row.name.split(",")]
    return re.compile("|".join(parts))


def _rows_for(name: str, kind: str) -> list[Check]:
    return [c for c in CHECKS if _pattern(c).fullmatch(name) and kind in c.kinds]


def test_every_result_of_a_build_a_folder_and_arrays_has_its_row(tmp_path, mnist_reference):
    from test_checks_verify import make_qmnist_build

    import mnistforge
    from mnistforge.checks import verify

    build = make_qmnist_build(tmp_path / "build", leak=True)
    test = mnistforge.load("mnist", "test", root=mnist_reference)
    reports = {"build": verify(build), "folder": verify(mnist_reference),
               "arrays": verify({"train": test, "test": test}, reference=test, near=False)}
    for kind, rep in reports.items():
        assert rep.results, kind
        for r in rep.results:
            assert _rows_for(r.name, kind), f"{kind}: {r.name} has no row in rows.CHECKS"
    names = [r.name for r in reports["build"].results]
    assert "hashes.manifest" in names and "hashes.registry" not in names   # kinds decide
    assert "files[train]" in [r.name for r in reports["folder"].results]  # no train images
    assert not [n for n in [r.name for r in reports["arrays"].results] if n.startswith("duplicates.near")]


def test_rows_are_well_formed():
    for c in CHECKS:
        assert c.kinds and c.kinds <= ALL and c.passes and c.finds, c.name
        assert c.scope in ("target", "wanted", "split", "pair")
        # a row of one result names it by its scope's placeholder (target rows have none)
        if not c.many:
            want = {"split": "{split}", "pair": "{pair}"}.get(c.scope)
            assert (want in c.name) if want else "{" not in c.name, c.name


def test_docs_verify_md_section_is_the_rendered_table():
    page = ROOT / "docs" / "verify.md"
    rendered = checks_markdown(CHECKS)
    assert doc_section(page.read_text()) == rendered, (
        "docs/verify.md's table of checks differs from mnistforge/checks/rows.CHECKS: "
        "regenerate it with `.venv/bin/python tools/verify_checks_doc.py`")
    for c in CHECKS:   # every row is in it, by its result name
        assert f"| `{c.label({'split': 'split', 'pair': 'train-test'})}` |" in rendered


def test_replace_section_changes_only_the_section():
    text = f"before\n{BEGIN}\nold\n{END}\nafter\n"
    assert replace_section(text, f"{BEGIN}\nnew\n{END}") == f"before\n{BEGIN}\nnew\n{END}\nafter\n"
    with pytest.raises(ValueError, match="no section"):
        replace_section("no markers here", "x")
