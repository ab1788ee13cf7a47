"""What every third-party reader returns: arrays as stored, grouped into splits.

The readers of :mod:`mnistforge.io.foreign` know no dataset: they hand back the arrays exactly as the file
holds them (any dtype, flattened or not), the split each pair belongs to when the names say so, and any extra
columns (EMNIST writer ids) as metadata.  Turning them into canonical images and naming the dataset happens
above (:mod:`mnistforge.loaders.foreign`, :mod:`mnistforge.checks.identify`).

>>> import numpy as np
>>> arrays = {"x_train": np.zeros((2, 28, 28)), "y_train": np.zeros(2), "x_test": np.zeros((1, 784)),
...           "y_test": np.zeros(1)}
>>> sorted(pair_arrays(arrays, "demo.npz"))
['test', 'train']
>>> split_of("emnist-letters-train-images"), split_of("t10k-labels"), split_of("mnist_data")
('train', 'test', None)
>>> split_key("t10k-images.idx3-ubyte"), split_key("emnist-letters-test-labels-idx1-ubyte.gz")
((None, 'test'), ('emnist-letters', 'test'))
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import FormatError

__all__ = ["ForeignCopy", "ForeignSplit", "pair_arrays", "role_of", "split_of", "split_key"]

#: name tokens that say "these are the images" / "these are the labels"
IMAGE_TOKENS = ("x", "images", "image", "imgs", "img", "data", "features", "pixels", "inputs")
LABEL_TOKENS = ("y", "labels", "label", "targets", "target", "classes", "class")
#: split names as third parties spell them -> ours
SPLIT_TOKENS = {"train": "train", "training": "train", "test": "test", "t10k": "test", "testing": "test",
                "val": "validation", "valid": "validation", "validation": "validation"}


@dataclass
class ForeignSplit:
    """One split of a third-party copy, as stored. ``images``: any dtype, ``N x 784`` or ``N x H x W``; ``labels``:
    ``N`` (or ``N x C`` one-hot); ``metadata``: extra per-image columns by name (EMNIST writer ids); ``where``: the
    file (and key or column) it came from; ``hint``: a dataset name the file names suggest (``emnist-letters``), if
    any."""

    split: str | None
    images: np.ndarray
    labels: np.ndarray
    where: str
    metadata: dict[str, np.ndarray] = field(default_factory=dict)
    hint: str | None = None

    def __len__(self) -> int:
        return int(self.images.shape[0])


@dataclass
class ForeignCopy:
    """A third-party copy: its format, where it is, and its splits by key (``train``, ``test``...)."""
    format: str
    path: Path
    splits: dict[str, ForeignSplit]
    notes: list[str] = field(default_factory=list)
    hint: str | None = None

    def split(self, name: str | None) -> ForeignSplit:
        """The split called ``name`` (or the only one when ``name`` is None or it has just one)."""
        if name in self.splits:
            return self.splits[str(name)]
        by_split = [s for s in self.splits.values() if s.split == name]
        if len(by_split) == 1:
            return by_split[0]
        if name is None and len(self.splits) == 1:
            return next(iter(self.splits.values()))
        if len(self.splits) == 1 and next(iter(self.splits.values())).split is None:
            return next(iter(self.splits.values()))
        raise FormatError(f"no split {name!r} in this {self.format} copy", path=self.path,
                          expected="one of " + ", ".join(self.splits), found=str(name))


def _tokens(name: str) -> list[str]:
    stem = Path(name).name.lower()
    for suf in (".gz", ".xz", ".bz2", ".npy", ".npz", ".csv", ".parquet", ".mat"):
        if stem.endswith(suf):
            stem = stem[: -len(suf)]
    stem = re.sub(r"[-.]?idx\d[-.](ubyte|int|float|double|short|byte)$", "", stem)
    return [t for t in re.split(r"[-_.\s/]+", stem) if t]


def role_of(name: str) -> str | None:
    """``"images"``, ``"labels"`` or None, from the tokens of a key or file name."""
    toks = _tokens(name)
    if any(t in LABEL_TOKENS for t in toks):
        return "labels"
    if any(t in IMAGE_TOKENS for t in toks):
        return "images"
    return None


def split_of(name: str) -> str | None:
    """Our split name (``train``, ``test``, ``validation``) from a key or file name, or None."""
    for t in _tokens(name):
        if t in SPLIT_TOKENS:
            return SPLIT_TOKENS[t]
    return None


def split_key(name: str) -> tuple[str | None, str | None]:
    """``(dataset hint, split)`` of a name: ``emnist-letters-train-images`` -> ``("emnist-letters", "train")``."""
    toks = _tokens(name)
    rest = [t for t in toks if t not in IMAGE_TOKENS + LABEL_TOKENS and t not in SPLIT_TOKENS]
    return ("-".join(rest) or None), split_of(name)


def pair_arrays(arrays: dict[str, np.ndarray], where: str, default_split: str | None = None,
                metadata_of: Callable[[str | None, str | None], dict[str, np.ndarray]] | None = None,
                ) -> dict[str, ForeignSplit]:
    """Pair image and label arrays by their names into splits. ``arrays`` maps a key or file name to its array; keys
    that differ only by the role token (``x_train``/``y_train``, ``train-images``/``train-labels``) form one split.  A
    lone pair without a split name gets ``default_split``."""
    groups: dict[tuple[str | None, str | None], dict[str, tuple[str, np.ndarray]]] = {}
    for key, arr in arrays.items():
        role = role_of(key)
        if role is None:
            continue
        hint, split = split_key(key)
        groups.setdefault((hint, split), {})[role] = (key, arr)
    out: dict[str, ForeignSplit] = {}
    for (hint, split), roles in groups.items():
        if set(roles) != {"images", "labels"}:
            continue
        split = split or default_split
        (ik, images), (lk, labels) = roles["images"], roles["labels"]
        key = split or "data"
        if hint and any(h for h, _ in groups if h != hint):
            key = f"{hint}:{key}"
        meta = metadata_of(hint, split) if metadata_of else {}
        out[key] = ForeignSplit(split, images, labels, f"{where} [{ik}, {lk}]", meta, hint)
    if not out:
        raise FormatError("no image/label pair found", path=where,
                          expected="arrays named like x_train/y_train, images/labels or "
                                   "train-images/train-labels",
                          found=", ".join(sorted(arrays)) or "nothing")
    return out
