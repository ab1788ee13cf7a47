"""The trust gate's policy: for each route into the data, what is checked and when a recorded hash
may be trusted.  One table, read by the gate's code (:mod:`.files`, :mod:`.content`,
:mod:`.formed`) and shown in ``docs/reliability.md`` (:func:`policy_rows`).

>>> POLICY["idx-folder"].record, POLICY["idx-folder"].hashes[:2]
('seen', ('content xxh3_128', 'content sha256'))
>>> sorted(r for r, p in POLICY.items() if p.record == "none")[:3]
['idx-copy', 'npy', 'parquet']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from ..errors import ConfigError

__all__ = ["FORMED", "POLICY", "Rule", "policy_rows", "rule"]

#: what every route checks before an array reaches a caller (against the registry's facts for
#: the dataset: ``image_shape``, the class list; pixels are bytes)
FORMED = ("images N x H x W as the registry says (28 x 28)", "pixels whole numbers 0..255 (uint8)",
          "labels whole numbers inside the class range", "as many labels as images")


@dataclass(frozen=True)
class Rule:
    """What the gate does on one route.

    ``identity``: how the gate tells what the data is; ``parts``: which files/arrays
    are hashed; ``hashes``: the recorded hashes compared, in the order tried
    (the first that is pinned decides, later ones name what the data is instead);
    ``record``: where a hash once computed is kept and when it is trusted
    (``sidecar``: next to a cache file, while size and mtime hold; ``seen``:
    ``<cache>/seen/``, while size, mtime, ctime and inode hold; ``none``: hashed
    on every load); ``rehash``: what ``check=True`` re-hashes.

    ``content xxh3_128`` (the registry's ``content_xxh3_128``, where recorded) is the fast
    hash a first load identifies content by; ``check=True`` skips it and re-hashes with the
    sha256 that follows it (XXH3 finds damage and other files, not a crafted collision).
    """

    route: str
    identity: str
    parts: tuple[str, ...]
    hashes: tuple[str, ...]
    record: str
    rehash: str


class _Shared(TypedDict):
    """The fields several rules share (splatted into :class:`Rule`)."""
    parts: tuple[str, ...]
    record: str
    rehash: str


class _SharedHashed(_Shared):
    """Shared fields that also fix the hashes."""
    hashes: tuple[str, ...]


_FOLDER: _Shared = {"parts": ("labels", "images"), "record": "seen",
                    "rehash": "both files by sha256, ignoring the records (and the raw copies of keep_raw)"}
_ARRAYS: _SharedHashed = {"parts": ("images", "labels"),
                          "hashes": ("content xxh3_128", "content sha256", "order-free sha256"),
                          "record": "none", "rehash": "the arrays by sha256 (they are hashed on every load)"}
#: a copy in one file: the registry's answer is kept while the file keeps its identity
_ONE_FILE: _SharedHashed = {**_ARRAYS, "record": "seen", "rehash": "the arrays by sha256, ignoring the record"}

#: route -> rule; the routes are the ``route=`` of :func:`mnistforge.gate.admit`
POLICY: dict[str, Rule] = {r.route: r for r in (
    Rule("cache", "the registry's file hashes (the file was fetched under that name)",
         parts=("images", "labels"), hashes=("sha256", "md5", "content sha256"), record="sidecar",
         rehash="the raw copy and the compressed download"),
    Rule("idx-folder", "registry content (else file) hashes of both files; a match with another "
                       "registry file names it",
         hashes=("content xxh3_128", "content sha256", "content md5", "sha256", "md5"), **_FOLDER),
    Rule("build-folder", "the build manifest's output hashes of both files",
         hashes=("manifest sha256",), **_FOLDER),
    Rule("torchvision", "registry content and order-free hashes of the arrays (root/<Name>/raw)",
         **_ARRAYS),
    Rule("npz", "registry content and order-free hashes of the arrays", **_ONE_FILE),
    Rule("npy", "registry content and order-free hashes of the arrays", **_ARRAYS),
    Rule("csv", "registry content and order-free hashes of the arrays", **_ONE_FILE),
    Rule("parquet", "registry content and order-free hashes of the arrays", **_ARRAYS),
    Rule("mat", "registry content and order-free hashes of the arrays", **_ONE_FILE),
    Rule("idx-copy", "registry content and order-free hashes of the arrays (idx files under "
                     "other names)", **_ARRAYS),
    Rule("hf-export", "every shard against the sha256 the export recorded (its card, "
                      "croissant.json); an export that recorded none: registry content and "
                      "order-free hashes of the arrays",
         parts=("shards", "images", "labels"),
         hashes=("recorded shard sha256", "content xxh3_128", "content sha256", "order-free sha256"),
         record="seen",
         rehash="every shard, ignoring the records"),
)}


def rule(route: str) -> Rule:
    """The rule of ``route`` (a ConfigError names the known routes)."""
    try:
        return POLICY[route]
    except KeyError:
        raise ConfigError("unknown route into the data", expected=", ".join(POLICY),
                          found=repr(route)) from None


def policy_rows() -> list[tuple[str, str, str, str, str]]:
    """The table as rows (route, identity, hashes, record, ``check=True``), as the docs show it."""
    records = {"sidecar": "while size and mtime hold (`.sha256` sidecar)",
               "seen": "while size, mtime, ctime and inode hold (`<cache>/seen/`)",
               "none": "never: hashed on every load"}
    return [(r.route, r.identity, ", then ".join(r.hashes), records[r.record], r.rehash)
            for r in POLICY.values()]
