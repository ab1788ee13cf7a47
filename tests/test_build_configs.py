"""Build configurations: the CLI turns flags into typed configs; bad values are ConfigErrors."""
import argparse

import pytest

from mnistforge.builders.emnist import EmnistBuildConfig, _with_overrides
from mnistforge.builders.emnist_prepro import EmnistPreproConfig
from mnistforge.builders.mnist_prepro import MnistPreproConfig
from mnistforge.builders.qmnist import (
    QmnistBuildConfig,
    build_mnist,
    build_qmnist,
    build_xnist,
)
from mnistforge.cli import main
from mnistforge.commands import build as build_cmd
from mnistforge.errors import ConfigError
from mnistforge.registry import emnist_splits


def parse(*argv):
    p = argparse.ArgumentParser()
    build_cmd.add_arguments(p)
    return p.parse_args(list(argv))


def test_qmnist_flags_become_a_config():
    args = parse("mnist", "--sd19", "s", "--out", "o", "--fudge", "1.0", "--centring", "true",
                 "--duplicates", "source", "--workers", "3", "--qmnist-labels", "download",
                 "--overwrite")
    assert build_cmd.config_for("mnist", args) == QmnistBuildConfig(
        prepro=MnistPreproConfig(1.0, "true"), qmnist_labels="download", duplicates="source",
        workers=3, overwrite=True)
    assert build_cmd.config_for("qmnist", parse("qmnist", "--sd19", "s", "--out", "o")) == \
        QmnistBuildConfig()


def test_emnist_flags_become_a_config():
    args = parse("emnist-letters", "--sd19", "s", "--out", "o", "--seed", "5", "--split-by",
                 "writer", "--letters-variant", "paper37", "--orientation", "upright")
    cfg = build_cmd.config_for("emnist-letters", args)
    assert cfg == EmnistBuildConfig(splits=("letters",), seed=5, split_by="writer",
                                    letters_variant="paper37", orientation="upright")
    assert build_cmd.config_for("emnist", args).splits == emnist_splits()


def test_every_target_has_a_builder_function():
    table = build_cmd.builders()
    assert table["qmnist"] is build_qmnist and table["mnist"] is build_mnist
    assert table["xnist"] is build_xnist
    assert set(table) == {"qmnist", "mnist", "xnist", "emnist", "femnist"} | {
        f"emnist-{s}" for s in emnist_splits()}
    with pytest.raises(ConfigError, match="unknown build target"):
        build_cmd.config_for("emnist-kanji", parse("x", "--sd19", "s", "--out", "o"))


@pytest.mark.parametrize("bad", [
    {"splits": ("kanji",)}, {"splits": ()}, {"orientation": "sideways"}, {"seed": -1},
    {"split_by": "height"}, {"letters_variant": "paper99"}, {"scale": 2.0}, {"workers": 0},
])
def test_bad_emnist_values_are_config_errors(bad):
    with pytest.raises(ConfigError):
        EmnistBuildConfig(**bad)


@pytest.mark.parametrize("bad", [{"duplicates": "some"}, {"workers": 0}, {"workers": -2}])
def test_bad_qmnist_values_are_config_errors(bad):
    with pytest.raises(ConfigError):
        QmnistBuildConfig(**bad)
    with pytest.raises(ConfigError):
        MnistPreproConfig(fudge=1.5)


def test_emnist_splits_are_kept_in_registry_order():
    assert EmnistBuildConfig(splits=("mnist", "byclass")).splits == ("byclass", "mnist")
    assert EmnistBuildConfig(splits="letters").splits == ("letters",)


def test_keyword_shortcuts_override_the_config():
    base = EmnistBuildConfig(seed=1, workers=2)
    cfg = _with_overrides(base, splits=["digits"], split_config=None, progress=False, seed=9,
                          split_by=None, letters_variant=None, orientation=None,
                          overwrite=None, workers=None)
    assert (cfg.splits, cfg.seed, cfg.workers, cfg.progress) == (("digits",), 9, 2, False)
    pre = EmnistPreproConfig(sigma=0.5)
    assert _with_overrides(pre, splits=None, split_config=None, progress=None, seed=None,
                           split_by=None, letters_variant=None, orientation=None,
                           overwrite=None, workers=None).prepro == pre


def test_a_bad_flag_value_is_a_usage_error(tmp_path, capsys):
    rc = main(["build", "qmnist", "--sd19", str(tmp_path), "--out", str(tmp_path / "o"),
               "--fudge", "2"])
    assert rc == 2
    assert "fudge" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
