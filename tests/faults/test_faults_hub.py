"""Item 5 of issue 17: `verify HF_FOLDER:NAME` runs the real checks (shard hashes against the
export's record, counts against the card, duplicates, statistics) and fails on a missing, swapped
or corrupt shard; `verify_repo` and load give named errors, never raw pyarrow/Pillow ones.

Issue 26 (below): every way into an export (load, show, evaluate, export of an export) checks each
shard against the sha256 the export recorded the first time it sees it, then trusts it while the
file keeps its identity; a swapped, damaged or missing shard is refused by name."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys

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


# --- issue 26: the export route checks every shard it reads against the export's record ------
# (first sight hashed, then trusted while the file keeps its identity: mnistforge.cache.seen)

_OPENED: list | None = None    # shard paths opened by Python code (hashing) while counting


def _count_opens(event, args):
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if path.endswith(".parquet"):
            _OPENED.append(path)


@pytest.fixture(scope="module")
def _audit():
    # a real count of the files Python opens (pyarrow reads shards in C++, the hash reads them
    # through open()): an audit hook, not a patch of the code under test
    sys.addaudithook(_count_opens)


@contextlib.contextmanager
def _opens():
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


@pytest.fixture(scope="module")
def real_export(tmp_path_factory, mnist_reference):
    """An export of the real MNIST test set, cut in two splits (6,000 as train, 4,000 as test)."""
    import mnistforge
    from mnistforge.hub import SplitData, export_hf
    from mnistforge.hub.targets import config_from_dataset

    ds = mnistforge.load("mnist", "test", root=mnist_reference)
    splits = {"train": SplitData(ds.images[:6000], ds.labels[:6000]),
              "test": SplitData(ds.images[6000:], ds.labels[6000:])}
    cfg = config_from_dataset("mnist", splits, ds.classes, root=mnist_reference)
    out = tmp_path_factory.mktemp("hub-real") / "hf"
    export_hf(out, [cfg], workers=1, max_shard_bytes=600_000)
    return out


@pytest.fixture(params=["synthetic", "real"])
def any_repo(request, tmp_path):
    """A copy of an export made by this module: from a small synthetic build, or from the real
    MNIST test set (skipped where ../shared is absent)."""
    src = request.getfixturevalue("export" if request.param == "synthetic" else "real_export")
    out = tmp_path / "hf"
    shutil.copytree(src, out)
    return out


def _load(repo, split="test", **kw):
    import mnistforge

    return mnistforge.load("mnist", split, root=repo, **kw)


def _written(path):
    """What a write or a replacement changes (not the access time, which a read may update)."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _record(path):
    from mnistforge.cache.seen import record_path

    return record_path(path)


def _restore_times(path, st):
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_train_shard_copied_over_a_test_shard_is_refused_everywhere(any_repo, tmp_path):
    import numpy as np

    from mnistforge.errors import DataMismatchError

    repo = any_repo
    good = _load(repo)                       # seen intact first: the record must not save it
    assert cli("show", f"{repo}:mnist:test", "--out", tmp_path / "ok.png").returncode == 0
    tr, te = _shards(repo, "train")[0], _shards(repo, "test")[0]
    shutil.copyfile(tr, te)
    with pytest.raises(DataMismatchError) as e:
        _load(repo)
    msg = str(e.value)
    assert te.name in msg and tr.name in msg and "recorded" in msg and "trust_files" in msg, msg
    assert isinstance(e.value, ValueError)

    r = cli("show", f"{repo}:mnist:test", "--out", tmp_path / "grid.png")
    assert r.returncode == 1 and te.name in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "grid.png").exists()

    r = cli("evaluate", "linear", "--train", f"{repo}:mnist:train", "--test", f"{repo}:mnist:test")
    assert r.returncode == 1 and te.name in r.stderr and "Traceback" not in r.stderr, r.stderr

    before = sorted(p.name for p in tmp_path.iterdir())
    for target in (repo, f"{repo}:mnist", f"{repo}:mnist:test"):
        r = cli("export", "hf", target, "--out", tmp_path / "again", "--workers", "1")
        assert r.returncode == 1, r.stdout + r.stderr
        assert te.name in r.stderr and "another shard's data" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == before   # nothing written

    # the explicit opt-out still loads the files as they are (the train shard's rows)
    forced = _load(repo, trust_files=True)
    assert len(forced) != len(good) or not np.array_equal(forced.images, good.images)


