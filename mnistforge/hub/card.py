"""The dataset card (README.md): YAML header for the Hub, then provenance, labels, caveats, licence, citation."""
from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..io.hashing import sha256_file, xxh3_file
from ..io.hf.parquet import PARQUET_OPTIONS, ROW_GROUP_SIZE
from ..io.hf.png import DEFAULT_PNG, PNG_ENCODERS
from ..io.hf.repo import SYNTHETIC_NOTE
from ..io.hf.schema import PIXELS, ROW_ID
from ..io.types import StrPath
from ..registry import license_link, license_text
from .label_votes import card_section as label_votes_section
from .label_votes import has_label_votes, study_bibtex

#: Used when the registry has no entry for a config (arrays exported directly).
DEFAULT_LICENSE = "other"


def _software_versions() -> dict[str, str]:
    import isal
    import PIL
    import pyarrow

    return {"mnistforge": __version__, "pillow": PIL.__version__, "pyarrow": pyarrow.__version__,
            "zlib": zlib.ZLIB_VERSION, "isal": isal.__version__, "numpy": np.__version__}


def _size_category(n: int) -> str:
    for lim, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                      (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if n < lim:
            return name
    return "10M<n<100M"


def _shapes_text(configs: list[dict[str, Any]]) -> str:
    shapes = sorted({tuple(sh) for c in configs for sh in c.get("image_shapes", [(28, 28)])})
    return " or ".join(f"{h}x{w}" for h, w in shapes)


def synthetic_configs(configs: list[dict[str, Any]]) -> list[str]:
    """Names of the configs built from a synthetic SD19."""
    return [c["name"] for c in configs if getattr(c["config"], "synthetic", False)]


def card_header(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """The YAML header of the dataset card, as a dict (see :func:`dataset_card`)."""
    licenses = sorted({c["config"].license or DEFAULT_LICENSE for c in configs})
    total = sum(s["num_examples"] for c in configs for s in c["splits"])
    header: dict[str, Any] = {"pretty_name": None, "license": licenses[0] if len(licenses) == 1 else licenses}
    other = sorted({c["config"].license_name for c in configs
                    if (c["config"].license or DEFAULT_LICENSE) == "other" and c["config"].license_name})
    if other:
        header["license_name"] = other[0] if len(other) == 1 else "-and-".join(other)
        if len(other) == 1 and license_link(other[0]):
            header["license_link"] = license_link(other[0])
    header.update({
        "task_categories": ["image-classification"],
        "size_categories": [_size_category(total)],
        "tags": ["mnist", "handwriting", "nist", "mnistforge"]
        + (["synthetic"] if synthetic_configs(configs) else []),
        "configs": [],
        "dataset_info": [],
    })
    for i, c in enumerate(configs):
        entry = {"config_name": c["name"],
                 "data_files": [{"split": s["name"], "path": list(s["files"])} for s in c["splits"]]}
        if i == 0:
            entry["default"] = True
        header["configs"].append(entry)
        header["dataset_info"].append({
            "config_name": c["name"],
            "features": c["features"]._to_yaml_list(),
            "splits": [{"name": s["name"], "num_bytes": s["num_bytes"],
                        "num_examples": s["num_examples"]} for s in c["splits"]],
            "download_size": sum(s["download_size"] for s in c["splits"]),
            "dataset_size": sum(s["num_bytes"] for s in c["splits"]),
        })
    cites = [c for c in dict.fromkeys((c["config"].citation or "").strip() for c in configs) if c]
    if any(has_label_votes(c["features"]) for c in configs):  # the study behind those columns
        cites += [b for b in study_bibtex() if b not in cites]
    if cites:
        header["citations"] = cites
    return header


def _yaml(obj: Any) -> str:
    import yaml

    class _Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML: no type stubs installed
        pass

    def _str(dumper: Any, data: str) -> Any:  # multi-line strings (BibTeX) as literal blocks
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _str)
    text: str = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000,
                          default_flow_style=False)
    return text


def _render_value(v: Any, indent: int = 0) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(v, dict):
        for k in v:
            item = v[k]
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}- `{k}`:")
                lines += _render_value(item, indent + 1)
            else:
                lines.append(f"{pad}- `{k}`: {_inline(item)}")
    elif isinstance(v, list):
        for item in v:
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}-")
                lines += _render_value(item, indent + 1)
            else:
                lines.append(f"{pad}- {_inline(item)}")
    else:
        lines.append(f"{pad}- {_inline(v)}")
    return lines


