"""k-nearest neighbours (Euclidean) with blocked matrix products and a k sweep in one pass.

Squared distances are ``|t|^2 - 2 x.t`` (the test row's own norm does not change the
ranking) computed as one float32 matrix product per block of test rows, so the
threaded BLAS uses every core; blocks are sized so a block's distance matrix stays
under ``memory_mb``.  The ``max(ks)`` nearest neighbours of each test row are kept,
ordered by (distance, training index), and every ``k`` of a sweep votes from that one
list (:meth:`KNNClassifier.predict_sweep`).

Vote ties go to the tied class whose member is nearest (equivalently: drop the
farthest neighbours until the tie breaks).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .base import Classifier, as_features, check_xy

logger = logging.getLogger(__name__)


def vote(neighbour_codes: np.ndarray, k: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Plurality vote of the first ``k`` neighbours (nearest first) of each row.

    Returns ``(winning class codes, vote counts N x n_classes)``; ties go to the tied
    class appearing first in the neighbour list.
    """
    nb = neighbour_codes[:, :k]
    n = nb.shape[0]
    counts = np.zeros((n, n_classes), np.int32)
    rows = np.arange(n)
    for j in range(k):
        counts[rows, nb[:, j]] += 1
    if k == 1:
        return nb[:, 0].copy(), counts
    top = counts == counts.max(axis=1, keepdims=True)
    chosen = np.full(n, -1, np.int64)
    for j in range(k):
        pick = (chosen < 0) & top[rows, nb[:, j]]
        chosen[pick] = nb[pick, j]
    return chosen, counts


@dataclass
class KNNClassifier(Classifier):
    """Euclidean k-NN; ``predict_sweep`` gives every k of a list from one distance pass.

    Parameters
    ----------
    k : int
        Neighbours for :meth:`predict`.
    memory_mb : int
        Bound on the distance block (test rows x training rows x 4 bytes).

    Examples
    --------
    >>> X = np.array([[0., 0.], [0., 1.], [5., 5.], [5., 6.]]); y = [0, 0, 1, 1]
    >>> KNNClassifier(k=1).fit(X, y).predict([[0.2, 0.1], [5.1, 5.4]]).tolist()
    [0, 1]
    """

    k: int = 1
    memory_mb: int = 256

    name = "knn"

    def __post_init__(self):
        if self.k < 1:
            raise ConfigError("invalid k", expected="k >= 1", found=self.k)

    def fit(self, X, y):
        y = check_xy(X, y)
        self.codes_ = self._encode_labels(y)
        self.train_ = as_features(X)
        self.train_sqnorm_ = np.einsum("ij,ij->i", self.train_, self.train_)
        return self

    def kneighbors(self, X, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Indices and squared distances of the ``k`` nearest training rows, nearest first."""
        self._check_fitted()
        k = self.k if k is None else int(k)
        n_train = self.train_.shape[0]
        if not 1 <= k <= n_train:
            raise ConfigError("invalid k", expected=f"1 <= k <= {n_train} (training size)",
                              found=k)
        Q = as_features(X)
        if Q.shape[1] != self.train_.shape[1]:
            raise ConfigError("test inputs differ in size from training inputs",
                              expected=f"{self.train_.shape[1]} features",
                              found=f"{Q.shape[1]}")
        n = Q.shape[0]
        rows_per_block = max(1, (self.memory_mb << 20) // (4 * n_train))
        idx = np.empty((n, k), np.int64)
        dist = np.empty((n, k), np.float32)
        from ..progress import progress

        for s in progress(range(0, n, rows_per_block), desc="k-NN", unit="block"):
            q = Q[s:s + rows_per_block]
            d = q @ self.train_.T          # the one big product; BLAS threads it
            d *= -2
            d += self.train_sqnorm_
            if k < n_train:
                part = np.argpartition(d, k - 1, axis=1)[:, :k]
            else:
                part = np.broadcast_to(np.arange(n_train), d.shape).copy()
            pd = np.take_along_axis(d, part, axis=1)
            order = np.lexsort((part, pd), axis=1)  # distance, then index: deterministic
            idx[s:s + len(q)] = np.take_along_axis(part, order, axis=1)
            qn = np.einsum("ij,ij->i", q, q)[:, None]
            dist[s:s + len(q)] = np.maximum(np.take_along_axis(pd, order, axis=1) + qn, 0)
        return idx, dist

    def predict_sweep(self, X, ks) -> dict[int, np.ndarray]:
        """Predictions for every ``k`` in ``ks`` from one distance pass.

        Examples
        --------
        >>> X = np.array([[0.], [1.], [2.], [10.]]); y = [0, 0, 1, 1]
        >>> clf = KNNClassifier().fit(X, y)
        >>> {k: p.tolist() for k, p in clf.predict_sweep([[2.2]], [1, 3]).items()}
        {1: [1], 3: [0]}
        """
        ks = sorted({int(k) for k in ks})
        if not ks or ks[0] < 1:
            raise ConfigError("invalid k sweep", expected="positive integers", found=ks)
        idx, _ = self.kneighbors(X, ks[-1])
        codes = self.codes_[idx]
        return {k: self.classes_[vote(codes, k, len(self.classes_))[0]] for k in ks}

    def predict(self, X) -> np.ndarray:
        return self.predict_sweep(X, [self.k])[self.k]

    def decision_function(self, X) -> np.ndarray:
        """Vote fractions ``N x n_classes`` among the ``k`` nearest neighbours."""
        idx, _ = self.kneighbors(X, self.k)
        _, counts = vote(self.codes_[idx], self.k, len(self.classes_))
        return counts / np.float32(self.k)
