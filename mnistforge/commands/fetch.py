"""``mnistforge fetch NAME...``: download and verify files into the cache (``--mirror``, ``--from``: see their help)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .common import add_inputs, EXIT_FAILED, EXIT_OK, add_cache, add_json, add_offline, add_progress, \
    write_json
from . import argtypes

if TYPE_CHECKING:
    from ..registry import RemoteFile
    from ..cache.mirrors import Mirrors

NAME = "fetch"
HELP = "download and verify official files into the cache (datasets, emnist, sd19, or file ids)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "source")
    p.add_argument("names", nargs="+", metavar="NAME",
                   help="dataset (mnist, qmnist, emnist-letters...; NAME:SPLIT: that split's files), source (sd19, "
                        "sd19-1st-edition, emnist) or file id (mnist/t10k-images-idx3-ubyte.gz)")
    add_cache(p)
    add_offline(p, "and only check the files")
    p.add_argument("--timeout", type=argtypes.positive_seconds, default=30.0, help="seconds (default 30)")
    p.add_argument("--retries", type=argtypes.int_in(0, 100), default=3,
                   help="retries per mirror, 0..100 (default 3; the wait doubles from 1 s up to 60 s)")
    p.add_argument("--give-up-after", type=argtypes.positive_seconds, default=600.0, metavar="SECONDS",
                   help="seconds all attempts at one file may take, every mirror together "
                        "(default 600): no retry waits past it")
    p.add_argument("--mirror", action="append", default=None, metavar="URL",
                   help="an address tried before the registry's (repeatable): a base address "
                        "(files asked for at URL/{name}/{file}) or a template with {file} and "
                        "optionally {name} (the dataset folder); the word 'registry' puts the "
                        "registry's addresses there (default $MNISTFORGE_MIRRORS)")
    p.add_argument("--from", dest="source", action="append", default=None, metavar="URL|PATH",
                   help="(repeatable) an http(s) address (base or template, as --mirror): fetch "
                        "from there only; or a file or folder on this machine (idx, Keras .npz, .npy "
                        "pairs, CSV, torchvision root, Hub parquet, EMNIST .mat): its content "
                        "is identified and the official files it holds are placed in the cache, "
                        "verified, without a download")
    add_progress(p)
    add_json(p, "one record per file (id, status, path, sha256, error)")


def _targets(names: Iterable[str]) -> list[RemoteFile]:
    from ..errors import DatasetNotFoundError
    from ..registry import get_dataset, get_file, list_datasets

    from ..loaders.names import dataset_name, parse_split, split_name
    from ..loaders.targets import parse_target_text

    seen: set[str] = set()
    out: list[RemoteFile] = []
    for n in names:
        base, *split = parse_target_text(n).parts
        try:
            base = dataset_name(base, kinds=("dataset", "source", "archive"))
        except DatasetNotFoundError:
            pass
        if base in list_datasets(None):
            files = get_dataset(base).remote_files()
            if split:   # NAME:SPLIT: the files of that split (of the split it is a view of)
                sp = get_dataset(base).file_split(split_name(get_dataset(base), parse_split(split[0])[0]))
                files = [f for f in files if f.name in (sp.images, sp.labels, sp.metadata)]
            if not files:  # FEMNIST: made by a build, never published as files
                raise DatasetNotFoundError(
                    f"{base} has no published files to download", expected="a dataset with files",
                    found=f"{base}: built from SD19 only",
                    hint=f"build it: `mnistforge build {base} --sd19 SD19 --out DIR`")
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


def is_url(text: str) -> bool:
    """Whether ``--from`` names an address (``scheme://``) rather than a path."""
    import re

    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text or "") is not None


