"""Benchmark: k-NN and ELM fitting against naive NumPy (and scikit-learn when installed).

* k-NN, ``--test`` x ``--train`` (default 10,000 x 60,000, 784-D, random uint8 images):
  our blocked float32 product + exact re-rank vs a naive NumPy version (per test row, full
  float64 distance vector and argsort), timed on ``--naive-rows`` (50) rows and extrapolated;
  and ``sklearn.neighbors.KNeighborsClassifier(algorithm="brute")`` when scikit-learn is
  installed (the ``bench`` extra).
* ELM fit, ``--elm-n`` (10,000) samples x ``--hidden`` (1,500) units: blocked normal equations (float64
  ``dsyrk`` accumulation) vs naive NumPy (whole float64 hidden matrix, then
  ``numpy.linalg.lstsq``), and vs the OPIUM streaming solver.
* lenet / cnn (when torch is installed), ``--nn-n`` (10,000) images: one epoch of our
  training loop (``clf.fit``, everything included) vs a plain PyTorch loop on the same
  network, optimiser, schedule, batches and data (target: ours >= 0.9x its speed), and
  inference throughput (``decision_function`` vs plain batched ``model(x)``). Real
  Fashion-MNIST images when Debian's package is installed, random ones otherwise. Best of
  ``--repeats`` alternating runs; the load average is printed with each ratio.

Ratios are printed. ``--quick`` shrinks everything for a smoke run; ``--only nn`` runs the
neural part alone.

    python benchmarks/bench_classifiers.py [--quick] [--train 60000 --test 10000] [--only nn]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from mnistforge.classifiers.elm import ELMClassifier
from mnistforge.classifiers.knn import KNNClassifier


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def naive_knn(Xtr, ytr, Xte, k):
    A = Xtr.reshape(len(Xtr), -1).astype(np.float64) / 255
    out = np.empty(len(Xte), ytr.dtype)
    for i, x in enumerate(Xte.reshape(len(Xte), -1).astype(np.float64) / 255):
        d = ((A - x) ** 2).sum(axis=1)
        nn = np.argsort(d, kind="stable")[:k]
        votes = np.bincount(ytr[nn])
        tied = np.flatnonzero(votes == votes.max())
        out[i] = next(lab for lab in ytr[nn] if lab in tied)  # same tie rule: nearest
    return out


def naive_elm_fit(clf, X, y):
    H = clf._design(X).astype(np.float64)
    Y = (y[:, None] == np.unique(y)).astype(np.float64)
    m = H.shape[1]
    A = np.vstack([H, np.sqrt(clf.ridge) * np.eye(m)])
    return np.linalg.lstsq(A, np.vstack([Y, np.zeros((m, Y.shape[1]))]), rcond=None)[0]


def _load_avg() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + \
        f" on {os.cpu_count()} CPUs"


def _nn_data(n):
    fashion = Path("/usr/share/datasets/fashion-mnist")
    if (fashion / "train-images-idx3-ubyte.gz").is_file():
        import mnistforge
        ds = mnistforge.load("fashion-mnist", "train", root=fashion)
        return np.asarray(ds.images)[:n], np.asarray(ds.labels)[:n], "Fashion-MNIST"
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n),
            "random images")


def plain_torch_epoch(clf, X, y):
    """The textbook loop: same network, optimiser, schedule and batch order as ``clf``."""
    import torch

    torch.manual_seed(clf.seed)
    model = clf._network(10, X.shape[1:])
    opt, sched = clf._optimizer(torch, model.parameters(), (len(X) + clf.batch - 1) // clf.batch)
    xt = torch.from_numpy(X.astype(np.float32) / 255).unsqueeze(1)
    yt = torch.from_numpy(y.astype(np.int64))
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(clf.seed))
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for s in range(0, len(X), clf.batch):
        i = perm[s:s + clf.batch]
        opt.zero_grad()
        loss = loss_fn(model(xt[i]), yt[i])
        loss.backward()
        opt.step()
        sched.step()
    return model


def plain_torch_predict(model, X, batch=1024):
    import torch

    out = []
    model.eval()
    with torch.no_grad():
        for s in range(0, len(X), batch):
            xb = torch.from_numpy(X[s:s + batch].astype(np.float32) / 255).unsqueeze(1)
            out.append(model(xb).numpy())
    return np.concatenate(out)


def bench_neural(n, repeats):
    try:
        import torch
    except ImportError:
        print("torch not installed: skipping lenet/cnn (pip install 'mnistforge[torch]')")
        return
    from mnistforge.classifiers.base import make_classifier

    X, y, what = _nn_data(n)
    print(f"\n== lenet / cnn, one training epoch on {len(X)} {what} images, CPU, "
          f"{torch.get_num_threads()} torch threads, best of {repeats}")
    for name in ("lenet", "cnn"):
        clf = make_classifier(f"{name}:epochs=1,device=cpu")
        t_ours, t_plain = [], []
        for _ in range(repeats):  # alternate, so a load spike hits both sides alike
            fitted, t = timed(make_classifier(f"{name}:epochs=1,device=cpu").fit, X, y)
            t_ours.append(t)
            model, t = timed(plain_torch_epoch, clf, X, y)
            t_plain.append(t)
        same = np.array_equal(fitted.predict(X[:2000]),
                              plain_torch_predict(model, X[:2000]).argmax(1))
        print(f"{name:5s} train epoch: ours {min(t_ours):7.2f} s, plain PyTorch "
              f"{min(t_plain):7.2f} s -> ours at {min(t_plain) / min(t_ours):.2f}x its speed "
              f"(same predictions: {same}; {_load_avg()})")
        p_ours, p_plain = [], []
        for _ in range(repeats):
            p_ours.append(timed(fitted.decision_function, X)[1])
            p_plain.append(timed(plain_torch_predict, model, X)[1])
        print(f"{name:5s} inference: ours {len(X) / min(p_ours):9.0f} images/s, plain "
              f"{len(X) / min(p_plain):9.0f} images/s -> {min(p_plain) / min(p_ours):.2f}x "
              f"({_load_avg()})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=60_000)
    ap.add_argument("--test", type=int, default=10_000)
    ap.add_argument("--naive-rows", type=int, default=50)
    ap.add_argument("--elm-n", type=int, default=10_000)
    ap.add_argument("--hidden", type=int, default=1_500)
    ap.add_argument("--nn-n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("knn-elm", "nn"), default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.train, args.test, args.naive_rows, args.elm_n, args.hidden = 5000, 1000, 50, 3000, 300
        args.nn_n, args.repeats = 2000, 2
    if args.only != "nn":
        bench_knn_elm(args)
    if args.only != "knn-elm":
        bench_neural(args.nn_n, args.repeats)


def bench_knn_elm(args):
    """k-NN against naive NumPy and scikit-learn; the ELM solvers against lstsq."""
    rng = np.random.default_rng(0)
    # smooth-ish random "images" so neighbours are not all equidistant
    Xtr = rng.integers(0, 256, (args.train, 28, 28), dtype=np.uint8)
    ytr = rng.integers(0, 10, args.train)
    Xte = rng.integers(0, 256, (args.test, 28, 28), dtype=np.uint8)

    print(f"== k-NN (k=3), {args.test} test x {args.train} training images")
    clf = KNNClassifier(k=3).fit(Xtr, ytr)
    ours, t_ours = timed(clf.predict, Xte)
    print(f"mnistforge blocked k-NN:     {t_ours:8.2f} s")
    sub = Xte[:args.naive_rows]
    naive, t_naive = timed(naive_knn, Xtr, ytr, sub, 3)
    t_naive_full = t_naive * args.test / len(sub)
    agree = float((naive == ours[:len(sub)]).mean())
    print(f"naive NumPy, {len(sub)} rows:      {t_naive:8.2f} s -> {t_naive_full:.1f} s "
          f"extrapolated (agreement {agree:.3f})")
    print(f"ratio naive/ours: {t_naive_full / t_ours:.1f}x; {_load_avg()}")
    try:
        from sklearn.neighbors import KNeighborsClassifier
    except ImportError:
        print("scikit-learn not installed: skipping its brute-force k-NN (pip install "
              "'mnistforge[bench]')")
    else:
        sk = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(
            Xtr.reshape(len(Xtr), -1).astype(np.float32) / 255, ytr)
        skp, t_sk = timed(sk.predict, Xte.reshape(len(Xte), -1).astype(np.float32) / 255)
        # random labels make vote ties common: scikit-learn gives them to the lowest label
        low = KNNClassifier(k=3, tie="lowest").fit(Xtr, ytr).predict(Xte)
        print(f"scikit-learn brute k-NN:     {t_sk:8.2f} s (agreement with tie=lowest "
              f"{(skp == low).mean():.3f}, with the default tie=nearest "
              f"{(skp == ours).mean():.3f})")
        print(f"ratio sklearn/ours: {t_sk / t_ours:.2f}x; {_load_avg()}")

    print(f"\n== ELM fit, {args.elm_n} samples x {args.hidden} hidden units")
    X = Xtr[:args.elm_n]
    y = ytr[:args.elm_n]
    normal, t_normal = timed(ELMClassifier(hidden=args.hidden, seed=0).fit, X, y)
    print(f"blocked normal equations:    {t_normal:8.2f} s")
    W, t_lstsq = timed(naive_elm_fit, normal, X, y)
    H = normal._design(X[:2000]).astype(np.float64)
    agree = float(((H @ W).argmax(1) == normal.predict(X[:2000])).mean())
    print(f"naive NumPy lstsq (float64): {t_lstsq:8.2f} s (max |dW| "
          f"{np.abs(W - normal.coef_).max():.1e}, prediction agreement {agree:.4f})")
    print(f"ratio naive/ours: {t_lstsq / t_normal:.1f}x")
    n_op = min(len(X), 5000)
    _, t_op = timed(ELMClassifier(hidden=args.hidden, seed=0, solver="opium", block=512).fit,
                    X[:n_op], y[:n_op])
    print(f"OPIUM streaming, {n_op} samples: {t_op:8.2f} s -> "
          f"{t_op * len(X) / n_op:.1f} s extrapolated; ratio OPIUM/normal "
          f"{t_op * len(X) / n_op / t_normal:.1f}x")


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    main()
