"""Builders: NIST SD19 -> the MNIST family's files (idx, with a manifest), one function each.

``build_qmnist``, ``build_mnist``, ``build_xnist`` (:mod:`.qmnist`), ``build_emnist``
(:mod:`.emnist`), ``build_femnist`` (:mod:`.femnist`): ``f(sd19, out, config)`` -> the manifest
written.  ``mnistforge build`` finds them by name (``commands/build.BUILDERS``).
"""
from .emnist import build_emnist
from .femnist import build_femnist
from .qmnist import build_mnist, build_qmnist, build_xnist

__all__ = ["build_emnist", "build_femnist", "build_mnist", "build_qmnist", "build_xnist"]
