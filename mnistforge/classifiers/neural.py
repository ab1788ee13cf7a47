"""Training, prediction and pickle-free saving of the neural reference classifiers.

:class:`NeuralClassifier` is the base of ``lenet`` (:mod:`.lenet`) and ``cnn`` (:mod:`.cnn`): a seeded mini-batch
training loop with early stopping on a validation set; torch is imported inside functions only.  :func:`save_model`
writes ``NAME.npz`` (the tensors, read back with ``np.load(allow_pickle=False)``) and ``NAME.json`` (spec, classes,
history, the weights' sha256): ``torch.load`` is never used, so a model file cannot run code when loaded.  The recipes
and their options: ``docs/classifiers.md``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from scipy import ndimage

from ..errors import ConfigError, FormatError, IntegrityError, MissingFileError
from ..io.atomic import atomic_file
from ..io.hashing import sha256_file
from ..progress import progress
from .base import Classifier, check_xy, make_classifier
from .torch_models import build_network, require_torch

logger = logging.getLogger(__name__)

MODEL_FORMAT = "mnistforge-model"
MODEL_VERSION = 1
OPTIMIZERS = ("sgd", "adam")
SCHEDULES = ("onecycle", "cosine", "none")
PREDICT_BATCH = 1024


def resolve_device(device: str = "auto") -> Any:  # a torch.device (torch: an optional extra)
    """``"auto"`` -> cuda when available else cpu; ``"cuda"`` without a GPU is a ConfigError."""
    torch = require_torch()
    check_device_name(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("CUDA device requested but none is available",
                              expected="a GPU visible to torch (torch.cuda.is_available())",
                              found=f"none (torch {torch.__version__}"
                              + (", a CPU-only build)" if torch.version.cuda is None else ")"),
                              hint="use device=cpu or device=auto")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError("no such CUDA device", expected=f"cuda:0..cuda:{torch.cuda.device_count() - 1}",
                              found=device)
    return dev


def check_device_name(device: str) -> None:
    """Reject a device name that is not auto, cpu, cuda or cuda:N (no torch needed)."""
    d = str(device)
    if not (d in ("auto", "cpu", "cuda") or (d.startswith("cuda:") and d[5:].isdigit())):
        raise ConfigError("unknown device", expected="auto, cpu, cuda or cuda:N", found=d)


def as_images(X: npt.ArrayLike) -> np.ndarray:
    """``N x H x W`` float32 images (uint8 scaled to [0, 1]; square ``N x D`` rows reshaped)."""
    X = np.asarray(X)
    if X.ndim == 2:
        side = math.isqrt(X.shape[1])
        if side * side != X.shape[1]:
            raise ConfigError("inputs are not square images", expected="N x H x W or N x H*W with a square H*W",
                              found=f"shape {X.shape}")
        X = X.reshape(-1, side, side)
    if X.ndim != 3:
        raise ConfigError("inputs have the wrong shape", expected="N x H x W images", found=f"shape {X.shape}")
    x: np.ndarray = X.astype(np.float32)
    if X.dtype == np.uint8:
        x /= 255.0
    return x


def random_similarity(x: np.ndarray, rng: np.random.Generator, max_shift: float = 2.0,
                      scale: tuple[float, float] = (0.9, 1.1), max_rotation: float = 0.1) -> np.ndarray:
    """Light augmentation: each image shifted, scaled and rotated about its centre at random.

    The same uniform draws as ``evaluators.augment`` (lighter bounds, bilinear, zero padding); done here with
    ``scipy.ndimage`` because classifiers sit below evaluators.
    """
    n = len(x)
    shift = rng.uniform(-max_shift, max_shift, (n, 2))
    rot = rng.uniform(-max_rotation, max_rotation, (n,))
    sc = rng.uniform(scale[0], scale[1], (n,))
    return similarity(x, shift, rot, sc)


def similarity(x: np.ndarray, shift: np.ndarray, rot: np.ndarray, sc: np.ndarray) -> np.ndarray:
    """Image ``k`` shifted by ``shift[k]`` (rows, columns), rotated by ``rot[k]`` and scaled by ``sc[k]`` about its
    centre; bilinear, zero outside (``evaluators.augment``'s convention)."""
    n, h, w = x.shape
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    out = np.empty_like(x)
    for k in range(n):
        c, s = np.cos(rot[k]), np.sin(rot[k])
        # affine_transform maps output to input coordinates: the inverse similarity
        inv = np.array([[c, -s], [s, c]]) / sc[k]
        offset = centre - inv @ (centre + shift[k])
        out[k] = ndimage.affine_transform(x[k], inv, offset=offset, order=1, mode="constant")
    return out


@contextlib.contextmanager
def _seeded(torch: Any, seed: int, dev: Any) -> Iterator[None]:
    """Seed torch without disturbing the caller's global RNG state or determinism flag."""
    devices = [dev.index or 0] if dev.type == "cuda" else []
    was_det = torch.are_deterministic_algorithms_enabled()
    was_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        # warn_only: a GPU op without a deterministic kernel should warn, not abort training
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was_det, warn_only=was_warn)


