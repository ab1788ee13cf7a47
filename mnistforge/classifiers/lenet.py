"""LeNet-5 and a small CNN, behind the optional ``[torch]`` extra.

torch is imported inside the functions only, so importing this module (and listing the
classifiers) works without it; fitting raises a clear :class:`~mnistforge.errors.ConfigError`
when torch is missing.  Training runs on the CPU by default and on the GPU when one is
present (``device="auto"``); results are seeded (``torch.manual_seed``, a seeded shuffling
generator, deterministic algorithms where torch offers them).

LeNet-5 here is the usual modern reading of LeCun et al. (1998): 28x28 input padded to
32x32, conv 5x5 x6 - tanh - average pool - conv 5x5 x16 - tanh - average pool - 120 - 84 -
classes (full connection table in C3, linear output instead of RBF units), trained with
SGD + momentum on cross-entropy.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .base import Classifier, check_xy

logger = logging.getLogger(__name__)


def require_torch():
    """Import torch or raise a ConfigError saying how to get it."""
    try:
        import torch
    except ImportError as e:
        raise ConfigError("PyTorch is needed for this classifier", expected="torch installed",
                          found="ImportError", hint="pip install 'mnistforge[torch]', or use "
                          "linear, elm or knn") from e
    return torch


def _build(arch: str, n_classes: int, in_hw: tuple[int, int]):
    torch = require_torch()
    nn = torch.nn
    h, w = in_hw
    if arch == "lenet5":
        # pad to 32x32 as in the paper: 32 -> 28 -> 14 -> 10 -> 5
        ph, pw = max(0, 32 - h), max(0, 32 - w)
        hh, ww = h + ph, w + pw
        flat = 16 * (((hh - 4) // 2 - 4) // 2) * (((ww - 4) // 2 - 4) // 2)
        return nn.Sequential(
            nn.ZeroPad2d((pw // 2, pw - pw // 2, ph // 2, ph - ph // 2)),
            nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2),
            nn.Flatten(), nn.Linear(flat, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(),
            nn.Linear(84, n_classes))
    if arch == "cnn":
        flat = 64 * (h // 4) * (w // 4)
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(flat, 128), nn.ReLU(),
            nn.Linear(128, n_classes))
    raise ConfigError("unknown network", expected="lenet5 or cnn", found=arch)


def _as_images(X) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim == 2:
        side = int(round(np.sqrt(X.shape[1])))
        if side * side != X.shape[1]:
            raise ConfigError("inputs are not square images", expected="N x H x W or N x H*W "
                              "with a square H*W", found=f"shape {X.shape}")
        X = X.reshape(-1, side, side)
    if X.ndim != 3:
        raise ConfigError("inputs have the wrong shape", expected="N x H x W images",
                          found=f"shape {X.shape}")
    x = X.astype(np.float32)
    if X.dtype == np.uint8:
        x /= 255.0
    return x


@dataclass
class _TorchClassifier(Classifier):
    epochs: int = 10
    lr: float = 0.05
    momentum: float = 0.9
    batch: int = 64
    weight_decay: float = 0.0
    device: str = "auto"

    arch = "lenet5"

    def _device(self, torch):
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    def fit(self, X, y):
        torch = require_torch()
        y = check_xy(X, y)
        codes = self._encode_labels(y)
        x = _as_images(X)
        torch.manual_seed(self.seed)
        dev = self._device(torch)
        self.in_hw_ = x.shape[1:]
        self.model_ = _build(self.arch, len(self.classes_), self.in_hw_).to(dev)
        xt = torch.from_numpy(x).unsqueeze(1)
        yt = torch.from_numpy(codes.astype(np.int64))
        opt = torch.optim.SGD(self.model_.parameters(), lr=self.lr, momentum=self.momentum,
                              weight_decay=self.weight_decay)
        steps = self.epochs * ((len(x) + self.batch - 1) // self.batch)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.lr, total_steps=max(1, steps))
        gen = torch.Generator().manual_seed(self.seed)
        loss_fn = torch.nn.CrossEntropyLoss()
        from ..progress import progress

        self.model_.train()
        for epoch in progress(range(self.epochs), desc=f"{self.name} epochs", unit="epoch"):
            perm = torch.randperm(len(x), generator=gen)
            total = 0.0
            for s in range(0, len(x), self.batch):
                i = perm[s:s + self.batch]
                xb, yb = xt[i].to(dev, non_blocking=True), yt[i].to(dev, non_blocking=True)
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(self.model_(xb), yb)
                loss.backward()
                opt.step()
                sched.step()
                total += float(loss.detach()) * len(i)
            logger.info("%s epoch %d: training loss %.4f", self.name, epoch + 1, total / len(x))
        self.model_.eval()
        return self

    def decision_function(self, X) -> np.ndarray:
        self._check_fitted()
        torch = require_torch()
        x = _as_images(X)
        dev = next(self.model_.parameters()).device
        out = []
        with torch.no_grad():
            for s in range(0, len(x), 1024):
                xb = torch.from_numpy(x[s:s + 1024]).unsqueeze(1).to(dev)
                out.append(self.model_(xb).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.classes_)), np.float32)


@dataclass
class LeNet5Classifier(_TorchClassifier):
    """LeNet-5 (needs the ``[torch]`` extra). Spec: ``lenet:epochs=10,lr=0.05,seed=0``.

    Examples
    --------
    >>> clf = LeNet5Classifier(epochs=1)        # doctest: +SKIP
    >>> clf.fit(train_images, train_labels).predict(test_images)  # doctest: +SKIP
    """

    name = "lenet"
    arch = "lenet5"


@dataclass
class SmallCNNClassifier(_TorchClassifier):
    """Two conv layers + max pooling + 128 hidden units (needs ``[torch]``). Spec: ``cnn``."""

    lr: float = 0.05
    name = "cnn"
    arch = "cnn"
