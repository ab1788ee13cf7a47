"""The newcomer documentation matches the code: quick start, commands, options, links."""
from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import unittest
from pathlib import Path

import pytest

from mnistforge.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # docs_sybil, as the root conftest.py imports it
# Pages whose every command line is parsed with the real CLI parser.
CHECKED = ["README.md", "docs/usage.md", "docs/index.md", "docs/comparison.md"]
# Area pages that other work adds; a link to one is accepted only while the page is absent.
PENDING_PAGES = {"docs/manitest.md", "docs/full-scale.md"}

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def code_blocks(text: str) -> list[str]:
    return FENCE.findall(text)


def command_lines(text: str) -> list[str]:
    """``mnistforge ...`` lines of the fenced blocks, comments stripped."""
    lines = []
    for block in code_blocks(text):
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("mnistforge "):
                lines.append(line.split("  #")[0].split(" # ")[0].strip())
    return lines


def test_quick_start_is_exactly_make_demo_then_make_test():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = code_blocks(section)
    assert len(blocks) == 1
    assert [l.strip() for l in blocks[0].splitlines() if l.strip()] == ["make demo", "make test"]


def test_makefile_has_the_quick_start_targets():
    make = (ROOT / "Makefile").read_text()
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", make, re.M), f"Makefile has no '{target}' target"
    test_recipe = make.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "pytest" in test_recipe and "not slow" in test_recipe


@pytest.mark.parametrize("page", CHECKED)
def test_documented_commands_parse(page):
    lines = command_lines((ROOT / page).read_text())
    parser = build_parser()
    bad = []
    for line in lines:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                args = parser.parse_args(shlex.split(line)[1:])
        except SystemExit:
            bad.append(f"{line}\n    {err.getvalue().strip().splitlines()[-1]}")
            continue
        if getattr(args, "_run", None) is None:
            bad.append(f"{line}\n    no command")
    assert not bad, f"{page}: command lines the CLI rejects:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", CHECKED + ["docs/architecture.md"])
def test_relative_links_resolve(page):
    path = ROOT / page
    missing = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target):      # http:, https:, mailto:
            continue
        dest = (path.parent / target).resolve()
        rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if not dest.exists() and rel not in PENDING_PAGES:
            missing.append(target)
    assert not missing, f"{page}: links to missing files: {missing}"


