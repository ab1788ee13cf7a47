"""The demo: the whole pipeline on a tiny synthetic SD19, end to end."""
from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pytest
from PIL import Image

from mnistforge.cli import main


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    import os
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # standard output and error are not terminals (as in `mnistforge demo > log 2>&1`): no bars,
    # a line per stage instead; what it printed is kept beside the demo folder
    console = io.StringIO()
    with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
        rc = main(["demo", "--out", str(out), "--scale", "0.004", "--seed", "1"])
    (out.parent / "console.txt").write_text(console.getvalue())
    return rc, out


def test_demo_builds_verifies_exports_and_reports(demo_run):
    rc, out = demo_run
    summary = json.loads((out / "summary.json").read_text())
    names = [d["dataset"] for d in summary["datasets"]]
    assert names == ["qmnist", "mnist"] + [f"emnist-{n}" for n in
                                           ("byclass", "bymerge", "balanced", "letters",
                                            "digits", "mnist")]
    by = {d["dataset"]: d for d in summary["datasets"]}
    for d in summary["datasets"]:
        assert d["splits"]["train"] > 0 and d["splits"]["test"] > 0, d
    # MNIST rebuilt = QMNIST train + the first part of QMNIST test.
    assert by["mnist"]["splits"]["train"] == by["qmnist"]["splits"]["train"]
    assert by["mnist"]["splits"]["test"] <= by["qmnist"]["splits"]["test"]
    # byclass and bymerge hold every synthetic character once; balanced sets are balanced.
    synth = json.loads((out / "sd19" / "synthetic-sd19.json").read_text())
    assert sum(by["emnist-byclass"]["splits"].values()) == synth["characters"]
    assert by["emnist-byclass"]["splits"] == by["emnist-bymerge"]["splits"]
    assert by["emnist-balanced"]["splits"]["train"] % 47 == 0
    assert by["emnist-letters"]["splits"]["test"] % 26 == 0
    assert by["emnist-digits"]["splits"]["test"] % 10 == 0
    statuses = {d["dataset"]: d["verify"] for d in summary["datasets"]}
    assert set(statuses.values()) == {"pass"}, statuses
    assert rc == 0


STAGES = ("synthesise SD19", "build qmnist", "build mnist", "build emnist (six datasets)", "verify",
          "sample grids", "export Hugging Face repository", "reload with datasets.load_dataset",
          "reference classifiers + significance")


def test_demo_off_a_terminal_prints_each_stage_as_it_starts_and_ends(demo_run):
    rc, out = demo_run
    lines = (out.parent / "console.txt").read_text().splitlines()
    assert lines[0].startswith("mnistforge demo: synthetic SD19 at scale 0.004")
    steps = [line for line in lines if line.startswith("demo: ")]
    expected = []
    for stage in STAGES:
        expected += [f"demo: {stage} ...", f"demo: {stage} done in "]
    assert len(steps) == len(expected), steps
    for got, want in zip(steps, expected):
        assert got.startswith(want), (got, want)
        if "done in" in want:
            assert re.match(re.escape(want) + r"\d+\.\d s", got), got
    # the step lines come before the summary, none after it
    assert lines.index(steps[-1]) < len(lines) - 1
    assert not [line for line in lines if "it/s]" in line or "\r" in line]  # no progress bars


def test_demo_hf_folder_reloads(demo_run):
    _, out = demo_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["hf_reload"]["equal"] is True
    assert summary["hf_reload"]["rows"] > 0
    import datasets
    ds = datasets.load_dataset(str(out / "hf"), "emnist-balanced", split="test",
                               cache_dir=str(out / ".cache-test"))
    from mnistforge.loaders import load
    src = load("emnist-balanced", "test", root=out / "builds" / "emnist")
    assert len(ds) == len(src)
    assert np.array_equal(np.stack([np.asarray(i) for i in ds["image"]]), np.asarray(src.images))


def test_demo_report_and_pictures(demo_run):
    _, out = demo_run
    report = (out / "report.md").read_text()
    summary = json.loads((out / "summary.json").read_text())
    # every dataset, EMNIST's six included, carries the synthetic mark (issue 27)
    assert [d["dataset"] for d in summary["datasets"] if not d["synthetic"]] == []
    assert f"All {len(summary['datasets'])} datasets are marked synthetic" in report
    for d in summary["datasets"]:
        pic = out / d["picture"]
        assert d["picture"] in report
        with Image.open(pic) as im:
            im.verify()
        with Image.open(pic) as im:
            assert im.size[0] > 100 and im.size[1] > 100
    # a rebuilt MNIST's train set is QMNIST's: their grids show different digits, not one picture
    # under two titles
    split = {d["dataset"]: d["picture_split"] for d in summary["datasets"]}
    assert split["mnist"] == "train" and split["qmnist"] in ("test50k", "test")
    pics = {d["dataset"]: np.asarray(Image.open(out / d["picture"])) for d in summary["datasets"]}
    q, m = pics["qmnist"], pics["mnist"]
    assert q.shape != m.shape or not np.array_equal(q[30:], m[30:])  # below the title
    ev = summary["evaluation"]
    assert [s["name"] for s in ev["systems"]] == ["linear", "knn:k=1"]
    for s in ev["systems"]:
        assert 0 <= s["errors"] <= s["n"]
    pair = ev["pairs"][0]
    assert 0.0 <= pair["poi_a_better"] <= 1.0
    assert pair["n12"] - pair["n21"] == pair["errors_a"] - pair["errors_b"]


def test_demo_refuses_existing_folder(tmp_path):
    (tmp_path / "x").mkdir()
    assert main(["demo", "--out", str(tmp_path / "x"), "--scale", "0.002"]) == 2  # usage error
