"""EMNIST class mappings and the train/test/validation splits of the six datasets.

Everything here works on the SD19 index (one row per character, fields
``ascii``, ``writer``, ``hsf``, ``field``, ``entry``); no image is touched.

Rules (``docs/provenance-emnist.md`` gives them in full): every source character goes once to the *train side* or the
*test side* (``split_by="random"``, stratified by class, 6/7 train; or ``split_by="writer"``, whole writers), and every
dataset draws its train set from the train side and its test set from the test side, so no EMNIST test image is in any
EMNIST training set.  byclass / bymerge take all characters of each side; the balanced sets take ``q_test`` per class
from the test side and ``6 q_test`` from the train side (the official counts scaled to the source), the last ``q_val``
per class of the train set being the validation portion.

>>> labels = label_table("bymerge")
>>> int(labels[ord("c")]), int(labels[ord("C")]), int(labels[ord("t")])
(12, 12, 46)
>>> len(class_list("letters")), class_list("letters")[1]
(27, 'Aa')
"""
from __future__ import annotations

import dataclasses
import logging
import string
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, TypeAlias

import numpy as np
import numpy.typing as npt

from ..errors import BuildError, ConfigError
from ..registry import emnist_splits
from ..sd19.nist_table import CLASS_TOTALS, MERGED_LETTERS

logger = logging.getLogger(__name__)

#: an SD19 index: a structured array, or any object indexable by its field names
IndexLike: TypeAlias = "np.ndarray | Mapping[str, Any]"

# the registry says which EMNIST datasets exist (byclass bymerge balanced letters digits mnist)
DATASETS = emnist_splits()
DIGITS = string.digits
UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
# by_merge folds the lower case of MERGED_LETTERS into the upper case and keeps these 11 as classes (labels 36..46).
SEPARATE_LOWER = "abdefghnqrt"

# Official figures (spec/emnist.md): per-class (train, test) for the balanced sets, totals for the unbalanced ones.
OFFICIAL_SIZES = {
    "byclass": (697_932, 116_323), "bymerge": (697_932, 116_323), "balanced": (112_800, 18_800),
    "letters": (124_800, 20_800), "digits": (240_000, 40_000), "mnist": (60_000, 10_000), "letters37": (88_800, 14_800),
}
OFFICIAL_PER_CLASS = {
    "balanced": (2_400, 400), "letters": (4_800, 800), "digits": (24_000, 4_000),
    "mnist": (6_000, 1_000), "letters37": (2_400, 400),
}
# Number of SD19 characters per class, for the scale of a partial source.
SD19_CLASS_TOTALS = {chr(code): n for code, n in CLASS_TOTALS.items()}
TEST_FRACTION = (1, 7)  # test side = N - floor(6N/7)

FIELD_CODES = {b"d": 0, b"u": 1, b"l": 2, b"c": 3}
METADATA_COLUMNS = ("writer", "hsf", "field", "ascii", "entry", "sd19_row")

_DATASET_IDS = {name: i + 1 for i, name in enumerate(DATASETS + ("letters37",))}


# ----------------------------------------------------------------------------- classes
def dataset_kind(name: str, letters_variant: str = "official") -> str:
    """Internal name of a dataset: ``letters`` becomes ``letters37`` for the paper variant."""
    if name not in DATASETS:
        raise ConfigError(f"unknown EMNIST dataset {name!r}", expected=", ".join(DATASETS), found=name)
    if letters_variant not in ("official", "paper37"):
        raise ConfigError("unknown letters variant", expected="'official' or 'paper37'", found=repr(letters_variant))
    return "letters37" if name == "letters" and letters_variant == "paper37" else name


def _bymerge_chars() -> list[str]:
    return list(DIGITS) + list(UPPER) + list(SEPARATE_LOWER)


