"""The trust gate's policy: for each route into the data, what is checked and when a recorded hash
may be trusted; one table, read by the gate's code and shown in ``docs/reliability.md`` (:func:`policy_rows`).

>>> POLICY["idx-folder"].record, POLICY["idx-folder"].hashes[:2]
('seen', ('content xxh3_128', 'content sha256'))
>>> sorted(r for r, p in POLICY.items() if p.record == "none")[:3]
['idx-copy', 'npy', 'parquet']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["POLICY", "Rule", "policy_rows", "rule"]


@dataclass(frozen=True)
class Rule:
    """What the gate does on one route: how it tells what the data is, what is hashed, the hashes
    compared in order (the first pinned decides; ``check=True`` skips the fast XXH3, which finds
    damage but not a crafted collision), where a hash is kept, what ``check=True`` re-hashes."""

    route: str
    identity: str
    parts: tuple[str, ...]
    hashes: tuple[str, ...]
    record: str
    rehash: str


#: the fields several rules share (splatted into :class:`Rule`)
_FOLDER: dict[str, Any] = {"parts": ("labels", "images"), "record": "seen",
                           "rehash": "both files by sha256, ignoring the records (and the raw copies of keep_raw)"}
_ARRAYS: dict[str, Any] = {"parts": ("images", "labels"),
                           "hashes": ("content xxh3_128", "content sha256", "order-free sha256"),
                           "record": "none", "rehash": "the arrays by sha256 (they are hashed on every load)"}
#: a copy in one file: the registry's answer is kept while the file keeps its identity
_ONE_FILE: dict[str, Any] = {**_ARRAYS, "record": "seen", "rehash": "the arrays by sha256, ignoring the record"}

#: route -> rule; the routes are the ``route=`` of :func:`mnistforge.gate.admit`
POLICY: dict[str, Rule] = {r.route: r for r in (
    Rule("cache", "the registry's file hashes (the file was fetched under that name)",
         parts=("images", "labels"), hashes=("sha256", "md5", "content sha256"), record="sidecar",
         rehash="the raw copy and the compressed download"),
    Rule("idx-folder", "registry content (else file) hashes of both files; a match with another "
                       "registry file names it",
         hashes=("content xxh3_128", "content sha256", "content md5", "sha256", "md5"), **_FOLDER),
    Rule("build-folder", "the build manifest's output hashes of both files", hashes=("manifest sha256",), **_FOLDER),
    Rule("torchvision", "registry content and order-free hashes of the arrays (root/<Name>/raw)", **_ARRAYS),
    Rule("npz", "registry content and order-free hashes of the arrays", **_ONE_FILE),
    Rule("npy", "registry content and order-free hashes of the arrays", **_ARRAYS),
    Rule("csv", "registry content and order-free hashes of the arrays", **_ONE_FILE),
    Rule("parquet", "registry content and order-free hashes of the arrays", **_ARRAYS),
    Rule("mat", "registry content and order-free hashes of the arrays", **_ONE_FILE),
    Rule("idx-copy", "registry content and order-free hashes of the arrays (idx files under "
                     "other names)", **_ARRAYS),
    Rule("hf-export", "every shard against the sha256 the export recorded (its card, "
                      "croissant.json); an export that recorded none: registry content and "
                      "order-free hashes of the arrays", parts=("shards", "images", "labels"),
         hashes=("recorded shard sha256", "content xxh3_128", "content sha256", "order-free sha256"),
         record="seen", rehash="every shard, ignoring the records"),
)}


def rule(route: str) -> Rule:
    """The rule of ``route`` (a ConfigError names the known routes)."""
    try:
        return POLICY[route]
    except KeyError:
        raise ConfigError("unknown route into the data", expected=", ".join(POLICY), found=repr(route)) from None


def policy_rows() -> list[tuple[str, str, str, str, str]]:
    """The table as rows (route, identity, hashes, record, ``check=True``), as the docs show it."""
    records = {"sidecar": "while size and mtime hold (`.sha256` sidecar)",
               "seen": "while size, mtime, ctime and inode hold (`<cache>/seen/`)",
               "none": "never: hashed on every load"}
    return [(r.route, r.identity, ", then ".join(r.hashes), records[r.record], r.rehash) for r in POLICY.values()]
