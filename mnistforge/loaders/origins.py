"""Where a loader's files come from: the verified cache, or a folder of idx files.

Both kinds answer the same two questions, so :func:`mnistforge.loaders.load`
has one code path:

* ``open(file_name)`` -> the idx array (memory map when raw), and
  ``open_optional(file_name)`` -> the same, or None for an optional file that is absent;
* ``length(split_info)`` -> the number of rows of a file split.

:class:`CacheOrigin` serves the official files: it fetches/verifies them
through :mod:`mnistforge.cache.download` and, once a compressed file has been
verified, keeps a decompressed raw copy next to it (``<cache>/<group>/<name
without .gz>``, with its own ``.sha256`` sidecar) so later loads are memory
maps.  Opt out with ``keep_raw=False`` or ``MNISTFORGE_KEEP_RAW=0``.  A file in
another format the registry declares (``format: npz``) is verified and read as it
is (:mod:`mnistforge.io.formats`).

:class:`FolderOrigin` serves a folder of idx files under the official names
(a build folder, or official files you already have); the orientation comes
from the folder's ``manifest.json`` when it says so, else from the registry.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import settings
from ..cache.raw import check_raw_copy, discard_raw_copy
from ..cache.seen import Stamp, looked_size, not_from_memos, stamp_of
from ..errors import DiskFullError, IdxFormatError, MissingFileError, NotWritableError
from ..gate.source import candidate_folders, find_dataset_folder, locate, resolve  # noqa: F401 - re-exported
from ..log import get_logger
from ..io.compression import compression_of, strip_compression
from ..io.idx import parse_idx_bytes, read_idx, read_idx_header
from ..registry import DatasetInfo, SplitInfo, get_file

if TYPE_CHECKING:
    from ..errors import PathArg
    from ..io.manifest import Manifest
    from ..registry import RemoteFile
    from ..settings import Mirrors

# ``locate``, ``candidate_folders``, ``find_dataset_folder`` live in gate.source (re-exported
# here).  Fetching, making raw copies and reading build manifests import their modules where they
# happen: a load served from valid raw copies in the cache needs none of them.

logger = get_logger(__name__)  # logging only when a record could be shown


class Origin(Protocol):
    """What :func:`mnistforge.loaders.load` asks of a place files come from."""

    kind: str
    where: str
    orientation: str
    status: dict[str, str]
    classes: list[str] | None

    def open(self, fname: str) -> np.ndarray: ...

    def open_optional(self, fname: str) -> np.ndarray | None: ...

    def length(self, sp: SplitInfo) -> int: ...


class _Opening:
    """``open``/``open_optional`` over a subclass's ``_open(fname, required)``."""

    def _open(self, fname: str, required: bool) -> np.ndarray | None:
        raise NotImplementedError

    def open(self, fname: str) -> np.ndarray:
        arr = self._open(fname, required=True)
        assert arr is not None
        return arr

    def open_optional(self, fname: str) -> np.ndarray | None:
        """The array of ``fname``, or None when the file is absent (e.g. metadata)."""
        return self._open(fname, required=False)


