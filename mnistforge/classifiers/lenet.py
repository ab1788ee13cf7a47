"""LeNet-5 (``lenet``), behind the optional ``[torch]`` extra.

It trains with the seeded loop of :mod:`.neural` (CPU or GPU, ``device=auto|cpu|cuda``),
saves without pickle (``clf.save(path)``, :func:`.neural.load_model`) and refuses test sets
whose labels it was not trained on.  Architecture: :mod:`.torch_models` (``lenet5``).

Recipe (the default): LeNet-5 as in LeCun et al. (1998) read today (tanh, average pooling,
linear output), SGD with momentum 0.9, one-cycle learning rate peaking at 0.05, batch 64.
The small modern CNN (``cnn``) is in :mod:`.cnn`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .cnn import SmallCNNClassifier  # noqa: F401  (its import path before it had a module)
from .neural import NeuralClassifier, as_images, load_model, save_model
from .torch_models import require_torch

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
