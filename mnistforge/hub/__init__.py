"""hub: Hugging Face dataset repositories: export (parquet + card + Croissant), checks, push.

Sits above the loaders (targets are loaded with :func:`mnistforge.load`) and uses the codec in
:mod:`mnistforge.io.hf` (schema, PNG, parquet shards, reading a repository folder back).

>>> import numpy as np, tempfile, os
>>> from mnistforge.hub import ExportConfig, SplitData, export_hf, load_hf_split
>>> repo = os.path.join(tempfile.mkdtemp(), "repo")
>>> imgs = np.zeros((3, 28, 28), np.uint8); labels = np.array([0, 1, 1])
>>> cfg = ExportConfig("toy", {"train": SplitData(imgs, labels)}, classes=["a", "b"])
>>> _ = export_hf(repo, [cfg], workers=1)
>>> images, labels2, classes, meta = load_hf_split(repo, "toy", "train")
>>> images.shape, labels2.tolist(), classes
((3, 28, 28), [0, 1, 1], ['a', 'b'])
"""
from ..io.hf.parquet import MAX_SHARD_BYTES, PARQUET_OPTIONS, ROW_GROUP_SIZE, shard_bounds, write_split
from ..io.hf.png import PNG_COMPRESS_LEVEL, decode_pngs, encode_batch, encode_png, encode_pngs
from ..io.hf.repo import CARD, is_hf_repo, read_card, read_split, read_split_table, repo_configs
from ..io.hf.schema import SplitData, features_for, hf_split_name
from .card import card_header, dataset_card
from .check import verify_repo
from .croissant import CROISSANT, croissant_metadata
from .export import ExportConfig, export_hf
from .push import push_to_hub
from .targets import config_from_dataset, configs_from_targets, default_splits, parse_target

#: ``load_hf_split(repo, config, split) -> (images, labels, classes, metadata)``.
load_hf_split = read_split

__all__ = ["ExportConfig", "SplitData", "export_hf", "configs_from_targets", "config_from_dataset", "default_splits",
           "parse_target", "verify_repo", "push_to_hub", "read_card", "repo_configs", "is_hf_repo", "load_hf_split",
           "read_split", "read_split_table", "features_for", "hf_split_name", "encode_png", "encode_pngs",
           "encode_batch", "decode_pngs", "shard_bounds", "write_split", "dataset_card", "card_header",
           "croissant_metadata", "CARD", "CROISSANT", "PNG_COMPRESS_LEVEL", "ROW_GROUP_SIZE", "MAX_SHARD_BYTES",
           "PARQUET_OPTIONS"]
