"""`verify` of a folder whose official files all differ from the registry names every one of them
(it said "2 of 2 files differ (t10k-images-idx3-ubyte.gz)", naming one)."""
from __future__ import annotations

import gzip

from mnistforge.checks.hashes import check_registry_files
from mnistforge.registry import get_dataset


def test_every_differing_file_is_named(tmp_path):
    remotes = {r.name: r for r in get_dataset("mnist").remote_files()}
    names = ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    files = {}
    for n in names:
        (tmp_path / n).write_bytes(gzip.compress(b"not mnist"))
        files[tmp_path / n] = remotes[n]
    r = check_registry_files(files)
    assert r.status == "fail", r
    assert "2 of 2 files differ" in r.message and all(n in r.message for n in names), r.message
