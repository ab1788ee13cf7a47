"""Check an exported repository before it is shared (card, shards, hashes, counts, features,
load_dataset)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckFailed, MnistforgeError, require
from ..io.hf.png import decode_pngs
from ..io.hf.repo import (features_of, png_bytes, read_card, read_split, read_split_table, repo_configs,
                          shard_paths, shard_problems)
from ..io.hf.schema import PIXELS, ROW_ID
from ..io.types import StrPath
from ..progress import quiet_datasets


def verify_repo(repo_dir: StrPath, *, with_datasets: bool = True, decode: bool = True) -> dict[str, dict[str, int]]:
    """Check an exported folder before it is shared; return ``{config: {split: rows}}``: the card's YAML parses and
    its ``configs`` and ``dataset_info`` agree; every shard exists with the sha256 the export recorded (re-hashed), the
    card's row counts and features; ``row_id`` counts the rows in order across the shards; labels are within the
    ClassLabel range; (``decode``) every image decodes to the same size; (``with_datasets``) ``datasets.load_dataset``
    loads each split offline, in a throw-away cache, with those counts and features.  Raises
    :class:`~mnistforge.errors.CheckFailed` listing every problem (never a raw pyarrow or Pillow error)."""
    require("datasets", "hf", "checking a Hugging Face export")
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo_dir = Path(repo_dir)
    header = read_card(repo_dir)
    problems: list[str] = []
    configs = repo_configs(repo_dir)
    infos = {e.get("config_name"): e for e in header.get("dataset_info") or []}
    if set(infos) != set(configs):
        problems.append(f"configs {sorted(configs)} and dataset_info {sorted(infos)} differ")
    problems += shard_problems(repo_dir, configs)
    counts: dict[str, dict[str, int]] = {}
    for config, splits in configs.items():
        info = infos.get(config) or {}
        declared = {s["name"]: s["num_examples"] for s in info.get("splits") or []}
        if set(declared) != set(splits):
            problems.append(f"{config}: data_files splits {sorted(splits)} but dataset_info "
                            f"splits {sorted(declared)}")
        try:
            card_features = datasets.Features._from_yaml_list(info["features"])
        except Exception as e:  # noqa: BLE001 - report any malformed entry
            problems.append(f"{config}: dataset_info features unreadable ({e})")
            card_features = None
        for split in splits:
            try:
                shards = shard_paths(repo_dir, config, split)
            except MnistforgeError as e:
                problems.append(str(e))
                continue
            rows = 0
            for p in shards:
                try:
                    pf = pq.ParquetFile(p)
                    start, rows = rows, rows + pf.metadata.num_rows
                    feats = features_of(pf.schema_arrow.empty_table(), repo_dir, config)
                    ids = pf.read(columns=[ROW_ID]).column(ROW_ID).to_numpy() if ROW_ID in feats else None
                except (pa.ArrowException, OSError, ValueError, MnistforgeError) as e:
                    problems.append(f"{p}: unreadable parquet shard ({type(e).__name__}: {e})")
                    continue
                if card_features is not None and feats != card_features:
                    problems.append(f"{p}: parquet features differ from the card's")
                if ids is not None and not np.array_equal(ids, np.arange(start, rows)):
                    problems.append(f"{p}: {ROW_ID} is not {start}..{rows - 1} in order (shards reordered or edited?)")
            counts.setdefault(config, {})[split] = rows
            if split in declared and declared[split] != rows:
                problems.append(f"{config}/{split}: card says {declared[split]} rows, "
                                f"shards hold {rows}")
            if decode and not problems:
                try:
                    images, labels, classes, _ = read_split(repo_dir, config, split)
                except (MnistforgeError, pa.ArrowException, OSError) as e:
                    problems.append(f"{config}/{split}: does not decode ({e})")
                    continue
                if len(labels) and (labels.min() < 0 or labels.max() >= len(classes)):
                    problems.append(f"{config}/{split}: labels outside 0..{len(classes) - 1}")
                problems += _pixels_agree(repo_dir, config, split, images)
    if with_datasets and not problems:
        problems += _check_with_datasets(repo_dir, configs, counts, infos)
    if problems:
        raise CheckFailed(f"{repo_dir}: the exported repository failed its checks:\n  - " + "\n  - ".join(problems))
    return counts


def _pixels_agree(repo_dir: StrPath, config: str, split: str, images: np.ndarray) -> list[str]:
    """With a ``pixels`` column, the PNGs must decode to exactly those pixels."""
    table = read_split_table(repo_dir, config, split)
    if PIXELS not in table.column_names:
        return []
    decoded = decode_pngs(png_bytes(table))
    if decoded.shape != images.shape or not (decoded == images).all():
        bad: np.ndarray | list[int] = np.flatnonzero((decoded != images).reshape(len(images), -1).any(axis=1)) \
            if decoded.shape == images.shape else []
        return [f"{config}/{split}: the image and pixels columns disagree"
                + (f" at {len(bad)} rows (first {bad[0]})" if len(bad) else "")]
    return []


def _check_with_datasets(repo_dir: StrPath, configs: dict[str, dict[str, list[str]]],
                         counts: dict[str, dict[str, int]], infos: dict[Any, Any]) -> list[str]:
    import datasets

    problems: list[str] = []
    cache = tempfile.mkdtemp(prefix="mnistforge-hf-check-")
    try:
        for config, splits in configs.items():
            want = datasets.Features._from_yaml_list(infos[config]["features"])
            for split in splits:
                try:
                    with quiet_datasets():
                        ds = datasets.load_dataset(str(repo_dir), config, split=split, cache_dir=cache)
                except Exception as e:  # noqa: BLE001 - any failure of the standard API is a finding
                    problems.append(f"datasets.load_dataset({config!r}, split={split!r}) failed: "
                                    f"{type(e).__name__}: {e}")
                    continue
                if ds.num_rows != counts[config][split]:
                    problems.append(f"{config}/{split}: datasets loads {ds.num_rows} rows, "
                                    f"expected {counts[config][split]}")
                if ds.features != want:
                    problems.append(f"{config}/{split}: datasets sees features {ds.features}")
                del ds
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return problems
