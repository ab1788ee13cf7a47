"""Verified downloads into the cache (:func:`fetch`), the package's one HTTP client: mirrors in order, ``<name>.part``
resumed and hashed before the rename, ``<name>.lock`` between processes, and the limits a hostile or broken server meets
next to the requests they guard (the rules: ``docs/loading.md#downloads-fetch``, ``docs/reliability.md``).
"""
from __future__ import annotations

import errno
import logging
import math
import numbers
import os
import re
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests
import urllib3

from .. import settings
from ..errors import ConfigError, DownloadError, FormatError, HashMismatchError, MissingDependencyError, \
    NotWritableError, OfflineError, PathArg, require
from ..io.atomic import output_lock
from ..io.outputs import disk_full_error
from ..progress import progress as _progress
from ..registry import RemoteFile, get_dataset, get_file, list_datasets
from ..settings import cache_home
from .hub_parquet import MAX_BYTES, hub_url, place_split, why_not
from .mirrors import Mirrors, mirrors as parse_user_mirrors
from .verify import STATUS_TEXT, read_marker, verify_file, write_marker

logger = logging.getLogger(__name__)

__all__ = ["fetch", "fetch_file", "cache_path", "cache_status", "FetchResult", "DEFAULT_TIMEOUT", "DEFAULT_RETRIES"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 1.0
#: Seconds a fetch of one file may spend on all its attempts and mirrors before it gives up
#: (``give_up_after``, ``fetch --give-up-after``): retries never wait past it.
DEFAULT_GIVE_UP_AFTER = 600.0
#: Longest wait between two attempts, however many retries (the back-off doubles up to it).
MAX_BACKOFF_WAIT = 60.0
#: Most bytes accepted from a server for a file whose size the registry does not know.
MAX_UNKNOWN_BYTES = 8 << 30
#: Slowest transfer rate the default deadline allows for (bytes per second).
MIN_RATE = 16 << 10
CHUNK = 1 << 16
PART_SUFFIX = ".part"
USER_AGENT = "mnistforge (+https://github.com/mnistforge)"


def cache_path(remote: str | RemoteFile, root: PathArg | None = None) -> Path:
    """Where ``remote`` lives in the cache (for an archive member: the archive)."""
    remote = get_file(remote)
    if remote.archive:
        remote = get_file(remote.archive)
    return cache_home(root) / remote.group / remote.name


@dataclass
class FetchResult:
    """A file in the cache (a ``member``: its archive), its ``status``, the ``url`` it came from,
    and ``adopted_from``: the copy it was made from (the Hub's parquet copy), if not downloaded as is."""

    remote: RemoteFile
    path: Path
    status: str
    sha256: str | None = None
    downloaded: bool = False
    url: str | None = None
    member: str | None = None
    adopted_from: str | None = None

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    @property
    def verified(self) -> bool:
        return self.status != "unpinned"

    @property
    def text(self) -> str:
        return STATUS_TEXT.get(self.status, self.status)


def default_deadline(size: int | None, timeout: float) -> float:
    """Seconds one download attempt may take in total: ten timeouts plus the size at 16 kB/s.

    >>> default_deadline(4542, 30.0)
    300.27...
    """
    return 10 * timeout + (size or 64 << 20) / MIN_RATE


def check_network_args(timeout: float, retries: int, backoff: float, deadline: float | None = None,
                       give_up_after: float | None = None) -> None:
    """Refuse a zero, negative or non-finite ``timeout`` (and the like) as a usage error."""
    for name, value in (("timeout", timeout), ("deadline", deadline), ("give_up_after", give_up_after)):
        if value is not None and not (isinstance(value, numbers.Real) and math.isfinite(value) and value > 0):
            raise ConfigError(f"invalid {name}", expected="a number of seconds > 0", found=repr(value))
    if not isinstance(retries, numbers.Integral) or isinstance(retries, bool) \
            or not 0 <= retries <= 100:
        raise ConfigError("invalid retries", expected="an integer in 0..100", found=repr(retries))
    if not (isinstance(backoff, numbers.Real) and 0 <= backoff <= 3600):
        raise ConfigError("invalid backoff", expected="seconds in 0..3600", found=repr(backoff))


def fetch(name_or_file: str | RemoteFile, *, root: PathArg | None = None, progress: bool | None = None,
          offline: bool | None = None, timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
          backoff: float = DEFAULT_BACKOFF, deadline: float | None = None,
          mirrors: Mirrors | str | Iterable[object] | None = None, dead_hosts: set[str] | None = None,
          give_up_after: float = DEFAULT_GIVE_UP_AFTER) -> FetchResult | list[FetchResult]:
    """Make a registry file (an id, a unique name, a :class:`~mnistforge.registry.RemoteFile`) or
    every file of a dataset present and verified in the cache: its :class:`FetchResult` (a list).

    ``timeout``: seconds to wait for a connection or data; ``retries``: further attempts per
    mirror, the first ``backoff`` seconds later, doubled up to :data:`MAX_BACKOFF_WAIT`;
    ``deadline``: seconds one attempt may take (:func:`default_deadline`); ``give_up_after``:
    seconds all attempts at one file may take together; ``dead_hosts``: hosts (``HOST:PORT``)
    found unreachable, not asked again.  Every address failed: the Hub's parquet copy, if any
    (:mod:`.hub_parquet`).  Raises OfflineError, DownloadError, HashMismatchError.
    """
    chosen = parse_user_mirrors(mirrors)
    dead = set() if dead_hosts is None else dead_hosts

    def one(f: str | RemoteFile) -> FetchResult:
        return fetch_file(f, root=root, progress=progress, offline=offline, timeout=timeout,
                          retries=retries, backoff=backoff, deadline=deadline, mirrors=chosen,
                          dead_hosts=dead, give_up_after=give_up_after)

    if isinstance(name_or_file, str) and "/" not in name_or_file and name_or_file in list_datasets(None):
        files = dict.fromkeys(f.archive or f.id for f in get_dataset(name_or_file).remote_files())
        return [one(get_file(key)) for key in files]   # an archive once
    return one(name_or_file)


def _pinned(remote: RemoteFile) -> str:
    return (f"sha256 {remote.sha256}" if remote.sha256 else f"md5 {remote.md5}" if remote.md5 else "no pinned hash")


def _missing_message(remote: RemoteFile, dest: Path, explicit: bool, urls: Sequence[str] | None = None) -> str:
    urls = remote.urls if urls is None else urls
    where = ", ".join(urls) if urls else "(no known URL)"
    raw = ""
    if remote.compression in ("gz", "xz", "bz2"):
        raw = f" (or its decompressed content as {dest.parent / remote.raw_name})"
    # blame the switch the caller really used: the argument, --offline, or the variable
    switch, off = settings.current().offline_switch
    why, undo = (("downloads are switched off (download=False / --no-download)", "or allow downloads") if explicit else
                 (f"offline mode ({switch}) forbids downloading it", f"or {off}"))
    return (f"{remote.id} is not in the cache and {why}. Download it from {where} "
            f"({_pinned(remote)}) and put it at {dest}{raw}, {undo}")


def mirror_urls(remote: str | RemoteFile, mirrors: Mirrors | str | Iterable[object] | None = None) -> list[str]:
    """The addresses of ``remote`` in the order a fetch tries them."""
    remote = get_file(remote)
    return parse_user_mirrors(mirrors).urls(remote.group, remote.name, remote.urls)


def fetch_file(remote: str | RemoteFile, *, root: PathArg | None = None, progress: bool | None = None,
               offline: bool | None = None, timeout: float = DEFAULT_TIMEOUT,
               retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF, rehash: bool = False,
               deadline: float | None = None, mirrors: Mirrors | str | Iterable[object] | None = None,
               dead_hosts: set[str] | None = None, give_up_after: float = DEFAULT_GIVE_UP_AFTER) -> FetchResult:
    """Fetch one file (:func:`fetch`; a member: its archive); ``rehash`` ignores its sidecar."""
    check_network_args(timeout, retries, backoff, deadline, give_up_after)
    remote = get_file(remote)
    if remote.archive:
        arch = fetch_file(remote.archive, root=root, progress=progress, offline=offline,
                          timeout=timeout, retries=retries, backoff=backoff, rehash=rehash,
                          deadline=deadline, mirrors=mirrors, dead_hosts=dead_hosts, give_up_after=give_up_after)
        return FetchResult(remote, arch.path, "archive" if arch.verified else "unpinned",
                           arch.sha256, arch.downloaded, arch.url, member=remote.member)
    dest = cache_path(remote, root)
    if dest.is_file():
        return _cached(remote, dest, rehash)
    chosen = parse_user_mirrors(mirrors)
    urls = chosen.urls(remote.group, remote.name, remote.urls)
    if settings.current(offline=offline).offline:
        raise OfflineError(_missing_message(remote, dest, explicit=offline is not None, urls=urls))
    if not urls:
        raise DownloadError(f"{remote.id}: no URL is known for this file",
                            hint=f"put it at {dest} by hand, give a mirror (MNISTFORGE_MIRRORS, "
                                 "fetch --mirror) or adopt a copy (fetch --from PATH)")

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with output_lock(dest, wait=True):
            if dest.is_file():  # another process fetched it while this one waited
                return _cached(remote, dest, rehash)
            return _download(remote, dest, urls, progress=progress, timeout=timeout,
                             retries=retries, backoff=backoff, deadline=deadline,
                             dead=set() if dead_hosts is None else dead_hosts,
                             give_up_after=give_up_after, hub=not chosen.only)
    except OSError as e:
        full = disk_full_error(e, dest)
        if full is not e:   # a full disk: the .part is kept to resume once there is room
            raise full from None
        if not isinstance(e, PermissionError):
            raise
        raise NotWritableError(
            "the cache folder is not writable", path=e.filename or dest.parent,
            expected="a writable cache", found=os.strerror(e.errno or 13),
            hint="set MNISTFORGE_HOME to a writable folder, or place the file there by hand "
                 f"({_pinned(remote)})") from None


def _cached(remote: RemoteFile, dest: Path, rehash: bool) -> FetchResult:
    v = verify_file(dest, remote, use_marker=not rehash)
    if not v.from_marker:
        write_marker(dest, v)
    return FetchResult(remote, dest, v.status, v.sha256)


class _MirrorFailed(Exception):
    pass


def _download(remote: RemoteFile, dest: Path, urls: Sequence[str], *, progress: bool | None,
              timeout: float, retries: int, backoff: float, deadline: float | None = None,
              dead: set[str], give_up_after: float = DEFAULT_GIVE_UP_AFTER, hub: bool = True) -> FetchResult:
    """``hub``: when every address failed, the Hub's parquet copy (not for ``--from URL``)."""
    give_up = _GiveUp(time.monotonic() + give_up_after, give_up_after)
    part = dest.with_name(dest.name + PART_SUFFIX)
    failures: list[str] = []
    unreachable: list[str] = []
    bad_hash = False
    with requests.Session() as session:
        session.headers["User-Agent"] = USER_AGENT
        for url in urls:
            if _host(url) in dead:  # refused earlier in this fetch: not asked again
                unreachable.append(f"{_host(url)} skipped (unreachable earlier in this fetch)")
                failures.append(f"{url}: skipped")
                continue
            if time.monotonic() >= give_up.at:
                failures.append(f"{url}: not tried ({give_up.said})")
                continue
            for fresh in (False, True):
                if fresh:
                    part.unlink(missing_ok=True)
                resumed = part.is_file() and part.stat().st_size > 0
                try:
                    _download_url(session, url, part, remote, progress=progress, timeout=timeout,
                                  retries=retries, backoff=backoff, deadline=deadline, give_up=give_up)
                except _Unreachable as e:
                    unreachable.append(str(e))
                    failures.append(f"{url}: {e}")
                    dead.add(_host(url))
                    logger.warning("%s; not asking %s again in this fetch", e, _host(url))
                    break
                except _MirrorFailed as e:
                    failures.append(f"{url}: {e}")
                    logger.warning("%s: %s", url, e)
                    break
                try:
                    v = verify_file(part, remote, use_marker=False)
                except HashMismatchError as e:
                    e = _say_html(e, part, url)
                    part.unlink(missing_ok=True)
                    if resumed and not fresh:
                        # The kept .part may come from another mirror or an older file.
                        logger.warning("%s: resumed download has the wrong hash; starting over", url)
                        continue
                    bad_hash = True
                    failures.append(f"{url}: {e}")
                    logger.warning("%s", e)
                    break
                os.replace(part, dest)
                v.path = str(dest)
                write_marker(dest, v)
                logger.info("%s: %s (%s)", dest, v.text, url)
                return FetchResult(remote, dest, v.status, v.sha256, downloaded=True, url=url)
        copy = hub_url(remote) if hub else None
        if copy and not why_not(remote) and _host(copy) in dead:
            unreachable.append(f"{_host(copy)} skipped (unreachable earlier in this fetch)")
            failures.append(f"{copy}: skipped")
        elif copy and not why_not(remote):
            try:
                return _from_hub(session, remote, dest, copy, "; ".join(failures), progress=progress,
                                 timeout=timeout, retries=retries, backoff=backoff, deadline=deadline, give_up=give_up)
            except _MirrorFailed as e:
                failures.append(f"the Hub's parquet copy {copy}: {e}")
                if isinstance(e, _Unreachable):
                    unreachable.append(str(e))
                    dead.add(_host(copy))
    if part.is_file() and part.stat().st_size == 0:
        part.unlink(missing_ok=True)
    kept = f" (partial download kept as {part} to resume)" if part.is_file() else ""
    by_hand = f"or put the file at {dest} ({_pinned(remote)})"
    if unreachable and len(unreachable) == len(failures):
        # one short line: the hosts, then what to do
        raise DownloadError(f"{remote.id}: " + "; ".join(unreachable) + f" (mirrors tried: "
                            f"{len(failures)}). Check the network, {by_hand}")
    msg = f"could not fetch {remote.id} from any mirror{kept}: " + "; ".join(failures)
    if bad_hash:
        raise HashMismatchError(msg, path=dest, hint="nothing was written to the cache")
    raise DownloadError(msg, hint=f"check the network, {by_hand}")


def _from_hub(session: requests.Session, remote: RemoteFile, dest: Path, url: str, tried: str, *,
              progress: bool | None, timeout: float, retries: int, backoff: float,
              deadline: float | None, give_up: _GiveUp) -> FetchResult:
    """Every address failed (``tried``): the split from the Hub's parquet copy (:mod:`.hub_parquet`)."""
    try:
        require("pyarrow", "hf", "the Hub's parquet copies")
    except MissingDependencyError as e:
        raise MissingDependencyError(f"{remote.id}: every address failed ({tried}); its Hub "
                                     f"parquet copy ({url}) needs pyarrow", expected=e.expected,
                                     found=e.found, hint=e.hint) from None
    logger.warning("%s: every address failed; trying the Hub's parquet copy %s", remote.id, url)
    part = dest.with_name(f"{dest.name}.hub.parquet{PART_SUFFIX}")
    part.unlink(missing_ok=True)   # nothing pins its bytes: never resumed
    copy = RemoteFile(id=url, group=remote.group, name=url.rsplit("/", 1)[-1], size=MAX_BYTES)
    try:
        _download_url(session, url, part, copy, progress=progress, timeout=timeout,
                      retries=retries, backoff=backoff, deadline=deadline, give_up=give_up)
        v = place_split(part, remote, url)
    except FormatError as e:   # a web page, a cut file: not the copy
        raise HashMismatchError(f"{remote.id}: {url} is not a parquet copy of it ({e})",
                                hint="nothing was written to the cache") from None
    finally:
        part.unlink(missing_ok=True)
    logger.info("%s: %s (adopted from %s)", dest, v.text, url)
    return FetchResult(remote, dest, v.status, v.sha256, downloaded=True, url=url, adopted_from=url)


def _say_html(e: HashMismatchError, part: Path, url: str) -> HashMismatchError:
    """The same error, saying so when the server sent a web page (a login page, a captive portal)."""
    try:
        with open(part, "rb") as f:
            head = f.read(512).lstrip().lower()
    except OSError:
        return e
    if head.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head")):
        return HashMismatchError(f"{url} served a web page (HTML), not the file; {e}")
    return e


@dataclass(frozen=True)
class _GiveUp:
    """When a fetch of one file stops trying (``time.monotonic()``), and how that is said."""
    at: float
    after: float

    @property
    def said(self) -> str:
        return (f"the fetch gave up after {self.after:g} s (give_up_after, "
                "fetch --give-up-after)")


def _download_url(session: requests.Session, url: str, part: Path, remote: RemoteFile, *,
                  progress: bool | None, timeout: float, retries: int, backoff: float,
                  deadline: float | None = None, give_up: _GiveUp | None = None) -> None:
    last: str | None = None
    host = _host(url)
    for attempt in range(retries + 1):
        if attempt:
            wait = min(backoff * 2.0 ** min(attempt - 1, 64), MAX_BACKOFF_WAIT)
            if give_up is not None and time.monotonic() + wait >= give_up.at:
                raise _MirrorFailed(f"{last} (after {attempt} attempts; not retried: "
                                    f"{give_up.said})")
            logger.info("retrying %s in %.1f s (attempt %d of %d)", url, wait, attempt + 1, retries + 1)
            time.sleep(wait)
        try:
            _stream_once(session, url, part, remote, progress=progress, timeout=timeout, deadline=deadline)
            return
        except requests.HTTPError as e:
            code = e.response.status_code if e.response is not None else None
            why = f" {e.response.reason}" if e.response is not None and e.response.reason else ""
            if code is not None and 400 <= code < 500 and code not in (408, 429):
                raise _MirrorFailed(f"{host} answered HTTP {code}{why}") from None
            last = f"{host} answered HTTP {code}{why}"
        except requests.TooManyRedirects:
            raise _MirrorFailed("redirect loop (too many redirects)") from None
        except (requests.exceptions.InvalidSchema, requests.exceptions.MissingSchema,
                requests.exceptions.InvalidURL, requests.exceptions.InvalidHeader) as e:
            raise _MirrorFailed(f"bad redirect or URL ({type(e).__name__}: {e})") from None
        except requests.exceptions.ContentDecodingError as e:
            raise _MirrorFailed(f"bad Content-Encoding ({e})") from None
        except requests.Timeout as e:
            last = f"timed out after {timeout} s ({type(e).__name__})"
        except requests.ConnectionError as e:
            reason = _unreachable_reason(e)
            if reason:  # will not heal within a retry: next mirror at once
                raise _Unreachable(f"cannot reach {_host(url)}: {reason}") from None
            last = f"connection cut ({type(e).__name__}: {e})"
        except (requests.exceptions.ChunkedEncodingError, _Incomplete) as e:
            last = f"connection cut ({type(e).__name__}: {e})"
        except _Slow as e:
            last = str(e)
        except requests.RequestException as e:  # anything else requests raises: this mirror failed
            raise _MirrorFailed(f"{type(e).__name__}: {e}") from None
        except (ValueError, UnicodeError) as e:  # urllib's parse of a bad Location header
            raise _MirrorFailed(f"bad redirect or URL ({type(e).__name__}: {e})") from None
        logger.warning("%s: %s", url, last)
    raise _MirrorFailed(f"{last} (after {retries + 1} attempts)")


class _Incomplete(Exception):
    pass


class _TooLong(_MirrorFailed):   # an endless body: this mirror failed
    pass


class _Slow(Exception):
    pass


class _Unreachable(_MirrorFailed):
    pass


def _host(url: str) -> str:
    """``HOST:PORT`` of ``url`` (the port too: two servers on one machine are two hosts; 443 unsaid)."""
    try:
        parts = urlsplit(url)
        if parts.port or parts.scheme == "http":  # http://H and https://H: two ports
            return f"{parts.hostname}:{parts.port or 80}"
        return parts.hostname or url
    except ValueError:
        return url


def _unreachable_reason(e: Exception) -> str | None:
    """"name resolution failed" / "connection refused" when that is what happened, else None."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, socket.gaierror) or type(cur).__name__ == "NameResolutionError":
            return "name resolution failed"
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        nxt = getattr(cur, "reason", None) or cur.__cause__ or cur.__context__
        if nxt is None and cur.args and isinstance(cur.args[0], BaseException):
            nxt = cur.args[0]
        cur = nxt if isinstance(nxt, BaseException) else None
    return next((why for why, marks in _SAID.items() if any(m in str(e) for m in marks)), None)


#: what the system's message says, where no exception in the chain names the reason
_SAID = {"name resolution failed": ("Name or service not known", "getaddrinfo failed", "nodename nor servname",
                                    "Temporary failure in name resolution"),
         "connection refused": ("Connection refused",)}


_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


def _stream_once(session: requests.Session, url: str, part: Path, remote: RemoteFile, *,
                 progress: bool | None, timeout: float, deadline: float | None = None) -> None:
    limit = deadline or default_deadline(remote.size, timeout)
    t_end = time.monotonic() + limit
    cap = remote.size if remote.size else MAX_UNKNOWN_BYTES
    have = part.stat().st_size if part.is_file() else 0
    headers = {"Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    with session.get(url, stream=True, timeout=timeout, headers=headers, allow_redirects=True) as r:
        if r.status_code == 416 and have:
            # Nothing left to send: the .part may already be whole; the hash decides.
            m = re.search(r"/(\d+)", r.headers.get("Content-Range", ""))
            if m and int(m.group(1)) == have:
                return
            part.unlink(missing_ok=True)
            raise _Incomplete("server refused to resume; starting over")
        r.raise_for_status()
        mode = "wb"
        if r.status_code == 206 and have:
            m = _RANGE.match(r.headers.get("Content-Range", ""))
            if m and int(m.group(1)) == have:
                mode = "ab"
                logger.info("resuming %s at byte %d", url, have)
            else:
                part.unlink(missing_ok=True)
                raise _Incomplete(f"unexpected Content-Range {r.headers.get('Content-Range')!r}")
        if mode == "wb":
            have = 0
        length = r.headers.get("Content-Length")
        expected = have + int(length) if length and length.isdigit() else None
        if expected is not None and expected > cap:
            raise _TooLong(f"the server announces {expected} bytes; at most {cap} expected")
        bar = _progress(total=expected or remote.size, desc=remote.name, unit="B",
                        disable=None if progress is None else not progress, unit_scale=True,
                        unit_divisor=1024, initial=have, leave=False)
        try:
            with open(part, mode) as f:
                got = have
                for chunk in _chunks(r):
                    got += len(chunk)
                    if got > cap:
                        raise _TooLong(f"the server sent more than {cap} bytes (the size expected)")
                    f.write(chunk)
                    bar.update(len(chunk))
                    if time.monotonic() > t_end:
                        raise _Slow(f"too slow: {got} bytes after the total deadline of "
                                    f"{limit:.0f} s")
        except _TooLong:
            part.unlink(missing_ok=True)   # nothing of an endless body is worth resuming
            raise
        finally:
            bar.close()
    got = part.stat().st_size
    if expected is not None and got < expected:
        raise _Incomplete(f"got {got} of {expected} bytes")


def _chunks(r: requests.Response) -> Iterator[bytes]:
    """The body in pieces as they arrive (``read1``: a trickling server cannot keep one read
    blocked past the deadline, as ``iter_content``'s can)."""
    raw = r.raw
    if not hasattr(raw, "read1"):  # pragma: no cover - urllib3 < 2.3
        yield from r.iter_content(CHUNK)
        return
    while True:
        try:
            chunk = raw.read1(CHUNK, decode_content=True)
        except urllib3.exceptions.DecodeError as e:
            raise requests.exceptions.ContentDecodingError(e) from None
        except urllib3.exceptions.ProtocolError as e:
            raise requests.exceptions.ChunkedEncodingError(e) from None
        except urllib3.exceptions.ReadTimeoutError as e:
            raise requests.exceptions.ReadTimeout(e) from None
        if not chunk:
            return
        yield chunk


def cache_status(remote: str | RemoteFile, root: PathArg | None = None) -> tuple[str, Path]:
    """``(text, path)``: what the cache holds for ``remote``, without hashing anything."""
    remote = get_file(remote)
    path = cache_path(remote, root)
    if remote.archive:
        text, _ = cache_status(remote.archive, root)
        return (f"in {path.name}: {text}" if text != "missing" else "missing"), path
    raw = path.parent / remote.raw_name
    has_raw = remote.raw_name != remote.name and raw.is_file() and read_marker(raw) is not None
    if path.is_file():
        rec = read_marker(path)
        text = STATUS_TEXT.get(rec.get("status", ""), "present") if rec else "present, not verified yet"
    elif has_raw:
        text = "decompressed copy only"
    else:
        return "missing", path
    return text + (" + raw copy" if has_raw and path.is_file() else ""), path
