"""Every setting in one frozen object, :func:`current`, which reads the environment once (the only
module that reads it; nothing writes it; the variables: :data:`VARIABLES`, ``docs/usage.md``).

For every setting: an argument to :func:`current` (None: not given), else the values :func:`using` holds in a context
variable (the command line's ``--cache``, ``--offline``, ``--no-progress``), else the environment, else the default;
each decided when read (a bad variable is an error only where its setting is used).

>>> current(offline=True, workers=3).workers
3
>>> with using(offline=True, progress=False):
...     with using(cache="/data/cache") as s:
...         str(s.cache), s.offline, s.progress, s.offline_switch
('/data/cache', True, False, ('--offline', 'drop --offline'))
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["Settings", "Overrides", "VARIABLES", "current", "using", "given", "activate", "cache_home",
           "truthy", "usable_cores"]

#: every environment variable mnistforge reads, and the :class:`Settings` property it sets (the
#: list in docs/usage.md is tested against this one)
VARIABLES: dict[str, str] = {
    "MNISTFORGE_HOME": "cache", "MNISTFORGE_OFFLINE": "offline", "MNISTFORGE_WORKERS": "workers",
    "MNISTFORGE_PROGRESS": "progress", "MNISTFORGE_KEEP_RAW": "keep_raw",
    "MNISTFORGE_TRUST_FILES": "trust_files", "MNISTFORGE_MIRRORS": "mirrors",
    "HF_HUB_OFFLINE": "hf_offline", "HF_TOKEN": "hf_token", "HF_ENDPOINT": "hf_endpoint",
    "XDG_CACHE_HOME": "cache", "LOCALAPPDATA": "cache",
    "HF_HOME": "hf_home", "HF_DATASETS_CACHE": "hf_datasets_cache", "KERAS_HOME": "keras_home",
}
#: the settings an argument or :func:`using` may give
GIVEN = ("cache", "offline", "workers", "progress", "keep_raw", "trust_files", "mirrors", "hf_offline",
         "hf_token", "hf_endpoint")
#: the values :func:`using` holds, by setting (what :func:`given` hands to a worker process)
Overrides = Mapping[str, Any]

#: the source named when an explicit cache folder is not a folder
_GIVEN_CACHE = "cache= / --cache"
#: the on/off words of an environment value (as huggingface_hub reads them)
_ON_OFF = {**dict.fromkeys(("1", "true", "yes", "on"), True), **dict.fromkeys(("0", "false", "no", "off", ""), False)}


def truthy(value: str | None, default: bool) -> bool:
    """An on/off environment value (``1/true/yes/on``, ``0/false/no/off``; else ``default``).

    >>> truthy("ON", False), truthy("0", True), truthy(None, True)
    (True, False, True)
    """
    return default if value is None else _ON_OFF.get(value.strip().lower(), default)


@dataclass(frozen=True)
class Settings:
    """Every setting: ``given`` values over ``env`` (read once); ``repr`` shows neither (the token)."""

    given: Overrides = field(repr=False)
    env: Mapping[str, str] = field(repr=False)

    def _arg(self, name: str) -> Any:
        return self.given.get(name)

    def _flag(self, name: str, from_env: bool) -> bool:
        got = self._arg(name)
        return from_env if got is None else bool(got)

    @property
    def cache_source(self) -> str:
        """What names the cache folder (an error blames that switch)."""
        if self._arg("cache") is not None:
            return _GIVEN_CACHE
        return "MNISTFORGE_HOME" if self.env.get("MNISTFORGE_HOME") else "the platform default"

    @property
    def cache(self) -> Path:
        """The cache folder, checked on each read (a file there: ConfigError naming what named it)."""
        source = self.cache_source
        if source == _GIVEN_CACHE:
            path = Path(self._arg("cache")).expanduser()
        elif source == "MNISTFORGE_HOME":
            path = Path(self.env["MNISTFORGE_HOME"]).expanduser()
        else:
            path = _platform_cache(self.env)
        there = next((p for p in (path, *path.parents) if os.path.exists(p)), None)   # the nearest
        if there is not None and not os.path.isdir(there):   # not a NotADirectoryError later, deep inside
            raise ConfigError(f"the cache named by {source} is not a folder", path=path,
                              expected="a folder (or a new name) for the cache",
                              found="a file" if there == path else f"{there} is a file",
                              hint="point MNISTFORGE_HOME (or --cache) at a folder")
        return path

    @property
    def offline(self) -> bool:
        """Never use the network (``MNISTFORGE_OFFLINE``, ``--offline``)."""
        return self._flag("offline", truthy(self.env.get("MNISTFORGE_OFFLINE"), False))

    @property
    def offline_switch(self) -> tuple[str, str]:
        """What turned offline mode on, and how to turn it off: an error blames the switch used."""
        if self._arg("offline") is not None:
            return "--offline", "drop --offline"
        return "MNISTFORGE_OFFLINE=1", "unset MNISTFORGE_OFFLINE"

    @property
    def workers(self) -> int:
        """Processes/threads for parallel work (default: the usable cores)."""
        if got := self._arg("workers"):
            return max(1, int(got))
        if not (value := self.env.get("MNISTFORGE_WORKERS")):
            return usable_cores()
        try:
            return max(1, int(value))
        except ValueError:
            raise ConfigError("MNISTFORGE_WORKERS is not a number", expected="a positive integer", found=repr(value),
                              hint="unset it or set e.g. MNISTFORGE_WORKERS=2") from None

    @property
    def progress(self) -> bool | None:
        """Progress bars on or off; None: only on a terminal (:attr:`bars`)."""
        if (got := self._arg("progress")) is not None:
            return bool(got)
        value = self.env.get("MNISTFORGE_PROGRESS")
        return None if value is None else truthy(value, True)

    @property
    def bars(self) -> bool:
        """Whether to draw progress bars now."""
        return sys.stderr.isatty() if self.progress is None else self.progress

    @property
    def keep_raw(self) -> bool:
        """Keep decompressed copies of the cache's own files (default on)."""
        return self._flag("keep_raw", truthy(self.env.get("MNISTFORGE_KEEP_RAW") or None, True))

    @property
    def trust_files(self) -> bool:
        """Load data that fails the trust gate (default off: refused)."""
        return self._flag("trust_files", truthy(self.env.get("MNISTFORGE_TRUST_FILES") or None, False))

    @property
    def mirrors(self) -> tuple[str, str]:
        """The mirror entries as given (``""``: none) and where from (:mod:`mnistforge.cache.mirrors`)."""
        if (got := self._arg("mirrors")) is None:
            return self.env.get("MNISTFORGE_MIRRORS") or "", "MNISTFORGE_MIRRORS"
        return got if isinstance(got, str) else " ".join(got), "mirrors="

    @property
    def hf_offline(self) -> bool:
        """Hub offline mode (``export hf --push`` sends nothing)."""
        return self._flag("hf_offline", truthy(self.env.get("HF_HUB_OFFLINE"), False))

    @property
    def hf_token(self) -> str | None:
        """The Hub token (None: the stored login); never logged or shown."""
        got = self._arg("hf_token")
        return str(got) if got else self.env.get("HF_TOKEN") or None

    @property
    def hf_endpoint(self) -> str | None:
        """Another Hub (None: the public one)."""
        got = self._arg("hf_endpoint")
        return str(got) if got else self.env.get("HF_ENDPOINT") or None

    @property
    def hf_home(self) -> Path | None:
        """Hugging Face's folder, where ``find-copies`` looks for copies."""
        return _folder(self.env.get("HF_HOME"))

    @property
    def hf_datasets_cache(self) -> Path | None:
        return _folder(self.env.get("HF_DATASETS_CACHE"))

    @property
    def keras_home(self) -> Path | None:
        return _folder(self.env.get("KERAS_HOME"))