class CacheOrigin(_Opening):
    """Official files, fetched and verified into the cache (see module doc)."""

    kind = "cache"
    classes: list[str] | None = None

    def __init__(self, info: DatasetInfo, *, cache: PathArg | None = None, download: bool | None = None,
                 keep_raw: bool | None = None, progress: bool | None = None, check: bool = False,
                 mirrors: str | Sequence[str] | Mirrors | None = None) -> None:
        self.info = info
        # parsed now: a bad template is a usage error before anything is read
        self.mirrors = settings.mirrors(mirrors)
        self.dead_hosts: set[str] = set()  # a host that refused is asked once per load
        self.check = check  # re-hash every file, trusting no sidecar
        self.cache = settings.cache_home(cache)
        self.offline = settings.offline(None if download is None else not download)
        # what fetch is told: None when the environment decides (its errors name the switch used)
        self.offline_arg = None if download is None else not download
        self.keep_raw = settings.keep_raw(keep_raw)
        self.progress = progress
        self.status: dict[str, str] = {}
        self.orientation = info.orientation
        self.where = os.path.join(self.cache, info.group)

    def __str__(self) -> str:
        return f"cache {self.where}"

    def length(self, sp: SplitInfo) -> int:
        return sp.count

    def _open(self, fname: str, required: bool) -> np.ndarray | None:
        fid = f"{self.info.group}/{fname}"
        try:
            remote = get_file(fid)
        except KeyError:
            if required:
                raise
            return None  # e.g. EMNIST metadata: only built folders have it
        if not remote.has_raw_copy:  # read as it is, in the format the registry declares
            return self._open_as_is(fname, remote)
        # plain strings on the way to a valid raw copy: pathlib was a tenth of a repeat load
        raw_name = os.path.join(self.cache, remote.group, remote.raw_name)
        if os.path.isfile(raw_name):
            arr = self._open_raw_copy(raw_name, remote)
            if arr is not None:
                return arr
        raw = Path(raw_name)
        if self.keep_raw:  # a first load: verify and decompress in one read
            from ..cache.download import cache_path
            from ..cache.raw import first_raw_copy

            v = first_raw_copy(remote, cache_path(remote, self.cache), raw, rehash=self.check)
            if v is not None:
                self.status[fname] = v.status
                return read_idx(raw)
        from ..cache.download import fetch_file
        from ..cache.raw import make_raw_copy, read_member

        res = fetch_file(remote, root=self.cache, progress=self.progress,
                         offline=self.offline_arg, rehash=self.check, mirrors=self.mirrors,
                         dead_hosts=self.dead_hosts)
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
            return parse_idx_bytes(read_member(res, remote), f"{res.path}:{res.member}",
                                   compression=remote.compression)
        return read_idx(res.path)

    def _open_as_is(self, fname: str, remote: RemoteFile) -> np.ndarray:
        """A file the cache keeps no decompressed copy of (an ``.npz``, a raw idx file):
        fetched and verified, then read through :func:`mnistforge.io.formats.read_array`."""
        from ..cache.download import fetch_file
        from ..io.formats import read_array

        res = fetch_file(remote, root=self.cache, progress=self.progress,
                         offline=self.offline_arg, rehash=self.check)
        self.status[fname] = res.status
        if not res.member:
            return read_array(res.path, remote.format, remote.array)
        from ..cache.raw import read_member

        data = read_member(res, remote)   # checked against the member's own hash
        if remote.format == "idx":
            return parse_idx_bytes(data, f"{res.path}:{res.member}", compression=remote.compression)
        import io

        return read_array(io.BytesIO(data), remote.format, remote.array)

    def _open_raw_copy(self, raw: str, remote: RemoteFile) -> np.ndarray | None:
        v = check_raw_copy(raw, remote, rehash=self.check)
        if v is None:
            return None
        if self.check:  # check=True re-hashes the compressed download too, not only its copy
            self._recheck_download(remote)
        self.status[remote.name] = v.status if v.status != "derived" else self.status.get(
            remote.name, "derived")
        return read_raw_copy(raw)

    def _recheck_download(self, remote: RemoteFile) -> None:
        """Re-hash the cached compressed file of ``remote`` (when kept), never trusting its
        sidecar; a mismatch raises HashMismatchError (`mnistforge fetch` gets it again)."""
        from ..cache.download import cache_path
        from ..cache.verify import verify_file

        packed = cache_path(remote, self.cache)
        if remote.member is None and packed.is_file():
            verify_file(packed, remote, use_marker=False)


#: inside :class:`recorded_reads`: resolved path -> (the array a folder's idx file gave, the
#: file's identity just before it was read)
_READS: ContextVar[dict[str, tuple[np.ndarray, Stamp]] | None] = ContextVar("mnistforge_reads",
                                                                            default=None)


class recorded_reads:
    """Inside the block, every idx file a :class:`FolderOrigin` reads is noted with its array
    (``with recorded_reads() as reads``): a caller that would parse the same files again (verify's
    parse check) takes the arrays while each file keeps its identity."""

    __slots__ = ("_token", "reads")

    def __enter__(self) -> dict[str, tuple[np.ndarray, Stamp]]:
        self.reads: dict[str, tuple[np.ndarray, Stamp]] = {}
        self._token = _READS.set(self.reads)
        return self.reads

    def __exit__(self, *exc: object) -> None:
        _READS.reset(self._token)


def read_raw_copy(raw: PathArg) -> np.ndarray | None:
    """A raw copy the package made, memory-mapped; one that does not parse is removed (with
    its sidecar) and None returned, so that the caller makes it again.  Its size comes from the
    identity this load's checks took of it, when they did (no second ``stat``)."""
    try:
        return read_idx(raw, size=looked_size(os.fspath(raw)))
    except IdxFormatError as e:
        logger.warning("%s; rebuilding the raw copy", e)
        not_from_memos()   # a write no memo saw coming
        discard_raw_copy(raw)
        return None


def manifest_classes(manifest: Manifest | None, info: DatasetInfo) -> list[str] | None:
    """The class names a build manifest records for this dataset, if any.

    A build can differ from the registry's class list (EMNIST letters built as
    the paper's 37-class variant); the entry's class set (``kind``) then says so.
    """
    entry = manifest.dataset(info.name) if manifest is not None else None
    short = info.name.split("-", 1)[1] if info.name.startswith("emnist-") else info.name
    if entry is None or entry.kind in (None, short) or not entry.class_names:
        return None  # the registry's class list is the right one
    return list(entry.class_names)


