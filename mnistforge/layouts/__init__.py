"""Other libraries' folder layouts, written from any loadable source.

* :mod:`.torchvision`: ``<root>/<Class>/raw/`` as ``torchvision.datasets.MNIST``, ``FashionMNIST``, ``KMNIST``,
  ``QMNIST`` and ``EMNIST`` read it (``mnistforge export torchvision``, ``mnistforge build --layout torchvision``).
"""
from .torchvision import TorchvisionLayout, TorchvisionSource, sources_from_targets, write_torchvision

__all__ = ["TorchvisionLayout", "TorchvisionSource", "sources_from_targets", "write_torchvision"]
