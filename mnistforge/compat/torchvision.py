"""Drop-in replacements for torchvision's MNIST-family datasets, reading through :func:`mnistforge.load`.

Same signatures, items, ``len``, ``classes``, ``class_to_idx`` and ``.data``/``.targets`` as
torchvision's classes (docs/torchvision.md).  The data comes from ``<root>/<Class>/raw/`` when it
holds the split's files (checked against their manifest or the registry's hashes), else from
mnistforge's cache (fetched only with ``download=True``); nothing is written into ``root``.

Differences on purpose: EMNIST images are upright (``upright=False`` gives torchvision's transposed storage);
``processed/*.pt`` pickles are never read; errors are named errors of torchvision's exception types.  torch is needed
only for ``.data``/``.targets`` and QMNIST's ``compat=False`` targets.  Where torchvision imports, each class also
subclasses torchvision's class of its name, so ``isinstance`` checks and ``wrap_dataset_for_transforms_v2`` accept it.
"""
from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import numpy as np

from ..errors import ArgumentKindError, ConfigError, IndexRangeError, MissingFileError, OfflineError, require
from ..loaders import load
from ..gate.source import locate
from ..registry import DatasetInfo, TorchvisionInfo, get_dataset, torchvision_datasets, torchvision_folders

try:  # an optional extra, imported here: the classes subclass torchvision's when it is there
    from torchvision import datasets as _tv
except (ImportError, RuntimeError, OSError):  # not installed, or a torch it cannot run with
    _tv = None

if TYPE_CHECKING:
    from ..io.types import StrPath
    from ..loaders.split import DatasetSplit

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST"]


