"""A folder source resolved once: where a dataset's files are under a root, and its build manifest.

Loads (:class:`~mnistforge.loaders.origins.FolderOrigin`), ``verify`` (``checks/suite``) and the
export (``hub/targets``) ask :func:`resolve` instead of each finding the folder and reading
``manifest.json`` again.

>>> import tempfile, pathlib
>>> from mnistforge.registry import get_dataset
>>> d = pathlib.Path(tempfile.mkdtemp()); (d / "mnist").mkdir()
>>> _ = (d / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(b"")
>>> src = resolve(d, get_dataset("mnist"))
>>> src.folder.name, src.manifest, src.build_manifest()
('mnist', None, (None, None))
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..cache.seen import known, learn, stamp
from ..io.compression import COMPRESSIONS, strip_compression
from ..registry import DatasetInfo

if TYPE_CHECKING:
    from ..io.manifest import Manifest

__all__ = ["Source", "candidate_folders", "find_dataset_folder", "locate", "read_folder_manifest", "resolve"]


def read_folder_manifest(folder) -> Manifest | None:
    """The build manifest (``manifest.json``) of ``folder``, or None: the one place outside
    :mod:`mnistforge.io` that reads one (a :class:`Source` reads each folder's once)."""
    from ..io.manifest import Manifest

    return Manifest.read(folder)


def _manifest(folder: str) -> Manifest | None:
    """:func:`read_folder_manifest`, kept in memory while the folder and its ``manifest.json`` keep
    their identities (a manifest is read, never changed, by its users)."""
    path = os.path.join(folder, MANIFEST)
    key = ("manifest", folder)
    hit = known(key, _NONE)
    if hit is _NONE:
        stamps = [(folder, stamp(folder)), (path, stamp(path))]
        # most folders have none: io.manifest (and its imports) only for one that has
        hit = None if stamps[1][1] is None else read_folder_manifest(folder)
        learn(key, hit, stamps)
    return hit


#: :data:`mnistforge.io.manifest.MANIFEST_NAME` (not imported for a folder without one)
MANIFEST = "manifest.json"


def locate(folder: Path, fname: str) -> Path | None:
    """``folder/<fname>`` under any compression (raw first), or None."""
    # plain strings for the misses: every load asks this of each file, each suffix
    folder = os.fspath(folder)
    name = _locate_name(folder, fname)
    return None if name is None else _path(os.path.join(folder, name))


@functools.lru_cache(maxsize=1024)
def _path(path: str) -> Path:
    """``Path(path)``, made once: a repeat load asks for the same few paths, and a ``Path``
    costs more than the ``stat`` that checks the file (they are immutable: safe to share)."""
    return Path(path)


def _found(key, folder: str, probe):
    """``probe()``'s answer about what ``folder`` holds, kept in memory (:func:`known`) while
    ``folder`` keeps its identity (a file added, removed or renamed there changes it): a repeat
    load asks one ``stat``, not one per name and suffix.  Not kept when a link was found (its
    target may go away on its own)."""
    hit = known(key, _NONE)
    if hit is not _NONE:
        return hit
    before = stamp(folder)
    got = probe()
    if not (isinstance(got, str) and os.path.islink(os.path.join(folder, got))):
        learn(key, got, ((folder, before),))
    return got


_NONE = object()


def _locate_name(folder: str, fname: str) -> str | None:
    return _found(("locate", folder, fname), folder, lambda: _probe_name(folder, fname))


def _probe_name(folder: str, fname: str) -> str | None:
    stem = strip_compression(fname)
    for suf in COMPRESSIONS:
        if os.path.isfile(os.path.join(folder, stem + suf)):
            return stem + suf
    return None


def _candidates(root: str, info: DatasetInfo) -> list[str]:
    out: list[str] = []
    for sub in ("", info.name, info.group, "gzip", os.path.join(info.group, "gzip")):
        p = os.path.join(root, sub) if sub else root
        if p not in out:
            out.append(p)
    return out


def candidate_folders(root: Path, info: DatasetInfo) -> list[Path]:
    """Folders a dataset's files may be in, under ``root`` (build layouts included)."""
    return [Path(p) for p in _candidates(os.fspath(root), info)]


def find_dataset_folder(root, info: DatasetInfo) -> Path | None:
    """The first candidate folder holding the images of one of ``info``'s file splits."""
    # plain strings: every folder load asks this (twice), and Path objects were most of its time
    # kept in memory while each folder looked in keeps its identity (see _found)
    files = tuple(sp.images for sp in info.splits.values() if sp.images)
    key = ("dataset folder", os.fspath(root), info.name, files)
    hit = known(key, _NONE)
    if hit is _NONE:
        stamps = []
        hit = None
        for folder in _candidates(os.fspath(root), info):
            stamps.append((folder, stamp(folder)))
            if os.path.isdir(folder) and any(_probe_name(folder, f) for f in files):
                hit = folder
                break
        learn(key, hit, stamps)
    return None if hit is None else _path(hit)


@dataclass
class Source:
    """A dataset under ``root``: its ``folder`` (None when its files are not there) and the
    folder's build ``manifest`` (None without one); manifests of other folders read on demand,
    each once."""

    root: Path
    info: DatasetInfo
    folder: Path | None
    _manifests: dict = field(default_factory=dict, repr=False)

    def manifest_of(self, folder: Path | None) -> Manifest | None:
        """The build manifest of ``folder`` (read once), or None."""
        if folder is None:
            return None
        key = os.fspath(folder)
        if key not in self._manifests:
            self._manifests[key] = _manifest(key)
        return self._manifests[key]

    @property
    def manifest(self) -> Manifest | None:
        return self.manifest_of(self.folder)

    def build_manifest(self) -> tuple[Manifest | None, Path | None]:
        """The manifest describing this dataset's build and the folder holding it: the dataset
        folder's, else the root's (``build all``), else ``root/<name>``'s."""
        for folder in (self.folder, self.root, self.root / self.info.name):
            m = self.manifest_of(folder)
            if m is not None:
                return m, folder
        return None, None


def resolve(root, info: DatasetInfo) -> Source:
    """The :class:`Source` of ``info`` under folder ``root``."""
    root = root if isinstance(root, Path) else Path(root)
    return Source(root, info, find_dataset_folder(root, info))
