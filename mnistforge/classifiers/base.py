"""The small interface every reference classifier follows, and the spec parser.

A classifier is built from a short spec string such as ``"linear"``, ``"knn:k=3"`` or
``"elm:hidden=2000,seed=0"`` (:func:`make_classifier`), then used as::

    clf = make_classifier("knn:k=3").fit(train_images, train_labels)
    predicted = clf.predict(test_images)

Inputs are images (``N x 28 x 28``, any numeric type) or feature matrices (``N x D``);
labels are any integers.  Classifiers are deterministic given their ``seed``.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError

_C = TypeVar("_C", bound="Classifier")

# name -> "module:Class" (imported lazily: the torch models must not import torch early)
REGISTRY = {
    "linear": "linear:LinearClassifier", "elm": "elm:ELMClassifier", "knn": "knn:KNNClassifier",
    "lenet": "lenet:LeNet5Classifier", "lenet5": "lenet:LeNet5Classifier", "cnn": "cnn:SmallCNNClassifier",
}


@dataclass
class Classifier:
    """Base class: ``fit(X, y)``, ``predict(X)``, ``decision_function(X)``, ``seed``.

    Subclasses are dataclasses whose fields are the parameters a spec string can set;
    ``classes_`` holds the sorted distinct training labels after ``fit``.
    """

    seed: int = 0

    name = "base"

    def fit(self: _C, X: np.ndarray, y: npt.ArrayLike) -> _C:  # pragma: no cover - interface
        raise NotImplementedError

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Scores, ``N x n_classes`` (columns in the order of ``classes_``)."""
        raise NotImplementedError(f"{self.name} has no decision function")

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted labels (values from ``classes_``)."""
        labels: np.ndarray = self.classes_[np.argmax(self.decision_function(X), axis=1)]
        return labels

    def spec(self) -> str:
        """The spec string that rebuilds this classifier (all parameters)."""
        params = ",".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))
        return f"{self.name}:{params}" if params else self.name

    def short_spec(self) -> str:
        """The kind and only the parameters that differ from their defaults (the device left
        out): a name for tables, where :meth:`spec` is 160 characters for lenet.

        >>> make_classifier("lenet:epochs=3,device=cpu").short_spec(), make_classifier("knn").short_spec()
        ('lenet:epochs=3', 'knn')
        """
        params = ",".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                          if f.name != "device" and f.default is not dataclasses.MISSING
                          and getattr(self, f.name) != f.default)
        return f"{self.name}:{params}" if params else self.name

    def _encode_labels(self, y: npt.ArrayLike) -> np.ndarray:
        classes: np.ndarray
        codes: np.ndarray
        classes, codes = np.unique(np.asarray(y).ravel(), return_inverse=True)
        self.classes_ = classes
        return codes

    def _check_fitted(self) -> None:
        if not hasattr(self, "classes_"):
            raise ConfigError(f"{self.name} classifier is not fitted", expected="fit(X, y) before predict",
                              found="an unfitted classifier")


def as_features(X: npt.ArrayLike, dtype: npt.DTypeLike = np.float32, scale: float | None = None) -> np.ndarray:
    """Flatten images to ``N x D`` rows of ``dtype``; uint8 pixels are scaled to [0, 1].

    >>> as_features(np.full((2, 28, 28), 255, np.uint8)).max(), as_features(np.ones((2, 3))).shape
    (np.float32(1.0), (2, 3))
    """
    X = np.asarray(X)
    if X.ndim == 1:
        raise ConfigError("inputs have the wrong shape", expected="N x H x W images or N x D features",
                          found=f"shape {X.shape}")
    if scale is None:
        scale = 1.0 / 255.0 if X.dtype == np.uint8 else 1.0
    X = X.reshape(X.shape[0], -1)
    out: np.ndarray = X.astype(dtype, copy=True)
    if scale != 1.0:
        out *= out.dtype.type(scale)
    return out


def check_xy(X: npt.ArrayLike, y: npt.ArrayLike) -> np.ndarray:
    n = np.asarray(X).shape[0]
    y = np.asarray(y).ravel()
    if y.shape[0] != n:
        raise ConfigError("inputs and labels differ in length", expected=f"{n} labels", found=f"{y.shape[0]}")
    if n == 0:
        raise ConfigError("no training samples", expected="at least one", found=0)
    return y


def check_ridge(name: str, ridge: object) -> None:
    """A ridge penalty must be a finite number >= 0 (a negative one makes ``X^T X + ridge I``
    indefinite: the solve then fails, or quietly fits noise)."""
    if isinstance(ridge, bool) or not isinstance(ridge, (int, float, np.floating, np.integer)) \
            or not math.isfinite(float(ridge)) or ridge < 0:
        raise ConfigError(f"bad value for {name} parameter ridge", expected="a finite number >= 0", found=repr(ridge))


def one_hot(codes: np.ndarray, n_classes: int, dtype: npt.DTypeLike = np.float32) -> np.ndarray:
    out = np.zeros((codes.size, n_classes), dtype)
    out[np.arange(codes.size), codes] = 1
    return out


def _convert(value: str, default: object) -> Any:
    if isinstance(default, bool):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(value)
    if isinstance(default, int):
        return int(float(value)) if "e" in value.lower() else int(value)
    if isinstance(default, float):
        return float(value)
    if default is None:
        caster: Callable[[str], object]
        for caster in (int, float):
            try:
                return caster(value)
            except ValueError:
                pass
        return None if value.lower() == "none" else value
    return value


#: Ranges of spec values (checked when a spec string is parsed): any other number must be
#: finite and, when an integer, within 0..INT_MAX; ``hidden=1e7`` would need 31 GB of weights.
RANGES = {"seed": (0, 2**32 - 1), "hidden": (1, 65_536), "ridge": (0.0, None)}
INT_MAX = 10**6


def _check_range(name: str, key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    lo, hi = RANGES.get(key, (0, INT_MAX) if isinstance(value, int) else (None, None))
    bad = isinstance(value, float) and not math.isfinite(value)
    bad |= (lo is not None and value < lo) or (hi is not None and value > hi)
    if bad:
        rng = (f"in {lo}..{hi}" if hi is not None else f"a finite number >= {lo}") \
            if lo is not None else "a finite number"
        raise ConfigError(f"bad value for {name} parameter {key}", expected=rng, found=repr(value))


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"name:key=value,key=value"`` into the name and a dict of strings.

    >>> parse_spec("elm:hidden=2000,seed=0")
    ('elm', {'hidden': '2000', 'seed': '0'})
    """
    spec = spec.strip()
    name, _, rest = spec.partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError("malformed classifier parameter", expected="key=value (e.g. knn:k=3)", found=item)
        key = key.strip().replace("-", "_")
        if key in params:  # which one was meant? the last silently winning hides a typo
            raise ConfigError(f"classifier parameter {key} given twice", found=spec,
                              expected="each parameter at most once",
                              hint=f"keep one of {key}={params[key]} and {key}={value.strip()}")
        params[key] = value.strip()
    return name.strip().lower(), params


