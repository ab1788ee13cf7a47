"""Is a folder's data what its file names say? Both files of a split, images included.

A folder load (``load(name, split, root=FOLDER)``: an idx folder, a build folder) checks
the labels file before reading anything else and the images file once it is read:

* with a build manifest (``manifest.json``): each file against the sha256 the manifest
  recorded for it ("changed since the build");
* without one: each file against the registry's hashes (of the file, or of its
  decompressed content when the folder holds a raw or re-compressed copy), through
  :func:`mnistforge.cache.verify.decide`.  The images' content hash is taken from the array
  just read (no second decompression).  A file whose hashes match another registry entry
  is named ("these are fashion-mnist's files"); when nothing is pinned the file loads as
  ``"unpinned"`` (logged).

Hashes are computed the first time a file is seen and kept in ``<cache>/seen/``
(:mod:`mnistforge.cache.seen`): a repeat load costs a ``stat`` and a record read while the
file keeps its size, mtime, ctime and inode (in the same process, a ``stat`` of the file and of
its record: the record is kept in memory, :func:`~mnistforge.cache.seen.known`).  The verdict
is re-made from the recorded hashes on every load (a registry update is honoured at once); ``check=True`` hashes again.
A mismatch raises :class:`~mnistforge.errors.DataMismatchError` saying what the files are
instead and how to load them anyway: ``load(..., trust_files=True)``, or
``MNISTFORGE_TRUST_FILES=1`` on the command line.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..cache.seen import identity, recall, remember
from ..cache.verify import decide
from ..errors import DataMismatchError
from ..io.compression import compression_of
from ..log import get_logger
from ..registry import DatasetInfo, RemoteFile, get_dataset, get_file, list_datasets, list_files
from .content import OPT_OUT
from .policy import POLICY

logger = get_logger(__name__)  # logging only when a record could be shown

__all__ = ["check_folder_file", "file_facts", "files_with_hashes", "OPT_OUT"]


class _Into:
    """A binary writer into a preallocated buffer (the decompressed file, without copies)."""

    def __init__(self, size: int):
        # np.empty: no zero-filling of tens of MB that are written over at once
        self.view = memoryview(np.empty(size, np.uint8)).cast("B")
        self.size = size
        self.n = 0

    def write(self, b) -> int:
        k = len(b)
        if self.n + k > self.size:
            raise ValueError("more content than the header says")
        self.view[self.n:self.n + k] = b
        self.n += k
        return k


def read_hashed(path: Path, *, packed: bool = True, content: bool = True, fast: bool = False
                ) -> tuple[np.ndarray, dict] | None:
    """A compressed idx file read once, its bytes (``packed``) and/or its content hashed on a
    second thread while it is decompressed (:func:`mnistforge.io.hashing.inflate_to`), and/or
    (``fast``) the content's XXH3-128 taken from the whole buffer once inflated (one call,
    ~0.1 ms for 7.8 MB): ``(array, facts)``; None when the file does not read cleanly (the
    caller's plain read names what is wrong)."""
    from ..errors import FormatError
    from ..io.hashing import inflate_to, xxh3_parts
    from ..io.idx import parse_idx_bytes, read_idx_header

    comp = compression_of(path.name)
    try:
        header = read_idx_header(path)
        out = _Into(header.offset + header.nbytes)
        got = inflate_to(path, out, comp, limit=out.size, packed=packed, content=content)
        if got.content_size != out.size:
            return None
        arr = parse_idx_bytes(out.view, path)
    except (FormatError, ValueError, OSError) as e:
        logger.debug("%s: no hashed read (%s)", path, e)
        return None
    arr.flags.writeable = False   # as read_idx gives it
    facts = {}
    if content:
        facts["content_sha256"] = got.content_sha256
    if fast:
        facts["content_xxh3_128"] = xxh3_parts(out.view)
    if packed:
        facts["sha256"] = got.sha256
    return arr, facts


def open_images(fsp, src, *, cache=None, rehash: bool = False) -> np.ndarray:
    """The images array of ``fsp`` from folder origin ``src``: a compressed file not yet recorded
    is read and hashed in one pass (:func:`read_hashed`), its hashes recorded; else ``src.open``."""
    path = src.path_of(fsp.images) if fsp.images else None
    if path is None or getattr(src, "keep_raw", False) or compression_of(path.name) is None:
        return src.open(fsp.images)
    facts = None if rehash else recall(path, cache)
    if facts is not None:   # recorded: what check_folder_images compares, recalled once per load
        arr = src.open(fsp.images)
        src.hashed[fsp.images] = facts
        return arr
    st = os.stat(path)
    # the content hash decides where the registry pins it: the file's bytes only otherwise
    packed, content, fast = _what_to_hash(src, fsp.images, path, st, rehash=rehash)
    if fast and not content:
        got = _read_fast(src, fsp.images, path, st, packed=packed)
    else:
        got = read_hashed(path, packed=packed, content=content, fast=fast)
    if got is None:
        return src.open(fsp.images)
    arr, facts = got
    if packed and not (content or fast) and src.manifest_of(path) is None \
            and _pins_other_bytes(src, fsp.images, facts):
        # a copy of the published size with other bytes (re-compressed): its content decides;
        # hashed here from the array (the fastest hash the registry records), so the file is
        # read and recorded once
        from ..io.idx import idx_content_sha256, idx_content_xxh3

        if _fast_pinned(src, fsp.images) and not rehash:
            facts["content_xxh3_128"] = idx_content_xxh3(arr)
        else:
            facts["content_sha256"] = idx_content_sha256(arr)
    src.status.setdefault(fsp.images, "local")
    src.stats[fsp.images] = st
    src.hashed[fsp.images] = facts
    remember(path, facts, before=st, cache=cache)
    return arr


def _read_fast(src, fname: str, path: Path, before: os.stat_result, *, packed: bool
               ) -> tuple[np.ndarray, dict]:
    """``fname`` read as a plain load reads it (no tee of the inflate into hashes) and its content's
    XXH3-128 taken from the array (~0.3 ms for 7.8 MB); with ``packed``, the sha256 of the
    file's (smaller) bytes on a second thread meanwhile (~1 ms for MNIST's 1.6 MB; the inflate
    and hashlib release the GIL), so a published file is told ``exact``."""
    from ..io.idx import idx_content_xxh3

    facts: dict = {}
    thread = None
    if packed:
        import threading

        from ..io.hashing import sha256_file

        def _packed() -> None:
            try:
                facts["sha256"] = sha256_file(path)
            except OSError as e:   # the read below names what is wrong
                logger.debug("%s: no sha256 (%s)", path, e)

        thread = threading.Thread(target=_packed, name="mnistforge-sha256", daemon=True)
        thread.start()
    try:
        arr = src.open(fname)
    finally:
        if thread is not None:
            thread.join()
    if "sha256" in facts and identity(os.stat(path)) != identity(before):
        # replaced or written while the two reads ran: the bytes hashed may not be the ones
        # read, so only the content's hash, taken from the array itself, may decide
        del facts["sha256"]
    facts["content_xxh3_128"] = idx_content_xxh3(arr)
    return arr, facts


def _what_to_hash(src, fname: str, path: Path, st: os.stat_result, *, rehash: bool = False
                  ) -> tuple[bool, bool, bool]:
    """(the file's bytes, its content by sha256, its content by XXH3-128): what the one-pass
    read hashes.  The cheapest hash that can decide: a build's manifest records the bytes; a
    file of the published size is most likely the published file, whose (smaller) compressed
    bytes the registry pins (and its content by the fast hash where recorded, so that a copy
    re-compressed to the same size is decided by the same read); any other copy is judged by
    its content where the registry pins it, by the fast hash where recorded (not with
    ``rehash``: ``check=True`` promises sha256).
    Only an order: whatever the hash found, the verdict is the registry's (a published-size
    file that differs is then hashed by content from the array)."""
    if src.manifest_of(path) is not None:
        return True, False, False
    try:
        remote = get_file(f"{src.info.group}/{fname}")
    except KeyError:
        return True, False, False
    fast = bool(remote.content_xxh3_128) and not rehash
    if remote.sha256 and remote.size == st.st_size and compression_of(path.name) == remote.compression:
        return True, False, fast
    if fast:
        return False, False, True
    return not remote.content_sha256, bool(remote.content_sha256), False


def _fast_pinned(src, fname: str) -> bool:
    """Whether the registry records the fast content hash of ``fname``."""
    try:
        return bool(get_file(f"{src.info.group}/{fname}").content_xxh3_128)
    except KeyError:
        return False


def _pins_other_bytes(src, fname: str, facts: dict) -> bool:
    """Whether the registry pins the content of ``fname`` and a file's bytes other than ``facts``'."""
    try:
        remote = get_file(f"{src.info.group}/{fname}")
    except KeyError:
        return False
    return bool(remote.content_sha256 and remote.sha256 and remote.sha256 != facts.get("sha256"))


def file_facts(path: Path, need: tuple[str, ...], *, array: np.ndarray | None = None,
               before: os.stat_result | None = None, cache=None, rehash: bool = False,
               known: dict | None = None) -> dict:
    """The hashes ``need`` (``sha256``, ``md5``, ``content_sha256``, ``content_md5``,
    ``content_xxh3_128``) of ``path``:
    ``known`` (hashed as it was read), or recalled while the file keeps its identity, else
    computed (the content from ``array``, the file as read, when given) and recorded.
    ``before``: the file's stat before it was read."""
    facts = dict(known) if known else {} if rehash else dict(recall(path, cache) or {})
    missing = [k for k in need if k not in facts]
    if not missing:
        return facts
    from ..io.hashing import hash_content, hash_file

    st = before if before is not None else os.stat(path)
    raw = compression_of(path.name) is None
    if "content_xxh3_128" in missing:  # the fast content hash: from the array, else one read
        from ..io.hashing import xxh3_content, xxh3_file
        from ..io.idx import idx_content_xxh3

        fast = idx_content_xxh3(array) if array is not None else \
            xxh3_file(path) if raw else xxh3_content(path)
        if fast is not None:
            facts["content_xxh3_128"] = fast
        missing.remove("content_xxh3_128")
    if any(k in missing for k in ("sha256", "md5")) or (raw and missing):
        sha, md5 = hash_file(path, md5="md5" in missing or (raw and "content_md5" in missing))
        facts["sha256"] = sha
        if md5 is not None:
            facts["md5"] = md5
        if raw:  # a raw file's bytes are its content
            facts["content_sha256"] = sha
            if md5 is not None:
                facts["content_md5"] = md5
    if not raw and "content_sha256" in missing and "content_md5" not in missing and array is not None:
        from ..io.idx import idx_content_sha256

        facts["content_sha256"] = idx_content_sha256(array)
    elif not raw and any(k in missing for k in ("content_sha256", "content_md5")):
        got = hash_content(path, md5="content_md5" in missing)
        if got is not None:
            facts["content_sha256"] = got[0]
            if got[1] is not None:
                facts["content_md5"] = got[1]
    remember(path, facts, before=st, cache=cache)
    return facts


#: the policy's hash names -> the keys of a file's facts (and of a registry entry)
FACT = {"content xxh3_128": "content_xxh3_128", "content sha256": "content_sha256",
        "content md5": "content_md5", "sha256": "sha256", "md5": "md5"}


def _needs(path: Path, remote: RemoteFile, route: str = "idx-folder", *,
           rehash: bool = False) -> tuple[str, ...]:
    """The hash that decides ``path`` against ``remote``: the first of the route's policy
    (:data:`~mnistforge.gate.policy.POLICY`) the registry pins.  Content first: one hash decides
    for the published file and any re-compressed copy, and the images' content is hashed from
    the array already read; a file's own hash applies only to a file of the same compression.
    ``rehash`` (``check=True``): never the fast hash, which identifies but does not promise."""
    same_wrapper = compression_of(path.name) == remote.compression
    for name in POLICY[route].hashes:
        key = FACT.get(name)
        if rehash and key == "content_xxh3_128":
            continue
        if key and getattr(remote, key) and (key.startswith("content") or same_wrapper):
            return (key,)
    return ()


def _registry_status(path: Path, remote: RemoteFile, h: dict) -> str | None:
    """``decide``'s status for a local copy that may be raw or re-compressed; "unpinned" when
    nothing comparable is pinned."""
    same_wrapper = compression_of(path.name) == remote.compression
    has_content = bool(remote.content_sha256 or remote.content_md5 or remote.content_xxh3_128)
    fast = h.get("content_xxh3_128")
    if same_wrapper:
        if not (remote.sha256 or remote.md5 or has_content):
            return "unpinned"
        return decide(remote, h.get("sha256"), h.get("md5"), h.get("content_sha256"),
                      h.get("content_md5"), content_xxh3_128=fast)
    if not has_content:
        return "unpinned"  # a raw or re-compressed copy, and only the wrapper is pinned
    if compression_of(path.name) is None:
        return decide(remote, h.get("sha256"), h.get("md5"), raw=True, content_xxh3_128=fast)
    return decide(remote, None, None, h.get("content_sha256"), h.get("content_md5"),
                  content_xxh3_128=fast)


def _usage(remote: RemoteFile) -> list[tuple[str, str]]:
    """(dataset, split) pairs whose files include ``remote``."""
    out = []
    for name in list_datasets():
        info = get_dataset(name)
        if info.group != remote.group:
            continue
        for sp in info.splits.values():
            if not sp.is_view and remote.name in (sp.images, sp.labels):
                out.append((name, sp.name))
    return out


def files_with_hashes(h: dict) -> list[tuple[RemoteFile, list[tuple[str, str]]]]:
    """Registry files whose published or content hashes equal the hashes in ``h``."""
    hits = []
    for rf in list_files():
        if (rf.sha256 and rf.sha256 == h.get("sha256")) or (rf.md5 and rf.md5 == h.get("md5")) \
                or (rf.content_sha256 and rf.content_sha256 == h.get("content_sha256")) \
                or (rf.content_md5 and rf.content_md5 == h.get("content_md5")) \
                or (rf.content_xxh3_128 and rf.content_xxh3_128 == h.get("content_xxh3_128")):
            hits.append((rf, _usage(rf)))
    return hits


def _manifest_sha(manifest, fname: str) -> str | None:
    out = manifest.outputs.get(fname) if isinstance(manifest.outputs, dict) else None
    return out.get("sha256") if isinstance(out, dict) else out


def check_folder_file(info: DatasetInfo, split: str, path: Path, fname: str, manifest, *,
                      array: np.ndarray | None = None, before: os.stat_result | None = None,
                      cache=None, rehash: bool = False, known: dict | None = None) -> str:
    """Check the local file ``path`` (official name ``fname``) of ``info``; return its status.

    Statuses: ``"built"`` (matches the build manifest), ``exact``/``content``/``raw``
    (matches the registry, see :mod:`mnistforge.cache.verify`), ``"unpinned"``
    (nothing to compare with).  Raises DataMismatchError otherwise.  ``array``: the file's
    content as read (its hash spares a second decompression).
    """
    kw = dict(array=array, before=before, cache=cache, rehash=rehash, known=known)
    if manifest is not None:
        want = _manifest_sha(manifest, path.name)
        if want:
            sha = file_facts(path, ("sha256",), **kw)["sha256"]
            if sha == want:
                return "built"
            raise DataMismatchError(
                f"{info.name}: the file changed since it was built", path=path,
                expected=f"sha256 {want} (recorded in {path.parent / 'manifest.json'})",
                found=f"sha256 {sha}",
                hint="rebuild the folder (`mnistforge build`), or " + OPT_OUT)
        if not manifest.outputs:  # a manifest written before outputs were hashed: nothing to compare
            logger.info("%s: its manifest records no output hashes; not checked", path)
            return "unpinned"
    try:
        remote = get_file(f"{info.group}/{fname}")
    except KeyError:
        return "unpinned"
    h = file_facts(path, (), **kw)   # what is known already (hashed in the read, or recorded)
    status = _registry_status(path, remote, h) if h else None
    if status is None:
        need = _needs(path, remote, rehash=rehash)
        h = file_facts(path, need, **kw) if need else h
        status = _registry_status(path, remote, h)
    if status is not None:
        return status
    # a mismatch: every hash, to say what the file is instead
    h = file_facts(path, ("sha256", "content_sha256"), **kw)
    hits = [(rf, uses) for rf, uses in files_with_hashes(h) if rf.id != remote.id]
    pinned = next(f"{k.replace('_', ' ')} {getattr(remote, k)}" for k in
                  ("content_sha256", "sha256", "content_md5", "md5") if getattr(remote, k))
    if hits:
        rf, uses = hits[0]
        what = f"{rf.id}" + (f" ({', '.join(f'{n} {s}' for n, s in uses)})" if uses else "")
        hint = ""
        if uses:
            n, s = uses[0]
            hint = (f"load them as what they are: mnistforge.load({n!r}, {s!r}, "
                    f"root={str(path.parent)!r}); or, ")
        raise DataMismatchError(
            f"these are not {info.name}'s files", path=path,
            expected=f"{info.name} {split}: {remote.id} ({pinned})", found=f"the data of {what}",
            hint=hint + OPT_OUT)
    raise DataMismatchError(
        f"the files are not {info.name}'s", path=path,
        expected=f"{info.name} {split}: {remote.id} ({pinned})",
        found=f"other content (sha256 {h.get('sha256')}, content sha256 {h.get('content_sha256')})"
              + (", and no build manifest.json next to it" if manifest is None
                 else f", and {path.parent / 'manifest.json'} does not list {path.name}"),
        hint="a folder you built has a manifest.json (build it with `mnistforge build`); "
             "official files must be the published ones; " + OPT_OUT)


def check_folder(info: DatasetInfo, fsp, src, *, cache=None, rehash: bool = False) -> None:
    """Check the labels file of file split ``fsp`` in folder origin ``src`` before anything is
    read (a label file is tens of kB).  Records the status in ``src.status``."""
    path = src.path_of(fsp.labels) if fsp.labels else None
    if path is None or fsp.labels == fsp.images:
        return  # missing: opening it says so
    src.status[fsp.labels] = check_folder_file(info, fsp.name, path, fsp.labels, src.manifest_of(path),
                                               cache=cache, rehash=rehash)


def check_folder_images(info: DatasetInfo, fsp, src, images: np.ndarray, *, cache=None,
                        rehash: bool = False) -> None:
    """Check the images file of ``fsp`` once read (``images``: its array, whose content hash
    spares a second decompression).  Records the status in ``src.status``."""
    path = src.path_of(fsp.images) if fsp.images else None
    if path is None:
        return
    status = check_folder_file(info, fsp.name, path, fsp.images, src.manifest_of(path),
                               array=images, before=src.stats.get(fsp.images), cache=cache,
                               rehash=rehash, known=src.hashed.get(fsp.images))
    src.status[fsp.images] = status
    if all(src.status.get(f) in ("unpinned", "archive", None) for f in (fsp.images, fsp.labels)):
        logger.info("%s %s in %s: no hash to check the files against (unverified)", info.name,
                    fsp.name, src.where)
