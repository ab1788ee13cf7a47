"""Every shell and Python block of README.md and docs/*.md runs as a test (Sybil).

Why Sybil: it is maintained, parses Markdown (fenced blocks, ``<!-- skip: next -->``
directives with conditions), runs Python blocks as code and ``>>>`` blocks as doctests in one
namespace per page, and takes a parser of our own for the shell blocks; pytest-markdown-docs and
phmdoctest run Python only. The conventions (what runs, how output is compared, ``/tmp/``,
``[exit N]``, slow and skipped blocks) are in docs/index.md, "Examples that run".

Each page runs in a scratch folder T of its own, which stands for ``/tmp`` (``/tmp/x`` in an
example is ``T/x``, ``/data/x`` is ``T/data/x``; ``T`` in an output reads ``/tmp``): the working
folder ``/tmp/work``, the cache ``MNISTFORGE_HOME=/tmp/mfhome`` (empty at the start: files are downloaded from the local
mirror of tests/docs_mirror.py), ``../shared`` beside the working folder, no progress bars,
``COLUMNS=100``, the Hugging Face Hub a closed local port. A shell block made only of plain
``mnistforge`` commands (no pipe, redirection, variable or glob) runs them in this process
(tests/cli_runner.py); any other block runs in bash.
"""
from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest
import uuid
from pathlib import Path

import pytest
from sybil import Document, Example, Region, Sybil
from sybil.evaluators.doctest import DocTestEvaluator, OutputChecker
from sybil.evaluators.python import pad
from sybil.parsers.abstract.lexers import LexerCollection
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

