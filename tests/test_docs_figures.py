"""Every speed figure in docs/*.md names the benchmark that measured it (issue 44).

The convention (``benchmarks/README.md``): a section of a page (the text between two headings)
that quotes speed figures holds a line

    Measured by `python benchmarks/bench_verify.py --only fashion` on 2026-12-04, load 1.2.

naming the command (a file in ``benchmarks/`` that prints the ratio, the date and the load
average through ``benchmarks/stamp.py``), the date (``YYYY-MM-DD``) and the 1-minute load average
(a range ``2.0-2.6`` gives its largest value).  A load above 2 is marked ``(loaded)``: ``load 3.4
(loaded)``.  A section may hold several such lines (one per table or benchmark).

What counts as a speed figure (a pragmatic detector, outside fenced code blocks, which hold
example outputs and printed benchmark runs): a ratio ``1.15x`` / ``~200x`` / ``2,600×`` (digits
then ``x``, not ``28x28`` nor ``4 x 4``) on a line that also speaks of speed (CPU, wall, time,
faster, slower, floor, took, seconds...), or a duration ``1.14 s`` / ``12 ms`` / ``2.0 minutes``
on such a line (a table row: on the row or its header), or a rate (``9,680 img/s``) on any
line; not an interval, a limit or a bound (``every 10 s``, ``runs 10 s or more``,
``more than about 10 s``, ``within 3x``), nor the docs runner's ``<!-- slow: ... -->`` marks.
Data facts (counts, sizes, shard sizes, accuracies) have no such unit and no such words.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))

RATIO = re.compile(r"(?<!within )(?<!under )(?<![\w.])~?\d+(?:\.\d+)?[x×](?![\w\d])")
DURATION = re.compile(r"(?<!runs )(?<!every )(?<!per )(?<!than about )(?<![\w.])"
                      r"\d+(?:[.,]\d+)?(?:-\d+(?:\.\d+)?)? ?(?:ms|µs|s|min|minutes|seconds)\b")
RATE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:img|images|characters|char|nodes)/s\b")
SPEED_WORDS = re.compile(r"\b(CPU|wall|faster|slower|speed|time|times|timed|took|takes|seconds|ms|floor|"
                         r"per second|images/s|throughput|benchmark)\b", re.I)
MEASURED = re.compile(r"Measured by `python (benchmarks/[\w./-]+\.py)[^`]*`(?: \([^)]*\))? on (\d{4}-\d{2}-\d{2}), "
                      r"load (\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?( \(loaded\))?")


def speed_figures(line: str, header: str = "") -> list[str]:
    """The speed figures of one line of prose or table row (``header``: its table's first row).

    >>> speed_figures("the search takes 1.15x its products' CPU; 28x28 images, 4 x 4 pooling")
    ['1.15x']
    >>> speed_figures("60,000 images in 10 shards of 5.2 MB"), speed_figures("verify took 1.14 s")
    ([], ['1.14 s'])
    >>> speed_figures("decode alone | 9,680 img/s")
    ['9,680 img/s']
    """
    if line.lstrip().startswith("<!--"):
        return []
    spoken = SPEED_WORDS.search(line) or SPEED_WORDS.search(header)
    return RATE.findall(line) + (RATIO.findall(line) + DURATION.findall(line) if spoken else [])


def figures(lines: list[str]) -> list[str]:
    """The speed figures of a section's lines; a table row is read with its header row."""
    out, header = [], ""
    for line in lines:
        header = (header or line) if line.startswith("|") else ""
        out += speed_figures(line, header if header != line else "")
    return out


def sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, prose lines) of each section, fenced code blocks left out."""
    out: list[tuple[str, list[str]]] = [("(top)", [])]
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            continue
        elif line.startswith("#"):
            out.append((line.strip("# "), []))
        else:
            out[-1][1].append(line)
    return out


def _check(page: Path) -> list[str]:
    problems = []
    for heading, lines in sections(page.read_text(encoding="utf-8")):
        found = figures(lines)
        stamps = [m for line in lines for m in MEASURED.finditer(line)]
        if found and not stamps:
            problems.append(f"{page.name} § {heading}: {', '.join(found[:4])} without a 'Measured by' line")
        for m in stamps:
            if not (ROOT / m.group(1)).is_file():
                problems.append(f"{page.name} § {heading}: {m.group(1)} does not exist")
            load = float(m.group(4) or m.group(3))
            if (load > 2) != bool(m.group(5)):
                problems.append(f"{page.name} § {heading}: load {load} must {'' if load > 2 else 'not '}"
                                "be marked (loaded)")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_speed_figures_name_their_benchmark(page: Path) -> None:
    assert _check(page) == []


def test_the_detector_tells_figures_from_facts() -> None:
    page = "# A\nThe build took 12 ms, 1.5x faster.\n# B\n28x28 images, 70,000 of them.\n```\nverify: 3.1 s\n```\n"
    page += "# C\n| step | time |\n|---|---|\n| inflate | 0.2 s |\n\n| split | images |\n|---|---|\n| test | 10 |\n"
    got = {h: figures(lines) for h, lines in sections(page)}
    assert got == {"(top)": [], "A": ["1.5x", "12 ms"], "B": [], "C": ["0.2 s"]}
    line = "Measured by `python benchmarks/bench_verify.py --only fashion` on 2026-12-04, load 3.4 (loaded)."
    m = MEASURED.search(line)
    assert m is not None and m.group(1) == "benchmarks/bench_verify.py" and m.group(5)
    assert MEASURED.search(line.replace("on 2026-12-04", "recently")) is None


def test_every_benchmark_a_doc_names_prints_date_and_load() -> None:
    named = {m.group(1) for p in PAGES for m in MEASURED.finditer(p.read_text(encoding="utf-8"))}
    for rel in sorted(named):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert "stamp()" in text or ("getloadavg" in text and "date" in text), f"{rel} prints no date/load"
