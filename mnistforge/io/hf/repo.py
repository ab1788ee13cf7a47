"""Read a Hub dataset repository folder: the card's YAML header, configs, shards, splits as arrays.

Knows the layout (``README.md`` + ``data/<config>/<split>-NNNNN-of-NNNNN.parquet``),
not the datasets: :func:`read_split` returns NumPy arrays; the loaders wrap them.
"""
from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DatasetNotFoundError, FormatError, MissingFileError, require
from .parquet import DATA
from .schema import PIXELS, ROW_ID, hf_split_name
from ..types import StrPath
from ..hashing import sha256_file
from .png import decode_pngs

if TYPE_CHECKING:
    import datasets
    import pyarrow as pa


CARD = "README.md"
#: The first lines of a config section (``## Config `NAME```) of a card whose data was built
#: from a synthetic SD19: what marks an export (and what is read back from one) synthetic.
SYNTHETIC_NOTE = ("**Synthetic data.** Built from a synthetic SD19 replica (`mnistforge "
                  "synth-sd19`), not from NIST's handwriting: the images, sizes and any scores "
                  "describe the pipeline, not the real dataset.")


def config_is_synthetic(repo_dir: StrPath, name: str) -> bool:
    """Whether the card of ``repo_dir`` marks config ``name`` synthetic (its first lines)."""
    try:
        text = (Path(repo_dir) / CARD).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    head = f"## Config `{name}`\n"
    return head in text and text.split(head, 1)[1].lstrip("\n").startswith(SYNTHETIC_NOTE)


def read_card(repo_dir: StrPath) -> dict[str, Any]:
    """Parse the YAML header of ``repo_dir/README.md`` (the caller's own copy). Raises :class:`MissingFileError` when
    there is no card and :class:`FormatError` when the header is missing or malformed."""
    return copy.deepcopy(_card_header(repo_dir))   # the parse is shared: a caller may change its copy


def _card_header(repo_dir: StrPath) -> dict[str, Any]:
    """:func:`read_card`'s header, shared with other callers: for readers that change nothing."""
    import yaml

    path = Path(repo_dir) / CARD
    if not path.is_file():
        raise MissingFileError("no dataset card", path=path, expected="README.md with a YAML header",
                               found="nothing", hint="export the folder with `mnistforge export hf`")
    text = path.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise FormatError("dataset card without YAML header", path=path,
                          expected="a '---' delimited YAML block at the top", found=text[:40])
    try:
        header = _parse_header(m.group(1))
    except yaml.YAMLError as e:
        raise FormatError("dataset card YAML does not parse", path=path, expected="valid YAML",
                          found=str(e).splitlines()[0]) from e
    if not isinstance(header, dict):
        raise FormatError("dataset card YAML is not a mapping", path=path, expected="a mapping",
                          found=type(header).__name__)
    return header


