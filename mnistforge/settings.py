"""Every setting of mnistforge: one object, resolved from arguments, then the environment, then
the defaults; the only module that reads the environment (nothing writes it).

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
                           :mod:`mnistforge.cache.mirrors`)
``HF_HUB_OFFLINE``         ``1``: ``export hf --push`` sends nothing           off
``HF_TOKEN``               the Hub token for ``--push`` (never shown)          a stored login
``HF_ENDPOINT``            another Hub for ``--push``                          the public Hub
``XDG_CACHE_HOME``,        where the platform cache lies (Linux, Windows)      ``~/.cache``,
``LOCALAPPDATA``                                                               ``~/AppData/Local``
``HF_HOME``,               other tools' folders, where ``find-copies`` looks   their defaults
``HF_DATASETS_CACHE``,     for copies already on the machine
``KERAS_HOME``
=========================  ==================================================  =================

Order, for every setting: an explicit argument (``None`` = not given), else the values made
active by :func:`using` (the command line's ``--cache``, ``--offline``, ``--no-progress``), else
the environment, else the default.  The environment is read at call time (tests and users can
change it between calls); :func:`current` resolves every setting at once into a
:class:`Settings` to hand down.  :func:`using` holds its values in a context variable, so
nested blocks restore the outer values, threads running concurrently each see their own, and
the environment is never written.

Examples
--------
>>> str(cache_home("/data/cache"))
'/data/cache'
>>> offline(True), workers(3), keep_raw(False)
(True, 3, False)
>>> with using(offline=True, progress=False):
...     offline(), progress(), current().offline
(True, False, True)
"""
from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .errors import ConfigError

__all__ = ["cache_home", "offline", "workers", "progress", "keep_raw", "keep_raw_for_folders",
           "trust_files", "truthy", "mirror_entries", "Settings", "Overrides", "current", "using", "given", "activate",
           "VARIABLES", "usable_cores", "offline_switch", "hf_offline", "hf_token", "hf_endpoint", "hf_home",
           "hf_datasets_cache", "keras_home"]

#: every environment variable mnistforge reads, and the :class:`Settings` field it sets (the
#: list in docs/usage.md is tested against this one)
VARIABLES: dict[str, str] = {
    "MNISTFORGE_HOME": "cache", "MNISTFORGE_OFFLINE": "offline", "MNISTFORGE_WORKERS": "workers",
    "MNISTFORGE_PROGRESS": "progress", "MNISTFORGE_KEEP_RAW": "keep_raw",
    "MNISTFORGE_TRUST_FILES": "trust_files", "MNISTFORGE_MIRRORS": "mirrors",
    "HF_HUB_OFFLINE": "hf_offline", "HF_TOKEN": "hf_token", "HF_ENDPOINT": "hf_endpoint",
    "XDG_CACHE_HOME": "cache", "LOCALAPPDATA": "cache",
    "HF_HOME": "hf_home", "HF_DATASETS_CACHE": "hf_datasets_cache", "KERAS_HOME": "keras_home",
}

#: the source named when an explicit cache folder is not a folder
_GIVEN_CACHE = "cache= / --cache"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")

PathArg = str | os.PathLike[str]


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


# --- the settings object --------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    """Every setting, resolved (:func:`current`).  ``cache`` is not checked here (the cache
    folder may change on disk: :func:`cache_home` checks it at each use); ``progress`` None:
    bars only when standard error is a terminal.  The token is never shown (not in ``repr``)."""

    cache: Path
    cache_source: str
    offline: bool
    workers: int
    progress: bool | None
    keep_raw: bool
    trust_files: bool
    #: ``MNISTFORGE_MIRRORS`` (or :func:`using`'s) as given, and where from; parsed by the cache
    #: (:func:`mnistforge.cache.mirrors.mirrors`)
    mirrors: tuple[str, str]
    hf_offline: bool
    hf_token: str | None = field(repr=False)
    hf_endpoint: str | None
    hf_home: Path | None
    hf_datasets_cache: Path | None
    keras_home: Path | None


@dataclass(frozen=True)
class Overrides:
    """Values given for a while (:func:`using`), each over the environment; None: not given."""

    cache: Path | None = None
    offline: bool | None = None
    workers: int | None = None
    progress: bool | None = None
    keep_raw: bool | None = None
    trust_files: bool | None = None
    mirrors: str | None = None
    hf_offline: bool | None = None
    hf_token: str | None = field(default=None, repr=False)
    hf_endpoint: str | None = None

    def over(self, outer: Overrides) -> Overrides:
        """These values where given, ``outer``'s elsewhere."""
        mine = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(outer, **{k: v for k, v in mine.items() if v is not None})


_NOTHING_GIVEN = Overrides()
#: the values :func:`using` made active in this context (thread, task)
_GIVEN: ContextVar[Overrides] = ContextVar("mnistforge_settings", default=_NOTHING_GIVEN)


