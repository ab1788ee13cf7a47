"""Issue 27: a build from the synthetic SD19 says so everywhere (manifest, ``ds.synthetic``, every
config of its dataset card, ``show``, ``info``), because the source's own ``synthetic-sd19.json``
says so -- not because its path holds "synth" -- and only what is true is said (caveats from
the build's counts; no label-error warnings for a test set that is not the study's)."""
from __future__ import annotations

import json
import logging
import shutil

import pytest
from sd19_helpers import make_tiny_sd19

from mnistforge.sd19.synth import DESCRIPTION

EMNIST = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")


def _run(*argv) -> int:
    from mnistforge.cli import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A synthetic replica in a folder whose path says nothing of "synth"."""
    base = tmp_path_factory.mktemp("plain")
    src = make_tiny_sd19(base, scale=0.002).rename(base / "source")
    assert "synth" not in str(src).lower()
    assert (src / DESCRIPTION).is_file()
    return src


@pytest.fixture(scope="module")
def emnist_build(plain, tmp_path_factory):
    out = tmp_path_factory.mktemp("emnist-out") / "emnist"
    assert _run("build", "emnist", "--sd19", plain, "--out", out, "--workers", "1") == 0
    return out


def test_emnist_from_a_replica_in_a_plain_folder_is_marked_everywhere(emnist_build, tmp_path,
                                                                      capsys):
    import mnistforge
    from mnistforge.hub.card import SYNTHETIC_NOTE
    from mnistforge.io.hf.repo import read_card

    m = json.loads((emnist_build / "manifest.json").read_text())
    assert m["synthetic"] is True
    assert "sd19_synthetic_description_sha256" in m["inputs"]
    assert any("SYNTHETIC SD19" in n for n in m["notes"])
    for name in EMNIST:
        assert mnistforge.load(f"emnist-{name}", "test", root=emnist_build).synthetic, name
    repo = tmp_path / "repo"
    assert _run("export", "hf", emnist_build, "--out", repo, "--workers", "1", "--no-check") == 0
    header = read_card(repo)
    assert sorted(c["config_name"] for c in header["configs"]) == sorted(f"emnist-{n}" for n in EMNIST)
    assert "synthetic" in header["tags"]
    text = (repo / "README.md").read_text()
    for name in EMNIST:   # the first lines of every config say it
        section = text.split(f"## Config `emnist-{name}`\n", 1)[1]
        assert section.lstrip("\n").startswith(SYNTHETIC_NOTE), name
    for name in EMNIST:   # and a split loaded back from the export
        assert mnistforge.load(f"emnist-{name}", "test", root=repo).synthetic, name
    capsys.readouterr()
    assert _run("info", emnist_build) == 0
    assert "SYNTHETIC" in capsys.readouterr().out
    assert _run("show", f"{emnist_build}:emnist-letters:test", "--out", tmp_path / "g.png",
                "-n", "8") == 0
    assert "(synthetic SD19)" in capsys.readouterr().out   # the grid's drawn title


def test_a_path_saying_synthetic_marks_nothing_and_the_mark_changes_only_the_manifest(
        plain, tmp_path):
    import mnistforge

    real_like = tmp_path / "synthetic-looking"
    shutil.copytree(plain, real_like, ignore=shutil.ignore_patterns(DESCRIPTION, ".mnistforge"))
    a, b = tmp_path / "a", tmp_path / "b"
    # judged against NIST's counts, the tiny source is short: consent needed, listed
    assert _run("build", "mnist", "--sd19", real_like, "--out", a, "--workers", "1",
                "--allow-incomplete") == 0
    assert _run("build", "mnist", "--sd19", plain, "--out", b, "--workers", "1") == 0
    ma = json.loads((a / "manifest.json").read_text())
    mb = json.loads((b / "manifest.json").read_text())
    assert ma["synthetic"] is False and mb["synthetic"] is True
    assert not mnistforge.load("mnist", "test", root=a).synthetic
    assert mnistforge.load("mnist", "test", root=b).synthetic
    assert ma["outputs"] == mb["outputs"]      # the same files, byte for byte


def test_qmnist_card_caveats_describe_the_build(plain, tmp_path):
    from mnistforge.hub.card import SYNTHETIC_NOTE

    q, repo = tmp_path / "q", tmp_path / "repo"
    assert _run("build", "qmnist", "--sd19", plain, "--out", q, "--workers", "1") == 0
    counts = json.loads((q / "manifest.json").read_text())["datasets"]["qmnist"]
    assert _run("export", "hf", q, "--out", repo, "--workers", "1", "--no-check") == 0
    text = (repo / "README.md").read_text()
    caveats = text.split("### Caveats", 1)[1].split("##", 1)[0]
    assert "MNIST's test set (`test10k`)" not in caveats
    assert (f"In this build the first {counts['test10k']:,} test images (`test10k`) and the other "
            f"{counts['test50k']:,} (`test50k`) are not MNIST's test set: it was built from a "
            "synthetic SD19.") in caveats
    assert "402,953" not in caveats
    assert text.split("## Config `qmnist`\n", 1)[1].lstrip("\n").startswith(SYNTHETIC_NOTE)
    # re-exporting the export keeps the mark
    again = tmp_path / "again"
    assert _run("export", "hf", f"{repo}:qmnist", "--out", again, "--no-check") == 0
    assert (again / "README.md").read_text().split("## Config `qmnist`\n", 1)[1].lstrip(
        "\n").startswith(SYNTHETIC_NOTE)


def test_evaluate_on_a_synthetic_build_says_once_that_the_test_set_is_not_the_studys(
        plain, tmp_path, cache, reference_dir, capsys, caplog):
    from cache_helpers import put

    put(cache, "label-errors", reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json",
        "mnist_mturk.json")
    q = tmp_path / "q"
    assert _run("build", "qmnist", "--sd19", plain, "--out", q, "--workers", "1") == 0
    capsys.readouterr()
    with caplog.at_level(logging.WARNING):
        assert _run("evaluate", "linear", "--train", q, "--test", f"{q}:test10k") == 0
    out = capsys.readouterr()
    said = (out.out + out.err).count("known label problems")
    assert said == 1, out
    assert "the test set is not the study's" in out.out and "synthetic SD19" in out.out
    assert not [r for r in caplog.records if "label" in r.getMessage()]


def test_xnist_manifest_is_marked(plain, tmp_path):
    x = tmp_path / "x"
    assert _run("build", "xnist", "--sd19", plain, "--out", x, "--workers", "1") == 0
    assert json.loads((x / "manifest.json").read_text())["synthetic"] is True


def test_a_folder_counts_only_when_its_labels_identify_the_study_test_set(cache, reference_dir,
                                                                         tmp_path):
    import numpy as np

    from cache_helpers import put
    from mnistforge.evaluators.label_issues import known_problems
    from mnistforge.io.idx import read_idx

    put(cache, "label-errors", reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json",
        "mnist_mturk.json")
    folder = tmp_path / "mnist"
    folder.mkdir()
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(reference_dir / "mnist" / f, folder / f)
    labels = np.asarray(read_idx(folder / "t10k-labels-idx1-ubyte.gz"), np.int64)
    target = f"{folder}:mnist:test"
    found = known_problems(target, 10000, labels)
    assert found is not None and int(found.label_issue.sum()) == 15
    why: list = []
    assert known_problems(target, 10000, None, why=why) is None
    assert "not at hand to identify it" in why[0]
    why = []
    assert known_problems(target, 10000, (labels + 1) % 10, why=why) is None
    assert why[0].startswith("the test set is not the study's")
