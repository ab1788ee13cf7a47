"""``mnistforge fetch NAME...``: download and verify files into the cache."""
from __future__ import annotations

import sys

from .common import EXIT_FAILED, EXIT_OK, add_cache, add_json, add_offline, add_progress, \
    write_json
from . import argtypes

NAME = "fetch"
HELP = "download and verify official files into the cache (datasets, emnist, sd19, or file ids)"


def add_arguments(p):
    p.add_argument("names", nargs="+", metavar="NAME",
                   help="dataset (mnist, qmnist, emnist-letters...), source (sd19, "
                        "sd19-1st-edition, emnist) or file id (mnist/t10k-images-idx3-ubyte.gz)")
    add_cache(p)
    add_offline(p, "and only check the files")
    p.add_argument("--timeout", type=argtypes.positive_seconds, default=30.0, help="seconds (default 30)")
    p.add_argument("--retries", type=argtypes.int_in(0, 100), default=3, help="retries per mirror (default 3)")
    add_progress(p)
    add_json(p, "one record per file (id, status, path, sha256, error)")


def _targets(names):
    from ..errors import DatasetNotFoundError
    from ..registry import get_dataset, get_file, list_datasets

    from ..loaders.names import dataset_name

    seen, out = set(), []
    for n in names:
        base = n.split(":")[0]
        try:
            base = dataset_name(base, kinds=("dataset", "source", "archive"))
        except DatasetNotFoundError:
            pass
        if base in list_datasets(None):
            files = get_dataset(base).remote_files()
        else:
            try:
                files = [get_file(n)]
            except DatasetNotFoundError:
                raise DatasetNotFoundError(
                    f"unknown dataset or file {n!r}",
                    expected="one of " + ", ".join(list_datasets(None)) + ", or a file id such "
                             "as mnist/t10k-images-idx3-ubyte.gz", found=n,
                    hint="run `mnistforge info` for the list") from None
        for f in files:
            key = f.archive or f.id
            if key not in seen:
                seen.add(key)
                out.append(get_file(key))
    return out


def run(args) -> int:
    from ..errors import MnistforgeError
    from ..cache.download import fetch_file
    from .common import exit_code

    files = _targets(args.names)  # unknown names: usage error before any download
    failed = unpinned = 0
    codes = [EXIT_OK]
    records = []
    for f in files:
        try:
            r = fetch_file(f, root=args.cache, offline=args.offline, timeout=args.timeout,
                           retries=args.retries, progress=False if args.no_progress else None)
        except MnistforgeError as e:
            failed += 1
            codes.append(exit_code(e))
            records.append({"id": f.id, "status": "failed", "error": str(e),
                            "error_type": type(e).__name__})
            print(f"FAILED      {f.id}: {e}", file=sys.stderr)
            continue
        records.append({"id": f.id, "status": r.status, "verified": bool(r.verified),
                        "downloaded": bool(r.downloaded), "path": str(r.path), "sha256": r.sha256})
        how = "downloaded" if r.downloaded else "present"
        if r.verified:
            print(f"ok          {f.id}: {how}, {r.text}")
        else:
            unpinned += 1
            print(f"UNVERIFIED  {f.id}: {how}; no hash is pinned for this file, observed sha256 "
                  f"{r.sha256} (compare it with the publisher's value)")
        print(f"            {r.path}")
    print(f"{len(files) - failed} of {len(files)} files in the cache"
          + (f", {unpinned} not verifiable (hash not pinned)" if unpinned else "")
          + (f", {failed} failed" if failed else ""))
    write_json(args, {"files": records, "failed": failed, "unverified": unpinned})
    # a file that is there but wrong is a failed check (1); one that could not be had, 3
    return EXIT_FAILED if EXIT_FAILED in codes else max(codes) if failed else EXIT_OK
