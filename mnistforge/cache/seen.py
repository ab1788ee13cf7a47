"""What was learnt about a file outside the cache, kept while the file stays the same file.

The trust gate hashes a file it has not seen before (a folder's idx files, a
third-party copy, a Hugging Face export's shards) and records what it found in
the cache::

    <cache>/seen/<key>.json      key: sha256 of the file's resolved path

A record holds the file's identity when it was hashed (:func:`identity`: size,
mtime_ns, ctime_ns, inode) and the caller's facts (hashes, verdict).  It is
returned by :func:`recall` only while the file keeps that identity: ctime and
the inode change with every write or replacement and cannot be set back, so a
file damaged with its size and mtime restored is hashed again.  A record is
never required: a missing, read-only or damaged cache only means hashing again.
The folder ``<cache>/seen`` holds nothing else and may be deleted at any time.

Within one process, what was derived from files (a record read, a folder found, a sidecar
parsed) is also kept in memory by :func:`known` / :func:`learn`, keyed by the identity of every
file and folder it came from: a repeat load asks one ``stat`` of each instead of reading and
parsing again.  An identity younger than :data:`RACY_NS` is never kept (timestamps have a
granularity: a change in the same tick would keep the identity), so what a memo says is what
reading again would say.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); f = os.path.join(d, "x.bin"); _ = open(f, "wb").write(b"abc")
>>> remember(f, {"sha256": "ba78..."}, cache=d, before=os.stat(f))
True
>>> recall(f, cache=d)["sha256"]
'ba78...'
>>> _ = open(f, "ab").write(b"d")     # any change: the record no longer applies
>>> recall(f, cache=d) is None
True
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ..log import get_logger
from ..settings import cache_key

logger = get_logger(__name__)

__all__ = ["SEEN", "identity", "record_path", "recall", "remember", "forget", "stamp", "stamp_of",
           "known", "learn", "unlearn", "one_look", "looked", "looked_size", "not_from_memos",
           "memo_cache_key"]

#: the cache's sub-folder for records of files outside the cache
SEEN = "seen"

#: an identity whose ctime is less than this old (ns) is not kept in memory: a file's
#: timestamps move in ticks (a jiffy; a second on ext3, two on FAT), so a change within the tick
#: of the identity would not show in it
RACY_NS = 3_000_000_000
#: at most this many entries are kept in memory (then all are dropped)
MEMO_SIZE = 4096
#: an identity: size, mtime_ns, ctime_ns, inode (:func:`identity`)
Stamp = tuple[int, int, int, int]
_MEMO: dict[object, tuple[tuple[tuple[str, Stamp | None], ...], Any]] = {}
#: the :class:`_Look` of the :class:`one_look` block running in this context (None: none)
_LOOK: ContextVar[_Look | None] = ContextVar("mnistforge_look", default=None)
_UNSEEN = object()


def identity(st: os.stat_result) -> list[int]:
    """The facts that change whenever a file is written or replaced.

    ctime changes with every write and cannot be set back (unlike mtime, which
    ``cp -p`` and ``tar`` restore), and a replaced file gets a new inode.
    """
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def stamp(path: str | os.PathLike[str]) -> Stamp | None:
    """The :func:`identity` of ``path`` (a file or a folder, links followed) now; None when
    there is nothing there."""
    try:
        return stamp_of(os.stat(path))
    except (OSError, ValueError):
        return None


def known(key: object, default: Any = None, *, miss_counts: bool = True) -> Any:
    """What :func:`learn` kept under ``key`` while every path it came from keeps its
    identity, else ``default`` (and the entry is dropped).

    ``miss_counts=False``: a miss does not end the current look's run of hits
    (:func:`looked`): for a memo of what other memos decide, whose miss only means asking them."""
    look = _LOOK.get()
    hit = _MEMO.get(key)
    if hit is None:
        if look is not None and miss_counts:
            look.missed()
        return default
    stamps, value = hit
    for p, s in stamps:
        if look is None:
            now = stamp(p)
        else:
            now = look.stamps.get(p, _UNSEEN)
            if now is _UNSEEN:
                now = look.stamps[p] = stamp(p)
        if now != s:
            _MEMO.pop(key, None)
            if look is not None and miss_counts:
                look.missed()
            return default
    return value


def unlearn(key: object) -> None:
    """Drop what :func:`learn` kept under ``key`` (it proved wrong in a way no identity shows)."""
    _MEMO.pop(key, None)


class _Look:
    """What one :class:`one_look` block has seen: the identities :func:`known` took (path ->
    stamp), :func:`memo_cache_key`'s answers, and how many times a memo missed."""

    __slots__ = ("stamps", "keys", "misses")

    def __init__(self) -> None:
        self.stamps: dict[str, Stamp | None] = {}
        self.keys: dict[object, tuple[str | None, ...]] = {}
        self.misses = 0

    def missed(self) -> None:
        # what follows a miss may write files: every identity is taken again after it
        self.stamps.clear()
        self.misses += 1


class one_look:
    """Inside the block, :func:`known` takes each path's identity once, not once per memo
    entry that names it (a repeat load asks about its folder five times).

    Sound because the package writes only after a miss, and a miss forgets every identity
    taken so far; the block is for work that does not re-hash (a load without ``check``).
    :func:`looked` lets a caller keep what the block derived from memo hits alone, under every
    identity they were checked against.  A block inside another (a load that loads) counts as
    a miss of the outer one: it may have written files.

    >>> with one_look():
    ...     known(("nothing", "kept")) is None
    True
    """

    __slots__ = ("_token",)

    def __enter__(self) -> one_look:
        self._token = _LOOK.set(_Look())
        return self

    def __exit__(self, *exc: object) -> None:
        _LOOK.reset(self._token)
        outer = _LOOK.get()
        if outer is not None:
            outer.missed()


