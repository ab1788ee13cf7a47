"""The one Hugging Face schema of an MNIST-family split, and the in-memory split it describes.

``image`` (:class:`datasets.Image`, PNG bytes), ``label`` (:class:`datasets.ClassLabel` named by the classes), then one
``Value`` per scalar metadata field, named as :data:`EXPORT_NAMES` says (the writer is ``writer_id``), and in an
export the row's index in the split, :data:`ROW_ID`. The export
(:mod:`mnistforge.hub.export`) and the loaders' ``to_hf()`` both use :func:`features_for` and :func:`export_metadata`.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib import recfunctions

from ...errors import ConfigError

if TYPE_CHECKING:
    import datasets

#: An export's last column: the row's index in the split's order (0..N-1 across the shards), for readers that split
#: the shards among themselves (``split_dataset_by_node``) to check and join rows by.  Not part of the loaded metadata.
ROW_ID = "row_id"
#: Metadata fields not exported: ``label`` repeats the label column (the loaders' rule), the others would clash.
SKIPPED_METADATA = ("image", "label", "pixels", ROW_ID)
#: The optional raw-pixel column, next to the PNG ``image``: a plain ``load_dataset`` user
#: gets NumPy arrays from it without decoding PNGs.
PIXELS = "pixels"
#: Layouts of the ``pixels`` column.  ``bytes``: ``Value("binary")``, the H*W pixels of each image row-major (parquet
#: reads it as one flat buffer: the fastest to load). ``array``: ``Array2D((H, W), "uint8")`` (self-describing, but
#: parquet stores it as nested lists whose per-pixel levels cost ~5x more to read back).
PIXEL_FORMATS = ("bytes", "array")
#: Metadata fields that a Hugging Face dataset names otherwise: the writer is ``writer_id``,
#: the name of the writer column in Flower's FEMNIST on the Hub (``flwrlabs/femnist``), so that
#: ``NaturalIdPartitioner(partition_by="writer_id")`` partitions an export by writer unchanged.
#: Loading an export back gives each field its registry name again (:func:`field_name`).
EXPORT_NAMES = {"writer": "writer_id"}


@dataclass
class SplitData:
    """One split: ``images`` (N x H x W uint8, upright), ``labels`` (N ints), optional metadata. ``metadata`` is a
    NumPy structured array with one record per image (or None)."""

    images: np.ndarray
    labels: np.ndarray
    metadata: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.images = np.asarray(self.images)
        self.labels = np.asarray(self.labels)
        if self.images.ndim != 3 or self.images.dtype != np.uint8:
            raise ConfigError("images must be a uint8 array N x H x W", expected="uint8, 3 dims",
                              found=f"{self.images.dtype}, shape {self.images.shape}")
        n = len(self.images)
        if self.labels.shape != (n,):
            raise ConfigError("one label per image", expected=f"labels of shape ({n},)",
                              found=f"shape {self.labels.shape}")
        if self.metadata is not None:
            if self.metadata.dtype.names is None or len(self.metadata) != n:
                raise ConfigError("metadata must be a structured array with one record per image",
                                  expected=f"{n} records",
                                  found=f"{len(self.metadata)} records, dtype {self.metadata.dtype}")
            self.metadata = export_metadata(self.metadata)


def export_metadata(metadata: np.ndarray | None) -> np.ndarray | None:
    """``metadata`` with its fields under their Hugging Face names (:data:`EXPORT_NAMES`): a view,
    no copy.  A field keeps its name where the new one is taken already.

    >>> m = np.zeros(2, dtype=[("writer", "i4"), ("hsf", "i4")])
    >>> export_metadata(m).dtype.names
    ('writer_id', 'hsf')
    """
    renamed = _renames(None if metadata is None else metadata.dtype)
    if not renamed or metadata is None:
        return metadata

    return recfunctions.rename_fields(metadata, renamed)


def _renames(dtype: np.dtype | None) -> dict[str, str]:
    names = () if dtype is None else dtype.names or ()
    return {f: EXPORT_NAMES[f] for f in names if f in EXPORT_NAMES and EXPORT_NAMES[f] not in names}


def field_name(column: str, fields: Collection[str]) -> str:
    """The metadata field an exported ``column`` holds: its registry name when ``fields`` (the
    dataset's metadata fields) has it, else the column's own name (a dataset with a field of
    that name, FEMNIST's ``writer_id``, keeps it: the export did not rename anything there).

    >>> field_name("writer_id", ["writer", "hsf"]), field_name("writer_id", []), field_name("hsf", [])
    ('writer', 'writer_id', 'hsf')
    >>> field_name("writer_id", ["writer_id", "writer"])
    'writer_id'
    """
    if column in fields:
        return column
    back = {v: k for k, v in EXPORT_NAMES.items()}
    return back[column] if column in back and back[column] in fields else column


def hf_split_name(split: str) -> str:
    """The Hub's spelling of a split name (``\\w+``: ``-`` becomes ``_``).

    >>> hf_split_name("train-without-validation")
    'train_without_validation'
    """
    name = str(split).replace("-", "_")
    if not re.fullmatch(r"\w+", name):
        raise ConfigError("invalid split name", expected="letters, digits, '-' or '_'", found=repr(split))
    return name


def features_for(classes: Iterable[object], metadata_dtype: np.dtype | None = None, *, pixels: str | None = None,
                 pixels_shape: Sequence[int] | None = None, row_id: bool = False) -> datasets.Features:
    """The :class:`datasets.Features` of an exported config.

    ``image`` (Image), ``label`` (ClassLabel named by ``classes``), with ``pixels`` a ``pixels`` column
    holding the same images undecoded (``"bytes"``: ``Value("binary")``; ``"array"``: ``Array2D(pixels_shape,
    "uint8")``; see :data:`PIXEL_FORMATS`), then one ``Value`` per scalar field of ``metadata_dtype`` (a NumPy
    structured dtype), in field order, under their export names (:data:`EXPORT_NAMES`; the arrays written get
    them from :func:`export_metadata`), then with ``row_id`` (an export's) :data:`ROW_ID` as ``int64``. Fields
    named as :data:`SKIPPED_METADATA` are left out.  The loaders' ``.to_hf()`` uses the same definition.

    >>> f = features_for(["0", "1"], np.dtype([("writer", "i4")]))
    >>> list(f), f["label"].names, f["writer_id"].dtype
    (['image', 'label', 'writer_id'], ['0', '1'], 'int32')
    >>> f = features_for(["0"], pixels="bytes")
    >>> list(f), f["pixels"].dtype
    (['image', 'label', 'pixels'], 'binary')
    >>> features_for(["0"], pixels="array", pixels_shape=(28, 28))["pixels"].shape
    (28, 28)
    """
    import datasets

    cols = {"image": datasets.Image(), "label": datasets.ClassLabel(names=[str(c) for c in classes])}
    if pixels is not None:
        cols[PIXELS] = pixels_feature(pixels, pixels_shape)
    renamed = _renames(metadata_dtype)
    for name in metadata_columns(metadata_dtype):
        assert metadata_dtype is not None  # (it has columns)
        column = renamed.get(name, name)
        cols[column] = datasets.Value(_value_dtype(metadata_dtype[name], column))
    if row_id:
        cols[ROW_ID] = datasets.Value("int64")
    return datasets.Features(cols)


def pixels_feature(pixels: str, shape: Sequence[int] | None = None) -> datasets.Value | datasets.Array2D:
    """The feature of the ``pixels`` column in layout ``pixels`` (one of :data:`PIXEL_FORMATS`)."""
    import datasets

    if pixels == "bytes":
        return datasets.Value("binary")
    if pixels == "array" and shape is not None and len(shape) == 2:
        return datasets.Array2D(tuple(int(d) for d in shape), "uint8")
    raise ConfigError("unknown pixels layout" if pixels != "array" else "array pixels need a shape",
                      expected=" or ".join(PIXEL_FORMATS) + " (array: with an (H, W) shape)",
                      found=f"{pixels!r}, shape {shape}")


def metadata_columns(metadata_dtype: np.dtype | None) -> list[str]:
    """Names of the metadata fields exported as columns (all but :data:`SKIPPED_METADATA`)."""
    if metadata_dtype is None or metadata_dtype.names is None:
        return []
    return [n for n in metadata_dtype.names if n not in SKIPPED_METADATA]


def _value_dtype(dt: np.dtype, name: str) -> str:
    if dt.shape:
        raise ConfigError(f"metadata field {name!r} is not a scalar", expected="scalar fields",
                          found=f"shape {dt.shape}")
    if dt.kind in "iuf":
        return np.dtype(dt.newbyteorder("=")).name
    if dt.kind == "b":
        return "bool"
    if dt.kind in "US":
        return "string"
    raise ConfigError(f"metadata field {name!r} has an unsupported type",
                      expected="integer, float, bool or string", found=str(dt))