def _sources(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """``--from`` split into (addresses, paths); both at once is a usage error."""
    from ..errors import ConfigError

    given = args.source or []
    urls = [s for s in given if is_url(s)]
    paths = [s for s in given if not is_url(s)]
    if urls and paths:
        raise ConfigError("--from mixes addresses and paths", expected="addresses (fetch from "
                          "there) or paths (adopt copies on this machine), not both", found=" ".join(given))
    if urls and args.mirror:
        raise ConfigError("--from URL and --mirror together", expected="one of them",
                          found=f"--from {' '.join(urls)} --mirror {' '.join(args.mirror)}",
                          hint="--from URL fetches from that address only; --mirror adds "
                               "addresses tried before the registry's")
    return urls, paths


def _mirrors(args: argparse.Namespace, urls: list[str]) -> Mirrors:
    """The mirrors of this run: ``--from URL`` alone, else ``--mirror``, else the environment."""
    from ..cache.mirrors import mirrors, parse_mirrors

    if urls:
        return parse_mirrors(urls, source="--from", only=True)
    return parse_mirrors(args.mirror, source="--mirror") if args.mirror else mirrors()


def _failure(f: RemoteFile, e: Exception, status: str, said: str = "") -> dict[str, Any]:
    """Say on stderr that file ``f`` is ``status`` (failed, missing) because of ``e`` (or ``said``); its record."""
    print(f"{status.upper():<12}{f.id}: {said or e}", file=sys.stderr)
    return {"id": f.id, "status": status, "error": str(e), "error_type": type(e).__name__}


def run(args: argparse.Namespace) -> int:
    from ..errors import MnistforgeError, OfflineError
    from ..cache.download import cache_path, fetch_file, mirror_urls
    from ..cache.verify import read_marker
    from .common import exit_code

    files = _targets(args.names)  # unknown names: usage error before any download
    urls, paths = _sources(args)
    mirrors = _mirrors(args, urls)  # a bad template: usage error before any download
    if paths:
        return _adopt(args, files, paths)
    dead: set[str] = set()         # a host that refused is asked once for all the files
    failed = unpinned = 0
    codes = [EXIT_OK]
    records: list[dict[str, Any]] = []
    offline: list[RemoteFile] = []   # said in one short line each, then one hint
    for f in files:
        try:
            r = fetch_file(f, root=args.cache, offline=args.offline, timeout=args.timeout,
                           retries=args.retries, progress=False if args.no_progress else None,
                           give_up_after=args.give_up_after, mirrors=mirrors, dead_hosts=dead)
        except MnistforgeError as e:
            failed += 1
            codes.append(exit_code(e))
            offline += [f] if isinstance(e, OfflineError) else []
            records.append(_failure(f, e, "failed", f"not in the cache ({cache_path(f, args.cache)})"
                                    if isinstance(e, OfflineError) else ""))
            continue
        # a copy made from another (the Hub's parquet copy): said each time, from its sidecar
        adopted = r.adopted_from or (read_marker(r.path) or {}).get("adopted_from")
        records.append({"id": f.id, "status": r.status, "verified": bool(r.verified),
                        "downloaded": bool(r.downloaded), "path": str(r.path), "sha256": r.sha256}
                       | ({"adopted_from": adopted} if adopted else {}))
        how = ("downloaded" if r.downloaded else "present") + (f", adopted from {adopted}" if adopted else "")
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
    if offline:
        from .. import settings

        switch, undo = settings.current().offline_switch
        urls = mirror_urls(offline[0], mirrors)
        print(f"hint: {switch} forbids downloads: {undo}, or put the files at the paths above by "
              f"hand (addresses and hashes: `mnistforge info {offline[0].group}`"
              + (f"; e.g. {urls[0]}" if urls else "") + ")", file=sys.stderr)
    write_json(args, {"files": records, "failed": failed, "unverified": unpinned})
    # a file that is there but wrong is a failed check (1); one that could not be had, 3
    return EXIT_FAILED if EXIT_FAILED in codes else max(codes) if failed else EXIT_OK


def _adopt(args: argparse.Namespace, files: list[RemoteFile], paths: list[str]) -> int:
    """``fetch NAME --from PATH``: the official files these copies hold, into the cache."""
    from ..cache.download import fetch_file
    from ..checks.adopt import regular_or_folder
    from ..checks.copies import adopt
    from ..errors import MnistforgeError, OfflineError
    from .common import exit_code

    for p in paths:
        regular_or_folder(p)  # a missing path, a FIFO: said before anything is read
    placed, answers = adopt(paths, files, root=args.cache)
    for a in answers:
        what = f"{a.dataset} {a.split}" if a.dataset else ""
        print(f"{a.verdict:<12}{a.path}" + (f" [{a.key}]" if a.key and a.format != "idx" else "")
              + (f": {what}" if a.verdict == "identical" and what else f": {a.message}"))
    records: list[dict[str, Any]] = []
    codes, failed = [0], 0
    for f in files:
        if f.id in placed:
            r, where = placed[f.id]
            print(f"ok          {f.id}: adopted from {where}, {r.text}")
            print(f"            {r.path}")
            records.append({"id": f.id, "status": r.status, "verified": bool(r.verified),
                            "downloaded": False, "adopted_from": where, "path": str(r.path), "sha256": r.sha256})
            continue
        try:  # not in the copies: already in the cache? (re-verified, never downloaded)
            r = fetch_file(f, root=args.cache, offline=True)
        except MnistforgeError as e:
            err = e
            if isinstance(e, OfflineError):
                why = "; ".join(sorted({a.why_not for a in answers if a.why_not and
                                        (a.dataset is None or f.group == _group(a.dataset))}))
                if not (f.content_sha256 or f.content_md5):
                    why = "; ".join(filter(None, (why, "the registry pins no content hash of it: "
                                                  "only the published file itself is adopted")))
                err = OfflineError(f"{f.id} is in none of these copies and not in the cache"
                                   + (f" ({why})" if why else ""),
                                   hint="fetch it (without --from), or give a copy that holds it")
            failed += 1
            codes.append(exit_code(err))
            records.append(_failure(f, err, "missing" if err is not e else "failed"))
            continue
        print(f"ok          {f.id}: present, {r.text}")
        print(f"            {r.path}")
        records.append({"id": f.id, "status": r.status, "verified": bool(r.verified),
                        "downloaded": False, "path": str(r.path), "sha256": r.sha256})
    print(f"{len(files) - failed} of {len(files)} files in the cache"
          + (f", {sum(1 for f in files if f.id in placed)} adopted" if placed else "")
          + (f", {failed} missing" if failed else ""))
    write_json(args, {"files": records, "failed": failed, "copies": [a.to_dict() for a in answers]})
    return EXIT_FAILED if EXIT_FAILED in codes else max(codes) if failed else EXIT_OK


def _group(dataset: str) -> str | None:
    from ..registry import get_dataset

    try:
        return get_dataset(dataset).group
    except KeyError:
        return None
