"""LeNet-5 and a small modern CNN, behind the optional ``[torch]`` extra.

Both train with the seeded loop of :mod:`.neural` (CPU or GPU, ``device=auto|cpu|cuda``),
save without pickle (``clf.save(path)``, :func:`.neural.load_model`) and refuse test sets
whose labels they were not trained on.  Architectures: :mod:`.torch_models`.

Recipes (the defaults):

* ``lenet``: LeNet-5 as in LeCun et al. (1998) read today (tanh, average pooling, linear
  output), SGD with momentum 0.9, one-cycle learning rate peaking at 0.05, batch 64.
* ``cnn``: three conv-BN-ReLU-pool blocks (16, 32, 64 channels: ``width=16``), dropout 0.25,
  AdamW (weight decay 1e-4), one-cycle learning rate peaking at 3e-3, batch 128;
  ``augment=true`` adds random shifts (<= 2 px), scalings (0.9-1.1) and rotations (<= 0.1 rad),
  drawn afresh each epoch.
"""
from __future__ import annotations

from dataclasses import dataclass

from .neural import NeuralClassifier, as_images, load_model, require_torch, save_model

__all__ = [
    "LeNet5Classifier",
    "SmallCNNClassifier",
    "as_images",
    "load_model",
    "require_torch",
    "save_model",
]


@dataclass
class LeNet5Classifier(NeuralClassifier):
    """LeNet-5 (needs ``[torch]``). Spec: ``lenet:epochs=10,lr=0.05,seed=0``.

    Examples
    --------
    >>> clf = LeNet5Classifier(epochs=1)        # doctest: +SKIP
    >>> clf.fit(train_images, train_labels).predict(test_images)  # doctest: +SKIP
    """

    name = "lenet"
    arch = "lenet5"


@dataclass
class SmallCNNClassifier(NeuralClassifier):
    """Three conv blocks with batch norm, dropout, AdamW (needs ``[torch]``). Spec: ``cnn``."""

    lr: float = 3e-3
    batch: int = 128
    optimizer: str = "adam"
    weight_decay: float = 1e-4
    dropout: float = 0.25
    width: int = 16

    name = "cnn"
    arch = "cnn"

    def _network(self, n_classes: int, in_hw):
        from .torch_models import build_network

        return build_network(self.arch, n_classes, in_hw, dropout=self.dropout,
                             width=self.width)
