"""``mnistforge sd19 info PATH``: what an SD19 source holds, against NIST's published table."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .common import add_inputs, add_json, add_progress, require_existing_path, write_json
from . import argtypes

if TYPE_CHECKING:
    from ..sd19.reader import SD19Source

NAME = "sd19"
HELP = "inspect an SD19 source (real or synthetic): edition, hierarchies, counts, anomalies"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "path")
    p.add_argument("action", choices=["info"], help="info: summarise the source")
    p.add_argument("path", help="folder holding the SD19 zips (by_write.zip, ...) or unpacked trees")
    p.add_argument("--reindex", action="store_true", help="ignore the cached index and walk the source again")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when there is any anomaly (unjoined characters, counts off the table)")
    p.add_argument("--workers", type=argtypes.workers, default=None, help="decoding processes (default: all cores)")
    add_json(p, "the summary")
    add_progress(p)


def sd19_summary(src: SD19Source) -> dict[str, Any]:
    """The facts ``sd19 info`` prints, as a dict (used by the tests and ``--json``)."""
    import numpy as np

    from ..sd19 import nist_table as nt

    ix = src.index
    n = len(ix)
    scale = n / nt.TOTAL_CHARACTERS
    anomalies = list(src.anomalies)
    parts: dict[str, dict[str, Any]] = {}
    for p in nt.PARTITION_ORDER:
        sel = ix["hsf"] == p
        pub = nt.PARTITIONS[p]
        row: dict[str, Any] = {"writers": int(len(np.unique(ix["writer"][sel]))),
               "writer_folders": int(len(np.unique(ix[["writer", "template"]][sel]))),
               "writer_range": f"{pub.first_writer:04d}-{pub.last_writer:04d}"}
        for f in nt.FIELDS:
            row[nt.FIELD_NAMES[f]] = [int((sel & (ix["field"] == f.encode())).sum()), pub.count(f)]
        parts[f"hsf_{p}"] = row
        w = ix["writer"][sel]
        if len(w) and (w.min() < pub.first_writer or w.max() > pub.last_writer):
            anomalies.append(f"hsf_{p}: writer ids {w.min()}..{w.max()} outside NIST's range "
                             f"{pub.first_writer}..{pub.last_writer}")
        if p > 2 and row["const"][0]:
            anomalies.append(f"hsf_{p}: {row['const'][0]} constitution characters (NIST has none past hsf_2)")
        if not sel.any():
            anomalies.append(f"hsf_{p}: no characters")
    if extra := sorted(set(ix["hsf"].tolist()) - set(nt.PARTITION_ORDER)):
        anomalies.append(f"unexpected partitions {extra}")
    counts = np.bincount(ix["ascii"], minlength=256)
    classes = {chr(c): [int(counts[c]), nt.CLASS_TOTALS[c]] for c in nt.ALL_CLASSES}
    if counts[0]:
        anomalies.append(f"{int(counts[0])} characters without a class")
    if odd := [c for c in np.flatnonzero(counts).tolist() if c and c not in nt.CLASS_TOTALS]:
        anomalies.append(f"classes outside NIST's 62: {[hex(c) for c in odd]}")
    # a character whose class does not belong to its field (digit box holding a letter, ...)
    kinds = {b"d": set(nt.DIGITS), b"u": set(nt.UPPERS), b"l": set(nt.LOWERS), b"c": set(nt.UPPERS) | set(nt.LOWERS)}
    for fb, allowed in kinds.items():
        sel = (ix["field"] == fb) & (ix["ascii"] > 0)
        if bad := int((~np.isin(ix["ascii"][sel], list(allowed))).sum()):
            anomalies.append(f"{bad} characters of field {fb.decode()} with a class outside that field")
    if full := n == nt.TOTAL_CHARACTERS:
        for part, row in parts.items():
            for f in nt.FIELDS:
                got, want = row[nt.FIELD_NAMES[f]]
                if got != want:
                    anomalies.append(f"{part} {nt.FIELD_NAMES[f]}: {got} characters, NIST publishes {want}")
        for ch, (got, want) in classes.items():
            if got != want:
                anomalies.append(f"class {ch!r}: {got} characters, NIST publishes {want}")
    dups = np.flatnonzero(ix["duplicate_of"] >= 0)
    n_dig_dups = int((ix["field"][dups] == b"d").sum())
    if full and n_dig_dups != nt.DUPLICATE_DIGITS:
        anomalies.append(f"{n_dig_dups} duplicated digit images, NIST's data has {nt.DUPLICATE_DIGITS}")
    other: dict[str, dict[str, Any]] = {}
    for h in src.hierarchies:
        if h == "by_write":
            continue
        t = src.trees[h]
        names = t.names
        other[h] = {"location": t.display, "png": sum(x.lower().endswith(".png") for x in names),
                    "mis": sum(x.lower().endswith(".mis") for x in names)}
    if "by_class" in other and other["by_class"]["png"]:
        n_hsf = sum(1 for x in src.trees["by_class"].names if x.lower().endswith(".png") and "/hsf_" in x)
        other["by_class"]["png_in_hsf_sets"] = n_hsf
        if n_hsf != n:
            anomalies.append(f"by_class holds {n_hsf} characters in its hsf_N sets, by_write {n}")
    from ..sd19.integrity import source_problems

    problems, _ = source_problems(src)
    anomalies += problems
    from ..sd19.completeness import description_path, synthetic_description

    desc = synthetic_description(src.path)    # what marks a source synthetic, not its path
    synthetic = (desc.get("config") or "synthetic") if desc is not None else (
        "unreadable synthetic-sd19.json (judged a real SD19)" if description_path(src.path).is_file() else None)
    return {
        "path": str(src.path), "edition": src.edition, "packaging": src.packaging,
        "hierarchies": list(src.hierarchies), "by_write": src.trees["by_write"].display,
        "fingerprint": src.fingerprint, "characters": [n, nt.TOTAL_CHARACTERS],
        "scale": round(scale, 6), "synthetic": synthetic,
        "classes_from": ".cls files" if src.cls_present and src.join_report is None else
                        (f"content join with {src.join_report.other}" if src.join_report else "nowhere"),
        "join": src.join_report.to_dict(limit=20) if src.join_report is not None else None,
        "partitions": parts, "classes": classes,
        "duplicates": [{"row": int(r), "duplicate_of": int(ix["duplicate_of"][r]),
                        "field": ix["field"][r].decode(), "digit_index": int(ix["digit_index"][r])} for r in dups[:20]],
        "n_duplicates": int(len(dups)), "other_hierarchies": other, "anomalies": anomalies, "problems": problems,
    }


def _print(s: dict[str, Any]) -> None:
    n, pub = s["characters"]
    print(f"SD19 source {s['path']}")
    print(f"  edition {s['edition']} ({'PNG per character' if s['edition'] == 2 else '.mis/.cls/.mit'}), "
          f"{s['packaging']}; hierarchies: {', '.join(s['hierarchies'])}")
    if s["synthetic"]:
        print(f"  synthetic replica: {s['synthetic']}")
    print(f"  characters: {n:,} (NIST publishes {pub:,}; ratio {s['scale']:.4g})")
    print(f"  classes from: {s['classes_from']}")
    if s["join"]:
        j = s["join"]
        print(f"  join: {j['joined']:,}/{j['rows']:,} joined, {j['n_unjoined']} unjoined, "
              f"{j['n_ambiguous']} ambiguous, {j['n_unmatched_other']} {j['other'] or 'other'} characters unpaired")
    print("  per partition: found / published (writers = ids with characters)")
    print(f"    {'part':<6}{'writers':>8}{'folders':>8}{'digits':>18}{'uppers':>16}{'lowers':>16}{'const':>18}")
    for p, r in s["partitions"].items():
        cells = "".join(f"{f'{r[k][0]:,}/{r[k][1]:,}':>{w}}" for k, w in
                        (("digits", 18), ("uppers", 16), ("lowers", 16), ("const", 18)))
        print(f"    {p:<6}{r['writers']:>8}{r['writer_folders']:>8}{cells}")
    print("  per class: found/published")
    items = [f"{ch} {got:,}/{pub:,}" for ch, (got, pub) in s["classes"].items()]
    for i in range(0, len(items), 6):
        print("    " + "  ".join(f"{x:<17}" for x in items[i:i + 6]).rstrip())
    print(f"  duplicated images: {s['n_duplicates']}" + (
        " (" + ", ".join(f"row {d['row']} = row {d['duplicate_of']}"
                         + (f", digit #{d['digit_index']}" if d['digit_index'] >= 0 else "")
                         for d in s["duplicates"][:5]) + ")" if s["duplicates"] else ""))
    for h, o in s["other_hierarchies"].items():
        print(f"  {h}: {o['png']:,} PNG, {o['mis']:,} .mis files ({o['location']})")
    if s["anomalies"]:
        print(f"  anomalies ({len(s['anomalies'])}):")
        for a in s["anomalies"][:40]:
            print(f"    - {a}")
    else:
        print("  anomalies: none")


def run(args: argparse.Namespace) -> int:
    from ..sd19.reader import open_sd19

    require_existing_path(args.path, "SD19 source", "a folder of SD19 zips or unpacked trees")
    src = open_sd19(args.path, reindex=args.reindex, workers=args.workers)
    s = sd19_summary(src)
    _print(s)
    write_json(args, s)
    return 1 if (args.strict and s["anomalies"]) else 0