def looked() -> tuple[tuple[str, Stamp | None], ...] | None:
    """Every identity the current :class:`one_look` has taken, if every memo it asked hit (and
    nothing was derived another way, :func:`not_from_memos`); else None.  What the block
    derived then depends on those identities alone: it may be kept under them (:func:`learn`)."""
    look = _LOOK.get()
    if look is None or look.misses:
        return None
    return tuple(look.stamps.items())


def looked_size(path: str) -> int | None:
    """The size in the identity the current :class:`one_look` took of ``path`` (None: none
    taken, or nothing there): a file mapped right after its identity was checked needs no
    second ``stat``."""
    look = _LOOK.get()
    st = None if look is None else look.stamps.get(path)
    return None if st is None else st[0]


def not_from_memos() -> None:
    """Say that what is being derived now read the disk outside :func:`known` (a folder
    listed, say): :func:`looked` then answers None."""
    look = _LOOK.get()
    if look is not None:
        look.missed()


def memo_cache_key(cache: str | os.PathLike[str] | None) -> tuple[str | None, ...]:
    """:func:`mnistforge.settings.cache_key` of ``cache``, asked once per :class:`one_look`
    (a repeat load wants it for each file's memo entries; it reads five variables)."""
    look = _LOOK.get()
    if look is None:
        return cache_key(cache)
    got = look.keys.get(cache)
    if got is None:
        got = look.keys[cache] = cache_key(cache)
    return got


def learn(key: object, value: Any, stamps: Iterable[tuple[str, Stamp | None]]) -> None:
    """Keep ``value``, derived from the paths of ``stamps`` (``(path, stamp(path))`` pairs taken
    *before* it was derived; None: nothing there), for :func:`known`.  Not kept when one of the
    identities is too young to be told from a change in the same tick (:data:`RACY_NS`)."""
    young = time.time_ns() - RACY_NS
    if any(s is not None and s[2] > young for _, s in stamps):
        _MEMO.pop(key, None)
        return
    if len(_MEMO) >= MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = (tuple(stamps), value)


def stamp_of(st: os.stat_result) -> Stamp:
    """:func:`identity` of a ``stat`` result already taken, as :func:`stamp` gives it."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def record_path(path, cache=None, *, real: str | None = None) -> Path:
    """Where the record of ``path`` lives under ``cache`` (default: the settings' cache);
    ``real``: its resolved path, when the caller has it."""
    from ..settings import cache_home

    real = real or os.path.realpath(path)
    return cache_home(cache) / SEEN / f"{path_key(real)}.json"


def path_key(real: str) -> str:
    """The name a record (or a raw copy's folder) of resolved path ``real`` is kept under: the
    first 32 hex digits of its sha256.  CPython's own sha256 module where it has one: importing
    :mod:`hashlib` loads OpenSSL, 3 ms of a first load in a fresh process."""
    try:
        from _sha256 import sha256   # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    return str(sha256(os.fsencode(real)).hexdigest())[:32]


def recall(path: str | os.PathLike[str], cache: str | os.PathLike[str] | None = None
           ) -> dict[str, Any] | None:
    """The facts recorded for ``path`` while it keeps the identity it had, else None. Never writes.

    Read once per process while the file and its record keep their identities (:func:`known`)."""
    key = ("recall", os.fspath(path), memo_cache_key(cache))
    facts = known(key)
    if facts is not None:
        return dict(facts)
    real = os.path.realpath(path)    # once: every first load asks this of each file
    try:
        st = os.stat(path)
        rp = record_path(path, cache, real=real)
        with open(rp, "rb") as f:
            rst = os.fstat(f.fileno())
            rec = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("source") != real \
            or rec.get("identity") != identity(st) or not isinstance(rec.get("facts"), dict):
        return None
    learn(key, dict(rec["facts"]), ((os.fspath(path), stamp_of(st)), (os.fspath(rp), stamp_of(rst))))
    return rec["facts"]


def remember(path, facts: dict, *, before: os.stat_result, cache=None) -> bool:
    """Record ``facts`` about ``path``, hashed while it had the identity of ``before``.

    Nothing is recorded when the file changed since ``before`` (it was being
    written while it was read) or the cache cannot be written; returns whether
    a record was written.
    """
    from ..errors import MnistforgeError
    from ..io.atomic import atomic_file

    not_from_memos()   # a write: nothing derived in this look may rest on what it saw before
    try:
        if identity(os.stat(path)) != identity(before):
            logger.warning("%s changed while it was read; not recorded as checked", path)
            return False
        rec = {"source": os.path.realpath(path), "identity": identity(before), "facts": facts}
        with atomic_file(record_path(path, cache), "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
    except (OSError, MnistforgeError) as e:  # a read-only, full or misplaced cache must not stop a load
        logger.debug("cannot record %s: %s", path, e)
        return False
    return True


def forget(path, cache=None) -> None:
    """Remove the record of ``path`` (a file found damaged must be hashed again next time)."""
    not_from_memos()
    try:
        os.unlink(record_path(path, cache))
    except OSError:
        pass
