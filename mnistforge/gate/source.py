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

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..io.compression import COMPRESSIONS, strip_compression
from ..registry import DatasetInfo

if TYPE_CHECKING:
    from ..io.manifest import Manifest

__all__ = ["Source", "candidate_folders", "find_dataset_folder", "locate", "read_manifest", "resolve"]


def read_manifest(folder) -> Manifest | None:
    """The build manifest (``manifest.json``) of ``folder``, or None: the one place outside
    :mod:`mnistforge.io` that reads one (a :class:`Source` reads each folder's once)."""
    from ..io.manifest import Manifest

    return Manifest.read(folder)


def locate(folder: Path, fname: str) -> Path | None:
    """``folder/<fname>`` under any compression (raw first), or None."""
    stem = strip_compression(fname)
    for suf in COMPRESSIONS:
        p = folder / (stem + suf)
        if p.is_file():
            return p
    return None


def candidate_folders(root: Path, info: DatasetInfo) -> list[Path]:
    """Folders a dataset's files may be in, under ``root`` (build layouts included)."""
    root = Path(root)
    out = [root, root / info.name, root / info.group, root / "gzip", root / info.group / "gzip"]
    seen, uniq = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            uniq.append(p)
    return uniq


def find_dataset_folder(root, info: DatasetInfo) -> Path | None:
    """The first candidate folder holding the images of one of ``info``'s file splits."""
    files = [sp.images for sp in info.splits.values() if sp.images]
    for folder in candidate_folders(root, info):
        if folder.is_dir() and any(locate(folder, f) for f in files):
            return folder
    return None


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
        folder = Path(folder)
        if folder not in self._manifests:
            self._manifests[folder] = read_manifest(folder)
        return self._manifests[folder]

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
    root = Path(root)
    return Source(root, info, find_dataset_folder(root, info))
