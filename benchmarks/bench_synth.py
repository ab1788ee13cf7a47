"""Synthetic SD19: what the two speed choices of mnistforge.sd19.synth/glyphs buy.

1. Rasterising pen strokes: Pillow ``ImageDraw.line`` + joint disks (ours) against a
   vectorised NumPy distance-to-segment raster of the same strokes.
2. Writing zip members: our stored-zip writer against ``zipfile.ZipFile.writestr``.
3. End to end: characters per second of ``synthesize_sd19`` (one process and all cores).

Prints the ratios.  Usage: ``python benchmarks/bench_synth.py [--n 400]``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from mnistforge.sd19 import glyphs
from mnistforge.sd19.synth import SynthConfig, synthesize_sd19
from mnistforge.sd19.synth.write import _StoredZip


def geometry_for(n, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.choice(np.frombuffer(b"0123456789ABCDEFabcdef", np.uint8), n)
    style = glyphs.draw_writer_style(rng)
    none = np.zeros(n, bool)
    return glyphs._geometry(codes.tolist(), style, rng, none, none)


def raster_pillow(batch):
    out = np.zeros((len(batch.pens), 128, 128), bool)
    glyphs._draw_batch(batch, out, np.zeros(len(batch.pens), bool), None)
    return out


_YY, _XX = np.mgrid[0:128, 0:128].astype(np.float32)


def raster_numpy(strokes, pen):
    px, py = _XX.reshape(-1, 1), _YY.reshape(-1, 1)
    best = np.full(px.shape[0], np.inf, np.float32)
    for s in strokes:
        s = s.astype(np.float32)
        p0 = s[:-1] if len(s) > 1 else s
        p1 = s[1:] if len(s) > 1 else s
        d = p1 - p0
        length = (d ** 2).sum(1) + 1e-9
        t = np.clip(((px - p0[:, 0]) * d[:, 0] + (py - p0[:, 1]) * d[:, 1]) / length, 0, 1)
        dx = px - (p0[:, 0] + t * d[:, 0])
        dy = py - (p0[:, 1] + t * d[:, 1])
        best = np.minimum(best, (dx * dx + dy * dy).min(1))
    return (best <= (pen / 2) ** 2).reshape(128, 128)


def timeit(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400, help="characters for the raster comparison")
    ap.add_argument("--members", type=int, default=20000, help="zip members")
    ap.add_argument("--scale", type=float, default=0.005, help="end-to-end synthesis scale")
    a = ap.parse_args()

    batch = geometry_for(a.n)
    tp, ip = timeit(raster_pillow, batch)
    k = max(20, a.n // 10)   # the NumPy raster is slow: time a tenth and scale
    tn, im = timeit(lambda: [raster_numpy(batch.strokes(i), batch.pens[i]) for i in range(k)])
    tn *= a.n / k
    agree = np.mean([(x == y).mean() for x, y in zip(ip[:k], im)])
    print(f"raster  pillow {tp / a.n * 1e3:.3f} ms/char   numpy {tn / a.n * 1e3:.3f} ms/char   "
          f"ratio {tn / tp:.0f}x   (pixel agreement {agree:.4f})")

    data = os.urandom(300)
    with tempfile.TemporaryDirectory() as d:
        def own():
            with _StoredZip(Path(d) / "a.zip") as z:
                for i in range(a.members):
                    z.add(f"x/{i:06d}.png", data)

        def ref():
            with zipfile.ZipFile(Path(d) / "b.zip", "w", zipfile.ZIP_STORED) as z:
                for i in range(a.members):
                    z.writestr(zipfile.ZipInfo(f"x/{i:06d}.png", (1980, 1, 1, 0, 0, 0)), data)

        to, _ = timeit(own)
        tr, _ = timeit(ref)
        print(f"zip     ours {to / a.members * 1e6:.1f} us/member   zipfile.writestr "
              f"{tr / a.members * 1e6:.1f} us/member   ratio {tr / to:.1f}x")

        for workers in (1, None):
            cfg = SynthConfig(scale=a.scale, seed=1, workers=workers)
            t, out = timeit(synthesize_sd19, Path(d) / f"s{workers}", cfg, False)
            import json
            n = json.loads((out / "synthetic-sd19.json").read_text())["characters"]
            print(f"synth   scale {a.scale}: {n} characters, 4 zips, workers={workers or os.cpu_count()}: "
                  f"{t:.1f} s = {n / t:.0f} characters/s "
                  f"(full scale extrapolated: {814255 / (n / t) / 60:.0f} min)")


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    main()