class FolderOrigin(_Opening):
    """Idx files under their official names in a folder (built or official).

    ``keep_raw=True`` keeps a decompressed copy of each compressed file in the
    cache (never in the folder; see :mod:`mnistforge.cache.local_raw`), so
    later loads are memory maps; ``check=True`` re-hashes such copies.
    """

    kind = "folder"

    def __init__(self, info: DatasetInfo, root: PathArg, *, cache: PathArg | None = None,
                 keep_raw: bool = False, check: bool = False) -> None:
        self.info = info
        self.keep_raw = keep_raw
        self.check = check
        self._cache_arg = cache
        self._cache: Path | None = None
        root = root if isinstance(root, Path) else Path(root)
        self.source = resolve(root, info)   # the folder and its manifest, found once
        folder = self.source.folder
        if folder is None:
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
        #: each file's stat just before it was read (the gate records hashes under it)
        self.stats: dict[str, os.stat_result] = {}
        #: hashes of files hashed while they were read (the gate's one-pass read)
        self.hashed: dict[str, dict[str, Any]] = {}
        self._paths: dict[str, Path | None] = {}
        #: the idx file each file was read from (its raw copy with ``keep_raw``); None: another
        #: format (read by :mod:`mnistforge.io.formats`)
        self.read_from: dict[str, str | None] = {}
        self.manifest = self.source.manifest
        self.orientation = (self.manifest and self.manifest.storage_orientation) or info.orientation
        self.classes = manifest_classes(self.manifest, info)

    def __str__(self) -> str:
        return f"folder {self.folder}"

    @property
    def cache(self) -> Path | None:
        """The cache the raw copies go to (``keep_raw``), resolved when first needed: a load the
        gate's kept verdict serves never asks (:mod:`mnistforge.gate.kept`)."""
        if self.keep_raw and self._cache is None:
            self._cache = settings.cache_home(self._cache_arg)
        return self._cache

    def path_of(self, fname: str) -> Path | None:
        """Where ``fname`` is: in the dataset's folder, else in a sibling build folder
        (``build all`` writes qmnist's ``nist`` files to ``<out>/xnist``); found once per load."""
        if fname not in self._paths:
            self._paths[fname] = self._find(fname)
        return self._paths[fname]

    def _find(self, fname: str) -> Path | None:
        p = locate(self.folder, fname)
        if p is not None:
            return p
        not_from_memos()   # the sibling folders are listed, not remembered
        others = candidate_folders(self.root, self.info)
        if self.root.is_dir():
            others += sorted(d for d in self.root.iterdir() if d.is_dir())
        for folder in others:
            p = locate(folder, fname) if folder.is_dir() and folder != self.folder else None
            if p is not None:
                return p
        return None

    def manifest_of(self, path: Path) -> Manifest | None:
        """The build manifest of the folder holding ``path`` (each read once)."""
        return self.source.manifest_of(path.parent)

    def _format(self, fname: str) -> tuple[str, str | None]:
        """The format the registry declares for ``fname`` (and its ``.npz`` array): ``idx``
        for a file it does not list (a build's side files)."""
        try:
            remote = get_file(f"{self.info.group}/{fname}")
        except KeyError:
            return "idx", None
        return remote.format, remote.array

    def length(self, sp: SplitInfo) -> int:
        p = self.path_of(sp.images or "")
        if p is None:
            raise MissingFileError(f"{self.info.name} split {sp.name!r} is missing",
                                   path=self.folder / (sp.images or ""), expected="the images file",
                                   found="no such file (raw, .gz, .xz or .bz2)")
        fmt, array = self._format(sp.images or "")
        if fmt != "idx":
            from ..io.formats import read_array

            return int(read_array(p, fmt, array).shape[0])
        return int(read_idx_header(p).shape[0])

    def _open(self, fname: str, required: bool) -> np.ndarray | None:
        p = self.path_of(fname)
        if p is None:
            if not required:
                return None
            raise MissingFileError(
                f"{self.info.name}: file missing", path=self.folder / fname,
                expected=f"{strip_compression(fname)} (raw, .gz, .xz or .bz2)", found="no such file",
                hint="build it with `mnistforge build` or copy it there")
        self.status.setdefault(fname, "local")
        self.stats[fname] = os.stat(p)
        fmt, array = self._format(fname)
        if fmt != "idx":   # an .npz under its official name: read as it is
            from ..io.formats import read_array

            self.read_from[fname] = None
            return read_array(p, fmt, array)
        if self.keep_raw and compression_of(p.name) is not None:
            got = self._open_copy(p)
            if got is not None:
                self.read_from[fname] = got[1]
                return got[0]
        self.read_from[fname] = os.fspath(p)
        arr = read_idx(p)
        reads = _READS.get()
        if reads is not None:   # verify's parse check takes this array instead of inflating again
            reads[os.path.realpath(p)] = (arr, stamp_of(self.stats[fname]))
        return arr

    def _open_copy(self, p: Path) -> tuple[np.ndarray, str] | None:
        """The raw copy of compressed ``p`` in the cache, made when missing or stale, and its
        path; None when it cannot be made (the caller reads ``p`` itself, which names what is
        wrong)."""
        from ..cache.local_raw import make_copy, valid_copy
        from ..errors import FormatError

        assert self.cache is not None
        raw = valid_copy(p, self.cache, rehash=self.check)
        if raw is None:
            try:
                header = read_idx_header(p)
                raw = make_copy(p, self.cache, content_size=header.offset + header.nbytes)
            except (FormatError, OSError) as e:
                logger.warning("no raw copy of %s (%s); reading it compressed", p, e)
                return None
            if raw is None:
                return None
        arr = read_raw_copy(raw)
        return None if arr is None else (arr, os.fspath(raw))
