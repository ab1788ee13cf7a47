"""`mnistforge verify` on a build folder holding several datasets verifies each one."""
from __future__ import annotations

import json

import pytest

from mnistforge.cli import main
from mnistforge.loaders import datasets_in_folder
from sd19_helpers import make_tiny_sd19


@pytest.fixture(scope="module")
def emnist_build(tmp_path_factory):
    base = tmp_path_factory.mktemp("vf")
    sd19 = make_tiny_sd19(base, scale=0.003, seed=3)
    out = base / "emnist"
    assert main(["build", "emnist", "--sd19", str(sd19), "--out", str(out)]) == 0
    return out


def test_folder_with_six_datasets_is_verified_dataset_by_dataset(emnist_build, tmp_path, capsys):
    names = datasets_in_folder(emnist_build)
    assert sorted(names) == sorted(f"emnist-{n}" for n in
                                   ("byclass", "bymerge", "balanced", "letters", "digits", "mnist"))
    rc = main(["verify", str(emnist_build), "--json", str(tmp_path / "v.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.count("mnistforge verify ") == 6
    assert "verified 6 datasets" in out
    for n in names:
        doc = json.loads((tmp_path / f"v-{n}.json").read_text())
        assert doc["status"] in ("pass", "warn")
        assert doc["counts"]["fail"] == 0


def test_a_damaged_dataset_fails_the_folder(emnist_build, tmp_path, capsys):
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(emnist_build, bad)
    p = bad / "emnist-letters-test-labels-idx1-ubyte.gz"
    p.write_bytes(p.read_bytes()[:-5])
    assert main(["verify", str(bad)]) == 1
    assert "FAILED" in capsys.readouterr().out
