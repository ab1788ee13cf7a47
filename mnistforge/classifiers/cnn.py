"""A small modern CNN (``cnn``), behind the optional ``[torch]`` extra.

It trains with the seeded loop of :mod:`.neural` (CPU or GPU, ``device=auto|cpu|cuda``),
saves without pickle (``clf.save(path)``, :func:`.neural.load_model`) and refuses test sets
whose labels it was not trained on.  Architecture: :mod:`.torch_models` (``cnn``).

Recipe (the default): three conv-BN-ReLU-pool blocks (16, 32, 64 channels: ``width=16``),
dropout 0.25, AdamW (weight decay 1e-4), one-cycle learning rate peaking at 3e-3, batch 128;
``augment=true`` adds random shifts (<= 2 px), scalings (0.9-1.1) and rotations (<= 0.1 rad),
drawn afresh each epoch.  LeNet-5 is in :mod:`.lenet`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .neural import NeuralClassifier
from .torch_models import build_network

__all__ = ["SmallCNNClassifier"]


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

    def _network(self, n_classes: int, in_hw: tuple[int, ...]) -> Any:  # a torch.nn.Module
        return build_network(self.arch, n_classes, in_hw, dropout=self.dropout,
                             width=self.width)