def class_list(kind: str) -> list[str]:
    """Characters of each label (index = label).

    ``letters`` has 27 entries: label 0 is unused in the official files and is ``""`` here; labels 1..26 are ``"Aa"`` ..
    ``"Zz"``.  Merged classes of bymerge/balanced/letters37 are named by their upper-case letter.
    """
    if kind == "byclass":
        return list(DIGITS + UPPER + LOWER)
    if kind in ("bymerge", "balanced"):
        return _bymerge_chars()
    if kind == "letters":
        return [""] + [u + lo for u, lo in zip(UPPER, LOWER)]
    if kind == "letters37":
        return _bymerge_chars()[10:]
    if kind in ("digits", "mnist"):
        return list(DIGITS)
    raise ConfigError(f"unknown EMNIST dataset {kind!r}", expected=", ".join(DATASETS), found=kind)


def label_table(kind: str) -> np.ndarray:
    """``int16[256]``: label of each ASCII code in this dataset, -1 when excluded."""
    t = np.full(256, -1, np.int16)
    if kind == "letters":
        for i, (u, lo) in enumerate(zip(UPPER, LOWER)):
            t[ord(u)] = t[ord(lo)] = i + 1
        return t
    chars = class_list("bymerge" if kind == "letters37" else kind)   # refuses an unknown kind
    for i, ch in enumerate(chars):
        t[ord(ch)] = i
    if kind in ("bymerge", "balanced", "letters37"):
        for ch in MERGED_LETTERS:
            t[ord(ch.lower())] = chars.index(ch)
    if kind == "letters37":
        t[[ord(c) for c in DIGITS]] = -1
        t[t >= 0] -= 10
    return t


def mapping_lines(kind: str) -> list[str]:
    """Lines of ``emnist-<name>-mapping.txt``: ``"label ascii"`` (letters: ``"label upper lower"``,
    as in the official file)."""
    if kind == "letters":
        return [f"{i + 1} {ord(u)} {ord(lo)}" for i, (u, lo) in enumerate(zip(UPPER, LOWER))]
    return [f"{i} {ord(ch)}" for i, ch in enumerate(class_list(kind))]


def official_pool_size(kind: str) -> int:
    """SD19 characters (complete database) whose class belongs to the dataset."""
    t = label_table(kind)
    return sum(n for ch, n in SD19_CLASS_TOTALS.items() if t[ord(ch)] >= 0)


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class EmnistSplitConfig:
    """How the splits are drawn.

    ``seed``: Seed of every random choice (>= 0).
    ``split_by``: ``"random"`` (stratified by class, official) or ``"writer"`` (writer-disjoint).
    ``letters_variant``: ``"official"`` (26 classes, labels 1..26) or ``"paper37"`` (the paper's
        37 classes, labels 0..36, 2,400/400 per class).
    ``scale``: Scale of the balanced quotas; None: estimated per dataset as ``min(1, pool / official pool)``.
    """

    seed: int = 0
    split_by: str = "random"
    letters_variant: str = "official"
    scale: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ConfigError("EMNIST split seed must be a non-negative integer", found=self.seed)
        if self.split_by not in ("random", "writer"):
            raise ConfigError("unknown split_by", expected="'random' or 'writer'", found=repr(self.split_by))
        if self.letters_variant not in ("official", "paper37"):
            raise ConfigError("unknown letters variant", expected="'official' or 'paper37'",
                              found=repr(self.letters_variant))
        if self.scale is not None and not 0 < self.scale <= 1:
            raise ConfigError("EMNIST quota scale must be in (0, 1]", found=self.scale)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class EmnistRowSelection:
    """One EMNIST dataset: source rows and labels of its train and test files.

    ``train_rows`` ends with the ``n_validation`` validation rows.
    """

    name: str
    kind: str
    classes: list[str]
    train_rows: np.ndarray
    train_labels: np.ndarray
    test_rows: np.ndarray
    test_labels: np.ndarray
    n_validation: int = 0
    quota: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"kind": self.kind, "classes": len([c for c in self.classes if c]), "class_names": list(self.classes),
                "train": int(len(self.train_rows)), "test": int(len(self.test_rows)),
                "validation": int(self.n_validation), "quota": self.quota}


# ----------------------------------------------------------------------------- helpers
def _rng(seed: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), purpose])


