"""Load a split from a Hugging Face export (``load(..., root=REPO)``): every shard read checked
against the hash the export recorded (hashed once, then trusted while the file keeps its identity;
``check=True``: sha256 again), then the arrays through the gate (:func:`_admit`).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..cache.seen import forget, identity, recall, remember
from ..errors import DataMismatchError, IntegrityError, MissingFileError, MnistforgeError, PathArg, require
from ..gate import admit
from ..gate.content import OPT_OUT
from ..io.hashing import THREAD_FROM, sha256_file, xxh3_file
from ..io.hf.parquet import DATA
from ..io.hf.repo import (config_is_synthetic, read_split, recorded_shard_fast_hashes, recorded_shard_hashes,
                          repo_configs, shard_paths)
from ..io.hf.schema import field_name, hf_split_name
from ..log import get_logger
from ..registry import DatasetInfo, get_dataset, list_datasets
from .split import DatasetSplit

if TYPE_CHECKING:
    import numpy.typing as npt

    #: what :func:`mnistforge.io.hf.repo.read_split` returns: ``(images, labels, classes, metadata)``
    Arrays = tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], list[str], npt.NDArray[np.void] | None]
    #: ``(shard, its stat before it was read, the digest it hashed to)``
    Hashed = tuple["_Shard", os.stat_result, str]

logger = get_logger(__name__)

#: the fact a seen record of a shard holds: the recorded sha256 the shard was found to have
SHARD_FACT = "hf_shard_sha256"

_WHAT_TO_DO = ("restore the shard from the original export or export the data again "
               "(`mnistforge verify REPO_DIR` lists every damaged shard); " + OPT_OUT)


def _listed(repo_dir: Path, config: str, splits: Iterable[str] | None) -> list[tuple[str, str]]:
    """``[(split, shard path relative to repo_dir)]`` the card lists for ``splits`` (all: None), globs expanded."""
    declared = repo_configs(repo_dir).get(config, {})
    names = list(declared) if splits is None else [hf_split_name(s) for s in splits]
    out: list[tuple[str, str]] = []
    for split in names:
        for pattern in declared.get(split, []):
            if any(ch in pattern for ch in "*?["):
                out += [(split, p.relative_to(repo_dir).as_posix()) for p in sorted(repo_dir.glob(pattern))]
            else:
                out.append((split, pattern))
    return out


class _Shard(NamedTuple):
    split: str
    rel: str          # path relative to the export, as the card and croissant.json name it
    path: Path
    digest: str       # the sha256 the export recorded
    fast: str | None = None   # its XXH3-128, where recorded and not check=True: hashed instead


def _plan(repo_dir: Path, config: str, splits: Iterable[str] | None, cache: PathArg | None,
          check: bool) -> tuple[dict[str, dict[str, str]], dict[str, str], list[_Shard]]:
    """``(recorded digests by kind, trusted {rel: sha256}, [shards to hash])``; a missing shard refused here."""
    if not (recorded := recorded_shard_hashes(repo_dir)):
        logger.warning("%s: the export recorded no shard sha256 (not written by mnistforge, or by "
                       "an older version): its shards are NOT verified, only the arrays are "
                       "checked", repo_dir)
        return {"sha256": recorded, "xxh3_128": {}}, {}, []
    fast = {} if check else recorded_shard_fast_hashes(repo_dir)   # check=True: sha256
    kinds = {"sha256": recorded, "xxh3_128": fast}
    trusted: dict[str, str] = {}
    todo: list[_Shard] = []
    for split, rel in _listed(repo_dir, config, splits):
        path = repo_dir / rel
        if (digest := recorded.get(rel)) is None:
            raise IntegrityError(f"{config}/{split}: shard without a recorded sha256", path=path,
                                 expected=f"a sha256 for {rel} in the card's 'Shards (sha256)'",
                                 found="none: the card lists a shard the export did not record",
                                 hint="the card was edited after the export; export the data "
                                      "again; " + OPT_OUT)
        if not path.is_file():
            raise MissingFileError(f"{config}/{split}: shard missing", path=path,
                                   expected=f"the shard the export recorded (sha256 {digest})",
                                   found="nothing", hint=_WHAT_TO_DO)
        facts = None if check else recall(path, cache)
        if facts is not None and facts.get(SHARD_FACT) == digest:
            trusted[rel] = digest
        else:
            todo.append(_Shard(split, rel, path, digest, fast.get(rel)))
    return kinds, trusted, todo


def _hash(todo: list[_Shard]) -> list[Hashed]:
    """``[(shard, stat before, digest)]``: each shard hashed once (by its fast hash where recorded)."""
    return [(sh, os.stat(sh.path), xxh3_file(sh.path) if sh.fast else sha256_file(sh.path)) for sh in todo]


def _judge(config: str, hashed: list[Hashed], recorded: dict[str, dict[str, str]],
           cache: PathArg | None) -> dict[str, str]:
    """Refuse the first shard whose hash is not the recorded one (named, swapped or changed); record the rest."""
    out: dict[str, str] = {}
    for sh, before, got in hashed:
        if got != (sh.fast or sh.digest):   # the fast digest where there is one
            forget(sh.path, cache)
            kind = "xxh3_128" if sh.fast else "sha256"
            want = f"{kind} {sh.fast or sh.digest} (recorded by the export" + \
                (f", with sha256 {sh.digest})" if sh.fast else ")")
            other = next((r for r, d in sorted(recorded[kind].items()) if d == got and r != sh.rel), None)
            if other is not None:
                raise DataMismatchError(f"{config}/{sh.split}: shard holds another shard's data",
                                        path=sh.path, expected=want,
                                        found=f"{kind} {got}, the content of {other}", hint=_WHAT_TO_DO)
            raise IntegrityError(f"{config}/{sh.split}: shard changed since the export", path=sh.path, expected=want,
                                 found=f"{kind} {got}", hint=_WHAT_TO_DO)
        if not remember(sh.path, {SHARD_FACT: sh.digest}, before=before, cache=cache) \
                and identity(os.stat(sh.path)) != identity(before):
            raise IntegrityError(f"{config}/{sh.split}: shard changed while it was read",
                                 path=sh.path, expected="the same file before and after reading",
                                 found="another size, time or inode", hint="load it again")
        out[sh.rel] = sh.digest
    return out


def check_shards(repo_dir: PathArg, config: str, splits: Iterable[str] | None = None, *,
                 cache: PathArg | None = None, check: bool = False) -> dict[str, str]:
    """Check the shards of ``config`` (of ``splits``; default all) against the hashes the export
    recorded: ``{shard path relative to repo_dir: sha256}`` (``{}``: none recorded), or
    MissingFileError, DataMismatchError (another shard's content), IntegrityError (changed)."""
    recorded, trusted, todo = _plan(Path(repo_dir), config, splits, cache, check)
    return {**trusted, **_judge(config, _hash(todo), recorded, cache)}


@contextlib.contextmanager
def _checked(repo_dir: PathArg, config: str, splits: Iterable[str] | None, *, cache: PathArg | None,
             check: bool) -> Iterator[bool]:
    """:func:`check_shards` around reading the shards: the unseen ones hashed on a thread while
    the body parses them (both release the GIL) and judged before its result is used (a read
    that fails on a damaged shard reports the damage); below
    :data:`~mnistforge.io.hashing.THREAD_FROM` bytes in all, hashed and judged first."""
    recorded, _, todo = _plan(Path(repo_dir), config, splits, cache, check)
    vouched = bool(recorded["sha256"])   # the shards matched the export's own record
    if not todo:
        yield vouched
        return
    if sum(os.stat(sh.path).st_size for sh in todo) < THREAD_FROM:
        # small shards: hashed and judged first, here (a thread costs more than it overlaps)
        _judge(config, _hash(todo), recorded, cache)
        yield vouched
        return
    with ThreadPoolExecutor(1, thread_name_prefix="mnistforge-shard-hash") as pool:
        hashed = pool.submit(_hash, todo)
        try:
            yield vouched
        except Exception:
            _judge(config, hashed.result(), recorded, cache)   # the damage explains the failure
            raise
        _judge(config, hashed.result(), recorded, cache)


def _admit(arrays: Arrays, info: DatasetInfo, split: str, where: str, *, registered: bool, vouched: bool) -> Arrays:
    """The arrays read from an export (:func:`mnistforge.io.hf.repo.read_split`'s) through the
    trust gate: form always (labels within the card's classes; metadata of the same length);
    content where the config is a registry dataset (``registered``) and the shards were not
    ``vouched`` for by the export's own record (then it was judged when it was exported)."""
    images, labels, classes, meta = arrays
    admit(images, labels, dataset=info.name if registered else None, split=split,
          route="hf-export", where=where, trust=vouched, classes=classes)
    if meta is not None and len(meta) != len(labels):
        raise IntegrityError(f"{info.name} {split}: metadata does not match the images", path=where,
                             expected=f"{len(labels)} rows", found=f"{len(meta)} rows")
    return arrays


def _rows(repo_dir: PathArg, name: str, split: str) -> int:
    pq = require("pyarrow.parquet", "hf", "reading a Hugging Face export")
    return sum(pq.ParquetFile(p).metadata.num_rows for p in shard_paths(repo_dir, name, split))


def _view_of(repo_dir: PathArg, name: str, split: str, with_metadata: bool, cache: PathArg | None,
             check: bool, trust: bool) -> DatasetSplit | None:
    """A registry view (``validation``, ``test10k``...) the export did not store, from its base split."""
    try:
        info = get_dataset(name)
        sp = info.split(split)
    except MnistforgeError:
        return None
    if not sp.is_view or hf_split_name(split) in repo_configs(repo_dir).get(name, {}):
        return None
    base = load_split_from_repo(repo_dir, name, sp.of or "", with_metadata=with_metadata,
                                cache=cache, check=check, trust=trust)
    n = len(base)
    if sp.rows is not None:
        rows = slice(sp.rows[0], sp.rows[1])
    else:
        other = sp.last or sp.drop_last or ""
        if not trust:  # its row count decides the view: its shards are checked too
            check_shards(repo_dir, name, [other], cache=cache, check=check)
        k = _rows(repo_dir, name, other)
        if k > n:
            raise IntegrityError(f"{name}: {split} larger than {sp.of}", path=repo_dir,
                                 expected=f"at most {n} rows", found=str(k))
        rows = slice(n - k, n) if sp.last else slice(0, n - k)
    view = base.select(rows, split=split)
    view.indices = None  # the whole of this split, as when loaded from idx files
    return view


def load_split_from_repo(repo_dir: PathArg, name: str, split: str, *, with_metadata: bool = False,
                         cache: PathArg | None = None, check: bool = False, trust: bool = False) -> DatasetSplit:
    """``mnistforge.load(name, split, root=repo_dir)`` on an export: the split the idx files give."""
    if (view := _view_of(repo_dir, name, split, with_metadata, cache=cache, check=check, trust=trust)) is not None:
        return view
    if trust:
        arrays = read_split(repo_dir, name, split)
        vouched = True
    else:
        with _checked(repo_dir, name, [split], cache=cache, check=check) as vouched:
            arrays = read_split(repo_dir, name, split)
    if registered := name in list_datasets(None):
        info = get_dataset(name)
        split_name = next((s for s in info.splits if hf_split_name(s) == hf_split_name(split)), split)
    else:  # a config renamed at export (CONFIG=TARGET)
        info = DatasetInfo(name=name, group=name, title=name, kind="dataset",
                           description=f"config {name} of {repo_dir}", homepage="", licence="",
                           citation="", classes=tuple(arrays[2]))
        split_name = split
    where = str(Path(repo_dir) / DATA / name / f"{hf_split_name(split)}-*.parquet")
    images, labels, classes, meta = _admit(arrays, info, split_name, where, registered=registered, vouched=vouched)
    metadata = None
    if with_metadata and meta is not None:
        names = meta.dtype.names or ()  # (a structured array: never None)
        fields = list(info.metadata_fields) or list(names)
        cols = {"label": labels.astype(np.int32)} if "label" in fields and "label" not in names else {}
        cols.update({field_name(f, fields): meta[f] for f in names})  # writer_id: writer
        order = [f for f in fields if f in cols] + [f for f in cols if f not in fields]
        metadata = np.empty(len(labels), dtype=[(f, cols[f].dtype) for f in order])
        for f in order:
            metadata[f] = cols[f]
    ds = DatasetSplit(name, split_name, images, labels, info, metadata,
                      source=f"hf repository {repo_dir}", status={}, stored_orientation="upright")
    ds.classes = list(classes)
    ds.synthetic = config_is_synthetic(repo_dir, name)
    return ds
