"""``mnistforge partition`` and ``verify --partitions`` as a hostile user drives them: absurd partition
counts and alphas, an output folder that is the input, manifests that are not JSON, of another
version, missing fields, a FIFO in the manifest's place: each refused with a named error, no traceback,
no hang, nothing written."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from faults_helpers import cli
from mnistforge.errors import FormatError
from mnistforge.loaders.partitions import read_partitions

needs_fl = pytest.mark.skipif(importlib.util.find_spec("flwr_datasets") is None,
                              reason="needs the [fl] extra (flwr-datasets): pip install 'mnistforge[fl]'")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")


def refused(r, code, *words):
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


@pytest.mark.parametrize("flags,words", [
    (["--partitions", "0"], ["--partitions", "0 is out of range"]),
    (["--partitions", "-3"], ["--partitions"]),
    (["--partitions", "many"], ["--partitions", "not an integer"]),
    (["--alpha", "0"], ["--alpha", "out of range"]),
    (["--alpha", "-1"], ["--alpha"]),
    (["--alpha", "nan"], ["--alpha"]),
    (["--seed", "-1"], ["--seed"]),
    (["--by", "writers"], ["--by", "invalid choice"]),
])
def test_absurd_options_are_usage_errors(test_folder, tmp_path, flags, words):
    out = tmp_path / "out"
    by = [] if "--by" in flags else ["--by", "dirichlet"]
    refused(cli("partition", f"{test_folder}:train", *by, "--out", out, *flags), 2, *words)
    assert not out.exists()


def test_the_input_folder_as_output_is_refused_and_left_alone(test_folder):
    before = sorted(os.listdir(test_folder))
    refused(cli("partition", f"{test_folder}:train", "--by", "iid", "--out", test_folder), 2, str(test_folder))
    refused(cli("partition", "emnist-digits:train", "--root", test_folder, "--by", "iid",
                "--out", test_folder / "parts"), 2)
    assert sorted(os.listdir(test_folder)) == before


@needs_fl
def test_more_partitions_than_rows_or_no_writers_are_refused(test_folder, tmp_path):
    out = tmp_path / "out"
    refused(cli("partition", f"{test_folder}:train", "--by", "iid", "--partitions", "31", "--out", out), 2,
            "more partitions than rows", "expected 1..30", "found 31")
    refused(cli("partition", f"{test_folder}:train", "--by", "writer", "--out", out), 2,
            "NaturalIdPartitioner could not partition", "a writer per row")
    refused(cli("partition", f"{test_folder}:train", "--by", "dirichlet", "--partitions", "30", "--out", out), 2,
            "DirichletPartitioner could not partition", "--alpha")
    assert not out.exists()


GOOD = {"format": "mnistforge-partitions", "version": 1, "dataset": "emnist-digits", "split": "train", "rows": 30,
        "content_sha256": {}, "partitioner": {}, "partitions": [{"rows": [0], "label_counts": {"0": 1},
                                                                  "rows_sha256": "0" * 64}]}


@pytest.mark.parametrize("text,words", [
    (b"", "not JSON"),
    (b"\xff\xfe not text", "not JSON"),
    (b"[1, 2, 3]", "no such fields (TypeError"),
    (json.dumps({**GOOD, "version": 2}).encode(), "mnistforge-partitions version 2"),
    (json.dumps({**GOOD, "format": "leaf"}).encode(), "leaf version 1"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "content_sha256"}).encode(),
     "no such fields (KeyError: 'content_sha256')"),
    (json.dumps({**GOOD, "rows": "30"}).encode(), "rows not a int"),
    (json.dumps({**GOOD, "partitions": [{"rows": ["0"], "label_counts": {}, "rows_sha256": ""}]}).encode(),
     "partitions[0]"),
    (json.dumps({**GOOD, "partitions": [{"rows": [10**30], "label_counts": {}, "rows_sha256": ""}]}).encode(),
     "partitions[0]"),
    (json.dumps({**GOOD, "partitions": [{"rows": [0], "label_counts": [1], "rows_sha256": ""}]}).encode(),
     "no such fields (AttributeError"),
])
def test_a_manifest_of_the_wrong_form_is_a_format_error(test_folder, tmp_path, text, words):
    path = tmp_path / "partitions.json"
    path.write_bytes(text)
    with pytest.raises(FormatError, match="not a partition manifest") as e:
        read_partitions(path)
    assert words in str(e.value)
    refused(cli("verify", f"{test_folder}:train", "--partitions", path), 1, "not a partition manifest", words)


def test_a_fifo_or_nothing_as_the_manifest_is_refused_without_reading(test_folder, tmp_path):
    fifo = tmp_path / "partitions.json"
    os.mkfifo(fifo)      # opening it would wait for a writer forever
    with pytest.raises(FormatError, match="another kind of file"):
        read_partitions(fifo)
    refused(cli("verify", f"{test_folder}:train", "--partitions", fifo, timeout=60), 1, "another kind of file")
    refused(cli("verify", f"{test_folder}:train", "--partitions", tmp_path / "absent.json"), 1, "nothing there")
    refused(cli("verify", f"{test_folder}:train", "--partitions", tmp_path / "empty-dir"), 1, "nothing there")
