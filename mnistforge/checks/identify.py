"""Say what a third-party copy is: which dataset and split, and how it departs from the official files.

For each split of a copy (:mod:`mnistforge.io.foreign`, made canonical by :mod:`mnistforge.loaders.foreign`),
:func:`identify` answers one verdict of the table in ``docs/verify.md``: ``identical``, ``reordered``, ``subset``
(found by the row map, :mod:`mnistforge.loaders.rowmap`), ``transformed`` (with the listed changes), ``differs`` (with
a reference at hand), ``superseded`` (an older release the registry knows) or ``unknown`` (with what it resembles).
Hashes compare the canonical arrays serialised as idx content with the registry's ``content_sha256`` of the official
files, so no file is needed; image-by-image comparison needs the reference arrays.

>>> from mnistforge.io.foreign import ForeignSplit
>>> from mnistforge.loaders.foreign import canonicalise
>>> rng = np.random.default_rng(0)
>>> ref = rng.integers(0, 256, (6, 28, 28), dtype=np.uint8); ref[:, 0] = 0
>>> labels = np.arange(6) % 3
>>> copy = canonicalise(ForeignSplit("test", ref[::-1], labels[::-1], "demo"))
>>> ident = identify(copy, reference=(ref, labels, "toy", "test"), search_cache=False)
>>> ident.verdict, ident.dataset, ident.order
('reordered', 'toy', 'other')
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gate.content import ContentHashes
from ..loaders import load
from ..loaders.foreign import (Canonical, Change, Match, label_shift_cue, registry_match,
                               shift_change, transpose_change)
from ..loaders.rowmap import Official, RowMap, copy_map
from ..loaders.split import DatasetSplit
from ..registry import find_superseded, get_dataset, list_datasets
from .result import FAIL, PASS, WARN, CheckResult
from .statistics import orientation_score

logger = logging.getLogger(__name__)

#: the official splits to map a copy's rows to: a list, or ``dataset -> list``
Officials = list[Official] | Callable[[str | None], list[Official]]

__all__ = ["Identification", "compare_with_reference", "identify", "identification_check", "row_map_check"]

#: how many differing indices an answer lists
FIRST = 10


@dataclass
class Identification:
    """The answer for one split of a copy (``to_dict()`` is what ``verify --json`` carries)."""

    key: str
    verdict: str
    dataset: str | None = None
    split: str | None = None
    order: str | None = None
    changes: list[Change] = field(default_factory=list)
    storage: list[str] = field(default_factory=list)
    matched_by: str | None = None
    images_differ: int | None = None
    labels_differ: int | None = None
    first_images: list[int] = field(default_factory=list)
    first_labels: list[int] = field(default_factory=list)
    resembles: dict[str, Any] = field(default_factory=dict)
    count: int = 0
    where: str = ""
    format: str = ""
    missing: int | None = None
    note: str = ""
    #: each row's official (dataset, split, index), when official images were at hand
    row_map: RowMap | None = field(default=None, repr=False)

    @property
    def target(self) -> str:
        return f"{self.dataset} {self.split}" if self.dataset else "an unknown dataset"

    def message(self) -> str:
        """One line for people."""
        after = "; ".join(c.description for c in self.changes)
        if self.verdict == "identical":
            text = f"identical to {self.target}"
        elif self.verdict == "transformed":
            text = f"identical to {self.target} after: {after}"
        elif self.verdict == "reordered":
            text = f"identical content to {self.target} in another order" + (f", after: {after}" if after else "")
        elif self.verdict == "superseded":
            text = f"{self.target}, an older release"
        elif self.verdict == "subset":
            text = f"a subset of {self.target}: {self.count:,} official rows" + (f", after: {after}" if after else "")
        elif self.verdict == "differs":
            parts = []
            both = (("images", self.images_differ, self.first_images),
                    ("labels", self.labels_differ, self.first_labels))
            for what, n, first in both:
                if n is None:
                    parts.append(f"{what} differ (how many needs a reference: --reference)")
                elif n:
                    parts.append(f"{n} {what} differ (first: {', '.join(map(str, first))})")
            same = [what for what, n, _ in both if n == 0]
            text = f"{self.target}: " + "; ".join(parts) + (f"; {' and '.join(same)} identical" if same else "")
            if self.missing and self.missing != self.images_differ:  # a subset, or a superset
                text += f"; {self.missing} of the reference's images are not in the copy"
            if self.order == "other":
                text += "; in another order"
            if after:
                text += f"; after: {after}"
        else:
            r = self.resembles
            text = (f"unknown: {r.get('count')} images, {r.get('classes')} classes, labels "
                    f"{r.get('label_range')}, orientation cue {r.get('orientation')}")
            if r.get("same_size"):
                text += "; same size as " + ", ".join(r["same_size"])
        if self.note:
            text += f"; {self.note}"
        if self.row_map is not None:
            text += f"; {self.row_map.message()}"
        return text + (f" [{self.matched_by}]" if self.matched_by else "")

    def to_dict(self) -> dict[str, Any]:
        return {"split_key": self.key, "verdict": self.verdict, "dataset": self.dataset, "split": self.split,
                "order": self.order, "changes": [c.to_dict() for c in self.changes], "storage": list(self.storage),
                "matched_by": self.matched_by, "images_differ": self.images_differ,
                "labels_differ": self.labels_differ, "first_images": self.first_images,
                "first_labels": self.first_labels, "resembles": self.resembles, "count": self.count,
                "missing": self.missing, "where": self.where, "format": self.format, "note": self.note,
                "row_map": None if self.row_map is None else self.row_map.summary(),
                "leakage": None if self.row_map is None else self.row_map.leakage(), "message": self.message()}


@dataclass(frozen=True)
class RefResult:
    transposed: bool
    shift: int
    order: str
    bad_images: np.ndarray
    bad_labels: np.ndarray
    missing: int = 0


def _digests(rows: np.ndarray) -> list[bytes]:
    flat = np.ascontiguousarray(rows).reshape(len(rows), -1)
    return [hashlib.sha256(r.tobytes()).digest() for r in flat]


def compare_with_reference(images: np.ndarray, labels: np.ndarray, ref_images: np.ndarray,
                           ref_labels: np.ndarray) -> RefResult | None:
    """Image-by-image comparison with reference arrays (both as the official files store them). Tries both orientations
    and label offsets -1, 0, +1; in the same order when at least half the images sit where the reference has them, else
    through per-image digests.  None when fewer than half the images are found at all."""
    n = len(labels)
    best = None
    if len(ref_labels) == n and n:
        for t in (False, True):
            x = images.transpose(0, 2, 1) if t else images
            eq = (x.reshape(n, -1) == ref_images.reshape(n, -1)).all(axis=1)
            if best is None or eq.sum() > best[1].sum():
                best = (t, eq)
    if best is not None and best[1].mean() >= 0.5:
        t, eq = best
        shift = max((0, 1, -1), key=lambda k: int(np.count_nonzero(labels + k == ref_labels)))
        return RefResult(t, shift, "same", np.flatnonzero(~eq), np.flatnonzero(labels + shift != ref_labels))
    index: dict[bytes, list[int]] = {}
    for i, d in enumerate(_digests(ref_images)):
        index.setdefault(d, []).append(i)
    found = None
    for t in (False, True):
        ds = _digests(images.transpose(0, 2, 1) if t else images)
        hits = [index.get(d) for d in ds]
        k = sum(h is not None for h in hits)
        if found is None or k > found[1]:
            found = (t, k, hits)
    if found is None or found[1] < max(1, n // 2):
        return None
    t, _, hits = found
    ok = np.array([h is not None for h in hits])
    matched = {h[0] for h in hits if h is not None}
    missing = len(set(index)) - len(matched)  # reference images (distinct) the copy lacks

    def label_bad(k: int) -> np.ndarray:
        return np.array([h is not None and all(labels[i] + k != ref_labels[j] for j in h)
                         for i, h in enumerate(hits)], dtype=bool)
    shift = min((0, 1, -1), key=lambda k: int(label_bad(k).sum()))
    return RefResult(t, shift, "other", np.flatnonzero(~ok), np.flatnonzero(label_bad(shift)), missing)


def _cached_references(c: Canonical, name: str | None) -> Iterator[tuple[np.ndarray, np.ndarray, str, str, str]]:
    """Official splits of the same size already in the cache (never downloads), ``name`` first."""
    for dname in sorted(list_datasets(), key=lambda d: d != name):
        info = get_dataset(dname)
        for sname, sp in info.splits.items():
            if sp.is_view or sp.count != len(c):
                continue
            try:
                ds = load(dname, sname, download=False)
            except Exception as e:  # not cached (offline), or a damaged cache: not a reference
                logger.debug("no cached %s %s: %s", dname, sname, e)
                continue
            yield _official_storage(ds), np.asarray(ds.labels), dname, sname, "official files in the cache"


def _official_storage(ds: DatasetSplit) -> np.ndarray:
    """A loaded split's images as the official files store them (EMNIST: transposed)."""
    info = getattr(ds, "info", None)
    images = np.asarray(ds.images)
    return images.transpose(0, 2, 1) if info is not None and info.orientation == "transposed" else images


