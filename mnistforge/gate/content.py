"""What the data is, from its content: :func:`registry_match` (the registry's content hashes of the
official files, any orientation and label offset, and order-free hashes) and :func:`judge`, the
verdict on a claim, or a :class:`~mnistforge.errors.DataMismatchError` saying what it is instead.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from ..errors import DataMismatchError, Where
from ..io.hashing import order_free_sha256
from ..io.idx import idx_content_sha256, idx_content_xxh3
from ..registry import DatasetInfo, SplitInfo, get_dataset, get_file, list_datasets

__all__ = ["Match", "Verdict", "Arrays", "OPT_OUT", "judge", "registry_match", "pinned_by_content",
           "ContentHashes", "RowFacts"]

OPT_OUT = ("to load them anyway, pass trust_files=True to mnistforge.load "
           "(command line: MNISTFORGE_TRUST_FILES=1)")


class Arrays(Protocol):
    """Canonical arrays of one split: ``uint8 N x 28 x 28`` images, integer labels."""
    images: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class Match:
    """What the registry's hashes say of a split (``checkable``: False when the unmatched part has no hash)."""

    dataset: str
    split: str
    transposed: bool
    shift: int
    order: str
    images: bool = True
    labels: bool = True
    how: str = "registry content hashes"
    checkable: bool = True


def _file_splits() -> Iterator[tuple[DatasetInfo, str, SplitInfo]]:
    for name in list_datasets():
        info = get_dataset(name)
        for sname, sp in info.splits.items():
            if not sp.is_view:
                yield info, sname, sp


#: ContentHashes kind -> the registry field it is compared with, and how an array is hashed
KINDS = {"xxh3": ("content_xxh3_128", idx_content_xxh3), "sha256": ("content_sha256", idx_content_sha256)}


def _content(group: str, fname: str | None, fast: bool = True) -> tuple[str, str] | None:
    """``(kind, hash)`` pinned for ``group/fname``'s content: the fast hash where recorded, else sha256."""
    if not fname:
        return None
    try:
        rf = get_file(f"{group}/{fname}")
    except KeyError:
        return None
    if fast and rf.content_xxh3_128:
        return "xxh3", rf.content_xxh3_128
    return ("sha256", rf.content_sha256) if rf.content_sha256 else None


class ContentHashes:
    """The content hashes of one split's arrays, each computed once (``fast=False``: sha256 only)."""

    def __init__(self, c: Arrays, known: dict[str, Any] | None = None, *, fast: bool = True) -> None:
        self.c = c
        self.fast = fast
        self._img: dict[tuple[str, bool], str] = {}
        self._lab: dict[tuple[str, int], str | None] = {}
        self._free: dict[tuple[bool, int], str] = {}
        if known:  # older records: sha256 only
            for kind, suffix in (("sha256", ""), ("xxh3", "_xxh3")):
                self._img.update({(kind, k == "1"): v for k, v in known.get("images" + suffix, {}).items()})
                self._lab.update({(kind, int(k)): v for k, v in known.get("labels" + suffix, {}).items()})
            self._free = {(k[0] == "1", int(k[2:])): v for k, v in known.get("order_free", {}).items()}

    def to_facts(self) -> dict[str, Any]:
        """The hashes computed so far, as JSON (``ContentHashes(c, known=...)`` reads them)."""
        out: dict[str, Any] = {"order_free": {f"{int(t)},{k}": v for (t, k), v in self._free.items()}}
        for kind, suffix in (("sha256", ""), ("xxh3", "_xxh3")):
            out["images" + suffix] = {str(int(t)): v for (kd, t), v in self._img.items() if kd == kind}
            out["labels" + suffix] = {str(k): v for (kd, k), v in self._lab.items() if kd == kind}
        return out

    def matches_images(self, t: bool, want: tuple[str, str] | None) -> bool:
        """Whether the images (transposed: ``t``) hash to ``want`` (``(kind, hash)``)."""
        return want is not None and self.images(t, want[0]) == want[1]

    def matches_labels(self, s: int, want: tuple[str, str] | None) -> bool:
        """Whether the labels (offset by ``s``) hash to ``want`` (``(kind, hash)``)."""
        return want is not None and self.labels(s, want[0]) == want[1]

    def order_free(self, t: bool, k: int) -> str:
        if (t, k) not in self._free:
            self._free[t, k] = order_free_sha256(self.oriented(t), np.asarray(self.c.labels) + k)
        return self._free[t, k]

    def oriented(self, t: bool) -> np.ndarray:
        return self.c.images.transpose(0, 2, 1) if t else self.c.images

    def images(self, t: bool, kind: str = "sha256") -> str:
        if (kind, t) not in self._img:
            self._img[kind, t] = KINDS[kind][1](self.oriented(t))
        return self._img[kind, t]

    def labels(self, s: int, kind: str = "sha256") -> str | None:
        if (kind, s) not in self._lab:
            lab = np.asarray(self.c.labels, dtype=np.int64) + s
            self._lab[kind, s] = None if lab.size and (lab.min() < 0 or lab.max() > 255) else \
                KINDS[kind][1](lab.astype(np.uint8))
        return self._lab[kind, s]


