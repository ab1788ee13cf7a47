"""Item 5 of issue 17: `verify HF_FOLDER:NAME` runs the real checks (shard hashes against the
export's record, counts against the card, duplicates, statistics) and fails on a missing, swapped
or corrupt shard; `verify_repo` and load give named errors, never raw pyarrow/Pillow ones."""
from __future__ import annotations

import shutil

import pytest
from faults_helpers import cli, start_cli

from mnistforge.errors import CheckFailed, FormatError, MnistforgeError

pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def export(tmp_path_factory, tiny_sd19):
    base = tmp_path_factory.mktemp("hub")
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", base / "b", "--workers", "1")
    assert r.returncode == 0, r.stderr
    r = cli("export", "hf", base / "b", "--out", base / "hf", "--workers", "1",
            "--max-shard-mb", "0.02")
    assert r.returncode == 0, r.stderr
    return base / "hf"


@pytest.fixture
def repo(export, tmp_path):
    out = tmp_path / "hf"
    shutil.copytree(export, out)
    return out


def _reason(repo, check="hashes.shards") -> str:
    from mnistforge.checks import verify

    rep = verify(f"{repo}:mnist", near=False)
    return f"{rep[check].status}: {rep[check].message}"


def _shards(repo, split):
    return sorted((repo / "data" / "mnist").glob(f"{split}-*.parquet"))


def test_verify_of_an_export_runs_the_checks(repo):
    r = cli("verify", f"{repo}:mnist")
    assert r.returncode == 0, r.stdout + r.stderr
    for check in ("hashes.shards", "integrity.size[train]", "integrity.size[test]",
                  "duplicates.train-test", "statistics[test]"):
        assert check in r.stdout, r.stdout
    assert "0 passed" not in r.stdout


def test_verify_fails_on_a_missing_shard(repo):
    _shards(repo, "train")[-1].unlink()
    r = cli("verify", f"{repo}:mnist")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "shard missing" in _reason(repo)


def test_verify_fails_on_swapped_train_and_test(repo):
    tr, te = _shards(repo, "train")[0], _shards(repo, "test")[0]
    tmp = repo / "swap"
    tr.rename(tmp)
    te.rename(tr)
    tmp.rename(te)
    r = cli("verify", f"{repo}:mnist")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "holds the content of" in _reason(repo)


def test_verify_fails_on_a_corrupt_shard(repo):
    p = _shards(repo, "test")[0]
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0xFF
    p.write_bytes(bytes(b))
    r = cli("verify", f"{repo}:mnist")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "differs from the recorded" in _reason(repo)


def test_verify_repo_names_a_corrupt_shard_instead_of_arrow_invalid(repo):
    from mnistforge.hub import verify_repo

    p = _shards(repo, "train")[0]
    p.write_bytes(p.read_bytes()[:100])     # truncated: pyarrow raised ArrowInvalid before
    with pytest.raises(CheckFailed) as e:
        verify_repo(repo)
    assert str(p) in str(e.value) or p.name in str(e.value)


def test_a_flipped_byte_in_an_image_is_a_named_error():
    import io

    import numpy as np
    from PIL import Image

    from mnistforge.io.hf.png import decode_pngs, encode_png

    good = encode_png(np.arange(784, dtype=np.uint8).reshape(28, 28))
    bad = bytearray(good)
    bad[40] ^= 0xFF          # inside the compressed pixels: zlib and Pillow both refuse it
    with pytest.raises(OSError):
        Image.open(io.BytesIO(bytes(bad))).load()
    with pytest.raises(FormatError, match="does not decode"):
        decode_pngs([good, bytes(bad)])


def test_load_of_a_corrupt_export_is_a_named_error(repo):
    import mnistforge

    p = _shards(repo, "test")[0]
    p.write_bytes(b"PAR1" + b"\0" * 64)
    with pytest.raises(MnistforgeError):
        mnistforge.load("mnist", "test", root=repo)


def test_datasets_progress_bars_are_silenced_with_ours(export, tmp_path):
    # issue 16: `MNISTFORGE_PROGRESS=0` (set for every test) silences the datasets library too
    r = cli("export", "hf", export.parent / "b", "--out", tmp_path / "again", "--workers", "1",
            env={"MNISTFORGE_PROGRESS": "0"})
    assert r.returncode == 0, r.stderr
    assert "Generating" not in r.stderr and "examples/s" not in r.stderr, r.stderr


@pytest.mark.parametrize("attempt", range(2))
def test_two_concurrent_exports_leave_one_whole_export(export, tmp_path, attempt):
    # issue 17, item 1: one of two "successful" exports was lost
    from mnistforge.hub import verify_repo

    out = tmp_path / "hf"
    args = ("export", "hf", export.parent / "b", "--out", out, "--workers", "1", "--no-check")
    procs = [start_cli(*args), start_cli(*args)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results)[0] == 0 and sorted(rc for rc, _ in results)[1] != 0, \
        results
    loser = next(err for rc, err in results if rc != 0)
    assert "another mnistforge run is writing" in loser or "already exists" in loser, loser
    assert verify_repo(out, with_datasets=False) == verify_repo(export, with_datasets=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_verify_of_the_export_folder_checks_every_config(repo):
    r = cli("verify", repo, "--no-near")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "hashes.shards" in r.stdout and "0 passed" not in r.stdout
    _shards(repo, "test")[0].unlink()
    assert cli("verify", repo, "--no-near").returncode == 1
