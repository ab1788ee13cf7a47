"""``mnistforge info [NAME|FOLDER]``: datasets, splits, counts, classes, files and cache status."""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import add_inputs, add_cache, add_json, terminal_width, wrap, write_json

if TYPE_CHECKING:
    from ..io.types import StrPath
    from ..registry import DatasetInfo, RemoteFile, SplitInfo

NAME = "info"
HELP = "list the datasets, or describe one (splits, counts, classes, files, cache status)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "name")
    p.add_argument("name", nargs="?", help="dataset, source (sd19, emnist) or folder of idx files "
                                           "(a build folder may hold several datasets)")
    add_cache(p)
    add_json(p, "the description")


def _n(x: object) -> str:
    return f"{x:,}" if isinstance(x, int) else "-"


def run(args: argparse.Namespace) -> int:
    from ..loaders.names import dataset_name
    from ..loaders.targets import parse_target_text

    target = parse_target_text(args.name) if args.name is not None else None
    if target is None:
        doc = overview(args.cache)
        _print_overview(doc)
    elif os.path.isdir(target.parts[0]) or (os.sep in args.name and not args.name.lower().startswith("emnist/")):
        doc = folder(args.name)
        _print_folder(doc)
    else:
        name = dataset_name(target.parts[0], kinds=("dataset", "source", "archive"))
        doc = dataset(name, args.cache)
        _print_dataset(doc)
    write_json(args, doc)
    return 0


# --------------------------------------------------------------------------- facts

def _split_how(info: DatasetInfo, sp: SplitInfo) -> str:
    if sp.is_view:
        if sp.rows:
            return f"rows {sp.rows[0]}..{sp.rows[1] if sp.rows[1] is not None else 'end'} of {sp.of}"
        if sp.last:
            return f"last {info.split(sp.last).count:,} rows of {sp.of}"
        assert sp.drop_last is not None  # a view is rows, the last rows or all but the last
        return f"{sp.of} without its last {info.split(sp.drop_last).count:,} rows"
    return f"{sp.images}, {sp.labels}" + (f" (column {sp.labels_column})" if sp.labels_column is not None else "")


def dataset(name: str, cache: StrPath | None = None) -> dict[str, Any]:
    """What ``info NAME`` prints, as a dict."""
    from ..cache.download import cache_status
    from ..registry import get_dataset, get_file, label_joins
    from ..settings import cache_home

    info = get_dataset(name)
    doc: dict[str, Any] = {"name": info.name, "title": info.title, "kind": info.kind,
                 "description": " ".join(filter(None, (info.description, label_joins(info.name)))),
                 "homepage": info.homepage, "licence": info.licence, "citation": info.citation}
    if info.kind == "dataset":
        built = not info.remote_files()  # FEMNIST: each build has its own counts (its manifest)
        doc.update(stored_orientation=info.orientation, classes=list(info.classes),
                   label_offset=info.label_offset, class_note=info.class_note or None,
                   metadata_fields=list(info.metadata_fields), metadata_note=info.metadata_note or None,
                   splits=[{"name": sp.name, "count": None if built and not sp.count else sp.count,
                            "how": _split_how(info, sp), "view": sp.is_view} for sp in info.splits.values()])
    files: list[dict[str, Any]] = []
    seen: set[str] = set()
    for f in info.remote_files():
        if f.archive and f.archive not in seen:
            seen.add(f.archive)
            files.append(_file_doc(get_file(f.archive), cache, cache_status))
        files.append(_file_doc(f, cache, cache_status))
    doc["files"] = files
    doc["cache"] = str(cache_home(cache) / info.group)
    return doc


def _file_doc(f: RemoteFile, cache: StrPath | None,
              cache_status: Callable[[RemoteFile, StrPath | None], tuple[str, Path]]) -> dict[str, Any]:
    status, path = cache_status(f, cache)
    return {"id": f.id, "name": f.name, "size": f.size, "member": f.member, "archive": f.archive,
            "hashes": f.pinned_how, "sha256": f.sha256, "urls": list(f.urls), "cache": status, "path": str(path)}