def _folder(value: str | None) -> Path | None:
    return Path(value) if value else None


def _platform_cache(env: Mapping[str, str]) -> Path:
    if sys.platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mnistforge" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mnistforge"
    xdg = env.get("XDG_CACHE_HOME")
    return Path(xdg).expanduser() / "mnistforge" if xdg else Path.home() / ".cache" / "mnistforge"


#: the values :func:`using` made active in this context (thread, task)
_GIVEN: ContextVar[Overrides] = ContextVar("mnistforge_settings", default={})


def _given(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` given (None: not given) over those :func:`using` holds here."""
    if unknown := sorted(set(values) - set(GIVEN)):
        raise TypeError(f"no setting {unknown[0]!r} (the settings: {', '.join(GIVEN)})")
    return {**_GIVEN.get(), **{k: v for k, v in values.items() if v is not None}}


def current(**values: Any) -> Settings:
    """Every setting from the environment as it is now, ``values`` (None: not given) over :func:`using`'s."""
    return Settings(_given(values), {k: os.environ[k] for k in VARIABLES if k in os.environ})


@contextlib.contextmanager
def using(**values: Any) -> Iterator[Settings]:
    """While the block runs, ``values`` (as :func:`current` takes them) hold for every call below
    it in this context; the previous ones return afterwards.  Yields the settings in force."""
    token = _GIVEN.set(_given(values))
    try:
        yield current()
    finally:
        _GIVEN.reset(token)


def given() -> Overrides:
    """The values :func:`using` made active here (to hand to a worker process: :func:`activate`)."""
    return _GIVEN.get()


def activate(values: Overrides) -> None:
    """Make ``values`` active here for good (a worker process's initializer: a pool started inside
    :func:`using` sees what its parent saw, whatever the start method)."""
    _GIVEN.set(dict(values))


def cache_home(root: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: ``root`` if given, else :attr:`Settings.cache`."""
    return current(cache=root).cache


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