@dataclass
class NeuralClassifier(Classifier):
    """Base of the PyTorch classifiers; the fields are the spec parameters.

    ``epochs`` is the maximum; with a validation set, training stops after ``patience`` epochs without a lower
    validation error and the best epoch's weights are kept.
    """

    epochs: int = 10
    lr: float = 0.05
    batch: int = 64
    optimizer: str = "sgd"
    momentum: float = 0.9
    weight_decay: float = 0.0
    schedule: str = "onecycle"
    augment: bool = False
    patience: int = 3
    device: str = "auto"

    name = "neural"
    arch = "lenet5"

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"unknown optimizer for {self.name}", expected=" or ".join(OPTIMIZERS),
                              found=self.optimizer)
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"unknown learning-rate schedule for {self.name}",
                              expected=", ".join(SCHEDULES), found=self.schedule)
        for field, v, lo in (("epochs", self.epochs, 1), ("batch", self.batch, 1), ("patience", self.patience, 1)):
            if v < lo:
                raise ConfigError(f"invalid {self.name} parameter {field}", expected=f">= {lo}", found=v)
        if not self.lr > 0:
            raise ConfigError(f"invalid {self.name} parameter lr", expected="> 0", found=self.lr)

    def _network(self, n_classes: int, in_hw: tuple[int, ...]) -> Any:  # a torch.nn.Module
        return build_network(self.arch, n_classes, in_hw)

    def resolve_device(self) -> Any:  # a torch.device
        """The torch device this classifier trains on (see :func:`resolve_device`)."""
        return resolve_device(self.device)

    def _optimizer(self, torch: Any, params: Any, steps: int) -> tuple[Any, Any]:
        if self.optimizer == "adam":
            opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        else:
            opt = torch.optim.SGD(params, lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        if self.schedule == "onecycle":
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.lr, total_steps=max(1, steps))
        elif self.schedule == "cosine":
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, steps))
        else:
            sched = None
        return opt, sched

    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike,
            validation: tuple[npt.ArrayLike, npt.ArrayLike] | None = None) -> NeuralClassifier:
        """Train on images ``X`` and labels ``y``; ``validation=(X_val, y_val)`` enables early stopping."""
        torch = require_torch()

        y = check_xy(X, y)
        codes = self._encode_labels(y)
        x0 = as_images(X)
        self.in_hw_ = tuple(int(v) for v in x0.shape[1:])
        val = None
        if validation is not None:
            xv, yv = validation
            self.check_labels(yv)
            val = (self._check_shape(as_images(xv)), np.searchsorted(self.classes_, np.asarray(yv).ravel()))
        dev = self.resolve_device()
        n, batch = len(x0), self.batch
        steps = self.epochs * ((n + batch - 1) // batch)
        self.history_: list[dict[str, Any]] = []
        with _seeded(torch, self.seed, dev):
            self.model_ = self._network(len(self.classes_), self.in_hw_).to(dev)
            opt, sched = self._optimizer(torch, self.model_.parameters(), steps)
            gen = torch.Generator().manual_seed(self.seed)
            yt = torch.from_numpy(codes.astype(np.int64)).to(dev)
            loss_fn = torch.nn.CrossEntropyLoss()
            best: int | None = None
            best_state: dict[str, Any] | None = None
            stale = 0
            bar = progress(range(self.epochs), desc=f"{self.name} epochs", unit="epoch")
            for epoch in bar:
                t0 = time.perf_counter()
                x = (random_similarity(x0, np.random.default_rng(self.seed * 100_003 + epoch)) if self.augment else x0)
                xt = torch.from_numpy(x).unsqueeze(1).to(dev)
                loss = self._train_epoch(torch, xt, yt, gen, opt, sched, loss_fn, epoch)
                rec: dict[str, Any] = {"epoch": epoch + 1, "loss": round(loss, 6),
                       "seconds": round(time.perf_counter() - t0, 3)}
                if val is not None:
                    # (the next epoch puts the model back in training mode)
                    err = int((self._logits(torch, val[0]).argmax(1) != val[1]).sum())
                    rec["val_errors"] = err
                    if best is None or err < best:
                        best, stale = err, 0
                        best_state = {k: v.detach().clone() for k, v in self.model_.state_dict().items()}
                        self.best_epoch_ = epoch + 1
                    else:
                        stale += 1
                self.history_.append(rec)
                bar.set_postfix({k: v for k, v in rec.items() if k in ("loss", "val_errors")})
                logger.info("%s epoch %d: %s", self.name, epoch + 1, rec)
                if val is not None and stale >= self.patience:
                    logger.info("%s: no better validation error for %d epochs, stopping "
                                "(best epoch %d)", self.name, stale, self.best_epoch_)
                    break
            if best_state is not None:
                self.model_.load_state_dict(best_state)
        self.model_.eval()
        self.n_train_ = int(n)
        return self

    def _train_epoch(self, torch: Any, xt: Any, yt: Any, gen: Any, opt: Any, sched: Any, loss_fn: Any,
                     epoch: int) -> float:
        self.model_.train()
        n, batch = len(xt), self.batch
        perm = torch.randperm(n, generator=gen).to(xt.device)
        total = torch.zeros((), dtype=torch.float64, device=xt.device)
        starts = range(0, n, batch)
        # the per-batch bar only shows on a terminal; its cost is one call per batch
        for s in progress(starts, desc=f"epoch {epoch + 1}", unit="batch", leave=False):
            i = perm[s:s + batch]
            xb, yb = xt[i], yt[i]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(self.model_(xb), yb)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            # accumulate on the device: no host sync per batch
            total += loss.detach() * len(i)
        return float(total) / n

    def _check_shape(self, x: np.ndarray) -> np.ndarray:
        if tuple(x.shape[1:]) != tuple(self.in_hw_):
            raise ConfigError(f"{self.name} model got images of another size",
                              expected=f"{self.in_hw_[0]} x {self.in_hw_[1]} images (as in training)",
                              found=f"{x.shape[1]} x {x.shape[2]}",
                              hint="resize the images or train a model on this size")
        return x

    def _logits(self, torch: Any, x: np.ndarray) -> np.ndarray:
        dev = next(self.model_.parameters()).device
        self.model_.eval()
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for s in range(0, len(x), PREDICT_BATCH):
                xb = torch.from_numpy(x[s:s + PREDICT_BATCH]).unsqueeze(1).to(dev)
                out.append(self.model_(xb).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.classes_)), np.float32)

    def decision_function(self, X: npt.ArrayLike) -> np.ndarray:
        """Network outputs (logits), ``N x n_classes``."""
        self._check_fitted()
        torch = require_torch()
        return self._logits(torch, self._check_shape(as_images(X)))

    def check_labels(self, labels: npt.ArrayLike) -> None:
        """Refuse test labels the model was not trained on (another dataset's classes)."""
        self._check_fitted()
        found = np.unique(np.asarray(labels).ravel())
        unknown = np.setdiff1d(found, self.classes_)
        if unknown.size:
            c = self.classes_
            raise ConfigError(
                f"test labels outside the {len(c)} classes the {self.name} model was trained on",
                expected=f"labels among {c.min()}..{c.max()} ({len(c)} classes)",
                found=f"{found.size} distinct labels, {unknown.size} unknown "
                      f"({', '.join(map(str, unknown[:8]))}{' ...' if unknown.size > 8 else ''})",
                hint="test on a set with the training set's classes, or train a model on this dataset")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``PATH.npz`` + ``PATH.json`` (see :func:`save_model`); returns the npz path."""
        return save_model(self, path)


def model_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(PATH.npz, PATH.json)`` for ``PATH``, ``PATH.npz`` or ``PATH.json``."""
    p = Path(path)
    if p.suffix in (".npz", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".npz"), p.with_name(p.name + ".json")