def test_index_lists_every_doc_page():
    index = (ROOT / "docs/index.md").read_text()
    linked = set(LINK.findall(index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert not pages - linked, f"docs/index.md does not link {sorted(pages - linked)}"


def test_architecture_lists_every_module():
    text = (ROOT / "docs/architecture.md").read_text()
    pkg = ROOT / "mnistforge"
    missing = []
    for py in sorted(pkg.rglob("*.py")):
        rel = py.relative_to(pkg)
        if py.name in ("__init__.py", "__main__.py") or rel.parts[0] == "commands":
            continue
        name = rel.as_posix()
        # a row may name a module by path, by its folder, or as `a.py`, `b.py` after its folder
        if (f"`{name}`" not in text and f"`{rel.parent.as_posix()}/`" not in text
                and f"`{py.name}`" not in text and f"{rel.parent.as_posix()}/{py.name}" not in text):
            missing.append(name)
    assert not missing, f"docs/architecture.md does not list {missing}"


# --- the examples run (tests/docs_sybil.py): a block changed to fail fails the suite -------------

def _run_page(page: Path):
    """Every example of ``page`` through the docs' own Sybil: (outcome, line) per example."""
    from sybil.example import SybilFailure

    import docs_sybil

    doc = docs_sybil.DOCS.parse(page)
    docs_sybil.setup(doc.namespace)
    out = []
    try:
        for example in doc.examples():
            directive = type(example.region.evaluator).__name__ == "Skipper"
            try:
                example.evaluate()
                if not directive:
                    out.append(("passed", example.line, ""))
            except unittest.SkipTest as e:
                out.append(("skipped", example.line, str(e)))
            except (SybilFailure, Exception) as e:
                out.append(("failed", example.line, str(e)))
    finally:
        docs_sybil.teardown(doc.namespace)
    return out


def _readme_copy(tmp_path, python_extra="", shell_output=None) -> Path:
    text = (ROOT / "README.md").read_text()
    if python_extra:
        head, rest = text.split("```python\n", 1)
        block, tail = rest.split("```\n", 1)
        text = head + "```python\n" + block + python_extra + "\n```\n" + tail
    if shell_output is not None:
        text += f"\n```\n$ echo hello\n{shell_output}\n```\n"
    page = tmp_path / "README.md"
    page.write_text(text)
    return page


def test_readme_examples_pass_as_written(tmp_path, mnist_reference):
    results = _run_page(_readme_copy(tmp_path, shell_output="hello"))
    assert [r for r in results if r[0] == "failed"] == []
    assert [r[0] for r in results].count("passed") == 2  # README's Python block and the added echo


def test_a_failing_python_block_in_readme_fails(tmp_path, mnist_reference):
    results = _run_page(_readme_copy(tmp_path, python_extra="assert False, 'planted'"))
    failed = [r for r in results if r[0] == "failed"]
    assert len(failed) == 1 and "planted" in failed[0][2]


def test_a_shell_block_printing_other_output_fails_with_expected_and_got(tmp_path):
    page = tmp_path / "README.md"
    page.write_text("# a page\n\n```\n$ echo hello\ngoodbye\n```\n")
    results = _run_page(page)
    failed = [r for r in results if r[0] == "failed"]
    assert len(failed) == 1
    msg = failed[0][2]
    assert "README.md, line" in msg and "$ echo hello" in msg and "goodbye" in msg and "got:" in msg


def test_examples_that_need_an_absent_shared_folder_skip_with_their_reason(tmp_path, monkeypatch):
    import docs_sybil
    monkeypatch.setattr(docs_sybil.docs_mirror, "SHARED", tmp_path / "no-shared")
    page = tmp_path / "README.md"
    page.write_text('# a page\n\n<!-- skip: next needs_shared("reference/mnist") -->\n'
                    "```\n$ ls ../shared/reference/mnist\n```\n\n"
                    "```\n$ ls data\n```\n\n"
                    "```\n$ wc -c ../shared/reference/papers/x.json\n```\n\n"
                    "```\n$ echo still runs\nstill runs\n```\n")
    results = _run_page(page)
    assert [r[0] for r in results] == ["skipped", "skipped", "skipped", "passed"], results
    assert "needs ../shared/reference/mnist, not on this machine" in results[0][2]
    assert "an earlier example of this page needed ../shared/reference/mnist" in results[1][2]
    assert "../shared/reference/papers/x.json" in results[2][2]


def test_every_skip_directive_gives_its_reason():
    bare = [f"{page.relative_to(ROOT)}:{n}" for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
            for n, line in enumerate(page.read_text().splitlines(), 1)
            if re.search(r"<!--\s*skip:\s*(next|start)\s*-->", line)]
    assert not bare, f"skip directives without a reason: {bare}"


def test_usage_info_of_a_toy_emnist_build_is_what_info_prints(tmp_path):
    """docs/usage.md shows `mnistforge info` on a toy two-dataset EMNIST build (a block the page
    cannot run): the output it shows is what the command prints now."""
    import subprocess

    from test_loaders import emnist_build

    text = (ROOT / "docs" / "usage.md").read_text()
    block = re.search(r"^\$ mnistforge info build-emnist\n(.*?)^```", text, re.S | re.M)
    assert block, "docs/usage.md no longer shows `mnistforge info build-emnist`"
    folder = tmp_path / "build-emnist"
    folder.mkdir()
    emnist_build(folder, "balanced", 50, 8)
    emnist_build(folder, "digits", 50, 8)
    done = subprocess.run([sys.executable, "-m", "mnistforge", "info", "build-emnist"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == block.group(1).strip()


def test_make_test_collects_the_docs():
    testpaths = re.search(r"^testpaths = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert testpaths and {'"README.md"', '"docs"'} <= {p.strip() for p in testpaths.group(1).split(",")}
    assert "pytest_collect_file" in (ROOT / "conftest.py").read_text()
