"""One parser of target strings (``loaders.targets.parse_target_text``), used by every caller."""
from __future__ import annotations

import os

import pytest

from mnistforge.checks.foreign import foreign_target
from mnistforge.commands.export import _input_folders
from mnistforge.hub.targets import parse_target
from mnistforge.loaders.targets import TargetText, parse_target_text


@pytest.mark.parametrize("text,parts", [
    ("mnist", ("mnist",)),
    ("qmnist:test10k", ("qmnist", "test10k")),
    ("mnist:test[:100]", ("mnist", "test[:100]")),           # the slice's colon is not a cut
    ("build/all:qmnist:train[-10%:]", ("build/all", "qmnist", "train[-10%:]")),
    ("", ("",)),
])
def test_parts_split_at_colons_outside_slices(text, parts):
    t = parse_target_text(text)
    assert t == TargetText(text, parts, None)
    assert ":".join(t.parts) == text                           # nothing lost


@pytest.mark.parametrize("text,config,rest", [
    ("rebuilt=build/mnist:test", "rebuilt", "build/mnist:test"),
    ("qmnist", None, "qmnist"),
    ("=mnist", None, "=mnist"),                                # no name before '='
    ("a=", None, "a="),                                        # nothing after it
    ("./my=dir:test", None, "./my=dir:test"),                  # a path holding '=', not a config
])
def test_config_prefix_only_for_export_targets(text, config, rest):
    t = parse_target_text(text, config=True)
    assert (t.config, t.text) == (config, rest)
    assert parse_target(text) == (config, rest)                # hub's parse is this parser's
    assert parse_target_text(text).config is None              # other commands take no CONFIG=


def test_longest_existing_path_prefix(tmp_path):
    (tmp_path / "a:b").mkdir()                                 # a folder whose name holds a colon
    (tmp_path / "copy.npz").write_bytes(b"")
    t = parse_target_text(f"{tmp_path}/a:b:mnist:test")
    assert t.path_prefix() == (f"{tmp_path}/a:b", ("mnist", "test"))
    assert parse_target_text(f"{tmp_path}/copy.npz:test").path_prefix() is None   # not a folder
    assert parse_target_text(f"{tmp_path}/copy.npz:test").path_prefix(os.path.exists) == (
        f"{tmp_path}/copy.npz", ("test",))
    assert parse_target_text("no-such-thing:test").path_prefix(os.path.exists) is None


def test_callers_cut_targets_as_the_parser_does(tmp_path):
    (tmp_path / "a:b").mkdir()
    # the export's input folders: CONFIG= dropped, the longest existing path kept (a
    # folder whose name holds a colon included)
    assert _input_folders([f"x={tmp_path}/a:b:mnist:test", "mnist:test"]) == [tmp_path / "a:b"]
    # a path that is not a third-party copy (an empty folder) is not taken for one
    assert foreign_target(f"{tmp_path}/a:b:test") is None
    assert foreign_target("mnist:test") is None


def test_export_resolves_each_folder_once(tmp_path, monkeypatch):
    """hub.targets hands one resolved source to default_splits (was: one resolve per split)."""
    from mnistforge.hub import targets
    from mnistforge.registry import get_dataset

    for name in ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
        (tmp_path / name).write_bytes(b"")        # presence is all default_splits asks
    real, calls = targets.resolve, []
    monkeypatch.setattr(targets, "resolve", lambda *a: calls.append(a) or real(*a))
    assert targets.default_splits("mnist", tmp_path) == ["train", "test"]
    assert len(calls) == 1
    source = real(tmp_path, get_dataset("mnist"))
    assert targets.default_splits("mnist", tmp_path, source=source) == ["train", "test"]
    assert len(calls) == 1                        # the source given is used, not made again
