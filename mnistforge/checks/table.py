"""The checks ``verify`` runs, as a table: one :class:`Check` row per check.

A row says which result it adds (``name``, with ``{split}`` / ``{pair}`` filled in), what it runs on
(``scope``: once per target, per split to load, per loaded split, per train/test pair), for which kinds of
target (``kinds``) and when else (``when``), what it costs, and the option that turns it off.
:func:`run_checks` walks the rows in order (the report's order); :func:`checks_markdown` writes the table of
``docs/verify.md`` from the same rows (``tools/verify_checks_doc.py`` rewrites it).
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
import typing
from typing import Any, Literal, Protocol

from .result import CheckResult, run_check

#: once per target, per split to load (``wanted``), per loaded split, per train/test pair
Scope = Literal["target", "wanted", "split", "pair"]
#: build folder (with manifest), folder of idx files, official files from the cache, Hugging
#: Face export, arrays already loaded (a ``DatasetSplit``, or a third-party copy once identified)
Kind = Literal["build", "folder", "cache", "hf", "arrays", "copy"]
KINDS: tuple[Kind, ...] = ("build", "folder", "cache", "hf", "arrays", "copy")
KIND_TEXT: dict[Kind, str] = {"build": "a build folder (with `manifest.json`)", "folder": "a folder of idx files",
                              "cache": "official files from the cache (`NAME`)", "hf": "a Hugging Face export",
                              "arrays": "loaded splits (`DatasetSplit`)",
                              "copy": "a third-party copy (identified first, then checked as arrays)"}
ALL: frozenset[Kind] = frozenset(KINDS)


def kinds(*names: Kind) -> frozenset[Kind]:
    """The kinds of target a row applies to."""
    return frozenset(names)


#: what a check costs, as a class (for the docs)
Cost = Literal["metadata only", "reads files", "inflates", "O(n) arrays", "O(n) hashes",
               "O(n^2) near-duplicates", "loads more data"]
COSTS: tuple[Cost, ...] = typing.get_args(Cost)

#: the result name's placeholders as the docs show them
_PLACEHOLDERS = {"split": "split", "pair": "train-test"}
BEGIN = "<!-- begin: checks table (generated from mnistforge/checks/rows.CHECKS by " \
        "tools/verify_checks_doc.py; edit the rows, not this table) -->"
END = "<!-- end: checks table -->"


@dataclasses.dataclass(frozen=True)
class Check:
    """One check of ``verify``: what it adds, when it applies, what it runs and costs."""

    name: str                       #: result name, ``{split}`` / ``{pair}`` filled in
    scope: Scope
    kinds: frozenset[Kind]          #: the kinds of target it applies to
    run: Callable[[Any, Any], Any]  #: ``run(ctx, item)`` -> a result (a list when ``many``)
    cost: Cost
    passes: str                     #: one line: what a pass means
    finds: str                      #: one line: what fails or warns
    when: Callable[[Any, Any], bool] = lambda ctx, item: True  #: applies to this target/split/pair
    when_text: str = ""             #: ``when`` in words, for the docs
    option: str = ""                #: the option that turns it off (or on)
    many: bool = False              #: adds results of its own names (run unwrapped)
    function: Callable[..., Any] | None = None  #: the check ``run`` calls, when ``run`` adapts

    @property
    def function_name(self) -> str:
        """``module.function`` of the check (``function``, else ``run``), for the docs."""
        f = self.function or self.run
        module = str(getattr(f, "__module__", "")).rsplit(".", 1)[-1]
        return f"{module}.{getattr(f, '__name__', '?')}"

    def label(self, fields: dict[str, str]) -> str:
        return self.name.format(**fields)


class Subject(Protocol):
    """What :func:`run_checks` needs of a target: its kind and the items of each scope."""

    kind: Kind

    def items(self, scope: Scope) -> Iterable[tuple[dict[str, str], Any]]:
        """(placeholders for the result name, item handed to ``run``) per split, pair..."""
        ...


def run_checks(checks: Sequence[Check], ctx: Subject, add: Callable[[CheckResult], None]) -> None:
    """Run the rows that apply, in table order; consecutive rows of one scope run item by item
    (every per-split row on ``train``, then on ``test``)."""
    for scope, group in itertools.groupby(checks, key=lambda c: c.scope):
        rows = [c for c in group if ctx.kind in c.kinds]
        if not rows:
            continue
        for fields, item in ctx.items(scope):
            for c in rows:
                if not c.when(ctx, item):
                    continue
                if c.many:
                    for r in c.run(ctx, item):
                        add(r)
                else:
                    add(run_check(c.label(fields), c.run, ctx, item))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _kinds(kinds: frozenset[Kind]) -> str:
    return "every target" if kinds == ALL else ", ".join(k for k in KINDS if k in kinds)


def checks_markdown(checks: Sequence[Check]) -> str:
    """The checks table of ``docs/verify.md`` (between :data:`BEGIN` and :data:`END`)."""
    legend = "; ".join(f"`{k}`: {KIND_TEXT[k]}" for k in KINDS)
    lines = [BEGIN, "", f"Targets: {legend}. Cost classes: {', '.join(COSTS)}.", "",
             "| check | function | applies to | cost | passes when | fails / warns when |",
             "|---|---|---|---|---|---|"]
    for c in checks:
        applies = _kinds(c.kinds) + (f"; {c.when_text}" if c.when_text else "") + (f"; {c.option}" if c.option else "")
        lines.append(f"| `{c.label(_PLACEHOLDERS)}` | `{c.function_name}` | {_cell(applies)} | "
                     f"{c.cost} | "
                     f"{_cell(c.passes)} | {_cell(c.finds)} |")
    return "\n".join(lines + ["", END])


def doc_section(text: str) -> str:
    """The generated section of a page (markers included); ``""`` when it has none."""
    start, stop = text.find(BEGIN), text.find(END)
    return text[start:stop + len(END)] if 0 <= start < stop else ""


def replace_section(text: str, rendered: str) -> str:
    """``text`` with its generated section replaced by ``rendered``."""
    old = doc_section(text)
    if not old:
        raise ValueError(f"no section between {BEGIN!r} and {END!r}")
    return text.replace(old, rendered, 1)