def _ranks_within(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random rank (0, 1, ...) of each element within its group."""
    n = len(groups)
    # One int64 key (group in the high bits, random in the low) sorts faster than lexsort.
    key = (np.asarray(groups, np.int64) << 32) | rng.integers(0, 1 << 32, n, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, n]))
    ranks = np.empty(n, np.int64)
    ranks[order] = np.arange(n) - first
    return ranks


def apportion(counts: np.ndarray, total: int) -> np.ndarray:
    """Integers proportional to ``counts`` summing to ``total`` (largest remainder; ties go to the earlier entry).

    >>> apportion(np.array([7, 7, 1]), 3).tolist()
    [2, 1, 0]
    """
    counts = np.asarray(counts, np.int64)
    n = int(counts.sum())
    if n == 0:
        return np.zeros_like(counts)
    base = counts * total // n
    rem = counts * total % n
    extra = total - int(base.sum())
    order = np.lexsort((np.arange(len(counts)), -rem))
    base[order[:extra]] += 1
    return base


def check_index(index: IndexLike) -> None:
    """Raise :class:`BuildError` when the index holds classes outside the 62."""
    known = label_table("byclass")
    bad = np.unique(np.asarray(index["ascii"])[known[np.asarray(index["ascii"])] < 0])
    if len(bad):
        raise BuildError("SD19 index holds characters outside the 62 NIST classes",
                         expected="ASCII codes of 0-9, A-Z, a-z", found=", ".join(hex(int(b)) for b in bad[:10]),
                         hint="check the source tree (is it SD19?)")


# ----------------------------------------------------------------------------- sides
def split_sides(index: IndexLike, config: EmnistSplitConfig = EmnistSplitConfig()) -> np.ndarray:
    """Boolean per index row: True = test side (see module docstring)."""
    check_index(index)
    ascii_ = np.asarray(index["ascii"])
    n = len(ascii_)
    if config.split_by == "random":
        cls = label_table("byclass")[ascii_].astype(np.int64)
        counts = np.bincount(cls, minlength=62)
        n_test = n - (n * (TEST_FRACTION[1] - TEST_FRACTION[0])) // TEST_FRACTION[1]
        per_class = apportion(counts, n_test)
        ranks = _ranks_within(cls, _rng(config.seed, 0))
        return keep_duplicates_together(index, ranks < per_class[cls], cls)
    return _writer_sides(index, config)


def keep_duplicates_together(index: IndexLike, is_test: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Put every exact duplicate image on the side of its original.

    SD19 holds three duplicated digit images; split at random, a pair can land on both sides and leak a test image into
    training.  Each moved duplicate swaps sides with the first ordinary character of its class on the other side, so
    per-class side sizes (and the official totals) are unchanged.

    >>> idx = np.zeros(4, dtype=[("duplicate_of", "i4")]); idx["duplicate_of"] = [-1, -1, 0, -1]
    >>> keep_duplicates_together(idx, np.array([True, False, False, True]), np.zeros(4, int)).tolist()
    [True, False, True, False]
    """
    names = getattr(getattr(index, "dtype", None), "names", None) or ()
    if "duplicate_of" not in names:
        return is_test
    dup = np.asarray(index["duplicate_of"]).astype(np.int64)
    rows = np.flatnonzero(dup >= 0)
    if not len(rows):
        return is_test
    is_test = is_test.copy()
    involved = np.zeros(len(dup), bool)
    involved[rows] = True
    involved[dup[rows]] = True
    for r in rows:
        o = int(dup[r])
        while dup[o] >= 0:  # follow chains to the first copy
            o = int(dup[o])
        if is_test[r] == is_test[o]:
            continue
        partners = np.flatnonzero((cls == cls[r]) & (is_test == is_test[o]) & ~involved)
        is_test[r] = is_test[o]
        if len(partners):
            is_test[partners[0]] = not is_test[o]
    return is_test


def _writer_sides(index: IndexLike, config: EmnistSplitConfig) -> np.ndarray:
    """Whole writers to the test side: about 1/7 of the characters, every partition alike.

    Each partition's writers are shuffled; a writer's key is the middle of its characters as a fraction of its
    partition's (0..1).  Writers sorted by key (ties in seeded random order) interleave the partitions in proportion,
    and the prefix whose characters come closest to N/7 goes to the test side (at least one writer, and at least one
    left for training, when there are two).
    """
    writer = np.asarray(index["writer"]).astype(np.int64)
    hsf = np.asarray(index["hsf"]).astype(np.int64)
    writers, first, inverse, counts = np.unique(writer, return_index=True, return_inverse=True, return_counts=True)
    w_hsf = hsf[first]
    rng = _rng(config.seed, 0)
    key = np.zeros(len(writers))
    for part in np.unique(w_hsf):
        members = np.flatnonzero(w_hsf == part)
        members = members[rng.permutation(len(members))]
        cum = np.cumsum(counts[members])
        key[members] = (cum - counts[members] / 2) / cum[-1]
    order = np.lexsort((rng.random(len(writers)), key))
    cum = np.cumsum(counts[order])
    target = cum[-1] * TEST_FRACTION[0] / TEST_FRACTION[1]
    k = 1 + int(np.argmin(np.abs(cum[:-1] - target))) if len(writers) >= 2 else 0
    test_writer = np.zeros(len(writers), bool)
    test_writer[order[:k]] = True
    return test_writer[inverse.ravel()]


# ----------------------------------------------------------------------------- datasets
def _shuffled(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    shuffled: np.ndarray = rows[rng.permutation(len(rows))]
    return shuffled


def full_split(index: IndexLike, is_test: np.ndarray, kind: str, seed: int) -> EmnistRowSelection:
    """byclass or bymerge: every character, train side then test side, shuffled.

    Both use the same random stream, so they hold the same characters in the same order.
    """
    labels = label_table(kind)[np.asarray(index["ascii"])]
    rng = _rng(seed, _DATASET_IDS["byclass"])
    rows = np.arange(len(labels))
    train = _shuffled(rows[~is_test], rng)
    test = _shuffled(rows[is_test], rng)
    quota = {"rule": "all characters of each side (see split_by)", "source_characters": int(len(labels))}
    return EmnistRowSelection(kind, kind, class_list(kind), train, labels[train].astype(np.uint8),
                        test, labels[test].astype(np.uint8), 0, quota)


def balanced_split(index: IndexLike, is_test: np.ndarray, name: str, kind: str,
                   config: EmnistSplitConfig) -> EmnistRowSelection:
    """A balanced dataset: equal per-class counts in train, test and validation."""
    table = label_table(kind)
    classes = class_list(kind)
    labels_all = table[np.asarray(index["ascii"])].astype(np.int64)
    in_pool = labels_all >= 0
    valid_labels = np.unique(table[table >= 0]).astype(np.int64)
    pool = int(in_pool.sum())
    off_pool = official_pool_size(kind)
    scale = config.scale if config.scale is not None else min(1.0, pool / off_pool)
    off_tr, off_te = OFFICIAL_PER_CLASS[kind]
    want_te = max(1, int(np.floor(off_te * scale + 1e-9)))
    want_tr = want_te * (off_tr // off_te)

    nlab = int(valid_labels.max()) + 1
    tr_counts = np.bincount(labels_all[in_pool & ~is_test], minlength=nlab)[valid_labels]
    te_counts = np.bincount(labels_all[in_pool & is_test], minlength=nlab)[valid_labels]
    if missing := [classes[c] for c, a, b in zip(valid_labels, tr_counts, te_counts) if a + b == 0]:
        raise BuildError(f"emnist-{name}: the source has no character of some classes",
                         expected=f"all {len(valid_labels)} classes of emnist-{name}",
                         found="none of " + " ".join(missing[:20]),
                         hint="build from a complete SD19 (all fields), or only the datasets whose classes it holds")
    q_te = min(want_te, int(te_counts.min()))
    q_tr = min(want_tr, int(tr_counts.min()))
    q_val = min(q_te, q_tr)
    limited = {}
    if q_te < want_te:
        limited["test"] = classes[valid_labels[int(np.argmin(te_counts))]]
    if q_tr < want_tr:
        limited["train"] = classes[valid_labels[int(np.argmin(tr_counts))]]
    if limited:
        logger.warning("emnist-%s: per-class quota limited by the smallest class (%s): train %d, test %d "
                       "(wanted %d, %d)", name, limited, q_tr, q_te, want_tr, want_te)

    rng = _rng(config.seed, _DATASET_IDS[kind])
    rows = np.arange(len(labels_all))
    tr_pool = rows[in_pool & ~is_test]
    te_pool = rows[in_pool & is_test]
    tr_rank = _ranks_within(labels_all[tr_pool], rng)
    te_rank = _ranks_within(labels_all[te_pool], rng)
    train_only = _shuffled(tr_pool[tr_rank < q_tr - q_val], rng)
    val = _shuffled(tr_pool[(tr_rank >= q_tr - q_val) & (tr_rank < q_tr)], rng)
    test = _shuffled(te_pool[te_rank < q_te], rng)
    train = np.concatenate([train_only, val])
    quota = {
        "rule": "test per class = max(1, floor(official_test_per_class * scale)); train per class = 6 x test; each "
                "side capped by its smallest class; validation per class = min(test, train), the end of the train file",
        "official_per_class": {"train": off_tr, "test": off_te},
        "scale": float(scale), "scale_given": config.scale is not None, "source_pool": pool, "official_pool": off_pool,
        "wanted_per_class": {"train": want_tr, "test": want_te},
        "per_class": {"train": q_tr, "test": q_te, "validation": q_val}, "smallest_class": {
            "train": [classes[valid_labels[int(np.argmin(tr_counts))]], int(tr_counts.min())],
            "test": [classes[valid_labels[int(np.argmin(te_counts))]], int(te_counts.min())]}, "limited_by": limited,
    }
    return EmnistRowSelection(name, kind, classes, train, labels_all[train].astype(np.uint8),
                        test, labels_all[test].astype(np.uint8), int(len(val)), quota)


def make_splits(index: IndexLike, names: Iterable[str] = DATASETS, config: EmnistSplitConfig = EmnistSplitConfig(),
                is_test: np.ndarray | None = None) -> dict[str, EmnistRowSelection]:
    """Compute the requested EMNIST datasets from an SD19 index.

    ``index``: structured array with fields ``ascii``, ``writer``, ``hsf`` (see
        :mod:`mnistforge.sd19`); any object indexable by those names works.
    ``names``: dataset names (subset of :data:`DATASETS`).
    ``is_test``: precomputed sides (from :func:`split_sides`), optional.

    Returns dict name -> :class:`EmnistRowSelection`.

    >>> import numpy as np
    >>> idx = np.zeros(70, [("ascii", "u1"), ("writer", "i2"), ("hsf", "u1")])
    >>> idx["ascii"] = np.repeat(np.arange(48, 58), 7); idx["writer"] = np.arange(70) % 5
    >>> s = make_splits(idx, ["byclass"])["byclass"]
    >>> len(s.train_rows), len(s.test_rows)
    (60, 10)
    """
    if is_test is None:
        is_test = split_sides(index, config)
    out: dict[str, EmnistRowSelection] = {}
    for name in names:
        kind = dataset_kind(name, config.letters_variant)
        out[name] = full_split(index, is_test, kind, config.seed) if kind in ("byclass", "bymerge") \
            else balanced_split(index, is_test, name, kind, config)
    return out


def make_metadata(index: IndexLike, rows: npt.ArrayLike) -> np.ndarray:
    """``int32 (n, 6)`` writer metadata of the given index rows.

    Columns :data:`METADATA_COLUMNS`: writer, hsf, field (0 d, 1 u, 2 l, 3 c), ascii, entry, sd19_row (its index row).
    """
    rows = np.asarray(rows, np.int64)
    fcode = np.full(256, -1, np.int32)
    for k, v in FIELD_CODES.items():
        fcode[k[0]] = v
    fields = np.asarray(index["field"])[rows]
    fields = fields.view(np.uint8) if fields.dtype.kind == "S" else fields.astype(np.uint8)
    known = {"field": fcode[fields.reshape(-1)], "sd19_row": rows}
    meta: np.ndarray = np.column_stack([known[c] if c in known else np.asarray(index[c])[rows]
                                        for c in METADATA_COLUMNS]).astype(np.int32)
    return meta