def overview(cache: StrPath | None = None) -> dict[str, Any]:
    """What ``info`` prints, as a dict."""
    from ..cache.download import cache_status
    from ..registry import get_dataset, list_datasets
    from ..settings import cache_home

    datasets = []
    for name in list_datasets():
        info = get_dataset(name)
        files = info.remote_files()
        datasets.append({"name": name, "classes": len(info.classes) - info.label_offset,
                         "splits": {s.name: s.count for s in info.splits.values()}, "files": len(files),
                         "files_in_cache": sum(cache_status(f, cache)[0] != "missing" for f in files)})
    others = []
    for name in list_datasets("source") + list_datasets("archive"):
        files = get_dataset(name).remote_files()
        others.append({"name": name, "files": [f.name for f in files], "pinned": all(f.pinned for f in files)})
    return {"datasets": datasets, "sources": others, "cache": str(cache_home(cache))}


def folder(text: str) -> dict[str, Any]:
    """What ``info FOLDER`` prints: every dataset in the folder, its splits and counts."""
    from ..errors import TargetNotFoundError
    from ..loaders import datasets_in_folder, resolve_target

    path = Path(text)
    if path.is_dir():
        if not (names := datasets_in_folder(path)):
            resolve_target(text)  # raises the "no dataset files recognised" error
        items: list[tuple[str, Path]] = [(n, path) for n in names]
    elif not Path(text.split(":")[0]).exists() and ":" not in text:
        raise TargetNotFoundError("no such folder", path=text, expected="a folder of idx files", found="nothing there")
    else:
        name, _, root = resolve_target(text)
        assert root is not None, "a folder target has its folder"
        items = [(name, root)]
    return {"folder": str(path if path.is_dir() else text), "datasets": [_folder_dataset(n, root) for n, root in items]}


def _folder_dataset(name: str, root: Path) -> dict[str, Any]:
    from ..io.idx import read_idx_header
    from ..loaders.origins import FolderOrigin
    from ..registry import get_dataset

    info = get_dataset(name)
    src = FolderOrigin(info, root)
    rows: dict[str, int] = {}
    splits: list[dict[str, Any]] = []
    for sp in info.splits.values():
        fsp = info.file_split(sp.name)
        p = src.path_of(fsp.images or "")
        entry: dict[str, Any] = {"name": sp.name, "count": None, "file": None, "metadata": False, "view": sp.is_view}
        if p is not None:
            if fsp.name not in rows:
                rows[fsp.name] = read_idx_header(p).shape[0]
            n: int | None   # None: a view whose measure is absent
            n = rows[fsp.name]
            entry.update(file=p.name, metadata=bool(fsp.metadata and src.path_of(fsp.metadata)))
            if sp.is_view:
                entry["of"] = sp.of
                if sp.rows is not None:
                    a, b = sp.rows
                    n = len(range(n)[a:b])
                elif sp.last or sp.drop_last:
                    try:
                        k = src.length(info.split(sp.last or sp.drop_last or ""))
                    except Exception:  # the split it is measured by is absent
                        k = None
                    n = None if k is None else (min(k, n) if sp.last else max(n - k, 0))
            entry["count"] = n
        splits.append(entry)
    return {"name": info.name, "title": info.title, "folder": str(src.folder),
            "stored_orientation": src.orientation, "built": src.manifest is not None,
            "synthetic": bool(src.manifest is not None and src.manifest.from_synthetic_sd19), "splits": splits}


# --------------------------------------------------------------------------- printing

