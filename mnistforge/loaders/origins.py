"""Where a loader's files come from (:class:`Origin`): :class:`CacheOrigin`, the official files,
verified, read from memory-mapped raw copies; :class:`FolderOrigin`, a folder of idx files under
the official names, each read once into memory.
"""
from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import settings
from ..cache.download import cache_path, fetch_file
from ..cache.local_raw import make_copy, valid_copy
from ..cache.mirrors import Mirrors, mirrors as user_mirrors
from ..cache.raw import check_raw_copy, first_raw_copy, make_raw_copy, read_member
from ..cache.verify import remove_with_marker, verify_file
from ..errors import DiskFullError, FormatError, IdxFormatError, MissingFileError, NotWritableError, PathArg
from ..gate.source import candidate_folders, locate, resolve
from ..io.compression import compression_of, strip_compression
from ..io.formats import read_array
from ..io.idx import FileRead, parse_idx_bytes, read_idx, read_idx_header, read_idx_whole, read_whole
from ..io.manifest import Manifest
from ..log import get_logger
from ..registry import DatasetInfo, RemoteFile, SplitInfo, get_file

logger = get_logger(__name__)


class Origin:
    """What :func:`mnistforge.loaders.load` asks of a place files come from: ``open`` (and
    ``open_optional``: None when the file is absent) over ``_open``, and ``length`` of a split."""
    kind: str
    where: str
    orientation: str
    status: dict[str, str]
    classes: list[str] | None

    def _open(self, fname: str, required: bool) -> np.ndarray | None:
        raise NotImplementedError

    def length(self, sp: SplitInfo) -> int:
        raise NotImplementedError

    def open(self, fname: str) -> np.ndarray:
        arr = self._open(fname, required=True)
        assert arr is not None
        return arr

    def open_optional(self, fname: str) -> np.ndarray | None:
        return self._open(fname, required=False)

    def named(self, fname: str) -> str:
        """The file an error names for ``fname``."""
        return f"{self.where}/{fname}"


class CacheOrigin(Origin):
    """Official files, fetched and verified into the cache."""
    kind = "cache"
    classes: list[str] | None = None

    def __init__(self, info: DatasetInfo, *, cache: PathArg | None = None, download: bool | None = None,
                 keep_raw: bool | None = None, progress: bool | None = None, check: bool = False,
                 mirrors: str | Sequence[str] | Mirrors | None = None) -> None:
        self.info = info
        # parsed now: a bad template is a usage error before anything is read
        self.mirrors = user_mirrors(mirrors)
        self.dead_hosts: set[str] = set()  # a host that refused is asked once per load
        self.check = check  # re-hash every file, trusting no sidecar
        s = settings.current(cache=cache, keep_raw=keep_raw)
        self.cache, self.keep_raw = s.cache, s.keep_raw
        # what fetch is told: None when the settings decide (its errors name the switch used)
        self.offline_arg = None if download is None else not download
        self.progress = progress
        self.status: dict[str, str] = {}
        self.orientation = info.orientation
        self.where = os.path.join(self.cache, info.group)

    def __str__(self) -> str:
        return f"cache {self.where}"

    def length(self, sp: SplitInfo) -> int:
        return sp.count

    def _open(self, fname: str, required: bool) -> np.ndarray | None:
        try:
            remote = get_file(f"{self.info.group}/{fname}")
        except KeyError:
            if required:
                raise
            return None  # e.g. EMNIST metadata: only built folders have it
        if not remote.has_raw_copy:  # read as it is, in the format the registry declares
            return self._open_as_is(fname, remote)
        # plain strings on the way to a valid raw copy: pathlib was a tenth of a repeat load
        raw_name = os.path.join(self.cache, remote.group, remote.raw_name)
        if os.path.isfile(raw_name):
            if (arr := self._open_raw_copy(raw_name, remote)) is not None:
                return arr
        raw = Path(raw_name)
        if self.keep_raw:  # a first load: verify and decompress in one read
            if (v := first_raw_copy(remote, cache_path(remote, self.cache), raw, rehash=self.check)) is not None:
                self.status[fname] = v.status
                return read_idx(raw)
        res = fetch_file(remote, root=self.cache, progress=self.progress,
                         offline=self.offline_arg, rehash=self.check, mirrors=self.mirrors, dead_hosts=self.dead_hosts)
        self.status[fname] = res.status
        if self.keep_raw:
            try:
                make_raw_copy(res, remote, raw)
            except (NotWritableError, DiskFullError) as e:
                # a read-only or full cache still serves its verified files, just slower
                logger.warning("%s; reading the compressed file instead", e)
            else:
                self.status.setdefault(remote.name, res.status)
                return read_idx(raw)
        if res.member:
            return parse_idx_bytes(read_member(res, remote), f"{res.path}:{res.member}", compression=remote.compression)
        return read_idx(res.path)

    def _open_as_is(self, fname: str, remote: RemoteFile) -> np.ndarray:
        """A file the cache keeps no raw copy of (an ``.npz``, a raw idx file), verified."""
        res = fetch_file(remote, root=self.cache, progress=self.progress, offline=self.offline_arg, rehash=self.check)
        self.status[fname] = res.status
        if not res.member:
            return read_array(res.path, remote.format, remote.array)
        data = read_member(res, remote)   # checked against the member's own hash
        if remote.format == "idx":
            return parse_idx_bytes(data, f"{res.path}:{res.member}", compression=remote.compression)
        return read_array(io.BytesIO(data), remote.format, remote.array)

    def _open_raw_copy(self, raw: str, remote: RemoteFile) -> np.ndarray | None:
        if (v := check_raw_copy(raw, remote, rehash=self.check)) is None:
            return None
        if self.check and remote.member is None:   # check=True re-hashes the download too
            packed = cache_path(remote, self.cache)
            if packed.is_file():
                verify_file(packed, remote, use_marker=False)
        self.status[remote.name] = v.status if v.status != "derived" else self.status.get(remote.name, "derived")
        return read_raw_copy(raw)


