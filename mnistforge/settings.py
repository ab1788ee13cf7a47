"""Every environment variable and default of mnistforge, read in one place.

=========================  ==================================================  =================
variable                   meaning                                             default
=========================  ==================================================  =================
``MNISTFORGE_HOME``        cache folder (official files, raw copies, indexes)  platform cache
``MNISTFORGE_OFFLINE``     ``1``: never use the network                        off
``MNISTFORGE_WORKERS``     processes/threads for parallel work                 the usable cores
``MNISTFORGE_PROGRESS``    ``0`` silences progress bars, ``1`` forces them     on a terminal
``MNISTFORGE_KEEP_RAW``    ``0``: keep no decompressed copies in the cache     keep
``MNISTFORGE_TRUST_FILES`` ``1``: load folders whose files fail the hash check  off (refuse)
``MNISTFORGE_MIRRORS``     addresses tried before the registry's (see          none
                           :func:`mirrors`)
=========================  ==================================================  =================

Each function takes the explicit value a caller was given (``None`` = not
given) and falls back to the environment, then to the default, so an argument
always wins over a variable.  The environment is read at call time: tests and
users can change it between calls.

Examples
--------
>>> str(cache_home("/data/cache"))
'/data/cache'
>>> offline(True), workers(3), keep_raw(False)
(True, 3, False)
"""
from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

__all__ = ["cache_home", "offline", "workers", "progress", "keep_raw", "keep_raw_for_folders",
           "trust_files", "truthy", "Mirrors", "mirrors", "parse_mirrors", "MIRROR_FIELDS",
           "REGISTRY_MARK"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def truthy(value: str | None, default: bool) -> bool:
    """Read an on/off environment value (``1/true/yes/on``, ``0/false/no/off``).

    >>> truthy("ON", False), truthy("0", True), truthy(None, True)
    (True, False, True)
    """
    if value is None:
        return default
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    return default


def cache_home(root=None) -> Path:
    """The cache folder: ``root``, else ``$MNISTFORGE_HOME``, else the platform cache.

    Linux: ``$XDG_CACHE_HOME/mnistforge`` (``~/.cache/mnistforge``); macOS:
    ``~/Library/Caches/mnistforge``; Windows: ``%LOCALAPPDATA%\\mnistforge\\Cache``.
    """
    if root is not None:
        return _cache_folder(Path(root).expanduser(), "cache= / --cache")
    env = os.environ.get("MNISTFORGE_HOME")
    if env:
        return _cache_folder(Path(env).expanduser(), "MNISTFORGE_HOME")
    return _cache_folder(_platform_cache(), "the platform default")


def _cache_folder(path: Path, source: str) -> Path:
    """``path``, unless it (or a folder above it) is a file: then a :class:`ConfigError` saying
    which setting named it (a raw ``NotADirectoryError`` would come later, from deep inside)."""
    try:  # one stat for the usual case, a folder that exists (this runs on every load)
        is_file = not stat.S_ISDIR(os.stat(path).st_mode)
        exists = True
    except OSError:  # missing (or unreadable: the later use names it)
        is_file = exists = False
    above = None if exists else next(
        (p for p in path.parents if os.path.exists(p) and not os.path.isdir(p)), None)
    if is_file or above is not None:
        raise ConfigError(f"the cache named by {source} is not a folder", path=path,
                          expected="a folder (or a new name) for the cache",
                          found="a file" if is_file else f"{above} is a file",
                          hint="point MNISTFORGE_HOME (or --cache) at a folder")
    return path


def _platform_cache() -> Path:
    if sys.platform.startswith("win"):
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mnistforge" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mnistforge"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg).expanduser() / "mnistforge" if xdg else Path.home() / ".cache" / "mnistforge"


def offline(value: bool | None = None) -> bool:
    """``value`` if given, else whether ``MNISTFORGE_OFFLINE`` is set to a true value."""
    if value is not None:
        return bool(value)
    return truthy(os.environ.get("MNISTFORGE_OFFLINE"), False)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def workers(value: int | None = None) -> int:
    """``value`` if given (> 0), else ``$MNISTFORGE_WORKERS``, else the usable cores."""
    if value:
        return max(1, int(value))
    env = os.environ.get("MNISTFORGE_WORKERS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ConfigError("MNISTFORGE_WORKERS is not a number", expected="a positive integer",
                              found=repr(env), hint="unset it or set e.g. MNISTFORGE_WORKERS=2") from None
        return max(1, n)
    return usable_cores()


def progress(disable: bool | None = None) -> bool:
    """Whether to show progress bars: not ``disable`` if given, else ``MNISTFORGE_PROGRESS``,
    else only when stderr is a terminal."""
    if disable is not None:
        return not disable
    env = os.environ.get("MNISTFORGE_PROGRESS")
    if env is not None:
        return truthy(env, True)
    return sys.stderr.isatty()


def keep_raw(value: bool | None = None) -> bool:
    """``value`` if given, else ``MNISTFORGE_KEEP_RAW`` (default: keep decompressed copies)."""
    if value is not None:
        return bool(value)
    return truthy(os.environ.get("MNISTFORGE_KEEP_RAW") or None, True)


def keep_raw_for_folders(value: bool | None = None) -> bool:
    """Whether ``load(..., root=FOLDER)`` keeps decompressed copies of the folder's compressed
    files in the cache: ``value`` if given, else no (a folder load writes nothing unless asked;
    ``MNISTFORGE_KEEP_RAW`` is about the cache's own files and does not turn this on).

    >>> keep_raw_for_folders(), keep_raw_for_folders(True)
    (False, True)
    """
    return bool(value) if value is not None else False


