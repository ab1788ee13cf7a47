"""``DatasetSplit``: one loaded split (images, labels, classes, metadata) and its conversions."""
from __future__ import annotations

from ..registry import DatasetInfo

__all__ = ["DatasetSplit"]


class DatasetSplit:
    """One split of a dataset, loaded.

    Attributes
    ----------
    name, split : str
        Dataset and split names (registry names).
    images : numpy.ndarray
        ``uint8``, ``N x 28 x 28``, upright, ink high.  A read-only memory map
        (or a view of one) when a raw copy is available.
    labels : numpy.ndarray
        ``int64``, ``N``.
    classes : list of str
        The character (or name) of each label value: ``classes[labels[i]]``.
    metadata : numpy.ndarray or None
        Structured array with one named int32 field per metadata column
        (QMNIST: label, hsf, writer, index_in_writer, nist_class, nist_index,
        duplicate, unused; EMNIST builds: writer, hsf, field, ascii, entry,
        sd19_row), when asked for and available.
    info : DatasetInfo
        The registry entry.
    source : str
        Where the files came from (``"cache ..."`` or ``"folder ..."``).
    status : dict
        Verification status of each file used (``exact``, ``content``, ...).

    Examples
    --------
    >>> ds = load("mnist", "test")          # doctest: +SKIP
    >>> len(ds), ds.images.shape, ds.classes[ds.labels[0]]   # doctest: +SKIP
    (10000, (10000, 28, 28), '7')
    """

    def __init__(self, name, split, images, labels, info: DatasetInfo, metadata=None,
                 source="", status=None, orientation="upright"):
        self.name = name
        self.split = split
        self.images = images
        self.labels = labels
        self.info = info
        self.classes = list(info.classes)
        self.metadata = metadata
        self.source = source
        self.status = dict(status or {})
        self.orientation = orientation

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])

    def __repr__(self) -> str:
        meta = f", metadata={list(self.metadata.dtype.names)}" if self.metadata is not None else ""
        return (f"DatasetSplit({self.name!r}, {self.split!r}, n={len(self)}, "
                f"classes={len(self.classes)}{meta}, source={self.source!r})")

    def to_numpy(self):
        """``(images, labels)`` as NumPy arrays (images may be a read-only memory map)."""
        return self.images, self.labels

    def to_torch(self):
        """A ``torch.utils.data.TensorDataset(images uint8 N x 28 x 28, labels int64)``.

        torch is optional (``pip install mnistforge[torch]``); a clear
        ConfigError says so when it is missing.
        """
        from .convert import to_torch
        return to_torch(self)

    def to_hf(self):
        """A Hugging Face ``datasets.Dataset`` (see :func:`mnistforge.loaders.hf_features`)."""
        from .convert import to_hf
        return to_hf(self)
