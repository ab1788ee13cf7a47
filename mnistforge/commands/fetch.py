"""``mnistforge fetch NAME...``: download and verify files into the cache."""
from __future__ import annotations

import sys

NAME = "fetch"
HELP = "download and verify official files into the cache (datasets, emnist, sd19, or file ids)"


def add_arguments(p):
    p.add_argument("names", nargs="+", metavar="NAME",
                   help="dataset (mnist, qmnist, emnist-letters...), source (sd19, "
                        "sd19-1st-edition, emnist) or file id (mnist/t10k-images-idx3-ubyte.gz)")
    p.add_argument("--cache", default=None, help="cache folder (default $MNISTFORGE_HOME or the "
                                                 "platform cache)")
    p.add_argument("--offline", action="store_true", default=None,
                   help="only check what is there (as MNISTFORGE_OFFLINE=1)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    p.add_argument("--retries", type=int, default=3, help="retries per mirror (default 3)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _targets(names):
    from ..errors import DatasetNotFoundError
    from ..registry import get_dataset, get_file, list_datasets

    seen, out = set(), []
    for n in names:
        base = n.split(":")[0]
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

    files = _targets(args.names)  # unknown names: usage error before any download
    failed = unpinned = 0
    for f in files:
        try:
            r = fetch_file(f, root=args.cache, offline=args.offline, timeout=args.timeout,
                           retries=args.retries, progress=False if args.no_progress else None)
        except MnistforgeError as e:
            failed += 1
            print(f"FAILED      {f.id}: {e}", file=sys.stderr)
            continue
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
    return 1 if failed else 0
