"""The gate's entry point for arrays: :func:`admit` (what every array route calls before returning data)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..registry import get_dataset
from .content import ContentHashes, Verdict, judge
from .formed import check_images, check_labels, check_pair, pixel_range
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


def admit(images, labels, *, dataset: str | None, split: str | None, route: str, where,
          trust: bool = False, classes=None, formed: bool = True) -> Admission:
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
        check_images(images, info, where, exact_type=False)
        check_pair(images, labels, info, where)
        check_labels(info, split or "", labels, list(classes) if classes else list(info.classes), where)
    elif formed:
        pixel_range(images, where)
    if images.dtype != np.uint8:  # whole bytes (checked above): the hashes are of bytes
        images = images.astype(np.uint8)
    c = _Arrays(images, labels.astype(np.int64) if labels.dtype.kind in "iub" else labels)
    h = ContentHashes(c)
    verdict = judge(c, dataset, split, where=where, trust=trust, hashes=h,
                    order_free="order-free sha256" in r.hashes)
    return Admission(dataset, split, route, verdict, h)