def trust_files(value: bool | None = None) -> bool:
    """``value`` if given, else ``MNISTFORGE_TRUST_FILES`` (default: a folder's files are checked
    against the registry or their build manifest, and refused when they differ)."""
    if value is not None:
        return bool(value)
    return truthy(os.environ.get("MNISTFORGE_TRUST_FILES") or None, False)


# --- mirrors a user controls -------------------------------------------------

#: the placeholders an address template may hold: ``{name}`` the dataset's folder in the
#: registry and the cache (``mnist``, ``fashion-mnist``, ``emnist``...), ``{file}`` the file name
MIRROR_FIELDS = ("name", "file")
#: the entry that says where the registry's own addresses go in the list (default: last)
REGISTRY_MARK = "registry"


@dataclass(frozen=True)
class Mirrors:
    """Address templates tried ``before`` and ``after`` the registry's; ``only``: the
    registry's are not tried at all (``fetch --from URL``)."""

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    only: bool = False

    def urls(self, name: str, file: str, registry=()) -> list[str]:
        """The addresses of one file, in the order they are tried (each once).

        >>> Mirrors(("http://m/{file}",)).urls("mnist", "a.gz", ["https://r/a.gz"])
        ['http://m/a.gz', 'https://r/a.gz']
        """
        ours = [t.format(name=name, file=file) for t in self.before]
        tail = [t.format(name=name, file=file) for t in self.after]
        urls = ours + tail if self.only else ours + list(registry) + tail
        return list(dict.fromkeys(urls))


def _template(entry: str, source: str) -> str:
    """One entry as a template: a base address ``BASE`` reads as ``BASE/{name}/{file}`` (the
    cache's own layout); an entry with braces is a template already, checked here."""
    import string

    from urllib.parse import urlsplit

    scheme = urlsplit(entry).scheme.lower()
    if scheme not in ("http", "https"):
        raise ConfigError(f"a mirror in {source} is not an http(s) address", expected=
                          "http://HOST/... or https://HOST/... (a base address or a template "
                          "with {name} and {file})", found=repr(entry),
                          hint="copies on this machine are adopted with `mnistforge fetch NAME "
                               "--from PATH`")
    if "{" not in entry and "}" not in entry:
        return entry.rstrip("/") + "/{name}/{file}"
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(entry)
                  if f is not None]
    except ValueError as e:  # an unmatched brace
        raise ConfigError(f"a mirror template in {source} does not parse", expected=
                          "placeholders {name} and {file} in matched braces", found=
                          f"{entry!r} ({e})") from None
    bad = [f for f, spec, conv in fields if f not in MIRROR_FIELDS or spec or conv]
    if bad or "file" not in {f for f, _, _ in fields}:
        raise ConfigError(f"a mirror template in {source} has a bad placeholder", expected=
                          "{file} (the file name), optionally {name} (the dataset folder: "
                          "mnist, fashion-mnist, emnist...), nothing else",
                          found=f"{entry!r}" + (f": {{{bad[0]}}}" if bad else ": no {file}"),
                          hint="e.g. https://host/mirror/{name}/{file}, or a base address "
                               "without braces")
    return entry


def parse_mirrors(entries, *, source: str = "mirrors=", only: bool = False) -> Mirrors:
    """A list of mirror entries (or one string of them, separated by spaces) as :class:`Mirrors`.

    Entries before the word ``registry`` are tried before the registry's addresses, those
    after it after them; without the word, all come first.  ``only``: the registry's are not
    tried.

    >>> m = parse_mirrors("https://a.example/ registry https://b.example/m/{file}")
    >>> m.urls("mnist", "x.gz", ["https://r/x.gz"])
    ['https://a.example/mnist/x.gz', 'https://r/x.gz', 'https://b.example/m/x.gz']
    """
    if isinstance(entries, Mirrors):
        return entries
    if isinstance(entries, str):
        entries = entries.split()
    items = [str(e).strip() for e in entries if str(e).strip()]
    marks = [i for i, e in enumerate(items) if e.lower() == REGISTRY_MARK]
    if len(marks) > 1:
        raise ConfigError(f"{source} names the registry twice", expected=
                          f"the word {REGISTRY_MARK!r} at most once", found=" ".join(items))
    cut = marks[0] if marks else len(items)
    before = tuple(_template(e, source) for e in items[:cut])
    after = tuple(_template(e, source) for e in items[cut + 1:])
    return Mirrors(before, after, only)


def mirrors(value=None) -> Mirrors:
    """Addresses tried besides the registry's: ``value`` if given (a list of entries, one string
    of them, or :class:`Mirrors`), else ``$MNISTFORGE_MIRRORS`` (entries separated by spaces).

    An entry is a base address (``https://host/path``: files are asked for at
    ``https://host/path/{name}/{file}``, the cache's own layout) or a template holding
    ``{file}`` (the file name) and optionally ``{name}`` (the dataset's folder: ``mnist``,
    ``fashion-mnist``, ``emnist``...).  They are tried before the registry's addresses; the word
    ``registry`` in the list puts the registry's where it stands.  Every file is checked against
    the registry's hashes, whoever served it.

    >>> mirrors("https://m.example/{name}/{file}").before
    ('https://m.example/{name}/{file}',)
    """
    if value is not None:
        return parse_mirrors(value)
    env = os.environ.get("MNISTFORGE_MIRRORS")
    if not env:  # the common case, on every load: nothing to parse
        return _NO_MIRRORS
    return parse_mirrors(env, source="MNISTFORGE_MIRRORS")


_NO_MIRRORS = Mirrors()
