"""Benchmark: bootstrap POI from the four joint-outcome counts vs resampling index vectors.

POI with B = 100,000 resamples on an n = 60,000 test set.  The count-based draw is
timed at full B; the index-resampling reference (O(B*n)) at a smaller B (``--ref-b``,
default 2,000) and extrapolated linearly, since it is linear in B; pass
``--ref-b 100000`` to time it in full (minutes).  Prints both times and the ratio.

    python benchmarks/bench_significance.py [--n 60000] [--b 100000] [--ref-b 2000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mnistforge.evaluators.significance import (probability_of_improvement,
                                                 probability_of_improvement_resampled)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60_000)
    ap.add_argument("--b", type=int, default=100_000)
    ap.add_argument("--ref-b", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    n = args.n
    a = rng.random(n) < 0.012
    b = (a & (rng.random(n) < 0.5)) | (rng.random(n) < 0.0062)  # close to A, correlated

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        fast = probability_of_improvement(a, b, args.b, seed=1)
        times.append(time.perf_counter() - t0)
    t_fast = min(times)

    t0 = time.perf_counter()
    ref = probability_of_improvement_resampled(a, b, args.ref_b, seed=1)
    t_ref = time.perf_counter() - t0
    t_ref_full = t_ref * args.b / args.ref_b

    print(f"n = {n}, errors A = {a.sum()}, errors B = {b.sum()}")
    print(f"count-based multinomial, B = {args.b}: {t_fast:.4f} s  (POI {fast.poi:.4f})")
    print(f"index resampling,        B = {args.ref_b}: {t_ref:.3f} s  (POI {ref.poi:.4f}); "
          f"extrapolated to B = {args.b}: {t_ref_full:.1f} s")
    print(f"ratio index/count at equal B: {t_ref_full / t_fast:,.0f}x")


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    main()