def registry_match(c: Arrays, name: str | None = None, *, hashes: ContentHashes | None = None,
                   order_free: bool = True, fast: bool = True) -> Match | None:
    """The registry split ``c`` is, from content hashes: a full match (images and labels) wins over
    the order-free hash, which wins over a partial one.  ``name`` (what the user or the file
    names say) is tried first, never trusted alone."""
    h = hashes or ContentHashes(c, fast=fast)   # fast=False: sha256 only (verify)
    n = len(c.labels)
    cands = sorted(((info, s, sp) for info, s, sp in _file_splits() if sp.count == n),
                   key=lambda cand: cand[0].name != name)
    if not cands:
        return None
    partial = None
    for info, s, sp in cands:
        want_i = _content(info.group, sp.images, h.fast)
        want_l = None if sp.labels_column is not None else _content(info.group, sp.labels, h.fast)
        # the first orientation and offset that match: each further one is another hash of
        # the whole array (the transposed images a copy too)
        ts = next(([t] for t in (False, True) if h.matches_images(t, want_i)), [])
        ss = next(([k] for k in (0, 1, -1) if h.matches_labels(k, want_l)), [])
        if ts and ss:
            return Match(info.name, s, ts[0], ss[0], "same")
        if partial is None and (ts or ss):
            partial = Match(info.name, s, bool(ts and ts[0]), ss[0] if ss else 0, "same", images=bool(ts),
                            labels=bool(ss), checkable=bool(want_i if not ts else want_l))
    for info, s, sp in cands:
        if not (order_free and sp.order_free_sha256):
            continue
        for t in (False, True):
            for k in (0, 1, -1):
                if h.order_free(t, k) == sp.order_free_sha256:
                    return Match(info.name, s, t, k, "other", how="registry order-free hash")
    return partial


def pinned_by_content(info: DatasetInfo) -> bool:
    """Whether the registry pins some content of ``info`` (so unknown content is not it)."""
    return any(sp.order_free_sha256 or _content(info.group, sp.images)
               or (sp.labels_column is None and _content(info.group, sp.labels))
               for sp in info.splits.values() if not sp.is_view)


def _parts(c: Arrays, h: ContentHashes) -> tuple[list[str], list[str]]:
    """Registry splits whose images, and whose labels, equal ``c``'s (for the error message)."""
    imgs, labs = [], []
    for info, s, sp in _file_splits():
        if sp.count != len(c.labels):
            continue
        want_i = _content(info.group, sp.images, h.fast)
        want_l = None if sp.labels_column is not None else _content(info.group, sp.labels, h.fast)
        if any(h.matches_images(t, want_i) for t in (False, True)):
            imgs.append(f"{info.name} {s}")
        if any(h.matches_labels(k, want_l) for k in (0, 1, -1)):
            labs.append(f"{info.name} {s}")
    return imgs, labs


@dataclass(frozen=True)
class RowFacts:
    """What a row map found: ``mapped`` of ``rows`` rows are ``dataset``'s, most in ``split``."""

    dataset: str | None
    split: str | None
    mapped: int
    rows: int
    #: rows that are official rows of other datasets: ``(dataset, rows)`` pairs
    elsewhere: tuple[tuple[str, int], ...] = ()
    #: how many of the mapped rows carry another label than their official row, and the first
    relabelled: int = 0
    first_relabelled: tuple[int, ...] = ()

    @property
    def found(self) -> str:
        if not self.dataset or not self.mapped:
            text = (f"none of the rows is an official {self.dataset} row this machine holds"
                    if self.dataset else "no row is an official row this machine holds")
        else:
            text = (f"{self.mapped:,} of {self.rows:,} rows are official {self.dataset} rows "
                    f"(most in {self.split}), {self.rows - self.mapped:,} are not")
        if self.relabelled:
            text += (f"; {self.relabelled:,} of them carry another label than the official row "
                     f"(rows {', '.join(map(str, self.first_relabelled))}"
                     f"{'...' if self.relabelled > len(self.first_relabelled) else ''})")
        return text + "".join(f"; {n:,} are official {d} rows" for d, n in self.elsewhere)


