"""The network architectures of the neural reference classifiers (PyTorch modules): ``lenet5``,
LeNet-5 as usually read today, and ``cnn``, three conv-BN-ReLU-pool blocks of ``width``, ``2 width``, ``4 width``
channels (``docs/classifiers.md``).  torch is imported inside :func:`build_network` only.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import ConfigError, require

ARCHITECTURES = ("lenet5", "cnn")


def require_torch() -> ModuleType:
    """Import torch or raise a MissingDependencyError naming the ``[torch]`` extra."""
    return require("torch", "torch", "the lenet and cnn classifiers (or use linear, elm, knn)")


def build_network(arch: str, n_classes: int, in_hw: tuple[int, ...], dropout: float = 0.25,
                  width: int = 16) -> Any:  # a torch.nn.Module (torch: an optional extra)
    """A freshly initialised ``torch.nn.Module`` for ``N x 1 x H x W`` float inputs."""
    torch = require_torch()
    nn = torch.nn
    h, w = (int(v) for v in in_hw)
    if arch == "lenet5":
        # pad to 32x32 as in the paper: 32 -> 28 -> 14 -> 10 -> 5
        ph, pw = max(0, 32 - h), max(0, 32 - w)
        hh, ww = h + ph, w + pw
        flat = 16 * (((hh - 4) // 2 - 4) // 2) * (((ww - 4) // 2 - 4) // 2)
        return nn.Sequential(
            nn.ZeroPad2d((pw // 2, pw - pw // 2, ph // 2, ph - ph // 2)),
            nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2), nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2),
            nn.Flatten(), nn.Linear(flat, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, n_classes))
    if arch == "cnn":
        if min(h, w) < 8:
            raise ConfigError("images too small for the cnn", expected="at least 8 x 8", found=f"{h} x {w}")
        layers, c_in = [], 1
        for c_out in (width, 2 * width, 4 * width):
            # the conv bias is redundant before batch norm
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                       nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            c_in = c_out
        flat = 4 * width * (h // 8) * (w // 8)
        return nn.Sequential(*layers, nn.Flatten(), nn.Dropout(dropout), nn.Linear(flat, 128), nn.ReLU(inplace=True),
                             nn.Dropout(dropout), nn.Linear(128, n_classes))
    raise ConfigError("unknown network", expected=" or ".join(ARCHITECTURES), found=arch)