def _changes(c: Canonical, transposed: bool, shift: int) -> list[Change]:
    """The copy's own changes, then the transposition and the label shift found."""
    return list(c.changes) + ([transpose_change()] if transposed else []) + (
        [shift_change(shift, c.labels)] if shift else [])


def _from_ref(c: Canonical, r: RefResult, dataset: str | None, split: str | None, how: str) -> Identification:
    changes = _changes(c, r.transposed, r.shift)
    nb_i, nb_l = len(r.bad_images), len(r.bad_labels)
    verdict = "differs" if nb_i or nb_l or r.missing else _same_content(r.order, changes)
    return Identification("", verdict, dataset, split, r.order, changes, matched_by=how, images_differ=nb_i,
                          labels_differ=nb_l, first_images=[int(i) for i in r.bad_images[:FIRST]],
                          first_labels=[int(i) for i in r.bad_labels[:FIRST]], missing=r.missing)


def _from_match(c: Canonical, m: Match) -> Identification:
    changes = _changes(c, bool(m.transposed and m.images), m.shift if m.labels else 0)
    if not (m.images and m.labels) and not m.checkable:
        part, other = ("labels", "images") if m.labels else ("images", "labels")
        ident = Identification("", "unknown", m.dataset, m.split, m.order, changes,
                               matched_by=m.how + f" ({part} only)", resembles=resemblance(c))
        ident.note = (f"{part} identical to {m.dataset} {m.split}; its {other} cannot be checked "
                      "here (the registry has no hash of them): give --reference, or put the "
                      "official files in the cache")
        return ident
    if not (m.images and m.labels):
        return Identification("", "differs", m.dataset, m.split, m.order, changes,
                              matched_by=m.how + (" (labels only)" if m.labels else " (images only)"),
                              images_differ=0 if m.images else None, labels_differ=0 if m.labels else None)
    return Identification("", _same_content(m.order, changes), m.dataset, m.split, m.order, changes, matched_by=m.how)