@dataclass(frozen=True)
class Verdict:
    """The gate's answer on a claim: ``status`` ``identical``, ``reordered``, ``mapped`` (every row
    an official row by a row map), ``labels``/``images`` (that part verified, the other
    unpinned), ``unpinned``, ``unclaimed``, ``trusted`` or ``refused`` (``refuse=False``)."""

    status: str
    match: Match | None = None

    @property
    def official_order(self) -> bool:
        """Whether rows are the official split's in the official order (row-wise facts apply)."""
        return self.status == "identical"


def judge(c: Arrays, claimed: str | None, split: str | None, *, where: Where, trust: bool = False,
          match: Match | None = None, hashes: ContentHashes | None = None, refuse: bool = True,
          order_free: bool = True, rows: Callable[[], RowFacts | None] | None = None) -> Verdict:
    """The verdict on arrays claimed to be ``claimed`` ``split``: DataMismatchError when the content
    is another dataset or split, or unknown while the registry pins ``claimed``'s (``refuse=False``:
    the verdict ``refused``); ``rows``: the row map's facts, asked when the hashes do not settle it."""
    h = hashes or ContentHashes(c)
    if match is None:
        match = registry_match(c, claimed, hashes=h, order_free=order_free)
    if not refuse:
        try:
            return judge(c, claimed, split, where=where, trust=trust, match=match, hashes=h, rows=rows)
        except DataMismatchError:
            return Verdict("refused", match)
    if claimed is None:
        return Verdict("unclaimed", match)
    if trust:
        return Verdict("trusted", match)
    info = get_dataset(claimed)
    want_split = split if split in info.splits and not info.splits[split].is_view else None
    if match is not None and match.images and match.labels:
        if match.dataset == claimed and want_split in (None, match.split):
            return Verdict("identical" if match.order == "same" else "reordered", match)
        raise _mismatch(c, info, want_split, where, found=f"the data of {match.dataset} {match.split}"
                        + (" (in another order)" if match.order == "other" else ""),
                        suggest=(match.dataset, match.split))
    facts = rows() if rows is not None else None
    if facts is not None and facts.dataset == claimed and facts.rows and not facts.relabelled and \
            facts.mapped == facts.rows and want_split in (None, facts.split):
        return Verdict("mapped", match)
    imgs, labs = _parts(c, h) if match is not None else ([], [])
    if match is not None and match.dataset == claimed and not match.checkable \
            and want_split in (None, match.split) and not (imgs if match.labels else labs):
        # one part verified, the other unpinned and not another dataset's (MNIST train images)
        return Verdict("labels" if match.labels else "images", match)
    if match is None and not pinned_by_content(info):
        return Verdict("unpinned", None)
    found = "; ".join(p for p in (f"images of {', '.join(imgs)}" if imgs else "images of no known dataset",
                                  f"labels of {', '.join(labs)}" if labs else "labels of no known dataset",
                                  f"row map: {facts.found}" if facts is not None else "") if p)
    raise _mismatch(c, info, want_split, where, found=f"{len(c.labels):,} rows: {found}")


def _mismatch(c: Arrays, info: DatasetInfo, split: str | None, where: Where, *, found: str,
              suggest: tuple[str, str] | None = None) -> DataMismatchError:
    sizes = ", ".join(f"{s} {sp.count:,}" for s, sp in info.splits.items() if not sp.is_view)
    hint = "" if suggest is None else \
        f"load it as what it is: mnistforge.load({suggest[0]!r}, {suggest[1]!r}, root=...); or, "
    return DataMismatchError(
        f"this is not {info.name}" + (f" {split}" if split else ""), path=where,
        expected=f"{info.name}" + (f" {split}" if split else "") + f" (registry content hashes; {sizes} rows)",
        found=found, hint=hint + OPT_OUT)
