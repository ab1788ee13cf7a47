"""Check a file against its registry entry (statuses: :data:`STATUS_TEXT`; anything else raises
:class:`~mnistforge.errors.HashMismatchError`), and remember it in a ``<file>.sha256`` sidecar
trusted while the file keeps its size and mtime; the status is decided from the recorded hashes
each time, so a registry update counts at once.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import HashMismatchError, PathArg
from ..io.atomic import atomic_file
from ..io.compression import compression_of
from ..io.hashing import hash_content, hash_file
from ..log import get_logger
from ..registry import RemoteFile

logger = get_logger(__name__)

MARKER_SUFFIX = ".sha256"

#: ``f(md5) -> (sha256, md5, size)`` of a file's decompressed bytes, inflated by the caller
ContentHasher = Callable[[bool], "tuple[str, str | None, int]"]

STATUS_TEXT = {
    "exact": "verified (the published file)",
    "content": "verified (content matches; the compressed wrapper differs from the published one)",
    "raw": "verified (decompressed copy; content matches)", "derived": "decompressed from a verified file",
    "archive": "verified through its pinned archive", "unpinned": "NOT verified: no hash is pinned for this file",
    "mismatch": "DIFFERS from the registry: damaged, modified or another file",
}


@dataclass
class Verification:
    """Outcome of a check: ``status`` (see module doc) and the hashes observed."""
    path: str
    status: str
    sha256: str
    md5: str | None = None
    content_sha256: str | None = None
    content_md5: str | None = None
    size: int = 0
    detail: str = ""
    #: true when the decision came from a still-valid sidecar (nothing was hashed)
    from_marker: bool = False

    @property
    def text(self) -> str:
        return STATUS_TEXT.get(self.status, self.status)

    @property
    def verified(self) -> bool:
        return self.status != "unpinned"


def decide(remote: RemoteFile, sha256: str | None = None, md5: str | None = None,
           content_sha256: str | None = None, content_md5: str | None = None,
           *, raw: bool = False, content_xxh3_128: str | None = None) -> str | None:
    """The status for the hashes observed (``raw``: of a decompressed copy), or None when they do not match."""
    fast = bool(remote.content_xxh3_128 and content_xxh3_128 == remote.content_xxh3_128)
    if raw:
        return "raw" if fast or _matches(remote.content_sha256, remote.content_md5, sha256, md5) else None
    if _matches(remote.sha256, remote.md5, sha256, md5):
        return "exact"
    if fast or _matches(remote.content_sha256, remote.content_md5, content_sha256, content_md5):
        return "content"
    if not (remote.sha256 or remote.md5 or remote.content_sha256 or remote.content_md5):
        return "archive" if remote.archive else "unpinned"
    return None


def _matches(pinned_sha256: str | None, pinned_md5: str | None, sha256: str | None, md5: str | None) -> bool:
    """Whether the hashes observed match the pinned one (the sha256, else the md5)."""
    return sha256 == pinned_sha256 if pinned_sha256 else bool(pinned_md5) and md5 == pinned_md5


# --- sidecar markers ---------------------------------------------------------

def marker_path(path: PathArg) -> Path:
    path = Path(path)
    return path.with_name(path.name + MARKER_SUFFIX)


def write_marker(path: PathArg, v: Verification, extra: dict[str, Any] | None = None) -> None:
    """Record a successful check of ``path`` (keyed on its size and mtime), and ``extra`` fields."""
    path = Path(path)
    st = path.stat()
    rec = {k: val for k, val in asdict(v).items() if k not in ("path", "detail", "from_marker")}
    rec.update(extra or {})
    rec.update(size=st.st_size, mtime_ns=st.st_mtime_ns, name=path.name)
    try:
        with atomic_file(marker_path(path), "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
    except OSError as e:  # a read-only folder must not stop a load
        logger.debug("cannot write %s: %s", marker_path(path), e)


def read_marker(path: PathArg) -> dict[str, Any] | None:
    """The sidecar record of ``path`` if it still describes the file, else None."""
    p = os.fspath(path)
    try:
        with open(p + MARKER_SUFFIX, "rb") as f:
            rec = json.loads(f.read())
        st = os.stat(p)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict):
        return None
    return None if rec.get("size") != st.st_size or rec.get("mtime_ns") != st.st_mtime_ns else rec


def remove_with_marker(path: PathArg) -> None:
    for p in (Path(path), marker_path(path)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


# --- checks ------------------------------------------------------------------

def _mismatch(path: PathArg, remote: RemoteFile, sha: str, content_sha: str | None, *,
              raw: bool = False) -> HashMismatchError:
    if raw:
        expected = f"content sha256 {remote.content_sha256 or remote.content_md5}"
    else:
        exp = [f"sha256 {remote.sha256}" if remote.sha256 else (f"md5 {remote.md5}" if remote.md5 else None)]
        if remote.content_sha256:
            exp.append(f"or decompressed content sha256 {remote.content_sha256}")
        expected = " ".join(e for e in exp if e)
    found = f"sha256 {sha}" + (f" (content sha256 {content_sha})" if content_sha else "")
    return HashMismatchError(
        f"{remote.id} does not match the registry", path=path, expected=expected, found=found,
        hint="the file is damaged, incomplete or a different file: delete it and fetch again")


def needs_md5(remote: RemoteFile, content: bool = False) -> bool:
    """Whether judging a file (``content``: its decompressed content) needs its md5."""
    return bool(remote.content_md5 and not remote.content_sha256) if content else bool(remote.md5 and not remote.sha256)


def recheck_file(path: PathArg, remote: RemoteFile, content: ContentHasher | None = None) -> Verification:
    """Re-hash ``path`` against ``remote`` (``verify``: bit rot keeps size and mtime), status
    ``mismatch`` rather than an error; ``content``: the content's hashes, inflated by the caller."""
    path = Path(path)
    # a decompressed copy of remote: its name lacks the compression suffix
    raw = compression_of(path.name) is None and compression_of(remote.name) is not None
    if raw and not (remote.content_sha256 or remote.content_md5):
        sha, md5 = hash_file(path)
        return Verification(str(path), "unpinned", sha, md5, size=path.stat().st_size)
    try:
        return verify_file(path, remote, use_marker=False, raw=raw, content=content)
    except HashMismatchError as e:
        sha, md5 = hash_file(path)
        got = None if raw else (content(True) if content is not None else hash_content(path))
        csha, cmd5 = (got[0], got[1]) if got else (None, None)
        return Verification(str(path), "mismatch", sha, md5, csha, cmd5, path.stat().st_size, detail=str(e))