def _same_content(order: str, changes: list[Change]) -> str:
    """The verdict of a copy with the official content: in another order, changed, or not."""
    return "reordered" if order == "other" else "transformed" if changes else "identical"


def resemblance(c: Canonical) -> dict[str, Any]:
    """What an unrecognised split looks like: count, classes, label range, orientation cue."""
    labels = c.labels
    lo, hi = (int(labels.min()), int(labels.max())) if labels.size else (0, 0)
    try:
        score = float(orientation_score(c.images, labels, None))
        cue = f"{score:+.3f} ({'upright' if score > 0.1 else 'transposed' if score < -0.1 else 'undecided'})"
    except Exception as e:  # a cue, never a failure
        cue = f"n/a ({type(e).__name__})"
    same = [f"{n} {s}" for n in list_datasets() for s, sp in get_dataset(n).splits.items() if sp.count == len(c)]
    return {"count": len(c), "classes": int(np.unique(labels).size), "label_range": f"{lo}..{hi}",
            "orientation": cue, "same_size": same}


def identify(c: Canonical, *, name: str | None = None, reference: Sequence[Any] | None = None,
             search_cache: bool = True, key: str = "", officials: Officials | None = None) -> Identification:
    """Identify one canonical split (see the module doc). ``reference``: ``(images, labels, dataset, split[, where])``,
    images as the official files store them, compared image by image; else the registry's hashes; else official splits
    of the same size already in the cache (``search_cache``). ``officials``: a callable ``dataset -> [Official, ...]``
    (or a list) of the official splits to map the rows of a copy that is not in the official order to
    (:mod:`mnistforge.loaders.rowmap`); default: the cache's (``search_cache``)."""
    ident = None
    if reference is not None:
        rimg, rlab, rname, rsplit, *where = reference
        r = compare_with_reference(c.images, c.labels, np.asarray(rimg), np.asarray(rlab))
        if r is not None:
            ident = _from_ref(c, r, rname, rsplit, f"compared image by image with {rname} {rsplit}"
                              + (f" ({where[0]})" if where else ""))
    match = registry_match(c, name, fast=False) if ident is None else None   # verify: sha256
    if ident is None and match is not None and match.images and match.labels:
        ident = _from_match(c, match)
    if ident is None and search_cache:
        for rimg, rlab, rname, rsplit, how in _cached_references(
                c, name or (match.dataset if match is not None else None)):
            r = compare_with_reference(c.images, c.labels, rimg, rlab)
            if r is not None:
                ident = _from_ref(c, r, rname, rsplit, f"compared image by image with the {how}")
                break
    if ident is None and match is not None:
        ident = _from_match(c, match)
    if ident is None:
        ident = Identification("", "unknown", None, c.split, changes=list(c.changes), resembles=resemblance(c))
        if name or c.hint:
            ident.resembles["name_says"] = name or c.hint
        if name and name in list_datasets():
            shift = label_shift_cue(c.labels, get_dataset(name))
            if shift:
                ident.changes.append(shift_change(shift, c.labels))
    ident.key = key
    ident.storage = list(c.storage)
    ident.count = len(c)
    ident.where = c.where
    if ident.verdict in ("differs", "unknown"):
        _superseded(ident, c)
    if ident.verdict in ("reordered", "differs", "unknown") and (officials is not None or search_cache):
        _map(ident, c, name, officials)
    return ident


