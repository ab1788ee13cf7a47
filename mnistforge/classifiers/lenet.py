"""LeNet-5 (``lenet``), behind the optional ``[torch]`` extra: trained by the seeded loop of
:mod:`.neural`, saved without pickle; architecture in :mod:`.torch_models`.  The recipe (the
defaults: LeCun et al. 1998 read today, SGD with momentum, one-cycle): ``docs/classifiers.md``.
"""
from __future__ import annotations

from dataclasses import dataclass

from .cnn import SmallCNNClassifier  # noqa: F401  (its import path before it had a module)
from .neural import NeuralClassifier, as_images, load_model, save_model
from .torch_models import require_torch

__all__ = ["LeNet5Classifier", "SmallCNNClassifier", "as_images", "load_model", "require_torch", "save_model"]


@dataclass
class LeNet5Classifier(NeuralClassifier):
    """LeNet-5 (needs ``[torch]``). Spec: ``lenet:epochs=10,lr=0.05,seed=0``."""

    name = "lenet"
    arch = "lenet5"