def _inline(v: Any) -> str:
    if isinstance(v, str) and re.fullmatch(r"[0-9a-f]{32,64}", v):
        return f"`{v}`"
    if isinstance(v, (dict, list)):
        return "`" + json.dumps(v, sort_keys=True) + "`"
    return str(v)


def _span(values: list[int]) -> str:
    """``500`` or ``83-84``: the least and the most of ``values``."""
    return f"{min(values):,}" + (f"-{max(values):,}" if max(values) != min(values) else "")


def _label_table(classes: list[str], note: str | None) -> list[str]:
    shown = ", ".join(f"{i} = `{c}`" for i, c in enumerate(classes))
    return ([note, ""] if note else []) + [f"Labels ({len(classes)} classes): {shown}."]


def _pixels_usage(configs: list[dict[str, Any]], where: str) -> list[str]:
    """Markdown lines: how a plain ``datasets`` user reads the ``pixels`` column (none without one)."""
    with_px = [c for c in configs if PIXELS in c["features"]]
    if not with_px:
        return []
    c = with_px[0]
    split = c["splits"][0]["name"]
    h, w = sorted(c.get("image_shapes", [(28, 28)]))[0]
    if c["features"][PIXELS].dtype == "binary":
        layout = f"`{PIXELS}` holds each image's {h}x{w} pixels as {h * w} raw bytes, row-major"
        to_array = (f'images = ds.with_format("numpy", columns=["{PIXELS}"])[:]["{PIXELS}"]'
                    f'.view("uint8").reshape(-1, {h}, {w})')
    else:
        layout = f'`{PIXELS}` holds each image as an `Array2D(({h}, {w}), "uint8")`'
        to_array = f'images = ds.with_format("numpy", columns=["{PIXELS}"], dtype="uint8")[:]["{PIXELS}"]'
    return [
        f"The same images, undecoded: {layout} (the PNGs decode to exactly these pixels). "
        "To get them as one uint8 NumPy array without decoding PNGs, load only that column "
        "and the labels:",
        "",
        "```python",
        f'ds = load_dataset({where!r}, {c["name"]!r}, split={split!r}, columns=["{PIXELS}", "label"])',
        f"{to_array}  # (N, {h}, {w}) uint8",
        'labels = ds.with_format("numpy", columns=["label"])[:]["label"]',
        "```",
        "",
    ]


