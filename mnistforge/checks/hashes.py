"""Hash checks: official files against the registry, built files against their manifest.

A build folder's ``manifest.json`` records every output's sha256 and size: an edit, truncation
or deletion fails, an idx file it does not list warns.  An official file passes when its bytes,
or (a mirror re-compresses files) its decompressed content, have the registry's hash, and says
which; a file the registry pins no hash of warns ("unverified"), never a silent pass.

>>> import tempfile, pathlib
>>> from mnistforge.io.manifest import Manifest
>>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.bin").write_bytes(b"x")
>>> _ = Manifest(kind="demo").write(d)
>>> check_manifest(d).status
'pass'
>>> _ = (d / "a.bin").write_bytes(b"y")
>>> check_manifest(d).status
'fail'
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..cache.verify import recheck_file
from ..io.hashing import sha256_file
from ..gate.source import read_folder_manifest
from ..io.manifest import Manifest
from ..io.types import StrPath
from ..registry import RemoteFile, find_superseded
from .integrity import ContentHasher
from .result import FAIL, PASS, WARN, CheckResult

IDX_MARKERS = ("-idx1-", "-idx2-", "-idx3-", "-idx4-")
#: what the files of each registry status are, in the message
_SAID = {"exact": "identical to the published files", "content": "with the published content (re-compressed wrapper)",
         "raw": "decompressed copies with the published content", "archive": "verified through their pinned archive"}


def check_manifest(folder: StrPath, manifest: Manifest | dict[str, Any] | None = None, *,
                   only: Iterable[str] | None = None, name: str = "hashes.manifest") -> CheckResult:
    """Every output listed in the build manifest of ``folder`` (a
    :class:`~mnistforge.io.manifest.Manifest` or its dict form; default: ``folder/manifest.json``)
    still has its sha256 and size; ``only``: the relative names to restrict the check to."""
    folder = Path(folder)
    manifest = read_folder_manifest(folder) if manifest is None else Manifest.coerce(manifest)
    if manifest is None:
        return CheckResult(name, FAIL, {"folder": str(folder)}, f"{folder}: no manifest.json; not a build folder")
    outputs = manifest.outputs
    if only is not None:
        only = set(only)
        outputs = {k: v for k, v in outputs.items() if k in only}
    changed, missing, resized = [], [], []
    for rel, entry in sorted(outputs.items()):
        p = folder / rel
        if not p.is_file():
            missing.append(rel)
            continue
        if "bytes" in entry and p.stat().st_size != int(entry["bytes"]):
            resized.append(rel)
            continue
        if entry.get("sha256") and sha256_file(p) != entry["sha256"]:
            changed.append(rel)
    listed = set(manifest.outputs)
    extra = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and any(k in p.name for k in IDX_MARKERS) and not p.name.startswith(".")
                   and p.relative_to(folder).as_posix() not in listed)
    values = {"files": len(outputs), "missing": missing, "size_changed": resized,
              "hash_changed": changed, "unlisted": extra, "kind": manifest.kind}
    bad = missing + resized + changed
    if bad:
        parts = [f"{len(v)} {what} ({v[0]})" for v, what in
                 ((missing, "missing"), (resized, "changed size"), (changed, "changed content")) if v]
        return CheckResult(name, FAIL, values,
                           "files differ from the build manifest: " + "; ".join(parts)
                           + ". Rebuild, or restore the files")
    if extra:
        return CheckResult(name, WARN, values,
                           f"{len(outputs)} files match the manifest; {len(extra)} idx files are "
                           f"not listed in it ({extra[0]})")
    return CheckResult(name, PASS, values, f"{len(outputs)} files match the build manifest")


def verify_against_registry(path: StrPath, remote: RemoteFile, content: ContentHasher | None = None) -> dict[str, Any]:
    """Compare one file with its registry entry, re-hashing it (no sidecar is trusted). Returns a dict with ``status``
    in the vocabulary of fetch and load (:data:`mnistforge.cache.verify.STATUS_TEXT`): ``exact`` (the published bytes),
    ``content`` (same decompressed content, another wrapper), ``raw`` (a decompressed copy with the pinned content),
    ``unpinned``, ``archive`` or ``mismatch``; plus the hashes measured."""
    path = Path(path)
    v = recheck_file(path, remote, content)
    out: dict[str, Any] = {"file": path.name, "pinned_how": remote.pinned_how, "status": v.status, "sha256": v.sha256}
    if v.content_sha256:
        out["content_sha256"] = v.content_sha256
    if v.status == "unpinned" and (remote.sha256 or remote.md5):
        out["note"] = "only the published compressed file is pinned"
    if v.status == "mismatch":  # an older release the registry knows, named
        rel = find_superseded(sha256=v.sha256, content_sha256=v.content_sha256)
        if rel is not None:
            out["superseded"] = {"release": rel.release, "superseded_by": rel.superseded_by, "dataset": rel.dataset,
                                 "split": rel.split, "source": rel.source, "description": rel.describe()}
    return out


def check_registry_files(files: Mapping[Path, RemoteFile], name: str = "hashes.registry",
                         contents: Mapping[Path, ContentHasher] | None = None) -> CheckResult:
    """Check official files (``{local path: its registry file}``) against the registry; ``contents``: content hashers
    by path from :func:`~mnistforge.checks.integrity.check_parse` (the files inflated once for both checks)."""
    contents = contents or {}
    rows = [verify_against_registry(p, r, contents.get(Path(p)))
            for p, r in sorted(files.items(), key=lambda x: str(x[0]))]
    by: dict[str, list[str]] = {}
    for row in rows:
        by.setdefault(row["status"], []).append(row["file"])
    values = {"files": rows, "summary": {k: len(v) for k, v in by.items()}}
    if not rows:
        return CheckResult(name, WARN, values, "no official files to check")
    old = [r for r in rows if r.get("superseded")]
    if old:
        return CheckResult(name, FAIL, values,
                           f"{len(old)} of {len(rows)} files are an older release ({old[0]['file']}: "
                           f"{old[0]['superseded']['description']}): fetch the current files")
    if by.get("mismatch"):
        bad = by["mismatch"]
        return CheckResult(name, FAIL, values,
                           f"{len(bad)} of {len(rows)} files differ from the registry "
                           f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}): "
                           "modified or corrupted; fetch them again")
    parts = [f"{len(by[k])} {said}" for k, said in _SAID.items() if by.get(k)]
    if by.get("unpinned"):
        parts.append(f"{len(by['unpinned'])} unverified (no hash pinned: "
                     f"{', '.join(by['unpinned'][:2])})")
        return CheckResult(name, WARN, values, "; ".join(parts))
    return CheckResult(name, PASS, values, "; ".join(parts))
