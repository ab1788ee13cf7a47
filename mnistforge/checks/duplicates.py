"""Exact and near duplicates, within a split and across train/test.

Exact: images sharing a 64-bit digest are then compared byte for byte, so a hash collision can never produce a
false report.  Near: the exact blocked L2 radius search of :func:`mnistforge.io.similar.find_near_duplicates`,
whose pooled pre-filter cannot lose a true pair.  In full: ``docs/verify.md`` (duplicates: exact and near).

>>> a = np.zeros((3, 28, 28), np.uint8); a[1, 5, 5] = 9; a[2, 5, 5] = 9
>>> [g.tolist() for g in find_exact_duplicates(a)]
[[1, 2]]
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..io.similar import (DEFAULT_NEAR_L2 as DEFAULT_NEAR_L2, NearDuplicates, find_near_duplicates,  # noqa: F401
                          xorshift_image_digests, nearest_brute_force)
from .result import PASS, WARN, CheckResult, fail


def groups_by_value(keys: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the positions sharing each repeated key."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    if k.size < 2:
        return []
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    sizes = np.diff(np.r_[starts, k.size])
    return [order[s:s + n] for s, n in zip(starts[sizes > 1], sizes[sizes > 1])]


def find_exact_duplicates(images: npt.ArrayLike, digests: np.ndarray | None = None) -> list[np.ndarray]:
    """Groups (sorted index arrays) of byte-identical images within one array."""
    images = np.asarray(images)
    digests = xorshift_image_digests(images) if digests is None else digests
    groups = []
    for g in groups_by_value(digests):
        g = np.sort(g)
        # Split a digest group into byte-identical classes (guards collisions).
        flat = images[g].reshape(len(g), -1)
        _, inv = np.unique(flat, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        for c in np.unique(inv):
            members = g[inv == c]
            if members.size > 1:
                groups.append(members)
    groups.sort(key=lambda m: int(m[0]))
    return groups


def find_cross_duplicates(a: npt.ArrayLike, b: npt.ArrayLike, digests_a: np.ndarray | None = None,
                          digests_b: np.ndarray | None = None) -> np.ndarray:
    """Pairs ``(i, j)`` with ``a[i]`` byte-identical to ``b[j]``, as an ``M x 2`` array."""
    a, b = np.asarray(a), np.asarray(b)
    da = xorshift_image_digests(a) if digests_a is None else digests_a
    db = xorshift_image_digests(b) if digests_b is None else digests_b
    common = np.intersect1d(da, db)
    if common.size == 0:
        return np.zeros((0, 2), np.int64)
    ia = np.flatnonzero(np.isin(da, common))
    ib = np.flatnonzero(np.isin(db, common))
    pairs = []
    by_digest: dict[int, list[np.intp]] = {}
    for j in ib:
        by_digest.setdefault(int(db[j]), []).append(j)
    for i in ia:
        for j in by_digest.get(int(da[i]), ()):
            if np.array_equal(a[i], b[j]):
                pairs.append((i, j))
    return np.asarray(pairs, np.int64).reshape(-1, 2)


def check_exact_within(images: np.ndarray, split: str = "", *, digests: np.ndarray | None = None, max_examples: int = 8,
                       name: str | None = None) -> CheckResult:
    """Byte-identical images within one split: a warning with counts and examples."""
    name = name or f"duplicates.within[{split}]"
    groups = find_exact_duplicates(images, digests)
    redundant = int(sum(len(g) - 1 for g in groups))
    values = {"images": len(images), "groups": len(groups), "redundant": redundant,
              "examples": [g[:4].tolist() for g in groups[:max_examples]]}
    r = CheckResult(name, PASS, values, "no exact duplicates")
    if groups:
        r.status = WARN
        r.message = (f"{len(groups)} groups of identical images ({redundant} redundant), "
                     f"e.g. indices {groups[0][:4].tolist()}")
        r.artifacts["pairs"] = np.array([[g[0], g[1]] for g in groups[:max_examples]])
        r.artifacts["images"] = [(images[g[0]], images[g[1]], f"{split} {g[0]} = {g[1]}")
                                 for g in groups[:max_examples]]
    return r


def check_exact_across(train: np.ndarray, test: np.ndarray, *, digests_train: np.ndarray | None = None,
                       digests_test: np.ndarray | None = None,
                       max_examples: int = 8, name: str = "duplicates.train-test") -> CheckResult:
    """A test image byte-identical to a training image is leakage: a failure."""
    pairs = find_cross_duplicates(train, test, digests_train, digests_test)
    n_test = int(np.unique(pairs[:, 1]).size)
    values = {"pairs": len(pairs), "test_images": n_test, "examples": pairs[:max_examples].tolist()}
    if len(pairs):
        r = fail(name, values, f"{n_test} test images also appear in train "
                               f"(e.g. train {pairs[0, 0]} = test {pairs[0, 1]})")
        r.artifacts["pairs"] = pairs[:max_examples]
        r.artifacts["images"] = [(train[i], test[j], f"train {i} = test {j}") for i, j in pairs[:max_examples]]
        return r
    return CheckResult(name, PASS, values, "no test image appears in train")


def check_near_across(train: np.ndarray, test: np.ndarray, threshold: float = DEFAULT_NEAR_L2, *,
                      max_examples: int = 8, name: str = "duplicates.near") -> CheckResult:
    """Test images within ``threshold`` (L2) of a training image: a warning with counts."""
    nd = find_near_duplicates(test, train, threshold)
    exact = nd.l2 == 0
    near_only = np.unique(nd.pairs[~exact, 0])
    order = np.argsort(np.where(exact, np.inf, nd.l2), kind="stable")
    ex: list[list[Any]] = [[int(nd.pairs[k, 1]), int(nd.pairs[k, 0]), round(float(nd.l2[k]), 2)]
                          for k in order[:max_examples] if not exact[k]]
    values = {"threshold_l2": threshold, "pairs": len(nd), "test_images": int(nd.queries.size),
              "test_images_near_not_exact": int(near_only.size), "candidates_after_prefilter": nd.candidates,
              "examples_train_test_l2": ex}
    if near_only.size:
        r = CheckResult(name, WARN, values,
                        f"{near_only.size} test images within L2 {threshold:g} of a train image "
                        f"(not identical; closest L2 {ex[0][2]})")
        r.artifacts["pairs"] = np.array([[e[0], e[1]] for e in ex], np.int64).reshape(-1, 2)
        r.artifacts["images"] = [(train[e[0]], test[e[1]], f"train {e[0]} ~ test {e[1]} "
                                  f"(L2 {e[2]:g})") for e in ex]
        return r
    return CheckResult(name, PASS, values,
                       f"no test image within L2 {threshold:g} of a train image"
                       + (" (besides exact copies)" if len(nd) else ""))