def make_classifier(spec: str, **overrides: Any) -> Classifier:
    """Build a classifier from a spec string; keyword overrides take precedence.

    >>> make_classifier("knn:k=3").k
    3
    >>> make_classifier("elm:hidden=200,activation=tanh,seed=1").spec()
    'elm:seed=1,hidden=200,activation=tanh,ridge=0.001,scale=1.0,solver=normal,block=4096'
    """
    name, params = parse_spec(spec)
    if name not in REGISTRY:
        raise ConfigError("unknown classifier", expected="one of " + ", ".join(sorted(REGISTRY)), found=name)
    mod, cls_name = REGISTRY[name].split(":")
    cls: type[Classifier] = getattr(importlib.import_module(f"mnistforge.classifiers.{mod}"), cls_name)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in params.items():
        if key not in fields:
            raise ConfigError(f"unknown parameter for {name}", expected="one of " + ", ".join(fields), found=key)
        f = fields[key]
        default = f.default if f.default is not dataclasses.MISSING else None
        try:
            kwargs[key] = _convert(value, default)
        except ValueError as e:
            raise ConfigError(f"bad value for {name} parameter {key}",
                              expected=f"a value like {default!r}", found=value) from e
        _check_range(name, key, kwargs[key])
    kwargs.update(overrides)
    return cls(**kwargs)


def short_name(spec: str, longer_than: int = 40) -> str:
    """A system name for tables: a long classifier spec shortened (:meth:`Classifier.short_spec`),
    anything else (a short spec, a name that is no spec) unchanged.

    >>> short_name(make_classifier("cnn:epochs=2").spec())
    'cnn:epochs=2'
    >>> short_name("my model"), short_name("knn:k=3")
    ('my model', 'knn:k=3')
    """
    if len(spec) <= longer_than:
        return spec
    try:
        return make_classifier(spec).short_spec()
    except Exception:  # not a spec of ours (a user's own name): kept as it is
        return spec
