"""Benchmark: render the results card of a 10,000-row test set (numbers, pictures, HTML).

A test set of random 28x28 images under MNIST's test registry entry, predictions wrong on
about 9 % of rows, compared with the Keysers (2006) systems (B = 10,000 bootstrap
resamples); the gallery shows the first ``--gallery`` errors (default 200; 0 = all).
Prints the time of each stage and the total.

    python benchmarks/bench_card.py [--gallery 200] [--bootstrap 10000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mnistforge.evaluators.card import build_card
from mnistforge.evaluators.card_html import pictures, render_html, render_markdown
from mnistforge.evaluators.errorlists import SystemOutput
from mnistforge.loaders.split import DatasetSplit
from mnistforge.registry import get_dataset


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--gallery", type=int, default=200)
    ap.add_argument("--bootstrap", type=int, default=10_000)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (args.n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, args.n)
    pred = np.where(rng.random(args.n) < 0.09, (labels + 1) % 10, labels)
    ds = DatasetSplit("mnist", "test", images, labels, get_dataset("mnist"), source="benchmark")
    system = SystemOutput("bench", pred != labels, "", pred, labels, "benchmark")
    gallery = args.gallery or args.n
    t0 = time.perf_counter()
    card = build_card(system, ds, resamples=args.bootstrap, gallery_limit=gallery)
    t1 = time.perf_counter()
    pics, missing = pictures(card, images)
    t2 = time.perf_counter()
    page = render_html(card, pics, missing)
    md = render_markdown(card, pics, missing)
    t3 = time.perf_counter()
    print(f"{args.n} rows, {card.rate.errors} errors, gallery {len(card.gallery)}, "
          f"B={args.bootstrap}: numbers {t1 - t0:.2f} s, pictures {t2 - t1:.2f} s, "
          f"HTML+Markdown {t3 - t2:.2f} s ({len(page) / 1e6:.1f} MB, {len(md) / 1e6:.1f} MB); "
          f"total {t3 - t0:.2f} s")


if __name__ == "__main__":
    main()
