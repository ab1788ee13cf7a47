"""``build femnist`` with bad LEAF options, an existing --out, a source without classes:
refused before any work with a named error (and the CLI's usage exit code 2)."""
from __future__ import annotations

import re
import shutil

import pytest

from faults_helpers import cli
from mnistforge.builders.femnist import FemnistBuildConfig, build_femnist
from mnistforge.errors import BuildError, ConfigError, OutputExistsError


@pytest.mark.parametrize("flags,words", [
    (["--sf", "7"], ["--sf", "fraction in (0, 1]", "found 7"]),
    (["--sf", "0"], ["--sf", "found 0"]),
    (["--sf", "nan"], ["--sf", "found nan"]),
    (["--tf", "1.5"], ["--tf", "found 1.5"]),
    (["--iu", "-0.1"], ["--iu"]),
    (["-k", "-3"], ["-k", "integer >= 0", "found -3"]),
])
def test_absurd_leaf_options_are_usage_errors(tiny_sd19, tmp_path, flags, words):
    out = tmp_path / "out"
    r = cli("build", "femnist", "--sd19", tiny_sd19, "--out", out, *flags)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("field,value", [("fraction", 2.0), ("min_samples", -1),
                                         ("min_samples", 1.5), ("split", "writer"),
                                         ("sample", "random"), ("seed", -1), ("resize", "bicubic")])
def test_bad_config_fields_raise_config_error(field, value):
    with pytest.raises(ConfigError):
        FemnistBuildConfig(**{field: value})


def test_existing_out_is_refused_and_left_alone(tiny_sd19, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    r = cli("build", "femnist", "--sd19", tiny_sd19, "--out", out)
    assert r.returncode == 2, r.stderr
    assert "already exists" in r.stderr or "exists" in r.stderr
    assert (out / "mine.txt").read_text() == "keep me"
    with pytest.raises(OutputExistsError):
        build_femnist(tiny_sd19, out)


def test_layout_leaf_for_another_target_is_refused(tiny_sd19, tmp_path):
    r = cli("build", "emnist", "--sd19", tiny_sd19, "--out", tmp_path / "o", "--layout", "leaf")
    assert r.returncode == 2
    assert "femnist only" in r.stderr


def test_source_without_classes_is_a_build_error(tiny_sd19, tmp_path):
    """LEAF takes classes from by_class; without it (and without .cls) nothing is guessed."""
    src = tmp_path / "sd19"
    src.mkdir()
    shutil.copy(tiny_sd19 / "by_write.zip", src / "by_write.zip")
    shutil.copy(tiny_sd19 / "synthetic-sd19.json", src / "synthetic-sd19.json")
    with pytest.raises(BuildError, match="without a class"):
        build_femnist(src, tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_user_split_with_no_train_users_is_refused(tiny_sd19, tmp_path):
    with pytest.raises(ConfigError, match="no train users"):
        build_femnist(tiny_sd19, tmp_path / "o", FemnistBuildConfig(split="user",
                                                                    train_fraction=0.001))
    assert not (tmp_path / "o").exists()
    with pytest.raises(ConfigError, match=r"fraction in \(0, 1\)"):
        FemnistBuildConfig(split="user", train_fraction=1.0)


@pytest.mark.parametrize("flags,words", [
    (["--tf", "1"], ["--tf", "fraction in (0, 1)", "no test data"]),
    (["--sf", "1e-9"], ["leave sampled_data empty", "--sf 1e-09", "0 users, 0 samples"]),
    (["-k", "99999"], ["leave rem_user_data empty", "-k 99999"]),
    (["-t", "user", "--tf", "0.001"], ["no train users", "--tf 0.001"]),
])
def test_options_that_leave_no_users_are_refused_before_work(tiny_sd19, tmp_path, flags, words):
    out = tmp_path / "out"
    r = cli("build", "femnist", "--sd19", tiny_sd19, "--out", out, "--layout", "leaf", *flags)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and not out.exists() and not any(tmp_path.iterdir())
    for w in words:
        assert w in r.stderr


def test_without_k_no_user_is_removed_and_the_names_are_leafs(tiny_sd19, tmp_path):
    """preprocess.sh runs remove_users.py only when -k is given: its names have no _keep_K."""
    names = {}
    for k in (None, 0):
        out = tmp_path / f"leaf-{k}"
        build_femnist(tiny_sd19, out, FemnistBuildConfig(sample="iid", iid_users=0.2, fraction=0.4,
                                                         layout="leaf", min_samples=k), workers=1)
        names[k] = sorted(p.name for p in (out / "data" / "train").iterdir())
    assert names[None] and all(re.fullmatch(r"all_data_\d+_iid_2_4_train_9\.json", n)
                               for n in names[None])
    assert names[0] == [n.replace("_train", "_keep_0_train") for n in names[None]]
    for a, b in zip(names[None], names[0]):     # the same bytes under LEAF's names
        assert (tmp_path / "leaf-None" / "data" / "train" / a).read_bytes() == \
            (tmp_path / "leaf-0" / "data" / "train" / b).read_bytes()


def test_the_ranges_are_in_the_help():
    r = cli("build", "--help")
    text = " ".join(r.stdout.split())
    assert r.returncode == 0 and "in (0, 1]" in text and "in (0, 1)" in text and "K >= 0" in text


def test_load_without_a_build_says_how_to_build(monkeypatch):
    import mnistforge
    from mnistforge.errors import DatasetNotFoundError

    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    with pytest.raises(DatasetNotFoundError, match="mnistforge build femnist"):
        mnistforge.load("femnist", "train")
    r = cli("show", "femnist:train", "--out", "x.png", env={"MNISTFORGE_OFFLINE": "1"})
    assert r.returncode == 2 and "no published files" in r.stderr


def test_fetch_femnist_says_it_is_built_not_downloaded(tmp_path):
    # it used to print "0 of 0 files in the cache" and exit 0, as if there were nothing to do
    r = cli("fetch", "femnist", "--cache", tmp_path / "c", env={"MNISTFORGE_OFFLINE": "1"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no published files" in r.stderr and "mnistforge build femnist" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "c" / "femnist").exists()


def test_info_femnist_gives_no_count_rather_than_zero(tmp_path):
    # FEMNIST's counts are each build's (its manifest): `info` said "train 0, test 0"
    import json

    r = cli("info", "femnist", "--json", tmp_path / "i.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "i.json").read_text())
    assert [sp["count"] for sp in doc["splits"]] == [None, None]
    r = cli("info", "mnist", "--json", tmp_path / "m.json")
    assert [sp["count"] for sp in json.loads((tmp_path / "m.json").read_text())["splits"]][:2] \
        == [60000, 10000]