def given() -> Overrides:
    """The values :func:`using` made active here (to hand to a worker process: :func:`activate`)."""
    return _GIVEN.get()


def activate(values: Overrides) -> None:
    """Make ``values`` active in this context for good (a worker process's initializer, so
    that a pool started inside :func:`using` sees what its parent saw, whatever the start
    method)."""
    _GIVEN.set(values)


@contextlib.contextmanager
def using(*, cache: PathArg | None = None, offline: bool | None = None,
          workers: int | None = None, progress: bool | None = None,
          keep_raw: bool | None = None, trust_files: bool | None = None,
          mirrors: str | Iterable[str] | None = None,
          hf_offline: bool | None = None, hf_token: str | None = None,
          hf_endpoint: str | None = None) -> Iterator[Overrides]:
    """While the block runs, the values given (not None) hold for every call below it in this
    context, over the environment and outer blocks; the previous ones return afterwards.

    >>> import os, tempfile
    >>> folder = os.path.join(tempfile.mkdtemp(), "cache")
    >>> with using(cache=folder):
    ...     with using(offline=True):
    ...         str(cache_home()) == folder, offline()
    (True, True)
    """
    values = Overrides(
        cache=None if cache is None else Path(cache),
        offline=offline, workers=workers, progress=progress, keep_raw=keep_raw,
        trust_files=trust_files,
        mirrors=None if mirrors is None else mirrors if isinstance(mirrors, str) else " ".join(mirrors),
        hf_offline=hf_offline, hf_token=hf_token, hf_endpoint=hf_endpoint)
    token = _GIVEN.set(values.over(_GIVEN.get()))
    try:
        yield _GIVEN.get()
    finally:
        _GIVEN.reset(token)


def current() -> Settings:
    """Every setting, resolved now: :func:`using`'s values, else the environment, else defaults."""
    g = _GIVEN.get()
    env = os.environ
    cache, source = _cache_setting(g, env)
    return Settings(
        cache=cache, cache_source=source, offline=_offline(g, env), workers=_workers(g, env),
        progress=_progress(g, env), keep_raw=_keep_raw(g, env), trust_files=_trust(g, env),
        mirrors=_mirrors(g, env), hf_offline=_hf_offline(g, env), hf_token=_hf_token(g, env),
        hf_endpoint=_hf_endpoint(g, env), hf_home=_folder(env.get("HF_HOME")),
        hf_datasets_cache=_folder(env.get("HF_DATASETS_CACHE")),
        keras_home=_folder(env.get("KERAS_HOME")))


# --- one reader per setting (used by the functions below and by current()) -----------------

Environ = Mapping[str, str]


def _cache_setting(g: Overrides, env: Environ) -> tuple[Path, str]:
    if g.cache is not None:
        return g.cache.expanduser(), _GIVEN_CACHE
    home = env.get("MNISTFORGE_HOME")
    if home:
        return Path(home).expanduser(), "MNISTFORGE_HOME"
    return _platform_cache(env), "the platform default"


def _platform_cache(env: Environ) -> Path:
    if sys.platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mnistforge" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mnistforge"
    xdg = env.get("XDG_CACHE_HOME")
    return Path(xdg).expanduser() / "mnistforge" if xdg else Path.home() / ".cache" / "mnistforge"


def _offline(g: Overrides, env: Environ) -> bool:
    return g.offline if g.offline is not None else truthy(env.get("MNISTFORGE_OFFLINE"), False)


def _workers(g: Overrides, env: Environ) -> int:
    if g.workers:
        return max(1, int(g.workers))
    value = env.get("MNISTFORGE_WORKERS")
    if not value:
        return usable_cores()
    try:
        n = int(value)
    except ValueError:
        raise ConfigError("MNISTFORGE_WORKERS is not a number", expected="a positive integer",
                          found=repr(value),
                          hint="unset it or set e.g. MNISTFORGE_WORKERS=2") from None
    return max(1, n)


def _progress(g: Overrides, env: Environ) -> bool | None:
    if g.progress is not None:
        return g.progress
    value = env.get("MNISTFORGE_PROGRESS")
    return None if value is None else truthy(value, True)


def _keep_raw(g: Overrides, env: Environ) -> bool:
    return g.keep_raw if g.keep_raw is not None else \
        truthy(env.get("MNISTFORGE_KEEP_RAW") or None, True)


def _trust(g: Overrides, env: Environ) -> bool:
    return g.trust_files if g.trust_files is not None else \
        truthy(env.get("MNISTFORGE_TRUST_FILES") or None, False)


def _mirrors(g: Overrides, env: Environ) -> tuple[str, str]:
    if g.mirrors is not None:
        return g.mirrors, "mirrors="
    return env.get("MNISTFORGE_MIRRORS") or "", "MNISTFORGE_MIRRORS"


