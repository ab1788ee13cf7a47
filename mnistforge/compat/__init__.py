"""Drop-in classes with other libraries' signatures, returning mnistforge's verified data.

* torchvision (:mod:`.torchvision`): ``from mnistforge.compat import MNIST`` (also ``FashionMNIST``,
  ``KMNIST``, ``EMNIST``, ``QMNIST``) in place of ``from torchvision.datasets import MNIST``; torch is
  imported only for ``.data``/``.targets`` tensors.
"""
from .torchvision import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST"]