def dataset_card(configs: list[dict[str, Any]], *, repo_id: str | None = None, title: str | None = None,
                 folder: StrPath | None = None, png: str | None = None) -> str:
    """Render README.md: YAML header then the human description (``png``: the PNG encoder used). ``configs`` are the
    per-config summaries built by :func:`export_hf` (``config``, ``name``, ``features``, ``splits``)."""
    header = card_header(configs)
    title = title or (configs[0]["config"].pretty_name if len(configs) == 1 else None) \
        or ("MNIST family: " + ", ".join(c["name"] for c in configs))
    header["pretty_name"] = title
    where = repo_id or "REPO_DIR"
    first = configs[0]
    first_split = first["splits"][0]["name"]
    versions = _software_versions()
    out = ["---", _yaml(header).rstrip("\n"), "---", "", f"# {title}", ""]
    synthetic = synthetic_configs(configs)
    if synthetic:
        out += [SYNTHETIC_NOTE.replace("Built from", "Config" + ("s " if len(synthetic) > 1 else " ")
                                       + ", ".join(f"`{n}`" for n in synthetic)
                                       + (" were" if len(synthetic) > 1 else " was") + " built from"),
                ""]
    out += [
        "Handwritten-character datasets of the MNIST family, exported by "
        f"[mnistforge](https://pypi.org/project/mnistforge/) {versions['mnistforge']} "
        "as parquet files that load with the standard `datasets` API (no loading script).",
        "",
        f"Every row holds `image` (a {_shapes_text(configs)} grayscale PNG, **upright**, ink high: 255 = ink, "
        "0 = background), `label` (a `ClassLabel` whose names are the real characters) and, "
        "where the source knows them, metadata columns tracing the image back to NIST; "
        f"`{ROW_ID}` is the row's index in its split. Shards hold consecutive rows: readers that share them out "
        "(`datasets.distributed.split_dataset_by_node`) each get whole shards when their number divides the "
        "shard count, and can check and join rows by `row_id`.",
        "",
        "| config | split | rows | shards | rows a shard | bytes a shard | columns |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in configs:
        cols = ", ".join(f"`{k}`" for k in c["features"])
        for s in c["splits"]:
            out.append(f"| `{c['name']}` | `{s['name']}` | {s['num_examples']:,} | {len(s['files'])} | "
                       f"{_span(s['shard_rows'])} | {_span(s['shard_bytes'])} | {cols} |")
    out += [
        "",
        "## Usage",
        "",
        "```python",
        "from datasets import load_dataset",
        f"ds = load_dataset({where!r}, {first['name']!r}, split={first_split!r})",
        "ds[0]['image'], ds.features['label'].int2str(ds[0]['label'])",
        "",
        "import mnistforge  # same data as NumPy arrays, from a local copy of this folder",
        f"d = mnistforge.load({first['name']!r}, {first_split!r}, root='REPO_DIR')",
        "d.images.shape, d.labels[:10], d.classes",
        "```",
        "",
    ] + _pixels_usage(configs, where) + [
        "Split names use `_` where mnistforge uses `-` (the Hub only accepts `\\w+` split names): "
        "`train_without_validation` is mnistforge's `train-without-validation`.",
        "",
    ]
    for c in configs:
        cfg = c["config"]
        out += [f"## Config `{cfg.name}`", ""]
        if getattr(cfg, "synthetic", False):
            out += [SYNTHETIC_NOTE, ""]
        if cfg.description:
            out += [cfg.description.strip(), ""]
        out += ["### Labels", ""] + _label_table(cfg.classes, cfg.label_note) + [""]
        meta_cols = [k for k in c["features"] if k not in ("image", "label", PIXELS, ROW_ID)]
        if meta_cols:
            out += ["### Metadata columns", "",
                    ", ".join(f"`{k}` ({c['features'][k].dtype})" for k in meta_cols)
                    + ": one value per image, as `mnistforge.load(..., with_metadata=True)` "
                      "exposes them.", ""]
        if has_label_votes(c["features"]):
            out += label_votes_section(cfg.name)
        out += ["### Provenance", ""]
        if cfg.source:
            out += [f"Source: {cfg.source}", ""]
        prov = dict(cfg.provenance)
        prov.setdefault("exported_by", f"mnistforge {versions['mnistforge']}")
        out += _render_value(prov) + [""]
        out += ["Shards (sha256):", ""]
        for s in c["splits"]:
            for rel in s["files"]:
                digest = sha256_file(Path(folder) / rel) if folder is not None else "?"
                out.append(f"- `{rel}`: `{digest}`")
        out.append("")
        if folder is not None:  # the fast hash a first load checks (check=True: the sha256 above)
            out += ["Shards (xxh3_128):", ""]
            out += [f"- `{rel}`: `{xxh3_file(Path(folder) / rel)}`" for s in c["splits"] for rel in s["files"]]
            out.append("")
        if cfg.caveats:
            out += ["### Caveats", ""] + [f"- {x}" for x in cfg.caveats] + [""]
    out += [
        "## Reproducibility",
        "",
        f"PNG images are encoded by mnistforge's `{png or DEFAULT_PNG}` encoder "
        f"({PNG_ENCODERS[png or DEFAULT_PNG]}) "
        "with no ancillary chunks (no timestamps); parquet files are written "
        f"by pyarrow ({', '.join(f'{k}={v}' for k, v in PARQUET_OPTIONS.items())}, "
        f"{ROW_GROUP_SIZE} rows per row group"
        + ("; the binary `pixels` column without dictionary"
           if any(c["features"].get(PIXELS) is not None and c["features"][PIXELS].dtype == "binary"
                  for c in configs) else "")
        + ") with only the feature definition as schema "
        "metadata. Re-exporting the same data with the same software gives byte-identical files "
        "(croissant.json: but for its date). "
        "Software used: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        "",
        "## Licence",
        "",
    ]
    for c in configs:
        cfg = c["config"]
        lic = cfg.license or DEFAULT_LICENSE
        name = f" (`{cfg.license_name}`: {license_text(cfg.license_name) or cfg.license_name})" \
            if cfg.license_name else ""
        out.append(f"- `{cfg.name}`: `{lic}`{name}")
    out += ["", "## Citation", ""]
    cites = header.get("citations") or []
    if cites:
        for cite in cites:
            out += ["```bibtex", cite, "```", ""]
    else:
        out += ["No citation recorded for these configs.", ""]
    return "\n".join(out).rstrip("\n") + "\n"
