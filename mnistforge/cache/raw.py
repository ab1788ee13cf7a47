"""Raw (decompressed) copies of verified cache files (``<cache>/<group>/<name without .gz>`` and a
sidecar), so later loads are memory maps.  A first load reads the compressed file once
(:func:`first_raw_copy`); what that read cannot settle takes the two-step route
(:func:`~mnistforge.cache.download.fetch_file`, :func:`make_raw_copy`), with the same statuses.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import (ConfigError, FormatError, HashMismatchError, IdxFormatError, MnistforgeError, NotWritableError,
                      PathArg)
from ..io import compression
from ..io.atomic import atomic_file
from ..io.hashing import HashingReader, inflate_to
from ..log import get_logger
from ..registry import RemoteFile
from .archive import open_member
from .download import FetchResult
from .verify import (Verification, decide, marker_path, needs_md5, read_marker, remove_with_marker, said, verify_file,
                     write_marker)

logger = get_logger(__name__)

CHUNK = 1 << 20
_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def check_raw_copy(raw: PathArg, remote: RemoteFile, *, rehash: bool = False) -> Verification | None:
    """The verification of a raw copy, or None when it must be made again (a stale copy of ours,
    with a sidecar, removed; one without, never deleted); ``rehash`` ignores the sidecar."""
    try:
        v = verify_file(raw, remote, raw=True, use_marker=not rehash)
    except HashMismatchError as e:
        if marker_path(raw).exists():  # our own copy went stale: rebuild it
            logger.warning("%s; rebuilding the raw copy", e)
            remove_with_marker(raw)
        else:
            logger.warning("ignoring %s (not verifiable: %s)", raw, e)
        return None
    if not v.from_marker:  # a load never rewrites a sidecar that still holds
        write_marker(raw, v)
    return v


class _NotSettled(Exception):
    """The one-read route cannot give the verdict: the two-step route will."""


def first_raw_copy(remote: RemoteFile, packed: Path, raw: Path, *, rehash: bool = False) -> Verification | None:
    """Verify the cached ``packed`` and write its raw copy ``raw`` in one read (renamed into place
    only after the verdict): its verification, or None when there is nothing to do here or the
    read cannot settle it (then the two-step route says what is wrong)."""
    if remote.archive or not remote.has_raw_copy or not remote.content_size:
        return None
    assert remote.compression is not None  # has_raw_copy: gz, xz or bz2
    try:
        size = packed.stat().st_size
    except OSError:
        return None
    if not rehash and read_marker(packed) is not None:
        return None  # verified before: make_raw_copy decompresses without hashing
    pinned = bool(remote.content_sha256 or remote.content_md5)
    # The published wrapper can match only at its published size; any other size (a mirror
    # that re-compressed) is judged by its content.  The content is hashed too when the raw
    # copy's sidecar cannot take the pinned content hash as it is.
    exact_possible = bool(remote.sha256 or remote.md5) and remote.size in (None, size)
    content = not exact_possible or not remote.content_sha256
    logger.info("verifying %s and keeping a decompressed copy at %s", packed, raw)
    try:
        with atomic_file(raw) as out:
            got = inflate_to(packed, out, remote.compression, md5=needs_md5(remote), content=content,
                             content_md5=content and needs_md5(remote, True), limit=remote.content_size)
            csha, cmd5 = (got.content_sha256, got.content_md5) if pinned else (None, None)
            status = decide(remote, got.sha256, got.md5, csha, cmd5)
            if status is None or got.content_size != remote.content_size:
                raise _NotSettled
            if got.content_sha256 is None:  # the published file: its content is the pinned one
                raw_v = Verification(str(raw), "raw", remote.content_sha256 or "", None, size=got.content_size)
            else:
                raw_status = decide(remote, got.content_sha256, got.content_md5, raw=True) \
                    if pinned else "derived"
                if raw_status is None:
                    raise _NotSettled
                raw_v = Verification(str(raw), raw_status, got.content_sha256, got.content_md5, size=got.content_size)
    except (_NotSettled, FormatError, OSError) as e:
        logger.debug("%s: one-read verification not settled (%s); checking step by step", packed, type(e).__name__)
        return None
    if status == "exact":
        csha = cmd5 = None  # what verify_file records: content hashes only where they decided
    v = said(Verification(str(packed), status, got.sha256, got.md5, csha, cmd5, got.size), remote)
    write_marker(packed, v)
    write_marker(raw, raw_v)
    return v


def _check_member(remote: RemoteFile, hr: HashingReader, where: PathArg) -> None:
    if decide(remote, hr.sha256, hr.md5) is None:
        raise HashMismatchError(
            f"{remote.id} does not match the registry", path=f"{where}:{remote.member}",
            expected=f"md5 {remote.md5 or remote.sha256}", found=f"md5 {hr.md5}",
            hint="the archive is damaged or a different release: delete it and fetch again")


def read_member(res: FetchResult, remote: RemoteFile) -> bytes:
    """The bytes of a verified archive's member, checked against the member's own hash."""
    assert res.member is not None  # callers read members of archives only
    with open_member(res.path, res.member) as f:
        hr = HashingReader(f)
        data = hr.read()
    _check_member(remote, hr, res.path)
    return data


def make_raw_copy(res: FetchResult, remote: RemoteFile, raw: Path) -> Verification:
    """Decompress a verified file (or member) to ``raw`` in one pass, hashing the content on the
    way unless it is the pinned content already (``exact``/``content``: a third of a first load)."""
    if not remote.has_raw_copy:  # an .npz, a raw idx file: read as it is, never copied onto itself
        raise ConfigError(f"{remote.id} has no decompressed copy", path=res.path,
                          expected="a compressed idx file or an archive member",
                          found=f"format {remote.format}, compression {remote.compression}")
    logger.info("keeping a decompressed copy of %s at %s", remote.id, raw)
    known = res.status in ("exact", "content") and bool(remote.content_sha256) and not res.member
    try:
        with atomic_file(raw) as out:
            cm = open_member(res.path, res.member) if res.member else open(res.path, "rb")
            with cm as f:
                packed = HashingReader(f) if res.member else f
                source = compression.open_reader(packed, remote.name)
                hashed = None if known else HashingReader(source)  # the content, hashed on the way
                content = source if hashed is None else hashed
                while chunk := content.read(CHUNK):
                    out.write(chunk)
                if isinstance(packed, HashingReader):
                    _check_member(remote, packed, res.path)
            if hashed is not None and (remote.content_sha256 or remote.content_md5) and \
                    decide(remote, hashed.sha256, hashed.md5, raw=True) is None:
                raise HashMismatchError(
                    f"{remote.id}: decompressed content does not match the registry",
                    path=res.path, expected=f"content sha256 {remote.content_sha256}",
                    found=f"content sha256 {hashed.sha256}", hint="delete the file and fetch it again")
    except MnistforgeError:
        raise
    except compression.DECOMPRESS_ERRORS as e:   # OSError among them
        if isinstance(e, OSError) and e.errno in _NOT_WRITABLE:
            raise NotWritableError(
                "cannot write the decompressed copy into the cache", path=raw,
                expected="a writable cache folder", found=os.strerror(e.errno),
                hint="set MNISTFORGE_KEEP_RAW=0 (load from the compressed file, no copy) or "
                     "MNISTFORGE_HOME to a writable folder") from None
        raise IdxFormatError("cannot decompress", path=res.path,
                             expected=f"a valid {remote.compression} file", found=str(e),
                             hint="delete it and fetch it again") from None
    size = raw.stat().st_size
    if hashed is None:  # known
        v = Verification(str(raw), "raw", remote.content_sha256 or "", None, size=size)
    else:
        status = "raw" if (remote.content_sha256 or remote.content_md5) else "derived"
        v = Verification(str(raw), status, hashed.sha256, hashed.md5, size=size)
    write_marker(raw, v)
    return v
