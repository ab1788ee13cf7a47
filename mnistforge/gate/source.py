"""A folder source resolved once (:func:`resolve`): where a dataset's files are under a root, and
its build manifest; loads, ``verify`` and the export ask it instead of finding folders themselves.

>>> import tempfile, pathlib
>>> from mnistforge.registry import get_dataset
>>> d = pathlib.Path(tempfile.mkdtemp()); (d / "mnist").mkdir()
>>> _ = (d / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(b"")
>>> src = resolve(d, get_dataset("mnist"))
>>> src.folder.name, src.manifest, src.build_manifest()
('mnist', None, (None, None))
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..io.compression import COMPRESSIONS, strip_compression
from ..io.manifest import MANIFEST_NAME, Manifest
from ..registry import DatasetInfo

__all__ = ["Source", "candidate_folders", "find_dataset_folder", "locate", "read_folder_manifest", "resolve"]


def read_folder_manifest(folder: str | os.PathLike[str]) -> Manifest | None:
    """The build manifest of ``folder``, or None (the one reader outside :mod:`mnistforge.io`)."""
    return None if not os.path.isfile(os.path.join(folder, MANIFEST_NAME)) else Manifest.read(folder)


def locate(folder: str | os.PathLike[str], fname: str) -> Path | None:
    """``folder/<fname>`` under any compression (raw first), or None."""
    name = _probe_name(os.fspath(folder), fname)
    return None if name is None else Path(folder, name)


def _probe_name(folder: str, fname: str) -> str | None:
    stem = strip_compression(fname)
    return next((stem + suf for suf in COMPRESSIONS if os.path.isfile(os.path.join(folder, stem + suf))), None)


def _candidates(root: str, info: DatasetInfo) -> list[str]:
    subs = ("", info.name, info.group, "gzip", os.path.join(info.group, "gzip"))
    return list(dict.fromkeys(os.path.join(root, sub) if sub else root for sub in subs))


def candidate_folders(root: Path, info: DatasetInfo) -> list[Path]:
    """Folders a dataset's files may be in, under ``root`` (build layouts included)."""
    return [Path(p) for p in _candidates(os.fspath(root), info)]


def find_dataset_folder(root: str | os.PathLike[str], info: DatasetInfo) -> Path | None:
    """The first candidate folder holding the images of one of ``info``'s file splits."""
    files = [sp.images for sp in info.splits.values() if sp.images]
    for folder in _candidates(os.fspath(root), info):
        if os.path.isdir(folder) and any(_probe_name(folder, f) for f in files):
            return Path(folder)
    return None


@dataclass
class Source:
    """A dataset under ``root``: its ``folder`` (None: not there) and the manifests, each read once."""

    root: Path
    info: DatasetInfo
    folder: Path | None
    _manifests: dict[str, Manifest | None] = field(default_factory=dict, repr=False)

    def manifest_of(self, folder: Path | None) -> Manifest | None:
        if folder is None:
            return None
        key = os.fspath(folder)
        if key not in self._manifests:
            self._manifests[key] = read_folder_manifest(key)
        return self._manifests[key]

    @property
    def manifest(self) -> Manifest | None:
        return self.manifest_of(self.folder)

    def build_manifest(self) -> tuple[Manifest | None, Path | None]:
        """The manifest of this build and its folder: the dataset folder's, the root's, ``root/<name>``'s."""
        for folder in (self.folder, self.root, self.root / self.info.name):
            if (m := self.manifest_of(folder)) is not None:
                return m, folder
        return None, None


def resolve(root: str | os.PathLike[str], info: DatasetInfo) -> Source:
    root = root if isinstance(root, Path) else Path(root)
    return Source(root, info, find_dataset_folder(root, info))