def _superseded(ident: Identification, c: Canonical) -> None:
    """A copy whose images, labels or pairs hash as a superseded release's: named as such."""
    h = ContentHashes(c)
    tries: list[tuple[bool, int, str, Callable[..., str | None]]] = [
        (t, 0, "content_sha256", lambda t=t: h.images(t)) for t in (False, True)]
    tries += [(False, k, "content_sha256", lambda k=k: h.labels(k)) for k in (0, 1, -1)]
    tries += [(t, k, "order_free_sha256", lambda t=t, k=k: h.order_free(t, k))
              for t in (False, True) for k in (0, 1, -1)]
    for t, k, kind, value in tries:
        rel = find_superseded(**{kind: value()})
        if rel is None:
            continue
        changes = _changes(c, t, k)
        ident.verdict, ident.dataset, ident.split = "superseded", rel.dataset, rel.split
        ident.changes, ident.resembles = changes, {}
        ident.order = "other" if kind == "order_free_sha256" else "same"
        ident.note = rel.describe() + (f" (hashes: {rel.source})" if rel.source else "")
        ident.matched_by = "registry hashes of a superseded release"
        return


def _map(ident: Identification, c: Canonical, name: str | None, officials: Officials | None) -> None:
    """The row map of a copy not in the official order; a copy all of whose rows are official
    rows of one dataset (fewer than a split, or of several splits) is a ``subset``."""
    dataset = ident.dataset or name or (c.hint if c.hint in list_datasets() else None)
    if callable(officials):
        officials = officials(dataset)

    rm = copy_map(c.images, c.labels, dataset=dataset, claimed=c.split, officials=officials, loader=load)
    if rm is None or not rm.mapped.any():
        return
    ident.row_map = rm
    s = rm.summary()
    mine = int(np.count_nonzero(rm.mapped & (rm.official_dataset == rm.dataset)))
    # near rows are images that differ from their official row: not the same content
    whole = mine == s["rows"] and not s["labels_differ"] and not s["ambiguous"] and not s["near"]
    if not whole or ident.verdict == "reordered" or rm.dataset is None:
        return
    split = max(s["by_split"], key=s["by_split"].get).split(" ", 1)[1]
    full = get_dataset(rm.dataset).splits[split].count == s["rows"] and not s["duplicates"] and len(s["by_split"]) == 1
    kinds = {ch.kind for ch in ident.changes}
    if ident.verdict == "unknown":
        ident.changes = _changes(c, rm.transposed, rm.shift)
    elif rm.transposed and "transposed" not in kinds:
        ident.changes.append(transpose_change())
    ident.verdict = "reordered" if full else "subset"
    ident.dataset, ident.split, ident.order = rm.dataset, split, "other"
    ident.resembles = {}
    ident.matched_by = "row map by image content"


def row_map_check(ident: Identification) -> CheckResult | None:
    """The row map as a check: leakage fails, rows that map to nothing (or to several official
    rows) warn; None without a map."""
    rm = ident.row_map
    if rm is None:
        return None
    s = rm.summary()
    status = FAIL if s["leakage"]["rows"] else WARN if s["mapped"] < s["rows"] else PASS
    return CheckResult(f"row_map[{ident.key or ident.split or 'data'}]", status, s, rm.message())


def identification_check(ident: Identification) -> CheckResult:
    """The answer as a check result: identical/reordered pass, transformed/unknown warn, differs fails."""
    status = {"identical": PASS, "reordered": PASS, "subset": PASS, "transformed": WARN,
              "unknown": WARN, "superseded": WARN, "differs": FAIL}[ident.verdict]
    return CheckResult(f"identify[{ident.key or ident.split or 'data'}]", status, ident.to_dict(), ident.message())