def test_a_flipped_byte_with_size_and_mtime_restored_is_refused(any_repo):
    from mnistforge.cache.seen import recall
    from mnistforge.errors import IntegrityError

    repo = any_repo
    _load(repo)                                   # a record made before the damage
    p = _shards(repo, "test")[-1]
    assert _record(p).is_file()
    st = p.stat()
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x01
    p.write_bytes(bytes(b))
    _restore_times(p, st)
    assert (p.stat().st_size, p.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    with pytest.raises(IntegrityError, match="changed since the export") as e:
        _load(repo)
    assert p.name in str(e.value) and "sha256" in str(e.value)
    assert recall(p) is None                     # forgotten: hashed again next time
    with pytest.raises(IntegrityError):
        _load(repo)
    assert len(_load(repo, "train")) > 0          # the other split is intact and loads


def test_a_missing_shard_is_named_on_load_and_on_export(any_repo, tmp_path):
    from mnistforge.errors import MissingFileError

    repo = any_repo
    p = _shards(repo, "test")[-1]
    p.unlink()
    with pytest.raises(MissingFileError, match="shard missing") as e:
        _load(repo)
    assert p.name in str(e.value) and "recorded" in str(e.value)
    r = cli("export", "hf", repo, "--out", tmp_path / "again", "--workers", "1")
    assert r.returncode == 3, r.stdout + r.stderr        # was a FileNotFoundError traceback
    assert "Traceback" not in r.stderr and p.name in r.stderr, r.stderr
    assert not (tmp_path / "again").exists()


def test_a_repeat_load_hashes_nothing_and_check_rehashes(any_repo, _audit):
    import numpy as np

    repo = any_repo
    shards = _shards(repo, "test")
    with _opens() as opened:
        first = _load(repo)
    assert sorted(map(os.path.realpath, opened)) == sorted(map(os.path.realpath, map(str, shards)))
    records = {p: _written(_record(p)) for p in shards}

    with _opens() as opened:
        again = _load(repo)
    assert opened == []                                         # no shard byte read by Python
    assert {p: _written(_record(p)) for p in shards} == records   # the records were only read
    assert np.array_equal(first.images, again.images)

    with _opens() as opened:
        _load(repo, check=True)
    assert len(opened) == len(shards)                           # check=True re-hashes every shard


def test_check_rehashes_a_shard_whose_record_says_it_is_fine(any_repo):
    # a stale or forged record (the identity of the damaged file, the recorded digest): only a
    # re-hash can tell, and check=True does it
    from mnistforge.cache.seen import remember
    from mnistforge.errors import IntegrityError
    from mnistforge.io.hf.repo import recorded_shard_hashes
    from mnistforge.loaders.repo import SHARD_FACT

    repo = any_repo
    p = _shards(repo, "test")[0]
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x01
    p.write_bytes(bytes(b))
    digest = recorded_shard_hashes(repo)[p.relative_to(repo).as_posix()]
    assert remember(p, {SHARD_FACT: digest}, before=p.stat())
    with pytest.raises(IntegrityError, match="changed since the export"):
        _load(repo, check=True)


def test_an_export_without_recorded_hashes_loads_as_unverified(repo, caplog):
    import re

    card = repo / "README.md"
    card.write_text(re.sub(r"(?m)^- `[^`]+\.parquet`: `[0-9a-f]{64}`\n", "",
                           card.read_text(encoding="utf-8")), encoding="utf-8")
    (repo / "croissant.json").unlink()
    from mnistforge.errors import DataMismatchError

    # nothing vouches for the shards: the gate judges the content, and a small build is not
    # MNIST's test set
    with caplog.at_level("WARNING", logger="mnistforge"):
        with pytest.raises(DataMismatchError, match="this is not mnist test"):
            _load(repo)
    assert any("NOT verified" in r.getMessage() for r in caplog.records), caplog.text
    ds = _load(repo, trust_files=True)   # the explicit opt-out
    assert len(ds) > 0


def test_a_shard_listed_without_a_recorded_hash_is_refused(repo):
    import re

    from mnistforge.errors import IntegrityError

    p = _shards(repo, "test")[0]
    card = repo / "README.md"
    text = card.read_text(encoding="utf-8")
    text, n = re.subn(rf"(?m)^- `data/mnist/{re.escape(p.name)}`: `[0-9a-f]{{64}}`\n", "", text)
    assert n == 1
    card.write_text(text, encoding="utf-8")
    (repo / "croissant.json").unlink()
    with pytest.raises(IntegrityError, match="without a recorded sha256"):
        _load(repo)


@pytest.mark.parametrize("images, labels, why", [
    ("14x56", None, "not 28 x 28"),
    ("int64", None, "pixel values out of range"),
    (None, 200, "outside the class range"),
    (None, "short", "do not match"),
])
def test_the_arrays_of_an_export_are_admitted_only_when_well_formed(images, labels, why):
    import numpy as np

    from mnistforge.errors import FormatError, IntegrityError
    from mnistforge.loaders.repo import _admit
    from mnistforge.registry import get_dataset

    imgs = np.zeros((4, 28, 28), np.uint8)
    labs = np.arange(4, dtype=np.int64)
    if images == "14x56":
        imgs = np.zeros((4, 14, 56), np.uint8)
    elif images == "int64":
        imgs = np.full((4, 28, 28), 300, np.int64)
    if labels == 200:
        labs[1] = 200
    elif labels == "short":
        labs = labs[:3]
    classes = [str(i) for i in range(10)]
    kw = dict(registered=True, vouched=True)   # form is checked even where the shards vouch
    assert _admit((np.zeros((4, 28, 28), np.uint8), np.arange(4), classes, None),
                  get_dataset("mnist"), "test", "x", **kw)[1].tolist() == [0, 1, 2, 3]
    with pytest.raises((IntegrityError, FormatError), match=why):
        _admit((imgs, labs, classes, None), get_dataset("mnist"), "test", "x", **kw)


def test_an_intact_export_re_exports_whole_folder_as_a_target(any_repo, tmp_path):
    # `export hf EXPORT` (no :NAME) takes every config of the export; its shards are checked
    # first (recorded in the cache), then the re-export holds the same arrays
    import numpy as np

    repo = any_repo
    r = cli("export", "hf", repo, "--out", tmp_path / "again", "--workers", "1", "--no-check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(_record(p).is_file() for p in _shards(repo, "test") + _shards(repo, "train"))
    for split in ("train", "test"):
        a, b = _load(repo, split), _load(tmp_path / "again", split)
        assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