def save_model(clf: NeuralClassifier, path: str | os.PathLike[str]) -> Path:
    """Save a fitted neural classifier as ``PATH.npz`` (tensors) + ``PATH.json`` (config).

    Both files are written atomically; the JSON comes last and records the npz's sha256, so a pair left half-updated by
    a crash is detected on loading.
    """
    clf._check_fitted()
    torch = require_torch()
    weights, meta = model_paths(path)
    state = {k: v.detach().cpu().numpy() for k, v in clf.model_.state_dict().items()}
    with atomic_file(weights, "wb") as f:
        np.savez(f, **state)
    params = {f.name: getattr(clf, f.name) for f in dataclasses.fields(clf)}
    doc = {
        "format": MODEL_FORMAT, "version": MODEL_VERSION, "classifier": clf.name, "arch": clf.arch, "spec": clf.spec(),
        "params": params, "classes": clf.classes_.tolist(), "classes_dtype": clf.classes_.dtype.str,
        "input_shape": list(clf.in_hw_), "weights": weights.name, "weights_format": "npz",
        "weights_sha256": sha256_file(weights),
        "tensors": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in state.items()},
        "training": {"n_train": getattr(clf, "n_train_", None), "best_epoch": getattr(clf, "best_epoch_", None),
                     "history": getattr(clf, "history_", []), "torch_version": torch.__version__},
    }
    with atomic_file(meta, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    logger.info("saved %s model to %s (+ %s)", clf.name, weights, meta.name)
    return weights


def load_model(path: str | os.PathLike[str], device: str = "auto") -> NeuralClassifier:
    """Rebuild a classifier saved by :func:`save_model` (``PATH``, ``PATH.npz`` or ``PATH.json``).

    ``device`` overrides the device recorded at training time (a model trained on a GPU loads on a CPU-only machine).
    Raises IntegrityError when the npz is not the one the JSON describes and FormatError when the files do not describe
    a model of this package.
    """
    torch = require_torch()
    weights, meta = model_paths(path)
    for p in (meta, weights):
        if not p.is_file():
            raise MissingFileError("model file missing", path=p, expected="the .npz weights and the .json description "
                                   "side by side", hint="save with --save-model PATH or clf.save(PATH)")
    try:
        doc = json.loads(meta.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError("unreadable model description", path=meta, expected="JSON", found=str(e)) from e
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise FormatError("not a mnistforge model description", path=meta, expected=f'"format": "{MODEL_FORMAT}"',
                          found=doc.get("format") if isinstance(doc, dict) else type(doc).__name__)
    if doc.get("version") != MODEL_VERSION:
        raise FormatError("unsupported model file version", path=meta, expected=MODEL_VERSION, found=doc.get("version"),
                          hint="upgrade mnistforge")
    digest = sha256_file(weights)
    if digest != doc.get("weights_sha256"):
        raise IntegrityError("weights do not match their description", path=weights,
                             expected=f"sha256 {doc.get('weights_sha256')}", found=digest,
                             hint="save the model again; the pair was changed separately")
    with np.load(weights, allow_pickle=False) as z:
        state = {k: z[k] for k in z.files}
    if set(state) != set(doc.get("tensors", {})):
        raise FormatError("model tensors differ from their description", path=weights,
                          expected=sorted(doc.get("tensors", {})), found=sorted(state))
    # a neural spec (the model files of this package hold one; others fail at _network below)
    clf = cast(NeuralClassifier, make_classifier(doc["spec"], device=device))
    clf.classes_ = np.asarray(doc["classes"], dtype=np.dtype(doc["classes_dtype"]))
    clf.in_hw_ = tuple(int(v) for v in doc["input_shape"])
    clf.history_ = doc.get("training", {}).get("history", [])
    clf.n_train_ = doc.get("training", {}).get("n_train")
    if doc.get("training", {}).get("best_epoch") is not None:
        clf.best_epoch_ = doc["training"]["best_epoch"]
    model = clf._network(len(clf.classes_), clf.in_hw_)
    try:
        model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()}, strict=True)
    except RuntimeError as e:
        raise FormatError("weights do not fit the architecture", path=weights,
                          expected=f"the tensors of {doc['arch']}", found=str(e)[:300]) from e
    clf.model_ = model.to(clf.resolve_device()).eval()
    logger.info("loaded %s model from %s", clf.name, weights)
    return clf