class _StandardTransform:
    """torchvision's ``StandardTransform``: both transforms, and their repr."""

    def __init__(self, transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def __repr__(self) -> str:
        body = [type(self).__name__.lstrip("_")]
        for head, t in (("Transform: ", self.transform), ("Target transform: ", self.target_transform)):
            if t is not None:
                lines = repr(t).splitlines()
                body += [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]
        return "\n".join(body)


def _torchvision(name: str) -> tuple[type, ...]:
    """torchvision's class ``name`` as a base class, or none without torchvision."""
    return (getattr(_tv, name),) if _tv is not None else ()


def _torch(what: str) -> Any:
    return require("torch", "torch", f"mnistforge.compat's {what} (torch tensors, as torchvision's)")


class _MnistFamily:
    """What the five classes share: where the data comes from, items, tensors, repr."""

    #: registry dataset: the one whose ``torchvision`` entry names this class (EMNIST sets it per split)
    _dataset = ""
    _repr_indent = 4

    def __init__(self, root: StrPath, train: bool = True, transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None, download: bool = False, **unknown: Any) -> None:
        _check_arguments(type(self).__name__, root, train, transform, target_transform, download, unknown)
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = (_StandardTransform(transform, target_transform)
                           if transform is not None or target_transform is not None else None)
        self._data = None
        self._targets = None
        self.loaded = self._load(self._split(), download)
        self._images = self._oriented(self.loaded.images)
        self.classes = self._classes()

    # ------------------------------------------------------------------ where from
    @property
    def _info(self) -> DatasetInfo:
        if not self._dataset:  # the registry's torchvision class -> dataset (a subclass: its base)
            folders = torchvision_folders()
            self._dataset = next(folders[c.__name__] for c in type(self).__mro__ if c.__name__ in folders)
        return get_dataset(self._dataset)

    @property
    def _tv(self) -> TorchvisionInfo:
        tv = self._info.torchvision
        assert tv is not None, f"registry: {self._dataset} has no torchvision entry"
        return tv

    def _split(self) -> str:
        return "train" if self.train else "test"

    @property
    def raw_folder(self) -> str:
        """``<root>/<Class>/raw``, as torchvision's."""
        return os.path.join(self.root, self._tv.folder)

    def _load(self, split: str, download: bool) -> DatasetSplit:
        info, tv = self._info, self._tv
        raw = Path(self.raw_folder)
        files = tv.files[info.file_split(split).name]
        meta: bool | Literal["files"] = "files" if info.file_split(split).labels_column is not None else False
        if raw.is_dir() and all(locate(raw, f) is not None for f in files):
            return load(info.name, split, root=raw, with_metadata=meta)
        try:
            return load(info.name, split, download=bool(download), with_metadata=meta)
        except OfflineError as e:
            raise MissingFileError(
                f"{type(self).__name__}: dataset not found", path=raw,
                expected=f"{', '.join(files)} in {raw}, or {info.name} in mnistforge's cache",
                found=f"neither ({e.__class__.__name__}: the cache does not hold it)",
                hint="pass download=True (fetched into mnistforge's cache and verified), or write "
                     f"the folder with `mnistforge export torchvision {info.name} --out {self.root}`"
                     "; processed/*.pt files are never read") from e

    def _oriented(self, images: np.ndarray) -> np.ndarray:
        return images

    def _classes(self) -> list[str]:
        built = list(self.loaded.classes)
        # a build with classes of its own (EMNIST letters, paper's 37) keeps its names
        return list(self._tv.classes) if built == list(self._info.classes) else built

    # ------------------------------------------------------------------ tensors
    def _target_array(self) -> np.ndarray:
        return np.asarray(self.loaded.labels, dtype=np.int64)

    @property
    def data(self) -> Any:
        """The images, a ``torch.uint8`` tensor ``N x 28 x 28`` (needs torch)."""
        if self._data is None:
            self._data = _torch(".data").from_numpy(np.array(self._images, dtype=np.uint8))
        return self._data

    @property
    def targets(self) -> Any:
        """The targets, a ``torch.int64`` tensor (QMNIST: ``N x 8``; needs torch)."""
        if self._targets is None:
            self._targets = _torch(".targets").from_numpy(np.array(self._target_array()))
        return self._targets

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    # ------------------------------------------------------------------ items
    def _target(self, index: int) -> Any:
        return int(self.loaded.labels[index])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        index = _row(type(self).__name__, index, len(self))
        img = Image.fromarray(np.ascontiguousarray(self._images[index], dtype=np.uint8))
        target = self._target(index)
        return self.transforms(img, target) if self.transforms is not None else (img, target)

    def __len__(self) -> int:
        return len(self.loaded.labels)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += [repr(self.transforms)]  # as torchvision: one entry, its first line indented
        return "\n".join([f"Dataset {type(self).__name__}"] + [" " * self._repr_indent + b for b in body])


#: the keywords every class takes (EMNIST adds split and upright, QMNIST what and compat)
_KEYWORDS = ("root", "train", "transform", "target_transform", "download")


def _check_arguments(cls: str, root: object, train: object, transform: object,
                     target_transform: object, download: object, unknown: dict[str, Any]) -> None:
    """torchvision's exception types (``TypeError`` here), saying what was expected."""
    if unknown:
        raise ArgumentKindError(f"{cls}: unknown keyword {', '.join(map(repr, unknown))}",
                                expected="keywords among " + ", ".join(_KEYWORDS + (
                                    ("split", "upright") if cls == "EMNIST" else
                                    ("what", "compat") if cls == "QMNIST" else ())), found=", ".join(unknown))
    if not isinstance(root, (str, os.PathLike)):
        raise ArgumentKindError(f"{cls}: root is no path", expected="a folder path (str or "
                                "os.PathLike): torchvision's root, e.g. 'data'",
                                found=f"{root!r} ({type(root).__name__})")
    for name, value in (("train", train), ("download", download)):
        if not isinstance(value, (bool, np.bool_)):
            raise ArgumentKindError(f"{cls}: {name} is no bool", expected="True or False",
                                    found=f"{value!r} ({type(value).__name__})")
    for name, value in (("transform", transform), ("target_transform", target_transform)):
        if value is not None and not callable(value):
            raise ArgumentKindError(f"{cls}: {name} cannot be called",
                                    expected="None or a callable (e.g. transforms.ToTensor())",
                                    found=f"{value!r} ({type(value).__name__})")


def _row(cls: str, index: object, n: int) -> int:
    """``index`` as a row of ``n`` (negative from the end); torchvision's ``IndexError``."""
    try:
        if isinstance(index, (bool, np.bool_)):
            raise TypeError
        i = operator.index(index)   # type: ignore[arg-type]
    except TypeError:
        raise IndexRangeError(f"{cls}: an index must be an integer", expected=f"0..{n - 1} "
                              f"(or -{n}..-1 from the end)", found=f"{index!r} ({type(index).__name__})") from None
    if not -n <= i < n:
        raise IndexRangeError(f"{cls}: index out of range", expected=f"0..{n - 1} "
                              f"(or -{n}..-1 from the end; the split has {n} items)", found=str(i)) from None
    return i


class MNIST(_MnistFamily, *_torchvision("MNIST")):  # type: ignore[misc]
    """torchvision's ``MNIST(root, train=True, transform=None, target_transform=None, download=False)``, verified (see
    :mod:`mnistforge.compat.torchvision`)."""


class FashionMNIST(_MnistFamily, *_torchvision("FashionMNIST")):  # type: ignore[misc]
    """torchvision's ``FashionMNIST``, verified."""


class KMNIST(_MnistFamily, *_torchvision("KMNIST")):  # type: ignore[misc]
    """torchvision's ``KMNIST``, verified."""


def _emnist_datasets() -> dict[str, str]:
    """EMNIST's ``split`` argument -> the registry dataset (from the registry's torchvision entries)."""
    out = {}
    for name in torchvision_datasets():
        tv = get_dataset(name).torchvision
        if tv is not None and tv.cls == "EMNIST" and tv.split:
            out[tv.split] = name
    return out


class EMNIST(_MnistFamily, *_torchvision("EMNIST")):  # type: ignore[misc]
    """torchvision's ``EMNIST(root, split, **kwargs)``, verified, images **upright**. ``upright=False`` returns them as
    the files store them (transposed), as torchvision does."""

    splits = tuple(_emnist_datasets())

    def __init__(self, root: StrPath, split: str, *, upright: bool = True, **kwargs: Any) -> None:
        if split not in self.splits:
            raise ConfigError(f"unknown EMNIST split {split!r}", expected=", ".join(self.splits), found=repr(split))
        self.split = split
        self.upright = upright
        self._dataset = _emnist_datasets()[split]
        super().__init__(root, **kwargs)

    def _oriented(self, images: np.ndarray) -> np.ndarray:
        return images if self.upright else images.transpose(0, 2, 1)


class QMNIST(_MnistFamily, *_torchvision("QMNIST")):  # type: ignore[misc]
    """torchvision's ``QMNIST(root, what=None, compat=True, train=True, **kwargs)``, verified. ``what``: ``train``,
    ``test``, ``test10k``, ``test50k`` or ``nist``; ``compat=False`` makes each target the 8-column row (a torch
    tensor)."""

    def __init__(self, root: StrPath, what: str | None = None, compat: bool = True, train: bool = True,
                 **kwargs: Any) -> None:
        what = what if what is not None else ("train" if train else "test")
        subsets = self._tv.what
        if what not in subsets:
            raise ConfigError(f"unknown QMNIST subset {what!r}", expected=", ".join(subsets), found=repr(what))
        self.what = what
        self.compat = compat
        super().__init__(root, train, **kwargs)

    def _split(self) -> str:
        return self.what  # torchvision's subsets are the registry's split names

    def _target_array(self) -> np.ndarray:
        meta = self.loaded.metadata
        assert meta is not None   # QMNIST is loaded with its metadata (with_metadata="files")
        return np.stack([np.asarray(meta[f], np.int64) for f in self._info.metadata_fields], axis=1)

    def _target(self, index: int) -> Any:
        return int(self.loaded.labels[index]) if self.compat else self.targets[index]

    def extra_repr(self) -> str:
        return f"Split: {self.what}"