def read_raw_copy(raw: PathArg) -> np.ndarray | None:
    """A raw copy the package made, memory-mapped; one that does not parse removed (None)."""
    try:
        return read_idx(raw)
    except IdxFormatError as e:
        logger.warning("%s; rebuilding the raw copy", e)
        remove_with_marker(raw)
        return None


def manifest_classes(manifest: Manifest | None, info: DatasetInfo) -> list[str] | None:
    """The class names a build manifest records where its class set is not the registry's (else None)."""
    entry = manifest.dataset(info.name) if manifest is not None else None
    short = info.name.split("-", 1)[1] if info.name.startswith("emnist-") else info.name
    if entry is None or entry.kind in (None, short) or not entry.class_names:
        return None  # the registry's class list is the right one
    return list(entry.class_names)


class FolderOrigin(Origin):
    """Idx files under their official names in a folder, each read once into memory: the array a
    caller gets is the bytes the gate judges (``reads``), whatever is written to the file later.
    ``keep_raw=True``: memory-mapped raw copies in the cache (:mod:`mnistforge.cache.local_raw`)."""

    kind = "folder"

    def __init__(self, info: DatasetInfo, root: PathArg, *, cache: PathArg | None = None,
                 keep_raw: bool = False, check: bool = False) -> None:
        self.info = info
        self.keep_raw = keep_raw
        self.check = check
        self.cache = settings.cache_home(cache) if keep_raw else None
        root = root if isinstance(root, Path) else Path(root)
        self.source = resolve(root, info)   # the folder and its manifest, found once
        if (folder := self.source.folder) is None:
            looked = ", ".join(str(p) for p in candidate_folders(root, info))
            want = sorted({sp.images for sp in info.splits.values() if sp.images})
            raise MissingFileError(
                f"no {info.name} files", path=root,
                expected=f"idx files named like {want[0]} (raw, .gz, .xz or .bz2) in one of {looked}",
                found="none", hint="build them with `mnistforge build` or give the right folder")
        self.folder = folder
        self.root = root
        self.where = str(folder)
        self.status: dict[str, str] = {}
        #: each file as it was read (the bytes the trust gate judges), by official name
        self.reads: dict[str, FileRead] = {}
        self._paths: dict[str, Path | None] = {}
        self.manifest = self.source.manifest
        self.orientation = (self.manifest and self.manifest.storage_orientation) or info.orientation
        self.classes = manifest_classes(self.manifest, info)

    def __str__(self) -> str:
        return f"folder {self.folder}"

    def named(self, fname: str) -> str:
        """The file that is there (``t10k-labels-idx1-ubyte`` for ``...ubyte.gz``), else as asked."""
        found = self.path_of(fname)
        return str(found) if found is not None else super().named(fname)

    def path_of(self, fname: str) -> Path | None:
        """Where ``fname`` is: the dataset's folder, else a sibling build folder (``<out>/xnist``)."""
        if fname not in self._paths:
            self._paths[fname] = locate(self.folder, fname) or self._find_elsewhere(fname)
        return self._paths[fname]

    def _find_elsewhere(self, fname: str) -> Path | None:
        others = candidate_folders(self.root, self.info)
        if self.root.is_dir():
            others += sorted(d for d in self.root.iterdir() if d.is_dir())
        for folder in others:
            p = locate(folder, fname) if folder.is_dir() and folder != self.folder else None
            if p is not None:
                return p
        return None

    def manifest_of(self, path: Path) -> Manifest | None:
        return self.source.manifest_of(path.parent)

    def _format(self, fname: str) -> tuple[str, str | None]:
        """The registry's format of ``fname`` and its ``.npz`` array (``idx``: a build's side file)."""
        try:
            remote = get_file(f"{self.info.group}/{fname}")
        except KeyError:
            return "idx", None
        return remote.format, remote.array

    def length(self, sp: SplitInfo) -> int:
        fname = sp.images or ""
        if fname in self.reads:
            return int(self.reads[fname].array.shape[0])
        if (p := self.path_of(fname)) is None:
            raise MissingFileError(f"{self.info.name} split {sp.name!r} is missing",
                                   path=self.folder / fname, expected="the images file",
                                   found="no such file (raw, .gz, .xz or .bz2)")
        fmt, array = self._format(fname)
        return int(read_array(p, fmt, array).shape[0]) if fmt != "idx" else int(read_idx_header(p).shape[0])

    def _open(self, fname: str, required: bool) -> np.ndarray | None:
        if (p := self.path_of(fname)) is None:
            if not required:
                return None
            raise MissingFileError(
                f"{self.info.name}: file missing", path=self.folder / fname,
                expected=f"{strip_compression(fname)} (raw, .gz, .xz or .bz2)", found="no such file",
                hint="build it with `mnistforge build` or copy it there")
        self.status.setdefault(fname, "local")
        fmt, array = self._format(fname)
        if fmt != "idx":   # an .npz under its official name: read as it is, from memory
            got = read_whole(p, lambda data: read_array(io.BytesIO(data), fmt, array))
        elif self.keep_raw and compression_of(p.name) is not None:
            got = self._read_copy(p) or read_idx_whole(p)
        else:
            got = read_idx_whole(p)
        self.reads[fname] = got
        return got.array

    def _read_copy(self, p: Path) -> FileRead | None:
        """The raw copy of ``p`` (made when missing or stale), mapped, with the hashes recorded of
        ``p`` when it was made; None when none can be made (then ``p`` itself is read)."""
        assert self.cache is not None
        if (got := valid_copy(p, self.cache, rehash=self.check)) is None:
            try:
                header = read_idx_header(p)
                made = make_copy(p, self.cache, content_size=header.offset + header.nbytes)
            except (FormatError, OSError) as e:
                logger.warning("no raw copy of %s (%s); reading it compressed", p, e)
                return None
            got = None if made is None else valid_copy(p, self.cache)
            if got is None:
                return None
        raw, rec = got
        if (arr := read_raw_copy(raw)) is None:
            return None
        st = os.stat(p)
        known = {"sha256": str(rec.get("source_sha256")), "content_sha256": str(rec.get("sha256"))}
        return FileRead(os.fspath(p), arr, b"", memoryview(b""), st, st, known)
