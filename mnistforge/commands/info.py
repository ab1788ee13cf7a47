"""``mnistforge info [NAME]``: datasets, splits, counts, classes, files and cache status."""
from __future__ import annotations

import os
import textwrap

NAME = "info"
HELP = "list the datasets, or describe one (splits, counts, classes, files, cache status)"


def add_arguments(p):
    p.add_argument("name", nargs="?", help="dataset, source (sd19, emnist) or folder of idx files")
    p.add_argument("--cache", default=None, help="cache folder (default $MNISTFORGE_HOME or the "
                                                 "platform cache)")


def _n(x) -> str:
    return f"{x:,}" if isinstance(x, int) else "?"


def run(args) -> int:
    from ..registry import get_dataset, list_datasets
    from ..settings import cache_home

    if args.name is None:
        return _overview(args.cache)
    if args.name not in list_datasets(None) and (os.path.isdir(args.name.split(":")[0])
                                                  or os.sep in args.name):
        return _folder(args.name)
    info = get_dataset(args.name.split(":")[0])
    print(f"{info.name}: {info.title} ({info.kind})")
    for line in textwrap.wrap(info.description, 88):
        print(f"  {line}")
    print(f"  homepage: {info.homepage}")
    print(f"  licence:  {info.licence}")
    print(f"  cite:     {info.citation}")
    if info.kind == "dataset":
        print(f"  images:   uint8 28x28, stored {info.orientation}"
              + (" (shown upright by the loader)" if info.orientation == "transposed" else ""))
        print(f"  classes ({len(info.classes) - info.label_offset}, labels from "
              f"{info.label_offset}): " + " ".join(repr(c) if " " in c else c for c in info.classes))
        if info.class_note:
            print(f"  note:     {info.class_note}")
        if info.metadata_fields:
            print(f"  metadata: {', '.join(info.metadata_fields)}")
            for line in textwrap.wrap(info.metadata_note, 78):
                print(f"            {line}")
        print("  splits:")
        for sp in info.splits.values():
            if sp.is_view:
                if sp.rows:
                    how = f"rows {sp.rows[0]}..{sp.rows[1] if sp.rows[1] is not None else 'end'} of {sp.of}"
                elif sp.last:
                    how = f"last {info.split(sp.last).count:,} rows of {sp.of}"
                else:
                    how = f"{sp.of} without its last {info.split(sp.drop_last).count:,} rows"
            else:
                how = f"{sp.images}, {sp.labels}" + (
                    f" (column {sp.labels_column})" if sp.labels_column is not None else "")
            print(f"    {sp.name:<25} {sp.count:>9,}  {how}")
    _files(info, args.cache)
    print(f"  cache: {cache_home(args.cache) / info.group}")
    return 0


def _files(info, cache) -> None:
    from ..registry import get_file
    from ..cache.download import cache_status

    files = info.remote_files()
    if not files:
        return
    print("  files:")
    shown_archives = set()
    for f in files:
        if f.archive and f.archive not in shown_archives:
            shown_archives.add(f.archive)
            _file_line(get_file(f.archive), cache, cache_status)
        _file_line(f, cache, cache_status, indent=6 if f.archive else 4)


def _file_line(f, cache, cache_status, indent=4) -> None:
    pad = " " * indent
    size = f"{f.size:,} B" if f.size else "size ?"
    where = f"member {f.member}" if f.member else size
    status, _ = cache_status(f, cache)
    print(f"{pad}{f.name}  [{where}; hashes: {f.pinned_how}]  cache: {status}")
    if f.sha256:
        print(f"{pad}  sha256 {f.sha256}")
    for u in f.urls:
        print(f"{pad}  {u}")


def _overview(cache) -> int:
    from ..registry import get_dataset, list_datasets
    from ..cache.download import cache_status
    from ..settings import cache_home

    print(f"{'dataset':<17} {'classes':>7}  splits")
    for name in list_datasets():
        info = get_dataset(name)
        splits = ", ".join(f"{s.name} {s.count:,}" for s in info.splits.values())
        n_cls = len(info.classes) - info.label_offset
        files = info.remote_files()
        have = sum(cache_status(f, cache)[0] != "missing" for f in files)
        print(f"{name:<17} {n_cls:>7}  {splits}")
        print(f"{'':<27}cache: {have}/{len(files)} files present")
    print("\nsources and archives (mnistforge fetch NAME):")
    for name in list_datasets("source") + list_datasets("archive"):
        info = get_dataset(name)
        files = info.remote_files()
        pinned = "hashes pinned" if all(f.pinned for f in files) else "hashes NOT pinned"
        print(f"  {name:<17} {', '.join(f.name for f in files)} ({pinned})")
    print(f"\ncache: {cache_home(cache)}")
    return 0


def _folder(text) -> int:
    from ..io.idx import read_idx_header
    from ..loaders import resolve_target
    from ..loaders.origins import FolderOrigin, locate
    from ..registry import get_dataset

    name, split, root = resolve_target(text)
    info = get_dataset(name)
    src = FolderOrigin(info, root)
    print(f"{src.folder}: {info.name} ({info.title}), stored {src.orientation}")
    for sp in info.splits.values():
        fsp = info.file_split(sp.name)
        p = locate(src.folder, fsp.images)
        if p is None:
            print(f"    {sp.name:<25} {'-':>9}  missing {fsp.images}")
            continue
        n = read_idx_header(p).shape[0] if not sp.is_view else "(view)"
        extra = ""
        if fsp.metadata and locate(src.folder, fsp.metadata):
            extra = " + metadata"
        print(f"    {sp.name:<25} {_n(n):>9}  {p.name}{extra}")
    return 0