import cli_runner
import docs_mirror
from mnistforge.settings import current

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/*.md"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
SHELL_LANGUAGES = {"", "console", "shell", "bash", "sh"}
# seconds; a hung command fails its block instead of the whole run
BLOCK_TIMEOUT = int(os.environ.get("MNISTFORGE_DOCS_TIMEOUT", "900"))
# which module tells that an optional extra is installed
EXTRAS = {"plot": "matplotlib", "torch": "torch", "hub": "huggingface_hub", "bench": "sklearn",
          "fl": "flwr_datasets", "dask": "distributed"}
SLOW = re.compile(r"^<!--\s*slow\b.*?-->", re.M | re.S)
FENCED = re.compile(r"^```[^\n]*\n.*?^```[^\n]*$", re.M | re.S)


class Page:
    """The scratch folder of the page being run (pages run one after another)."""

    scratch: Path | None = None
    absent: list[str] = []  # files the page's examples needed and this machine lacks

    @classmethod
    def to_run(cls, text: str) -> str:
        if not cls.scratch:
            return text
        # only paths that start there (not hf-out/data/...)
        text = re.sub(r"(?<![\w.~-])/tmp/", lambda m: f"{cls.scratch}/", text)
        return re.sub(r"(?<![\w.~-])/data/", lambda m: f"{cls.scratch}/data/", text)

    @classmethod
    def to_doc(cls, text: str) -> str:
        return text.replace(str(cls.scratch), "/tmp") if cls.scratch else text


def unless_data_absent(evaluate):
    """An evaluator that, when its example failed after asking the mirror for a file this machine
    lacks (no ../shared, no Debian Fashion-MNIST), skips it and says which, instead of failing."""
    def evaluator(example: Example):
        __tracebackhide__ = True
        docs_mirror.absent_requested()
        try:
            result = evaluate(example)
        except Exception:
            _skip_if_absent(example)
            raise
        if result:
            _skip_if_absent(example)
        return result
    return evaluator


SHARED_PATH = re.compile(r"(?<![\w.~-])\.\./shared((?:/[\w.-]+)*)")


def _skip_if_absent(example: Example) -> None:
    absent = docs_mirror.absent_requested()
    if absent:
        Page.absent += absent
        raise unittest.SkipTest(f"needs {', '.join(absent)}, not on this machine (../shared/reference "
                                "or Debian's dataset-fashion-mnist absent)")
    # a failed example that names a path of ../shared this machine lacks (a clone without it)
    source = str(getattr(example.parsed, "source", example.parsed))
    missing = [f"../shared{m.group(1)}" for m in SHARED_PATH.finditer(source)
               if not (docs_mirror.SHARED / m.group(1).lstrip("/")).exists()]
    if str(docs_mirror.FASHION) in source and not docs_mirror.FASHION.is_dir():
        missing.append(f"{docs_mirror.FASHION} (apt install dataset-fashion-mnist)")
    if missing:
        Page.absent += missing
        raise unittest.SkipTest(f"needs {', '.join(dict.fromkeys(missing))}, not on this machine "
                                f"(the reference data, MNISTFORGE_SHARED={docs_mirror.SHARED}, or Debian's files)")
    if Page.absent:  # it may use what the skipped example would have made
        raise unittest.SkipTest(f"an earlier example of this page needed {', '.join(dict.fromkeys(Page.absent))}, "
                                "not on this machine")


def needs_shared(path: str = "") -> str | None:
    """For ``<!-- skip: next needs_shared("reference/mnist") -->``: a reason to skip when that path
    of ../shared (the real reference data, ``MNISTFORGE_SHARED``) is absent, as in a clone without
    it; the page's later examples that fail are then skipped too (they may use what it made)."""
    if (docs_mirror.SHARED / path).exists():
        return None
    name = f"../shared/{path}".rstrip("/")
    Page.absent.append(name)
    return f"needs {name}, not on this machine (the reference data; MNISTFORGE_SHARED={docs_mirror.SHARED})"


def needs_extra(name: str) -> str | None:
    """For ``<!-- skip: next needs_extra("plot") -->``: a reason to skip when the extra is absent."""
    if importlib.util.find_spec(EXTRAS[name]) is None:
        return f"needs the [{name}] extra ({EXTRAS[name]}), not installed: pip install 'mnistforge[{name}]'"
    return None


# --- page setup ---------------------------------------------------------------------------------

def setup(namespace: dict) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="mf-docs-"))
    work = scratch / "work"
    work.mkdir()
    shared = docs_mirror.SHARED
    if shared.is_dir():
        (scratch / "shared").symlink_to(shared.resolve(), target_is_directory=True)
    shim = scratch / "bin"
    shim.mkdir()
    (shim / "mnistforge").write_text(
        f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'tests' / 'docs_mirror.py'))} \"$@\"\n")
    (shim / "mnistforge").chmod(0o755)
    mirror = docs_mirror.start()
    env = {
        "MNISTFORGE_HOME": str(scratch / "mfhome"), "MNISTFORGE_PROGRESS": "0", "COLUMNS": "100",
        docs_mirror.ENV: mirror, "PYTHONUNBUFFERED": "1", "HF_HOME": str(scratch / "hf"),
        # the Hub is a closed local port (an upload fails here, never reaches out); datasets offline
        "HF_ENDPOINT": "http://127.0.0.1:9", "HF_DATASETS_OFFLINE": "1",
        "PATH": os.pathsep.join([str(shim), str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    unset = ("MNISTFORGE_OFFLINE", "MNISTFORGE_TRUST_FILES", "MNISTFORGE_KEEP_RAW", "MNISTFORGE_WORKERS",
             "HF_TOKEN", "HF_HUB_OFFLINE")
    namespace["__page__"] = {
        "scratch": scratch, "cwd": os.getcwd(),
        "env": {k: os.environ.get(k) for k in (*env, *unset)},
        "registry": docs_mirror.redirect(mirror),
    }
    namespace["needs_extra"] = needs_extra
    namespace["needs_shared"] = needs_shared
    os.environ.update(env)
    for k in unset:
        os.environ.pop(k, None)
    os.chdir(work)
    Page.scratch, Page.absent = scratch, []


def teardown(namespace: dict) -> None:
    page = namespace.pop("__page__")
    os.chdir(page["cwd"])
    for k, v in page["env"].items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    docs_mirror.restore(page["registry"])
    Page.scratch = None
    shutil.rmtree(page["scratch"], ignore_errors=True)


# --- Python blocks --------------------------------------------------------------------------------

class _Checker(OutputChecker):
    def check_output(self, want, got, optionflags):
        return super().check_output(want, Page.to_doc(got), optionflags)

    def output_difference(self, example, got, optionflags):
        return super().output_difference(example, Page.to_doc(got), optionflags)


class _DocTests(DocTestEvaluator):
    def __init__(self):
        super().__init__(FLAGS)
        self.runner._checker = _Checker()

    def __call__(self, example: Example) -> str:
        example.parsed.source = Page.to_run(example.parsed.source)
        return super().__call__(example)


def run_python(example: Example) -> None:
    __tracebackhide__ = True
    source = pad(Page.to_run(str(example.parsed)), example.line + example.parsed.line_offset)
    exec(compile(source, example.path, "exec", dont_inherit=True), example.namespace)
    example.namespace.pop("__builtins__", None)


class PythonParser(PythonCodeBlockParser):
    """```python blocks: code, or doctests when they start with ``>>>``."""

    def __init__(self):
        super().__init__(doctest_optionflags=FLAGS)
        self.doctest_parser.evaluator = self.doctests = _DocTests()

    def __call__(self, document: Document):
        for region in super().__call__(document):
            doctest = region.evaluator is self.doctests
            region.evaluator = unless_data_absent(self.doctests if doctest else run_python)
            yield region


# --- shell blocks ---------------------------------------------------------------------------------

class IndentedShellLexer:
    """Indented (4-space) blocks whose first line is a ``$ `` command."""

    PATTERN = re.compile(r"(?:^|\n)\n(?P<block>    \$ [^\n]*\n(?:(?:    [^\n]*)?\n)*?)(?=\n|\S|\Z)")

    def __call__(self, document: Document):
        for m in self.PATTERN.finditer(document.text):
            text = m.group("block")
            source = "\n".join(line[4:] for line in text.splitlines()) + "\n"
            yield Region(m.start("block"), m.end("block"), source, SHELL)


def parse_shell(source: str) -> list[tuple[int, str, str | None, int]]:
    """(line offset, command, expected output or None, expected exit status) per command."""
    lines = source.splitlines()
    prompted = any(line.startswith("$ ") for line in lines)
    out: list[tuple[int, str, str | None, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if prompted and not line.startswith("$ ") or not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        start, cmd = i, line[2:] if prompted else line
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd += "\n" + lines[i]
        i += 1
        want = None
        if prompted:
            j = i
            while j < len(lines) and not lines[j].startswith("$ "):
                j += 1
            want = "\n".join(lines[i:j]).strip("\n")
            i = j
        code = 0
        m = re.search(r"(?:^|\n)\[exit (\d+)\]$", want or "")
        if m:
            code, want = int(m.group(1)), want[: m.start()]  # type: ignore[index]
        out.append((start, cmd, want or None, code))
    return out


def run_shell(example: Example) -> str | None:
    """Run a shell block's commands in one bash, in order; compare exit status and output."""
    commands = parse_shell(str(example.parsed))
    argvs = [_plain_mnistforge(Page.to_run(cmd)) for _, cmd, _, _ in commands]
    if all(argvs) and not cli_runner.FRESH:   # no shell at work: each command in this process
        return _compare(example, commands, _run_here(example, argvs, commands))
    mark = f"__mfdoc_{uuid.uuid4().hex}__"
    script = "".join(f"{Page.to_run(cmd)}\n__rc=$?; printf '\\n{mark} %d\\n' $__rc; "
                     f"[ $__rc -eq {code} ] || exit 0\n" for _, cmd, _, code in commands)
    try:
        done = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True, timeout=BLOCK_TIMEOUT)
        output = done.stdout
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        output += f"\n[timed out after {BLOCK_TIMEOUT} s]"
    return _compare(example, commands, re.split(rf"\n{mark} (\d+)\n", output))


def _plain_mnistforge(cmd: str) -> list[str] | None:
    """``mnistforge``'s arguments when ``cmd`` needs no shell (no pipe, redirection, variable,
    glob, ``~`` or continuation); None otherwise."""
    if re.search(r"[|><;&`$()*?~\[\]{}\\\n]", cmd.split("#", 1)[0]):
        return None
    words = shlex.split(cmd, comments=True)
    return words[1:] if words[:1] == ["mnistforge"] else None


def _run_here(example: Example, argvs: list[list[str]], commands) -> list[str]:
    """What run_shell's bash gives (output, exit status, output, ...), run in this process
    (tests/cli_runner.py) with the registry as the shim's ``docs_mirror.main`` sets it."""
    parts: list[str] = []
    for argv, (_, _, _, code) in zip(argvs, commands):
        real_urls = current().offline or "--offline" in argv   # as docs_mirror.main decides
        if real_urls:
            docs_mirror.restore(example.namespace["__page__"]["registry"])
        try:
            done = cli_runner.run(argv, merged=True, timeout=BLOCK_TIMEOUT)
        finally:
            if real_urls:
                docs_mirror.redirect(os.environ[docs_mirror.ENV])
        parts += [done.stdout, str(done.returncode)]
        if done.returncode != code:
            break
    return parts + [""]


def _compare(example: Example, commands, parts: list[str]) -> str | None:
    checker = OutputChecker()
    for n, (offset, cmd, want, code) in enumerate(commands):
        where = f"{_rel(example.path)}, line {example.line + offset}: $ {cmd}"
        if 2 * n + 1 >= len(parts):
            return f"{where}\n  did not finish; output:\n{_indent(Page.to_doc(parts[-1]))}"
        got, rc = Page.to_doc(parts[2 * n]), int(parts[2 * n + 1])
        if rc != code:
            return f"{where}\n  exit status {rc}, expected {code}; output:\n{_indent(got)}"
        if want is not None and not checker.check_output(want + "\n", got.strip("\n") + "\n", FLAGS):
            return f"{where}\n  expected:\n{_indent(want)}\n  got:\n{_indent(got)}"
    return None


SHELL = unless_data_absent(run_shell)


def _rel(path: str) -> str:
    p = Path(path)
    return p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else path


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.strip("\n").splitlines()) or "    (nothing)"


class ShellParser:
    """Fenced blocks without a language or in console/shell/bash/sh, and indented ``$`` blocks."""

    def __init__(self):
        self.lexers = LexerCollection([
            RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<language>[\w-]*)[ \t]*$\n", re.M),
                                    mapping={"language": "language", "source": "source"}),
            IndentedShellLexer(),
        ])

    def __call__(self, document: Document):
        for region in self.lexers(document):
            if isinstance(region.parsed, str) and region.evaluator is SHELL:
                yield region
            elif region.lexemes.get("language") in SHELL_LANGUAGES:
                region.parsed = region.lexemes["source"]
                region.evaluator = SHELL
                yield region


DOCS = Sybil(parsers=[SkipParser(), PythonParser(), ShellParser()], path=str(ROOT), patterns=PAGES,
             setup=setup, teardown=teardown)


# --- slow blocks ----------------------------------------------------------------------------------

def slow_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each block preceded by a ``<!-- slow: reason -->`` comment."""
    spans = []
    for m in SLOW.finditer(text):
        block = FENCED.search(text, m.end())
        indented = IndentedShellLexer.PATTERN.search(text, m.end())
        if indented and (block is None or indented.start() < block.start()):
            spans.append((m.end(), indented.end()))
        elif block:
            spans.append((m.end(), block.end()))
    return spans


def mark_slow(items, markexpr: str) -> None:
    """Blocks after ``<!-- slow: ... -->`` get the ``slow`` mark (and a skip directive right before
    one, which would otherwise apply to the next block). In a slow run (``-m slow``) every block of
    a page that has a slow block is marked, so the page runs whole, in order."""
    slow_run = "slow" in markexpr and "not slow" not in markexpr
    by_page: dict = {}
    for item in items:
        example = getattr(item, "example", None)
        if isinstance(example, Example):
            by_page.setdefault(example.document, []).append(item)
    for document, page_items in by_page.items():
        spans = slow_spans(document.text)
        if not spans:
            continue
        flags = [any(a <= it.example.start < b for a, b in spans) for it in page_items]
        for k in range(len(page_items) - 2, -1, -1):
            if page_items[k].example.region.evaluator.__class__.__name__ == "Skipper":
                flags[k] = flags[k] or flags[k + 1]
        for it, slow in zip(page_items, flags):
            if slow or slow_run:
                it.add_marker(pytest.mark.slow)
