"""Time ``build femnist`` against the transcription of LEAF's scripts, on the same replica.

    python benchmarks/bench_femnist.py --scale 1 --work /tmp/bf          # full scale
    python benchmarks/bench_femnist.py --sd19 /tmp/bf/sd19 --json out.json

Synthesises an unpacked replica (``synth-sd19 --packaging dir``: LEAF walks folders; the build
reads the same folders), or reuses one (``--sd19``), then in one run:

1. ``index``: the first open of the source (the SD19 index, cached for later builds);
2. ``build femnist`` (LEAF's defaults: ``-s niid --sf 1.0 -k 0 -t sample``), in-process through
   the CLI, idx layout;
3. ``leaf``: ``tests/leaf_transcription.py`` with the same options, streaming every stage's JSON
   to disk and reading it back as preprocess.sh's scripts do (one all_data file in memory).

Wall clock, CPU time (self + children) and peak PSS of the process tree for each; the ratio
LEAF / (index + build) is the figure to compare (both ran under the same load).  Figures go
into docs/full-scale.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_full_build import MemorySampler, Stages, tree_bytes  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="replica scale (default 1: 814,255)")
    ap.add_argument("--sd19", type=Path, help="reuse this unpacked replica")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-femnist"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--sf", type=float, default=1.0, help="LEAF's --sf for both sides")
    ap.add_argument("--no-leaf", action="store_true", help="time the build only")
    ap.add_argument("--zip", action="store_true",
                    help="synthesise zips (faster to write; LEAF needs folders: with --no-leaf)")
    ap.add_argument("--keep", action="store_true", help="keep the outputs")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.zip and not args.no_leaf:
        ap.error("--zip needs --no-leaf (LEAF's scripts walk unzipped folders)")

    from mnistforge.cli import main as cli
    from mnistforge.sd19 import open_sd19
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    sampler = MemorySampler()
    sampler.start()
    stages = Stages(sampler)
    args.work.mkdir(parents=True, exist_ok=True)
    sd19 = args.sd19
    if sd19 is None:
        sd19 = args.work / f"sd19-x{args.scale:g}{'-zip' if args.zip else ''}"
        if not (sd19 / "synthetic-sd19.json").is_file():
            with stages.stage("synthesise (not part of a build)", scale=args.scale):
                synthesize_sd19(sd19, SynthConfig(scale=args.scale, packaging="zip" if args.zip else "dir",
                                                  hierarchies=("by_write", "by_class"),
                                                  workers=args.workers), progress=False)
    with stages.stage("index (first open)"):
        shutil.rmtree(sd19 / ".mnistforge", ignore_errors=True)
        n = len(open_sd19(sd19, workers=args.workers).index)
    out = args.work / "femnist"
    shutil.rmtree(out, ignore_errors=True)
    with stages.stage("build femnist", characters=n):
        flags = ["--workers", str(args.workers)] if args.workers else []
        assert cli(["build", "femnist", "--sd19", str(sd19), "--out", str(out), "--sf", str(args.sf),
                    "--no-progress", *flags]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    built = sum(manifest["datasets"]["femnist"].get(p, 0) for p in ("train", "test"))
    result = {"scale": args.scale, "characters": n, "built_samples": built,
              "build_bytes": tree_bytes(out), "cpus": os.cpu_count(), "stages": stages.rows}
    if not args.no_leaf:
        from leaf_transcription import leaf_pipeline_to_disk

        leaf_out = args.work / "leaf"
        shutil.rmtree(leaf_out, ignore_errors=True)
        with stages.stage("LEAF transcription (JSON on disk)"):
            leaf_n = leaf_pipeline_to_disk(str(sd19), str(leaf_out), sf=args.sf)
        result["leaf_samples"] = leaf_n
        result["leaf_bytes"] = tree_bytes(leaf_out)
        assert leaf_n == built, (leaf_n, built)
        if not args.keep:
            shutil.rmtree(leaf_out, ignore_errors=True)
    sampler.stop()
    rows = {r["stage"]: r for r in stages.rows}
    ours = rows["index (first open)"]["wall_s"] + rows["build femnist"]["wall_s"]
    if "LEAF transcription (JSON on disk)" in rows:
        result["ratio_leaf_over_index_plus_build"] = rows["LEAF transcription (JSON on disk)"]["wall_s"] / ours
    print(f"{'stage':<36} {'wall s':>8} {'CPU s':>8} {'peak PSS MB':>12} {'load':>10}")
    for r in stages.rows:
        print(f"{r['stage']:<36} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['peak_pss_bytes'] / 1e6:12.0f} "
              f"{r['load_start']:4.1f}-{r['load_end']:4.1f}")
    if "ratio_leaf_over_index_plus_build" in result:
        print(f"LEAF / (index + build): {result['ratio_leaf_over_index_plus_build']:.1f}x")
    print(f"samples {built:,}; build {result['build_bytes'] / 1e6:.0f} MB"
          + (f"; LEAF's JSON {result['leaf_bytes'] / 1e9:.2f} GB" if "leaf_bytes" in result else ""))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=float))
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    t0 = time.time()
    sys.exit(main())
