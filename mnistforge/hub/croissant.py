"""A Croissant 1.0 JSON-LD description of an exported repository."""
from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from .._version import __version__
from ..io.hashing import sha256_file
from ..io.hf.parquet import DATA
from ..io.hf.schema import PIXELS, ROW_ID
from ..io.types import StrPath
from .card import DEFAULT_LICENSE

CROISSANT = "croissant.json"
CROISSANT_CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract",
    "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
    "repeated": "cr:repeated", "replace": "cr:replace", "separator": "cr:separator",
    "source": "cr:source", "subField": "cr:subField", "transform": "cr:transform",
    "samplingRate": "cr:samplingRate", "equivalentProperty": "cr:equivalentProperty",
}  # mlcroissant's own @context (a different one draws its warning)
_CROISSANT_TYPES = {"int8": "sc:Integer", "int16": "sc:Integer", "int32": "sc:Integer", "int64": "sc:Integer",
                    "uint8": "sc:Integer", "uint16": "sc:Integer", "uint32": "sc:Integer", "uint64": "sc:Integer",
                    "float32": "sc:Float", "float64": "sc:Float", "bool": "sc:Boolean", "string": "sc:Text"}


def croissant_metadata(configs: list[dict[str, Any]], folder: StrPath, *, repo_id: str | None = None,
                       title: str | None = None) -> dict[str, Any]:
    """A Croissant 1.0 JSON-LD document describing the same configs, splits and columns. One ``cr:FileObject`` per
    shard (with its sha256), one ``cr:FileSet`` and one ``cr:RecordSet`` per config; the split of a record comes from
    its shard's file name."""
    folder = Path(folder)
    licenses = sorted({c["config"].license or DEFAULT_LICENSE for c in configs})
    cites = [c["config"].citation.strip() for c in configs if c["config"].citation]
    url = f"https://huggingface.co/datasets/{repo_id}" if repo_id else None
    doc: dict[str, Any] = {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": title or (repo_id or "mnistforge-export").replace("/", "-"),
        "description": "MNIST-family datasets exported by mnistforge: "
                       + ", ".join(c["name"] for c in configs) + ".",
        "license": licenses[0] if len(licenses) == 1 else licenses,
        "version": __version__,
        # the export's date (UTC): the one value that changes from day to day
        "datePublished": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "citeAs": "\n\n".join(dict.fromkeys(cites)) or f"mnistforge {__version__} export",
        "distribution": [],
        "recordSet": [],
    }
    if url:
        doc["url"] = url
    for c in configs:
        name = c["name"]
        for s in c["splits"]:
            for rel in s["files"]:
                doc["distribution"].append({"@type": "cr:FileObject", "@id": rel, "name": rel, "contentUrl": rel,
                                            "encodingFormat": "application/x-parquet",
                                            "contentSize": f"{(folder / rel).stat().st_size} B",
                                            "sha256": sha256_file(folder / rel)})
        fs_id = f"parquet-files-for-config-{name}"
        doc["distribution"].append({"@type": "cr:FileSet", "@id": fs_id, "name": fs_id,
                                    "encodingFormat": "application/x-parquet", "includes": f"{DATA}/{name}/*.parquet"})

        def col(field_name: str, dtype: str, extract: dict[str, str], transform: dict[str, str] | None = None,
                description: str | None = None) -> dict[str, Any]:
            src: dict[str, Any] = {"fileSet": {"@id": fs_id}, "extract": extract}
            if transform:
                src["transform"] = transform
            out: dict[str, Any] = {"@type": "cr:Field", "@id": f"{name}/{field_name}", "name": f"{name}/{field_name}",
                   "dataType": dtype, "source": src}
            if description:
                out["description"] = description
            return out

        fields = [
            col("split", "sc:Text", {"fileProperty": "filename"},
                {"regex": r"^(\w+)-\d{5}-of-\d{5}\.parquet$"}, "split of the record"),
            col("image", "sc:ImageObject", {"column": "image"}, {"jsonPath": "bytes"},
                "28x28 grayscale PNG, upright, ink high"),
            col("label", "sc:Integer", {"column": "label"}, None,
                "class index; names: " + json.dumps(c["config"].classes, ensure_ascii=False)),
        ]
        for k, feat in c["features"].items():
            if k == PIXELS:
                fields.append(col(k, _CROISSANT_TYPES.get(feat.dtype, "sc:Text"), {"column": k}, None,
                                  "the image's pixels undecoded, uint8, row-major"
                                  + (" (raw bytes)" if feat.dtype == "binary" else "")))
            elif k not in ("image", "label"):
                fields.append(col(k, _CROISSANT_TYPES.get(feat.dtype, "sc:Text"), {"column": k}, None,
                                  "the row's index in its split" if k == ROW_ID else None))
        doc["recordSet"].append({"@type": "cr:RecordSet", "@id": name, "name": name,
                                 "description": c["config"].description or name, "field": fields})
    return doc


