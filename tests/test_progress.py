"""Progress off a terminal (issue 45): a long step writes a line now and then, with its elapsed
time, at most one per ``progress.EVERY`` seconds; on a terminal tqdm draws its bar; the user's
``MNISTFORGE_PROGRESS=0`` / ``--no-progress`` silences both."""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mnistforge import progress as P
from mnistforge.io.hf.png import encode_pngs

LINE = re.compile(r"^(?P<desc>[^:]+):(?P<done> done,)? (?P<n>[\d,]+)(/(?P<total>[\d,]+))? (?P<unit>\S+), "
                  r"(?P<s>\d+) s( \(.*\))?$")


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def parsed(text: str) -> list[re.Match[str]]:
    lines = [ln for ln in text.splitlines() if ln]
    got = [LINE.match(ln) for ln in lines]
    assert all(got), lines
    return got  # type: ignore[return-value]


@pytest.mark.parametrize("steps", [[1.0] * 3, [3.0] * 40, [0.5] * 200 + [30.0], [12.0, 0.1, 9.95, 0.1]])
def test_at_most_one_line_per_interval_each_with_the_elapsed_time(steps):
    clock, out = Clock(), io.StringIO()
    bar = P.Lines(total=len(steps), desc="EMNIST convert", unit="char", clock=clock, file=out)
    said = []
    for dt in steps:
        clock.t += dt
        before = out.getvalue().count("\n")
        bar.update()
        if out.getvalue().count("\n") > before:
            said.append(clock.t)
    clock.t += 1.0
    bar.close()
    bar.close()   # closing twice says nothing more
    lines = parsed(out.getvalue())
    elapsed = sum(steps) + 1.0
    assert len(lines) <= elapsed // P.EVERY + 1
    assert all(b - a >= P.EVERY for a, b in zip(said, said[1:]))
    if elapsed < P.EVERY:
        assert lines == []   # a short step stays quiet
    else:
        assert lines, "a long step says where it is"
    for m in lines:
        assert m["desc"] == "EMNIST convert" and m["unit"] == "char" and m["total"] == str(len(steps))
        assert 0 <= int(m["s"]) <= elapsed


def test_the_end_of_a_long_step_is_said_with_its_time():
    clock, out = Clock(), io.StringIO()
    with P.Lines(total=None, desc="render", unit="char", clock=clock, file=out) as bar:
        bar.set_postfix(loss=0.5)
        for _ in range(30):
            clock.t += 1.0
            bar.update(1000)
        clock.t += 15
    last = parsed(out.getvalue())[-1]
    assert last["done"] and last["n"] == "30,000" and last["total"] is None and last["s"] == "45"
    assert "(loss=0.5)" in out.getvalue()


def test_iterating_yields_everything_and_closes():
    clock, out = Clock(), io.StringIO()
    bar = P.Lines(range(5), desc="k-NN", unit="block", clock=clock, file=out)
    assert list(bar) == [0, 1, 2, 3, 4] and bar.n == 5 and bar.closed


def test_which_bar_is_used(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())      # not a terminal
    monkeypatch.delenv("MNISTFORGE_PROGRESS", raising=False)
    assert isinstance(P.progress(total=3, desc="x"), P.Lines)
    monkeypatch.setenv("MNISTFORGE_PROGRESS", "0")          # silenced by the user
    assert not isinstance(P.progress(total=3, desc="x"), P.Lines)
    monkeypatch.delenv("MNISTFORGE_PROGRESS")
    assert P.progress(total=3, desc="x", disable=True).disable  # --no-progress (disable=True)
    monkeypatch.setenv("MNISTFORGE_PROGRESS", "1")          # forced: tqdm's bar
    assert not isinstance(P.progress(total=3, desc="x"), P.Lines)


def test_a_real_step_off_a_terminal_says_where_it_is(monkeypatch, capsys):
    """The export's PNG encoding, its stderr captured (no terminal), every update said."""
    monkeypatch.delenv("MNISTFORGE_PROGRESS", raising=False)
    monkeypatch.setattr(P, "EVERY", 0.0)
    encode_pngs(np.zeros((3000, 28, 28), np.uint8), workers=1, desc="PNG test")
    lines = parsed(capsys.readouterr().err)
    assert lines and lines[-1]["desc"] == "PNG test" and lines[-1]["total"] == "3,000"
    assert lines[-1]["done"] and lines[-1]["n"] == "3,000"


def test_a_process_whose_stderr_is_a_pipe_writes_lines(tmp_path):
    code = ("import time\nfrom mnistforge import progress as P\nP.EVERY = 0.05\n"
            "for _ in P.progress(range(4), desc='step', unit='part'):\n    time.sleep(0.06)\n")
    env = {"PYTHONPATH": str(Path(__file__).parents[1]), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120, check=True)
    lines = parsed(r.stderr)
    assert lines and all(m["desc"] == "step" and m["unit"] == "part" for m in lines)
    assert r.stdout == ""
