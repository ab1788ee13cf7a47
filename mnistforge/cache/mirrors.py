"""Mirrors a user controls (``load(..., mirrors=)``, ``fetch --mirror``/``--from URL``,
``$MNISTFORGE_MIRRORS``): address templates tried before (or after) the registry's, parsed and
checked here (a bad one is a :class:`~mnistforge.errors.ConfigError` before anything is fetched).
"""
from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import ConfigError
from .. import settings

__all__ = ["MIRROR_FIELDS", "REGISTRY_MARK", "Mirrors", "mirrors", "parse_mirrors"]

#: the placeholders an address template may hold: ``{name}`` the dataset's folder in the
#: registry and the cache (``mnist``, ``fashion-mnist``, ``emnist``...), ``{file}`` the file name
MIRROR_FIELDS = ("name", "file")
#: the entry that says where the registry's own addresses go in the list (default: last)
REGISTRY_MARK = "registry"


@dataclass(frozen=True)
class Mirrors:
    """Templates tried ``before`` and ``after`` the registry's addresses (``only``: not those)."""

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    only: bool = False

    def urls(self, name: str, file: str, registry: Iterable[str] = ()) -> list[str]:
        """The addresses of one file, in the order they are tried (each once).

        >>> Mirrors(("http://m/{file}",)).urls("mnist", "a.gz", ["https://r/a.gz"])
        ['http://m/a.gz', 'https://r/a.gz']
        """
        ours = [t.format(name=name, file=file) for t in self.before]
        tail = [t.format(name=name, file=file) for t in self.after]
        urls = ours + tail if self.only else ours + list(registry) + tail
        return list(dict.fromkeys(urls))


def _template(entry: str, source: str) -> str:
    """One entry as a template (a base address ``BASE`` reads as ``BASE/{name}/{file}``), checked."""
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
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(entry) if f is not None]
    except ValueError as e:  # an unmatched brace
        raise ConfigError(f"a mirror template in {source} does not parse", expected=
                          "placeholders {name} and {file} in matched braces", found= f"{entry!r} ({e})") from None
    bad = [f for f, spec, conv in fields if f not in MIRROR_FIELDS or spec or conv]
    if bad or "file" not in {f for f, _, _ in fields}:
        raise ConfigError(f"a mirror template in {source} has a bad placeholder", expected=
                          "{file} (the file name), optionally {name} (the dataset folder: "
                          "mnist, fashion-mnist, emnist...), nothing else",
                          found=f"{entry!r}" + (f": {{{bad[0]}}}" if bad else ": no {file}"),
                          hint="e.g. https://host/mirror/{name}/{file}, or a base address "
                               "without braces")
    return entry


def parse_mirrors(entries: Mirrors | str | Iterable[object], *, source: str = "mirrors=",
                  only: bool = False) -> Mirrors:
    """Mirror entries (a list, or one string separated by spaces) as :class:`Mirrors`: those
    before the word ``registry`` come before the registry's addresses, those after it after.

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


def mirrors(value: Mirrors | str | Iterable[object] | None = None) -> Mirrors:
    """Addresses tried besides the registry's: ``value`` if given, else the settings'
    (:func:`mnistforge.settings.using`, ``$MNISTFORGE_MIRRORS``).  An entry is a base address
    (``https://host/path``: files at ``https://host/path/{name}/{file}``, the cache's own
    layout) or a template holding ``{file}`` and optionally ``{name}`` (the dataset's folder);
    every file is checked against the registry's hashes, whoever served it."""
    if value is not None:
        return parse_mirrors(value)
    entries, source = settings.current().mirrors
    return parse_mirrors(entries, source=source) if entries else Mirrors()