def _print_dataset(doc: dict[str, Any]) -> None:
    width = terminal_width()
    print(f"{doc['name']}: {doc['title']} ({doc['kind']})")
    for line in wrap(doc["description"], width - 2, "  "):
        print(line)
    _field("homepage", doc["homepage"], width)
    _field("licence", doc["licence"], width)
    _field("cite", doc["citation"], width)
    if doc["kind"] == "dataset":
        stored = doc["stored_orientation"]
        _field("images", "uint8 28x28, upright as loaded"
               + (f" (files store them {stored}; the loader flips them)" if stored != "upright" else ""), width)
        classes = doc["classes"]
        _field("classes", f"{len(classes) - doc['label_offset']}, labels from {doc['label_offset']}: "
               + " ".join(repr(c) if " " in c else c for c in classes), width)
        if doc["class_note"]:
            _field("note", doc["class_note"], width)
        if doc["metadata_fields"]:
            _field("metadata", ", ".join(doc["metadata_fields"]), width)
            for line in wrap(doc["metadata_note"] or "", width, " " * 12):
                print(line)
        print("  splits:")
        for sp in doc["splits"]:
            head = f"    {sp['name']:<25} {_n(sp['count']):>9}  "
            lines = wrap(sp["how"], max(20, width - len(head)))
            print(head + lines[0])
            for line in lines[1:]:
                print(" " * len(head) + line)
    if doc["files"]:
        print("  files:")
    for f in doc["files"]:
        pad = " " * (6 if f["archive"] else 4)
        size = f"{f['size']:,} B" if f["size"] else "size ?"
        where = f"member {f['member']}" if f["member"] else size
        print(f"{pad}{f['name']}  [{where}; hashes: {f['hashes']}]  cache: {f['cache']}")
        if f["sha256"]:
            print(f"{pad}  sha256 {f['sha256']}")
        for u in f["urls"]:
            print(f"{pad}  {u}")
    print(f"  cache: {doc['cache']}")


def _field(label: str, text: str, width: int) -> None:
    """``  label:    text`` wrapped to ``width`` with a hanging indent."""
    lines = wrap(text, max(20, width - 12))
    print(f"  {label + ':':<10}{lines[0]}")
    for line in lines[1:]:
        print(" " * 12 + line)


def _print_overview(doc: dict[str, Any]) -> None:
    width = terminal_width()
    print(f"{'dataset':<17} {'classes':>7}  splits")
    for d in doc["datasets"]:
        splits = ", ".join(f"{s} {n:,}" for s, n in d["splits"].items())
        lines = wrap(splits, max(30, width - 27))
        print(f"{d['name']:<17} {d['classes']:>7}  {lines[0]}")
        for line in lines[1:]:
            print(f"{'':<27}{line}")
        print(f"{'':<27}cache: {d['files_in_cache']}/{d['files']} files present")
    print("\nsources and archives (mnistforge fetch NAME):")
    for s in doc["sources"]:
        pinned = "hashes pinned" if s["pinned"] else "hashes NOT pinned"
        for i, line in enumerate(wrap(f"{', '.join(s['files'])} ({pinned})", max(30, width - 20))):
            print(f"  {s['name'] if i == 0 else '':<17} {line}")
    print(f"\ncache: {doc['cache']}")


def _print_folder(doc: dict[str, Any]) -> None:
    if len(doc["datasets"]) > 1:
        print(f"{doc['folder']}: {len(doc['datasets'])} datasets")
    for d in doc["datasets"]:
        built = "built (manifest.json)" if d["built"] else "no manifest"
        if d["synthetic"]:
            built = "built from a SYNTHETIC SD19 (manifest.json; not NIST data)"
        print(f"{d['folder']}: {d['name']} ({d['title']}), stored {d['stored_orientation']}, {built}")
        for sp in d["splits"]:
            if sp["file"] is None:
                print(f"    {sp['name']:<25} {'-':>9}  missing")
                continue
            what = f"view of {sp['of']}" if sp["view"] else sp["file"] + (" + metadata" if sp["metadata"] else "")
            print(f"    {sp['name']:<25} {_n(sp['count']):>9}  {what}")
