"""Is a folder's data what its file names say? Each file judged by the bytes read (the labels first) against its build
manifest's sha256, else the registry's hashes of the file or its content; a match with another entry is named; hashes
kept in ``<cache>/seen/`` while the file keeps its identity (``docs/loading.md``, "Is a folder what its names say?").
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..cache.seen import recall, remember
from ..cache.verify import decide
from ..errors import DataMismatchError
from ..io.compression import compression_of
from ..io.idx import FileRead, read_idx_whole
from ..io.manifest import Manifest
from ..log import get_logger
from ..registry import DatasetInfo, RemoteFile, get_dataset, get_file, list_datasets, list_files
from .content import OPT_OUT
from .policy import POLICY

logger = get_logger(__name__)

__all__ = ["check_folder_file", "facts_of", "files_with_hashes", "path_facts", "OPT_OUT"]


def facts_of(read: FileRead, need: tuple[str, ...], *, cache: str | os.PathLike[str] | None = None,
             rehash: bool = False) -> dict[str, Any]:
    """The hashes ``need`` of the file ``read``: recorded while it keeps its identity, else from its bytes."""
    facts: dict[str, Any] = dict(read.known)
    if not rehash and read.steady:
        facts.update(recall(read.path, cache, st=read.before) or {})
    missing = [k for k in need if k not in facts]
    for k in missing:
        facts[k] = read.digest(k)
    if compression_of(read.path) is None:   # a raw file's bytes are its content
        for packed in ("sha256", "md5"):
            for a, b in ((packed, f"content_{packed}"), (f"content_{packed}", packed)):
                if a in facts and b not in facts:
                    facts[b] = facts[a]
    if missing and read.steady and not read.known:
        remember(read.path, facts, before=read.before, after=read.after, cache=cache)
    return facts


def path_facts(path: str | os.PathLike[str], need: tuple[str, ...], *,
               cache: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """:func:`facts_of` an idx file not otherwise read: its record, else one read."""
    facts = recall(path, cache) or {}
    return facts if all(k in facts for k in need) else facts_of(read_idx_whole(path), need, cache=cache)


def _needs(path: Path, remote: RemoteFile, route: str = "idx-folder", *, rehash: bool = False) -> tuple[str, ...]:
    """The hash that decides ``path`` against ``remote``: the first of the route's policy the
    registry pins, content first (one hash for the published file and any re-compressed copy; a
    file's own hash only for the same compression); ``rehash``: never the fast hash."""
    same_wrapper = compression_of(path.name) == remote.compression
    for name in POLICY[route].hashes:
        key = name.replace(" ", "_")   # the keys of a file's facts and of a registry entry
        if rehash and key == "content_xxh3_128":
            continue
        if getattr(remote, key, None) and (key.startswith("content") or same_wrapper):
            return (key,)
    return ()


def _registry_status(path: Path, remote: RemoteFile, h: dict[str, Any]) -> str | None:
    """``decide``'s status for a copy that may be raw or re-compressed ("unpinned": nothing to compare)."""
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
    return decide(remote, None, None, h.get("content_sha256"), h.get("content_md5"), content_xxh3_128=fast)


def _usage(remote: RemoteFile) -> list[tuple[str, str]]:
    """(dataset, split) pairs whose files include ``remote``."""
    infos = [get_dataset(name) for name in list_datasets()]
    return [(info.name, sp.name) for info in infos if info.group == remote.group
            for sp in info.splits.values() if not sp.is_view and remote.name in (sp.images, sp.labels)]


def files_with_hashes(h: dict[str, Any]) -> list[tuple[RemoteFile, list[tuple[str, str]]]]:
    """Registry files whose published or content hashes equal the hashes in ``h``."""
    keys = ("sha256", "md5", "content_sha256", "content_md5", "content_xxh3_128")
    return [(rf, _usage(rf)) for rf in list_files() if any(getattr(rf, k) and getattr(rf, k) == h.get(k) for k in keys)]


def _manifest_sha(manifest: Manifest, fname: str) -> str | None:
    out = manifest.outputs.get(fname) if isinstance(manifest.outputs, dict) else None
    got = out.get("sha256") if isinstance(out, dict) else out
    return got if isinstance(got, str) else None


def check_folder_file(info: DatasetInfo, split: str, read: FileRead, fname: str, manifest: Manifest | None, *,
                      cache: str | os.PathLike[str] | None = None, rehash: bool = False) -> str:
    """The status of the file ``read`` (``built``, ``exact``, ``content``, ``raw``...), or DataMismatchError."""
    path = Path(read.path)
    if manifest is not None:
        if want := _manifest_sha(manifest, path.name):
            sha = facts_of(read, ("sha256",), cache=cache, rehash=rehash)["sha256"]
            if sha == want:
                return "built"
            raise DataMismatchError(f"{info.name}: the file changed since it was built", path=path,
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
    h = facts_of(read, (), cache=cache, rehash=rehash)   # what is known already (recorded)
    status = _registry_status(path, remote, h) if h else None
    if status is None:
        need = _needs(path, remote, rehash=rehash)
        if remote.sha256 and remote.size == read.before.st_size and compression_of(path.name) == remote.compression:
            need += ("sha256",)   # most likely the published file: its bytes can say `exact`
        h = facts_of(read, need, cache=cache, rehash=rehash) if need else h
        status = _registry_status(path, remote, h)
    if status is not None:
        return status
    # a mismatch: every hash, to say what the file is instead
    h = facts_of(read, ("sha256", "content_sha256"), cache=cache, rehash=rehash)
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
        raise DataMismatchError(f"these are not {info.name}'s files", path=path,
                                expected=f"{info.name} {split}: {remote.id} ({pinned})", found=f"the data of {what}",
                                hint=hint + OPT_OUT)
    raise DataMismatchError(
        f"the files are not {info.name}'s", path=path, expected=f"{info.name} {split}: {remote.id} ({pinned})",
        found=f"other content (sha256 {h.get('sha256')}, content sha256 {h.get('content_sha256')})"
              + (", and no build manifest.json next to it" if manifest is None
                 else f", and {path.parent / 'manifest.json'} does not list {path.name}"),
        hint="a folder you built has a manifest.json (build it with `mnistforge build`); "
             "official files must be the published ones; " + OPT_OUT)
