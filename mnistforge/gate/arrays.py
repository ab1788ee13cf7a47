"""The gate's entry point for arrays: :func:`admit` (what every array route calls before returning data)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..cache.seen import recall, remember
from ..errors import PathArg, Where
from ..registry import get_dataset
from .content import ContentHashes, RowFacts, Verdict, judge
from .formed import pixel_range, require_images, require_labels, require_pair
from .policy import rule

__all__ = ["Admission", "admit"]


@dataclass
class _Arrays:
    images: np.ndarray
    labels: np.ndarray


@dataclass
class Admission:
    """What the gate found: the ``verdict`` (:class:`~mnistforge.gate.content.Verdict`: status
    and registry match) and the content ``hashes`` computed (reusable by the caller)."""

    dataset: str | None
    split: str | None
    route: str
    verdict: Verdict
    hashes: ContentHashes

    @property
    def official_order(self) -> bool:
        return self.verdict.official_order


def _recorded(source: PathArg, key: str, cache: PathArg | None) -> dict[str, Any] | None:
    """The content hashes recorded for split ``key`` of single-file copy ``source``, while the
    file keeps its identity (the verdict is made again from them: a registry update counts)."""

    facts = recall(source, cache) or {}
    got = facts.get(key)
    return got if isinstance(got, dict) else None


def _record(source: PathArg, before: os.stat_result, key: str, h: ContentHashes,
            cache: PathArg | None) -> None:

    facts = dict(recall(source, cache) or {})
    facts[key] = h.to_facts()
    remember(source, facts, before=before, cache=cache)


def admit(images: npt.ArrayLike, labels: npt.ArrayLike, *, dataset: str | None, split: str | None,
          route: str, where: Where, trust: bool = False, classes: Sequence[str] | None = None,
          formed: bool = True, source: PathArg | None = None, before: os.stat_result | None = None,
          key: str = "", cache: PathArg | None = None, rehash: bool = False,
          rows: Callable[[], RowFacts | None] | None = None) -> Admission:
    """Check arrays before they reach a caller; return the :class:`Admission` or raise.

    ``images`` (``N x H x W``, bytes in any integer type) and ``labels`` (integers) as the
    route read them, upright as the official files store them; ``dataset``/``split``: what
    the caller claims they are (None: no claim, the content names them); ``route``: a key of
    :data:`~mnistforge.gate.policy.POLICY` (``npz``, ``hf-export``...); ``where``: the path
    errors name.  Raises :class:`~mnistforge.errors.IntegrityError` /
    :class:`~mnistforge.errors.FormatError` for a malformed split (shape, type, pixel or
    class range; ``formed=False`` leaves these to the caller) and
    :class:`~mnistforge.errors.DataMismatchError` when the content is not the claim
    (``trust=True``: the explicit opt-out of the content check only).

    Routes whose rule records (``record == "seen"``: a copy in one file) pass ``source`` (the
    file), ``before`` (its stat before it was read) and ``key`` (the split): the content hashes
    are then kept in ``<cache>/seen/`` and reused while the file keeps its identity, the verdict
    made again from them (``rehash=True`` hashes again).  ``rows``: a callable giving the
    :class:`~mnistforge.gate.content.RowFacts` of the arrays, asked only when the hashes do not
    settle the claim (a subset of official rows: verdict ``mapped``).

    >>> import numpy as np
    >>> a = admit(np.zeros((3, 28, 28), np.uint8), np.arange(3), dataset=None, split=None,
    ...           route="npz", where="x.npz")
    >>> a.verdict.status
    'unclaimed'
    """
    r = rule(route)
    images, labels = np.asarray(images), np.asarray(labels)
    info = get_dataset(dataset) if dataset else None
    if formed and info is not None:
        require_images(images, info, where, exact_type=False)
        require_pair(images, labels, info, where)
        require_labels(info, split or "", labels, list(classes) if classes else list(info.classes), where)
    elif formed:
        pixel_range(images, where)
    if images.dtype != np.uint8:  # whole bytes (checked above): the hashes are of bytes
        images = images.astype(np.uint8)
    c = _Arrays(images, labels.astype(np.int64) if labels.dtype.kind in "iub" else labels)
    # the file and its stat before the read, where the rule records the hashes (a copy in one file)
    stamped = (source, before) if r.record == "seen" and source is not None and before is not None else None
    rkey = f"content:{key}"
    known = _recorded(stamped[0], rkey, cache) if stamped is not None and not rehash else None
    h = ContentHashes(c, known, fast=not rehash)   # check=True: sha256, as it promises
    verdict = judge(c, dataset, split, where=where, trust=trust, hashes=h,
                    order_free="order-free sha256" in r.hashes, rows=rows)
    if stamped is not None and h.to_facts() != known:
        _record(stamped[0], stamped[1], rkey, h, cache)
    return Admission(dataset, split, route, verdict, h)