def _parse_header(text: str) -> object:
    """The card's YAML header parsed, with libyaml's loader where PyYAML has it (15x faster
    than the pure-Python one)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


_SHARD_LINE = re.compile(r"^- `([^`]+\.parquet)`: `([0-9a-f]{64})`$", re.M)
#: the card's "Shards (xxh3_128)" lines (exports from this version on; older ones have none)
_FAST_LINE = re.compile(r"^- `([^`]+\.parquet)`: `([0-9a-f]{32})`$", re.M)


def recorded_shard_fast_hashes(repo_dir: StrPath) -> dict[str, str]:
    """``{shard path relative to repo_dir: XXH3-128}`` as the card records them ("Shards
    (xxh3_128)"); empty for an export written before they were recorded (its sha256 then)."""
    card = Path(repo_dir) / CARD
    if not card.is_file():
        return {}
    return dict(_FAST_LINE.findall(card.read_text(encoding="utf-8", errors="replace")))


def recorded_shard_hashes(repo_dir: StrPath) -> dict[str, str]:
    """``{shard path relative to repo_dir: sha256}`` as the export recorded them. The card lists every shard under
    "Shards (sha256)"; ``croissant.json`` (when written) holds the same digests.  Empty for a folder exported before
    shard hashes were recorded."""
    repo_dir = Path(repo_dir)
    out: dict[str, str] = {}
    card = repo_dir / CARD
    if card.is_file():
        out.update(_SHARD_LINE.findall(card.read_text(encoding="utf-8", errors="replace")))
    croissant = repo_dir / "croissant.json"
    if croissant.is_file():
        try:
            doc = json.loads(croissant.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            doc = {}
        for d in doc.get("distribution") or [] if isinstance(doc, dict) else []:
            if isinstance(d, dict) and d.get("sha256") and d.get("contentUrl"):
                out.setdefault(str(d["contentUrl"]), str(d["sha256"]))
    return out


def shard_problems(repo_dir: StrPath, configs: Mapping[str, Mapping[str, list[str]]] | None = None) -> list[str]:
    """Every shard against the sha256 the export recorded (card / croissant): re-hashed, never
    trusted.  A shard missing, changed, swapped with another, or present but not recorded is a
    problem; a folder exported before hashes were recorded gives none (nothing to compare)."""
    repo_dir = Path(repo_dir)
    recorded = recorded_shard_hashes(repo_dir)
    if not recorded:
        return []
    configs = repo_configs(repo_dir) if configs is None else configs
    folders = tuple(f"{DATA}/{c}/" for c in configs)
    recorded = {r: d for r, d in recorded.items() if r.startswith(folders)}
    problems: list[str] = []
    listed = {p for splits in configs.values() for paths in splits.values() for p in paths}
    for rel, digest in sorted(recorded.items()):
        p = repo_dir / rel
        if not p.is_file():
            problems.append(f"{rel}: shard missing (recorded sha256 {digest[:16]}...)")
            continue
        got = sha256_file(p)
        if got != digest:
            other = next((r for r, d in recorded.items() if d == got and r != rel), None)
            why = f"holds the content of {other}" if other else "content changed"
            problems.append(f"{rel}: sha256 {got[:16]}... differs from the recorded "
                            f"{digest[:16]}... ({why})")
    data = repo_dir / DATA
    on_disk = {r for r in (p.relative_to(repo_dir).as_posix() for p in data.rglob("*.parquet"))
               if r.startswith(folders)} if data.is_dir() else set()
    for rel in sorted(on_disk - set(recorded)):
        problems.append(f"{rel}: a shard the export did not record")
    for rel in sorted(set(listed) - set(recorded)):
        if not any(ch in rel for ch in "*?["):
            problems.append(f"{rel}: listed in the card without a recorded sha256")
    return problems


def is_hf_repo(root: StrPath, config: str | None = None) -> bool:
    """True when ``root`` looks like an exported repository (README.md + data/<config>/).

    >>> is_hf_repo("/nonexistent")
    False
    """
    # plain strings first: every folder load asks this, and most folders are no export
    base = os.fspath(root)
    if not os.path.isfile(os.path.join(base, CARD)) or not os.path.isdir(os.path.join(base, DATA)):
        return False
    root = Path(root)
    if config is None:
        return any(p.is_dir() for p in (root / DATA).iterdir())
    return (root / DATA / config).is_dir()


def repo_configs(repo_dir: StrPath) -> dict[str, dict[str, list[str]]]:
    """``{config: {split: [shard paths relative to repo_dir]}}`` as the card declares them."""
    header = _card_header(repo_dir)
    out: dict[str, dict[str, list[str]]] = {}
    for entry in header.get("configs") or []:
        splits: dict[str, list[str]] = {}
        files = entry.get("data_files") or []
        if isinstance(files, (str, list)) and not (files and isinstance(files[0], dict)):
            files = [{"split": "train", "path": files}]
        for df in files:
            paths = df["path"] if isinstance(df["path"], list) else [df["path"]]
            splits[str(df["split"])] = [str(p) for p in paths]
        out[str(entry["config_name"])] = splits
    return out


def shard_paths(repo_dir: StrPath, config: str, split: str) -> list[Path]:
    repo_dir = Path(repo_dir)
    configs = repo_configs(repo_dir)
    if config not in configs:
        raise DatasetNotFoundError(f"config {config!r} not in this repository", path=repo_dir / CARD,
                                   expected="one of " + ", ".join(configs), found=config)
    splits = configs[config]
    name = hf_split_name(split)
    if name not in splits:
        raise DatasetNotFoundError(f"split {split!r} not in config {config!r}", path=repo_dir / CARD,
                                   expected="one of " + ", ".join(splits), found=split)
    paths: list[Path] = []
    for pattern in splits[name]:
        hits = sorted(repo_dir.glob(pattern)) if any(ch in pattern for ch in "*?[") else [repo_dir / pattern]
        for p in hits:
            if not p.is_file():
                raise MissingFileError("shard listed in the card is missing", path=p, expected="a parquet file",
                                       found="nothing", hint="re-export the repository")
            paths.append(p)
    if not paths:
        raise MissingFileError(f"no shard for {config}/{split}", path=repo_dir,
                               expected=f"files matching {splits[name]}", found="none")
    return paths


def read_split_table(repo_dir: StrPath, config: str, split: str) -> pa.Table:
    """The split as one pyarrow Table (all shards, in order)."""
    require("pyarrow", "hf", "reading a Hugging Face export")
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables: list[pa.Table] = []
    for p in shard_paths(repo_dir, config, split):
        try:
            tables.append(pq.read_table(p))
        except (pa.ArrowInvalid, OSError) as e:
            raise FormatError("unreadable parquet shard", path=p, expected="a parquet file", found=str(e)) from e
    schema = tables[0].schema
    for p, t in zip(shard_paths(repo_dir, config, split), tables):
        if not t.schema.equals(schema, check_metadata=False):
            raise FormatError("shards of one split disagree on their columns", path=p,
                              expected=str(schema), found=str(t.schema))
    return pa.concat_tables(tables)


def features_of(table: pa.Table, repo_dir: StrPath, config: str) -> datasets.Features:
    import datasets

    meta = table.schema.metadata or {}
    if b"huggingface" in meta:
        info = json.loads(meta[b"huggingface"])
        return datasets.Features.from_dict(info["info"]["features"])
    for entry in read_card(repo_dir).get("dataset_info") or []:
        if entry.get("config_name") == config:
            return datasets.Features._from_yaml_list(entry["features"])
    raise FormatError("no feature definition for this config", path=Path(repo_dir) / CARD,
                      expected="huggingface schema metadata or dataset_info", found="neither")


def png_bytes(table: pa.Table) -> list[bytes]:
    """The PNG bytes of a table's ``image`` column (struct of bytes and path, or plain binary)."""
    import pyarrow as pa

    image = table.column("image").combine_chunks()
    blobs: list[bytes] = (image.field("bytes") if pa.types.is_struct(image.type) else image).to_pylist()
    return blobs


def _png_size(blob: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """(height, width) from a PNG's IHDR chunk, or None when ``blob`` is not a PNG."""
    blob = bytes(blob[:24])
    if len(blob) < 24 or blob[12:16] != b"IHDR":
        return None
    return int.from_bytes(blob[20:24], "big"), int.from_bytes(blob[16:20], "big")


def pixels_of(table: pa.Table) -> np.ndarray:
    """The ``pixels`` column as an N x H x W uint8 array, without decoding. ``Array2D`` columns carry their shape;
    binary columns (H*W bytes per row) take it from the first row's PNG header."""
    import pyarrow as pa

    flat: np.ndarray

    col = table.column(PIXELS).combine_chunks()
    if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
        n = len(col)
        if n == 0:
            return np.zeros((0, 28, 28), np.uint8)
        hw = _png_size(png_bytes(table.slice(0, 1))[0])
        _, offs_buf, data_buf = col.buffers()
        offs = np.frombuffer(offs_buf, np.int64 if pa.types.is_large_binary(col.type) else np.int32,
                             n + 1, col.offset * (8 if pa.types.is_large_binary(col.type) else 4))
        lengths = np.diff(offs)
        if hw is None or col.null_count or (lengths != hw[0] * hw[1]).any():
            raise FormatError("pixels column is not one H x W image per row", path=PIXELS,
                              expected=f"{n} rows of {hw[0] * hw[1] if hw else '?'} bytes "
                                       "(the PNG's size)",
                              found=f"rows of {sorted(set(lengths.tolist()))[:5]} bytes, "
                                    f"{col.null_count} nulls")
        flat = np.frombuffer(data_buf, np.uint8, int(offs[-1] - offs[0]), int(offs[0]))
        return flat.reshape(n, hw[0], hw[1])
    lists = getattr(col, "storage", col)
    n = len(lists)
    rows = lists.flatten()
    h = len(rows) // n if n else 0
    flat = rows.flatten().to_numpy(zero_copy_only=False)
    w = len(flat) // (n * h) if n and h else 0
    if n * h * w != len(flat):
        raise FormatError("pixels column is not a stack of equal-size images", path=PIXELS,
                          expected="N x H x W uint8", found=f"{len(flat)} values for {n} rows")
    return flat.astype(np.uint8, copy=False).reshape(n, h, w)


def read_split(repo_dir: StrPath, config: str, split: str
               ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray | None]:
    """Load one split of an exported repository as NumPy arrays.

    Returns ``(images, labels, classes, metadata)``: uint8 N x 28 x 28 upright images, int64 labels, the ClassLabel
    names, and a structured array of the metadata columns but ``row_id`` (``None`` when none). ``split`` may use ``-``
    or ``_``.  This is what ``mnistforge.load(config, split, root=repo_dir)`` runs on such a folder.

    >>> images, labels, classes, meta = read_split("hf-repo", "qmnist", "test")  # doctest: +SKIP
    """
    table = read_split_table(repo_dir, config, split)
    features = features_of(table, repo_dir, config)
    for col in ("image", "label"):
        if col not in table.column_names:
            raise FormatError(f"column {col!r} missing", path=Path(repo_dir) / DATA / config,
                              expected="image and label columns", found=", ".join(table.column_names))
    if PIXELS in table.column_names:      # the same images, stored undecoded
        images = pixels_of(table)
    else:
        images = decode_pngs(png_bytes(table))
    labels = table.column("label").to_numpy().astype(np.int64)
    label_feat = features["label"]
    classes = list(getattr(label_feat, "names", None) or [])
    metadata: np.ndarray | None = None
    extra = [c for c in table.column_names if c not in ("image", "label", PIXELS, ROW_ID)]
    if extra:
        cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in extra}
        dtype: list[tuple[str, np.dtype]] = []
        for c, v in cols.items():
            dt = v.dtype if v.dtype != object else np.dtype(f"U{max((len(str(x)) for x in v), default=1)}")
            dtype.append((c, dt))
        metadata = np.empty(len(labels), dtype=dtype)
        for c, v in cols.items():
            metadata[c] = v
    return images, labels, classes, metadata
