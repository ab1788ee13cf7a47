"""Extreme learning machine with the OPIUM recursive pseudo-inverse update.

Fixed random input weights map an input to ``hidden`` units with a nonlinearity; only the output weights are learned, by
(ridge) least squares on one-hot targets: the baseline family of the EMNIST paper.  Two solvers reach the same ridge
solution: ``solver="normal"`` (blocked normal equations, one Cholesky solve; memory ``O(hidden^2)``) and
``solver="opium"`` (the recursive update of Tapson & van Schaik 2013, streaming: :meth:`ELMClassifier.partial_fit`).
The solvers, their memory and the input weights' scaling: ``docs/classifiers.md``, implementation notes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import linalg

from ..errors import ConfigError
from ..progress import progress
from .base import Classifier, as_features, check_ridge, check_xy, one_hot
from .linear import accumulate_normal_equations, solve_ridge

CALIBRATION_ROWS = 2048
ACTIVATIONS = ("sigmoid", "tanh", "relu")


def _activate(z: np.ndarray, kind: str) -> np.ndarray:
    if kind == "sigmoid":
        # 1 / (1 + exp(-z)) in place, stable for large |z| in float32
        np.negative(z, out=z)
        np.exp(np.clip(z, -80, 80, out=z), out=z)
        z += 1
        np.reciprocal(z, out=z)
        return z
    if kind == "tanh":
        t: np.ndarray = np.tanh(z, out=z)
        return t
    if kind == "relu":
        r: np.ndarray = np.maximum(z, 0, out=z)
        return r
    raise ConfigError("unknown ELM activation", expected=" or ".join(ACTIVATIONS), found=kind)


@dataclass
class ELMClassifier(Classifier):
    """ELM: random hidden layer + least-squares output layer (normal equations or OPIUM).

    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 5)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = ELMClassifier(hidden=200, seed=0).fit(X, y)
    >>> bool((clf.predict(X) == y).mean() > 0.9)
    True
    """

    hidden: int = 1000            #: hidden units ``M``
    activation: str = "sigmoid"   #: sigmoid, tanh or relu
    ridge: float = 1e-3           #: ridge penalty on the output weights (``P = I / ridge`` for OPIUM)
    scale: float = 1.0            #: standard deviation of the hidden pre-activations after standardisation
    solver: str = "normal"        #: normal (equations) or opium
    block: int = 4096             #: rows per block (both solvers); 1: the per-sample OPIUM update
    dtype: str = "float32"        #: of the hidden activations (the normal equations and OPIUM's P: float64)

    name = "elm"

    def __post_init__(self) -> None:
        if self.hidden < 1:
            raise ConfigError("invalid ELM hidden size", expected="hidden >= 1", found=self.hidden)
        if self.activation not in ACTIVATIONS:
            raise ConfigError("unknown ELM activation", expected=" or ".join(ACTIVATIONS), found=self.activation)
        if self.solver not in ("normal", "opium"):
            raise ConfigError("unknown ELM solver", expected="normal or opium", found=self.solver)
        if self.dtype not in ("float32", "float64"):
            raise ConfigError("unknown ELM dtype", expected="float32 or float64", found=self.dtype)
        check_ridge(self.name, self.ridge)
        if self.ridge <= 0 and self.solver == "opium":
            raise ConfigError("OPIUM needs a positive ridge", expected="ridge > 0 (P = I/ridge)", found=self.ridge)
        if self.block < 1:
            raise ConfigError("invalid block size", expected="block >= 1", found=self.block)

    def spec(self) -> str:
        s = super().spec()
        return s.replace(",dtype=float32", "")  # the default, kept out of the short form

    def _init_weights(self, X: np.ndarray) -> None:
        dt = np.dtype(self.dtype)
        calib = as_features(X[:CALIBRATION_ROWS], dt)
        d = calib.shape[1]
        rng = np.random.default_rng(self.seed)
        W = rng.standard_normal((d, self.hidden)).astype(dt) / dt.type(np.sqrt(d))
        b = rng.standard_normal(self.hidden).astype(dt)
        z = calib @ W + b
        mu, sd = z.mean(axis=0), z.std(axis=0)
        sd = np.where(sd > 1e-12, sd, 1.0).astype(dt)
        # standardised pre-activations, then a random offset per unit: without it every
        # tanh unit would be an odd function of centred data (no even features like XOR)
        offset = rng.standard_normal(self.hidden).astype(dt)
        self.input_weights_ = W * (dt.type(self.scale) / sd)
        self.input_bias_ = (dt.type(self.scale) * ((b - mu) / sd + offset)).astype(dt)

    def hidden_activations(self, X: npt.ArrayLike) -> np.ndarray:
        """Hidden layer outputs ``N x hidden`` (in ``dtype``) for inputs ``X``."""
        z = as_features(X, np.dtype(self.dtype)) @ self.input_weights_
        z += self.input_bias_
        return _activate(z, self.activation)

    def _design(self, X: npt.ArrayLike) -> np.ndarray:
        H = self.hidden_activations(X)
        return np.hstack([H, np.ones((H.shape[0], 1), H.dtype)])

    def fit(self, X: np.ndarray, y: npt.ArrayLike) -> ELMClassifier:
        y = check_xy(X, y)
        codes = self._encode_labels(y)
        self._init_weights(X)
        Y = one_hot(codes, len(self.classes_), np.float64)
        if self.solver == "normal":
            A, C = accumulate_normal_equations(X, Y, self.block, bias=False, transform=self._design,
                                               desc=f"ELM {self.hidden} normal equations")
            del Y
            self.coef_ = solve_ridge(A, C, self.ridge, overwrite=self.ridge > 0).astype(self.dtype)
        else:
            self._opium_start()
            self._opium_update(X, Y)
            self.coef_ = self.W_.astype(self.dtype)
            del self.P_, self.W_
        return self

    def partial_fit(self, X: np.ndarray, y: npt.ArrayLike, classes: npt.ArrayLike | None = None) -> ELMClassifier:
        """Stream a chunk of training data through OPIUM (any number of calls).

        The first call fixes the input weights (from its first rows) and needs ``classes``, the full list of labels.
        Equivalent to :meth:`fit` with ``solver="opium"`` on the concatenated chunks.
        """
        y = check_xy(X, y)
        if not hasattr(self, "P_"):
            if classes is None:
                raise ConfigError("partial_fit needs the classes on its first call",
                                  expected="classes=[...]", found="None")
            self.classes_ = np.unique(np.asarray(classes))
            self._init_weights(X)
            self._opium_start()
        codes = np.searchsorted(self.classes_, y)
        if np.any(codes >= len(self.classes_)) or np.any(self.classes_[np.minimum(codes, len(self.classes_) - 1)] != y):
            raise ConfigError("label not among the declared classes",
                              expected=str(self.classes_.tolist()), found=str(np.unique(y)))
        self._opium_update(X, one_hot(codes, len(self.classes_), np.float64))
        self.coef_ = self.W_.astype(self.dtype)
        return self

    def _opium_start(self) -> None:
        m = self.hidden + 1
        self.P_ = np.eye(m) / self.ridge
        self.W_ = np.zeros((m, len(self.classes_)))

    def _opium_update(self, X: np.ndarray, Y: np.ndarray) -> None:
        P, W = self.P_, self.W_
        n = X.shape[0]
        for s in progress(range(0, n, self.block), desc=f"ELM {self.hidden} OPIUM", unit="block"):
            Hb = self._design(X[s:s + self.block]).astype(np.float64)
            Yb = Y[s:s + self.block]
            if Hb.shape[0] == 1:  # the per-sample OPIUM update, as published
                x = Hb[0]
                psi = P @ x
                nu = 1.0 + x @ psi
                e = Yb[0] - x @ W
                P -= np.outer(psi, psi) / nu
                W += np.outer(psi, e) / nu
                continue
            PHt = P @ Hb.T                              # M x b
            S = Hb @ PHt
            S[np.diag_indices_from(S)] += 1.0           # I + H P H^T
            K = linalg.solve(S, PHt.T, assume_a="pos", check_finite=False).T  # M x b
            W += K @ (Yb - Hb @ W)
            P -= K @ PHt.T
            P += P.T                                    # keep P symmetric against drift
            P *= 0.5
        self.P_, self.W_ = P, W

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        self._check_fitted()
        n = np.asarray(X).shape[0]
        out = np.empty((n, len(self.classes_)), self.dtype)
        for s in range(0, n, self.block):
            out[s:s + self.block] = self._design(X[s:s + self.block]) @ self.coef_
        return out
