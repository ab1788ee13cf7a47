"""The gate's entry point for arrays: :func:`admit` (what every array route calls before returning data)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    """What the gate found: the ``verdict`` and the content ``hashes`` computed (reusable by the caller)."""

    dataset: str | None
    split: str | None
    route: str
    verdict: Verdict
    hashes: ContentHashes


def admit(images: npt.ArrayLike, labels: npt.ArrayLike, *, dataset: str | None, split: str | None,
          route: str, where: Where, trust: bool = False, classes: Sequence[str] | None = None,
          formed: bool = True, source: PathArg | None = None, before: os.stat_result | None = None,
          key: str = "", cache: PathArg | None = None, rehash: bool = False,
          rows: Callable[[], RowFacts | None] | None = None) -> Admission:
    """Check arrays (as the route read them, upright as the official files store them) before
    they reach a caller: the :class:`Admission`, or IntegrityError/FormatError (malformed; ``formed=False`` leaves that
    to the caller), DataMismatchError (not the claim ``dataset``/``split``; ``trust=True`` skips that check only).
    ``route``: a key of :data:`~mnistforge.gate.policy.POLICY`; a route that records passes ``source``, ``before`` (its
    stat before the read) and ``key``; ``rows``: the row map's facts, asked when needed.

    >>> admit(np.zeros((3, 28, 28), np.uint8), np.arange(3), dataset=None, split=None, route="npz",
    ...       where="x.npz").verdict.status
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
    # a copy in one file: its content hashes recorded while it keeps the identity it had when read
    stamped = (source, before) if r.record == "seen" and source is not None and before is not None else None
    facts = dict(recall(stamped[0], cache) or {}) if stamped is not None else {}
    known = None if rehash else facts.get(f"content:{key}")   # the verdict is made again from them
    h = ContentHashes(c, known if isinstance(known, dict) else None, fast=not rehash)  # check: sha256
    verdict = judge(c, dataset, split, where=where, trust=trust, hashes=h,
                    order_free="order-free sha256" in r.hashes, rows=rows)
    if stamped is not None and h.to_facts() != known:
        remember(stamped[0], {**facts, f"content:{key}": h.to_facts()}, before=stamped[1], cache=cache)
    return Admission(dataset, split, route, verdict, h)
