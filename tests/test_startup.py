"""Start-up stays light: `mnistforge --help` and `import mnistforge` load no NumPy, a load no asyncio,
and a one-shot load imports only what it uses (issue 21: a script that loads one split)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from cache_helpers import put

from mnistforge.io.idx import read_idx, write_idx


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_imports_no_numpy():
    mods = modules_after("import contextlib, io\nfrom mnistforge.cli import main\n"
                         "with contextlib.redirect_stdout(io.StringIO()):\n"
                         "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert "mnistforge.commands.evaluate" in mods      # every command was registered
    # numpy may sit in sys.modules as a lazy placeholder; its core must never have run
    assert "numpy._core" not in mods


def test_import_is_light():
    assert "numpy._core" not in modules_after("import mnistforge")


def test_a_progress_bar_does_not_pull_in_asyncio():
    mods = modules_after("from mnistforge.progress import progress\n"
                         "list(progress(range(3), disable=True))")
    assert "tqdm" in mods and "asyncio" not in mods


#: what a load that writes, fetches, hashes and decompresses nothing has no use for
NOT_FOR_A_CACHED_LOAD = (
    "logging", "hashlib", "xxhash", "gzip", "isal", "lzma", "bz2", "zipfile", "shutil", "tempfile", "random",
    "importlib.resources", "difflib", "tqdm", "requests", "urllib3", "asyncio", "concurrent.futures",
    "mnistforge.cache.download", "mnistforge.cache.archive", "mnistforge.io.hashing",
    "mnistforge.io.manifest", "mnistforge.loaders.foreign", "mnistforge.loaders.targets",
    "mnistforge.gate.files", "mnistforge.loaders.label_issues", "mnistforge.progress")


def test_a_one_shot_load_from_the_cache_imports_only_what_it_uses(mnist_reference, cache):
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / name)
    code = "import mnistforge\nds = mnistforge.load('mnist', 'test', download=False)\nassert len(ds) == 10000"
    first = modules_after(code)          # the first load verifies and keeps the raw copies
    assert "hashlib" in first            # (so the check below could fail)
    mods = modules_after(code + "\nassert set(ds.status.values()) == {'raw'}, ds.status")  # memory maps
    assert "mnistforge.loaders.core" in mods and "numpy._core" in mods
    assert sorted(m for m in NOT_FOR_A_CACHED_LOAD if m in mods) == []


@pytest.fixture
def raw_folder(mnist_reference, tmp_path):
    """MNIST's test files decompressed into a folder of their own (what a build or a user holds)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        write_idx(folder / name, read_idx(mnist_reference / (name + ".gz")))
    return folder


#: what reading raw idx files under their names has no use for
NOT_FOR_RAW_IDX = ("logging", "gzip", "isal", "lzma", "bz2", "zipfile", "shutil", "tempfile",
                   "concurrent.futures", "importlib.resources", "mnistforge.io.hf.png",
                   "mnistforge.cache.download")


def test_a_one_shot_load_of_a_folder_imports_no_logging_codecs_or_readers(raw_folder, cache):
    code = f"import mnistforge\nds = mnistforge.load('mnist', 'test', root={str(raw_folder)!r})\n" \
           "assert len(ds) == 10000"
    first = modules_after(code)     # the trust gate hashes both files and records them
    assert "mnistforge.io.hashing" in first and "tempfile" in first   # (so the check below could fail)
    mods = modules_after(code + "\nassert ds.status == {'t10k-images-idx3-ubyte.gz': 'raw', "
                                "'t10k-labels-idx1-ubyte.gz': 'raw'}, ds.status")
    assert "mnistforge.gate.files" in mods      # the folder's files were checked (from the records)
    assert "mnistforge.io.hashing" not in mods and "xxhash" not in mods  # a repeat load hashes nothing
    assert sorted(m for m in NOT_FOR_RAW_IDX + ("mnistforge.io.foreign", "mnistforge.loaders.foreign")
                  if m in mods) == []


def test_a_one_shot_load_of_an_idx_file_imports_its_reader_only(raw_folder):
    path = raw_folder / "t10k-images-idx3-ubyte"
    mods = modules_after(f"import mnistforge\nds = mnistforge.load({str(path)!r}, 'test')\n"
                         "assert (ds.name, len(ds)) == ('mnist', 10000)")
    assert "mnistforge.io.foreign.torchvision" in mods      # the idx reader
    others = tuple(f"mnistforge.io.foreign.{m}" for m in ("csvfile", "mat", "npz", "parquet"))
    assert sorted(m for m in NOT_FOR_RAW_IDX + others if m in mods) == []
