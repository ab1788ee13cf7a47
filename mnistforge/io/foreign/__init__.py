"""Readers of third-party copies of MNIST-family data; they know no dataset.

Keras ``.npz``, ``.npy`` pairs (:mod:`.npz`), CSV (:mod:`.csvfile`), torchvision ``root/<Name>/raw`` folders
(:mod:`.torchvision`; ``processed/*.pt`` pickles are refused), Hugging Face parquet snapshots
(:mod:`.parquet`), MATLAB ``.mat`` (:mod:`.mat`).  :func:`read_foreign` detects the format from the content
(:mod:`.detect`) and returns a :class:`ForeignCopy` of arrays as stored.
"""
from .base import ForeignCopy, ForeignSplit
from .detect import FORMATS, is_foreign, read_foreign, sniff

__all__ = ["FORMATS", "ForeignCopy", "ForeignSplit", "is_foreign", "read_foreign", "sniff"]