def mirror_entries() -> tuple[str, str]:
    """The mirror entries given (:func:`using`'s, else ``$MNISTFORGE_MIRRORS``; ``""``: none) and
    where they come from, as given: the cache parses them (:mod:`mnistforge.cache.mirrors`)."""
    return _mirrors(_GIVEN.get(), os.environ)


def _hf_offline(g: Overrides, env: Environ) -> bool:
    # the values huggingface_hub reads as true (1, ON, YES, TRUE, any case)
    return g.hf_offline if g.hf_offline is not None else truthy(env.get("HF_HUB_OFFLINE"), False)


def _hf_token(g: Overrides, env: Environ) -> str | None:
    return g.hf_token if g.hf_token is not None else env.get("HF_TOKEN") or None


def _hf_endpoint(g: Overrides, env: Environ) -> str | None:
    return g.hf_endpoint if g.hf_endpoint is not None else env.get("HF_ENDPOINT") or None


def _folder(value: str | None) -> Path | None:
    return Path(value) if value else None


# --- the functions the package calls (an explicit argument wins) ----------------------------

def cache_home(root: PathArg | None = None) -> Path:
    """The cache folder: ``root``, else :func:`using`'s ``cache``, else ``$MNISTFORGE_HOME``,
    else the platform cache.

    Linux: ``$XDG_CACHE_HOME/mnistforge`` (``~/.cache/mnistforge``); macOS:
    ``~/Library/Caches/mnistforge``; Windows: ``%LOCALAPPDATA%\\mnistforge\\Cache``.
    """
    named = (Path(root).expanduser(), _GIVEN_CACHE) if root is not None else \
        _cache_setting(_GIVEN.get(), os.environ)
    return _cache_folder(*named)


def _cache_folder(path: Path, source: str) -> Path:
    """``path``, unless it (or a folder above it) is a file: then a :class:`ConfigError` saying
    which setting named it (a raw ``NotADirectoryError`` would come later, from deep inside)."""
    try:
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


def offline(value: bool | None = None) -> bool:
    """``value`` if given, else whether offline mode is on (``MNISTFORGE_OFFLINE``, ``--offline``)."""
    if value is not None:
        return bool(value)
    return _offline(_GIVEN.get(), os.environ)


def offline_switch() -> tuple[str, str]:
    """What turned offline mode on, and how to turn it off, for an error to blame the switch
    the user really used: ``--offline`` (:func:`using`) or ``MNISTFORGE_OFFLINE=1``.

    >>> with using(offline=True):
    ...     offline_switch()
    ('--offline', 'drop --offline')
    """
    if _GIVEN.get().offline is not None:
        return "--offline", "drop --offline"
    return "MNISTFORGE_OFFLINE=1", "unset MNISTFORGE_OFFLINE"


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
    return _workers(_GIVEN.get(), os.environ)


def progress(disable: bool | None = None) -> bool:
    """Whether to show progress bars: not ``disable`` if given, else ``--no-progress`` /
    ``MNISTFORGE_PROGRESS``, else only when stderr is a terminal."""
    if disable is not None:
        return not disable
    show = _progress(_GIVEN.get(), os.environ)
    return sys.stderr.isatty() if show is None else show


def keep_raw(value: bool | None = None) -> bool:
    """``value`` if given, else ``MNISTFORGE_KEEP_RAW`` (default: keep decompressed copies)."""
    if value is not None:
        return bool(value)
    return _keep_raw(_GIVEN.get(), os.environ)


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
    return _trust(_GIVEN.get(), os.environ)


def hf_offline(value: bool | None = None) -> bool:
    """``value`` if given, else whether Hugging Face Hub offline mode is on (``HF_HUB_OFFLINE``:
    ``export hf --push`` sends nothing)."""
    if value is not None:
        return bool(value)
    return _hf_offline(_GIVEN.get(), os.environ)


def hf_token(value: str | None = None) -> str | None:
    """The Hub token: ``value`` if given, else ``HF_TOKEN``, else None (then huggingface_hub's
    stored login).  Never logged or shown: pass it to the Hub client only."""
    return value or _hf_token(_GIVEN.get(), os.environ)


def hf_endpoint(value: str | None = None) -> str | None:
    """The Hub's address: ``value`` if given, else ``HF_ENDPOINT``, else None (the public Hub)."""
    return value or _hf_endpoint(_GIVEN.get(), os.environ)


def hf_home() -> Path | None:
    """``HF_HOME`` (Hugging Face's folder) when set: a place where copies may already be."""
    return _folder(os.environ.get("HF_HOME"))


def hf_datasets_cache() -> Path | None:
    """``HF_DATASETS_CACHE`` (the datasets library's cache) when set."""
    return _folder(os.environ.get("HF_DATASETS_CACHE"))


def keras_home() -> Path | None:
    """``KERAS_HOME`` (Keras's folder, datasets under ``datasets/``) when set."""
    return _folder(os.environ.get("KERAS_HOME"))
