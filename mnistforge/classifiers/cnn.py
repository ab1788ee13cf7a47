"""A small modern CNN (``cnn``), behind the optional ``[torch]`` extra: trained by the seeded loop
of :mod:`.neural`, saved without pickle; architecture in :mod:`.torch_models`.  The recipe (the
defaults: three conv-BN-ReLU-pool blocks, dropout, AdamW, one-cycle): ``docs/classifiers.md``.
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
        return build_network(self.arch, n_classes, in_hw, dropout=self.dropout, width=self.width)
