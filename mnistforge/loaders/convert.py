"""Conversions of a loaded split: PyTorch and Hugging Face ``datasets`` (optional), in the schema
the export writes (:func:`mnistforge.io.hf.schema.features_for`)."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, require
from ..io.hf.schema import export_metadata, features_for, metadata_columns

__all__ = ["hf_features", "hf_columns", "to_hf", "to_torch"]


class SplitLike(Protocol):
    """What the conversions read of a split (named here: the split's methods call them)."""
    name: str
    split: str
    images: npt.NDArray[Any]
    labels: npt.NDArray[Any]
    classes: list[str]
    metadata: npt.NDArray[Any] | None


def hf_features(split_obj: SplitLike) -> Any:  # datasets.Features (an optional dependency)
    """The :class:`datasets.Features` of a loaded split (see :func:`~mnistforge.io.hf.schema.features_for`).

    >>> from types import SimpleNamespace
    >>> f = hf_features(SimpleNamespace(classes=["0", "1"], metadata=None))
    >>> list(f), f["label"].names
    (['image', 'label'], ['0', '1'])
    """
    meta = export_metadata(getattr(split_obj, "metadata", None))
    return features_for(split_obj.classes, None if meta is None else meta.dtype)


def hf_columns(split_obj: SplitLike,
               rows: slice | Sequence[int] | npt.NDArray[Any] | None = None) -> dict[str, list[Any]]:
    """Column data for :func:`hf_features` (images as ``uint8`` arrays), optionally for ``rows``."""
    sl = slice(None) if rows is None else rows
    cols: dict[str, list[Any]] = {"image": list(np.asarray(split_obj.images[sl])),
                                  "label": np.asarray(split_obj.labels[sl]).tolist()}
    meta = export_metadata(split_obj.metadata)
    if meta is not None:  # no metadata: no columns
        cols.update({f: np.asarray(meta[f][sl]).tolist() for f in metadata_columns(meta.dtype)})
    return cols


def to_hf(split_obj: SplitLike) -> Any:  # datasets.Dataset (an optional dependency)
    """A :class:`datasets.Dataset` of the split (PNG-encoded images, class labels, metadata)."""
    Dataset = require("datasets", "hf", "to_hf()").Dataset
    return Dataset.from_dict(hf_columns(split_obj), features=hf_features(split_obj))


_DTYPES = ("uint8", "float32")


@functools.lru_cache(maxsize=1)
def _torch_dataset_class() -> type[Any]:
    torch = require("torch", "torch", "SplitLike.to_torch()")
    from torch.utils.data import Dataset

    class SplitDataset(Dataset):  # type: ignore[misc, type-arg, unused-ignore]  # torch optional: Any without it
        """A loaded split as a ``torch.utils.data.Dataset`` (see :meth:`DatasetSplit.to_torch`)."""

        def __init__(self, split_obj: SplitLike, transform: Callable[[Any], Any] | None = None,
                     target_transform: Callable[[int], Any] | None = None, dtype: str = "uint8") -> None:
            self.images = split_obj.images
            self.labels = np.asarray(split_obj.labels, dtype=np.int64)
            self.classes = list(split_obj.classes)
            self.name, self.split = split_obj.name, split_obj.split
            self.transform, self.target_transform, self.dtype = transform, target_transform, dtype

        def __len__(self) -> int:
            return int(self.labels.shape[0])

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            # np.array copies the (possibly read-only, memory-mapped) row: torch gets a writable array
            img = torch.from_numpy(np.array(self.images[i], dtype=np.uint8)).unsqueeze(0)
            if self.dtype == "float32":
                img = img.to(torch.float32).div_(255.0)
            label = int(self.labels[i])
            if self.transform is not None:
                img = self.transform(img)
            if self.target_transform is not None:
                label = self.target_transform(label)
            return img, label

        @property
        def targets(self) -> Any:  # a torch.Tensor
            return torch.from_numpy(self.labels.copy())

        @property
        def data(self) -> Any:  # a torch.Tensor
            return torch.from_numpy(np.array(self.images, dtype=np.uint8))

        def __repr__(self) -> str:
            return f"SplitDataset({self.name!r}, {self.split!r}, n={len(self)}, dtype={self.dtype})"

    # pickle (DataLoader workers started by spawn) finds the class as convert.SplitDataset
    SplitDataset.__module__ = __name__
    SplitDataset.__qualname__ = "SplitDataset"
    return SplitDataset


def __getattr__(name: str) -> Any:
    if name == "SplitDataset":
        return _torch_dataset_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_torch(split_obj: SplitLike, transform: Callable[[Any], Any] | None = None,
             target_transform: Callable[[int], Any] | None = None, *, dtype: object = "uint8") -> Any:
    """A ``torch.utils.data.Dataset`` of ``(1 x 28 x 28 tensor, label)``, ``uint8`` or ``float32`` in [0, 1]."""
    dtype = str(dtype).replace("torch.", "")
    if dtype not in _DTYPES:
        raise ConfigError("unsupported image dtype", expected=" or ".join(_DTYPES), found=dtype)
    return _torch_dataset_class()(split_obj, transform, target_transform, dtype)