def verify_file(path: PathArg, remote: RemoteFile, *, use_marker: bool = True,
                raw: bool = False, content: ContentHasher | None = None) -> Verification:
    """A :class:`Verification` of ``path`` (``use_marker``: a valid sidecar spares hashing), or HashMismatchError."""
    if use_marker:
        if (rec := read_marker(path)) is not None:
            status = decide(remote, rec.get("sha256"), rec.get("md5"), rec.get("content_sha256"),
                            rec.get("content_md5"), raw=raw)
            if status is None and raw and rec.get("status") == "derived" \
                    and not (remote.content_sha256 or remote.content_md5):
                status = "derived"
            if status is not None:
                # the sidecar's JSON is untyped: its sha256 is passed on as recorded
                recorded: Any = rec.get("sha256")
                return Verification(os.fspath(path), status, recorded, rec.get("md5"),
                                    rec.get("content_sha256"), rec.get("content_md5"),
                                    rec.get("size", 0), from_marker=True)
    path = Path(path)
    logger.info("verifying %s", path)
    # md5 costs as much as sha256: computed only where md5 is all that is pinned
    sha, md5 = hash_file(path, md5=needs_md5(remote, raw))
    size = path.stat().st_size
    status = decide(remote, sha, md5, raw=raw)
    csha = cmd5 = None
    if status is None and not raw and (remote.content_sha256 or remote.content_md5):
        got = content(needs_md5(remote, True)) if content is not None else \
            hash_content(path, remote.name, md5=needs_md5(remote, True))
        if got is not None:
            csha, cmd5, _ = got
            status = decide(remote, sha, md5, csha, cmd5)
    if status is None:
        raise _mismatch(path, remote, sha, csha, raw=raw)
    return said(Verification(str(path), status, sha, md5, csha, cmd5, size), remote)


def said(v: Verification, remote: RemoteFile) -> Verification:
    """``v``, logged where it needs saying (another wrapper, nothing pinned)."""
    if v.status == "content":
        logger.info("%s: compressed bytes differ from the published file, content matches", v.path)
    elif v.status == "unpinned":
        logger.warning("%s: no hash is pinned for %s; observed sha256 %s (not verified)", v.path, remote.id, v.sha256)
    return v
