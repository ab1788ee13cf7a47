"""From CLI targets and registry datasets to export configs: provenance, licences, caveats."""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import recfunctions

from .._version import __version__
from ..errors import ConfigError, MissingFileError, MnistforgeError
from ..gate.source import Source, locate, resolve
from ..io.hashing import sha256_file
from ..io.hf.repo import CARD, config_is_synthetic, is_hf_repo, read_card, repo_configs, shard_paths
from ..io.hf.schema import SplitData
from ..io.manifest import Manifest
from ..io.types import StrPath
from ..loaders import datasets_in_folder, load, resolve_target
from ..loaders.repo import check_shards
from ..loaders.split import DatasetSplit
from ..loaders.names import parse_split
from ..loaders.targets import parse_target_text
from ..loaders.writers import WRITER_FIELDS, identity_table
from ..registry import DatasetInfo, bibtex, built_license, get_dataset, get_file, hub_license
from .export import ExportConfig, SplitSource


def parse_target(text: str) -> tuple[str | None, str]:
    """Split ``[CONFIG=]TARGET[:SPLIT]`` into ``(config or None, rest)``.

    >>> parse_target("rebuilt=build/mnist:test")
    ('rebuilt', 'build/mnist:test')
    >>> parse_target("qmnist")
    (None, 'qmnist')
    """
    target = parse_target_text(text, config=True)   # the one parser of target strings
    return target.config, target.text


def _source(root: StrPath | None, name: str) -> Source | None:
    """The gate's resolved source of dataset ``name`` under ``root`` (its folder, its build
    manifest), or None without a root."""
    return None if root is None else resolve(root, get_dataset(name))


def _split_files_present(info: DatasetInfo, split: str, source: Source | None) -> bool:
    sp = info.file_split(split)
    folder = None if source is None else source.folder
    return bool(sp.images and folder is not None and locate(folder, sp.images))


def default_splits(name: str, root: StrPath | None = None, *, source: Source | None = None) -> list[str]:
    """Splits exported when a target names no split. Every split stored in files (not the views ``test10k``,
    ``validation``...: they duplicate rows of another split), except the registry's ``opt_in`` splits (qmnist's
    ``nist``, every NIST digit: a different dataset in all but name); for a folder, only those whose files are there.
    An exported repository folder gives the splits it holds. ``source``: the folder's resolved source
    (:func:`mnistforge.gate.source.resolve`), when the caller has it already."""
    if root is not None and is_hf_repo(root, name):
        return [s for s in repo_configs(root).get(name, {})]

    info = get_dataset(name)
    splits = [s for s, sp in info.splits.items() if not sp.is_view]
    if root is None:
        return [s for s in splits if not info.splits[s].opt_in]
    source = source if source is not None else _source(root, name)
    return [s for s in splits if _split_files_present(info, s, source)]


def _looks_local(value: str) -> bool:
    return os.path.isabs(value) or value.startswith(("~", "./", "../")) or "\\" in value


def by_identity(value: Any, key: str = "") -> Any:
    """``value`` (a manifest's inputs or parameters) with every local path replaced by its
    identity: the file or folder name; fingerprints, editions, counts and hashes kept.

    A card is published: the folder layout of the machine that built the data is
    none of the reader's business, and it would not help them find the source.

    >>> by_identity({"sd19": {"path": "/home/me/data/sd19", "edition": 2, "fingerprint": "ab"}})
    {'sd19': {'name': 'sd19', 'edition': 2, 'fingerprint': 'ab'}}
    >>> by_identity({"sd19": "/home/me/by_class.zip", "sd19_characters": 10})
    {'sd19': 'by_class.zip', 'sd19_characters': 10}
    """
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if k == "path" and isinstance(v, str) and "name" not in value:
                out["name"] = Path(v).name
            else:
                out[k] = by_identity(v, k)
        return out
    if isinstance(value, (list, tuple)):
        return [by_identity(v, key) for v in value]
    if isinstance(value, str) and _looks_local(value):
        return Path(value.replace("\\", "/")).name
    return value


def _strip_paths(text: str) -> str:
    """A sentence with its absolute paths shortened to their last part."""
    return re.sub(r"(?<![\w.:/])(/[^\s,;:'\"`()]+)", lambda m: Path(m.group(1)).name, text)


def _verified_shards(root: StrPath, name: str) -> dict[str, str]:
    """``{shard: sha256}`` of config ``name`` of the export ``root``, every shard checked against
    the export's record first (a damaged input is refused before anything is written); an export
    that recorded none is hashed as it is (its shards named when missing)."""
    digests = check_shards(root, name)
    if not digests:
        for split in repo_configs(root).get(name, {}):
            for p in shard_paths(root, name, split):
                digests[p.relative_to(root).as_posix()] = sha256_file(p)
    return dict(sorted(digests.items()))


def _official_provenance(info: DatasetInfo, splits: Iterable[str]) -> dict[str, dict[str, Any]]:
    files: dict[str, dict[str, Any]] = {}
    for split in splits:
        sp = info.file_split(split)
        for fname in (sp.images, sp.labels, sp.metadata):
            if not fname or fname in files:
                continue
            try:
                rf = get_file(f"{info.group}/{fname}")
            except MnistforgeError:
                continue
            entry: dict[str, Any] = {k: getattr(rf, k) for k in ("sha256", "size", "md5", "content_sha256", "archive")
                                     if getattr(rf, k)}
            if rf.urls:
                entry["url"] = rf.urls[0]
            if rf.archive:
                try:
                    arc = get_file(rf.archive)
                    entry["archive_sha256"] = arc.sha256
                except MnistforgeError:
                    pass
            files[fname] = entry
    return files


@dataclass(frozen=True)
class _Facts:
    """What a caveat may depend on: the dataset, the build's parameters and manifest."""

    info: DatasetInfo
    params: dict[str, Any]
    built: bool
    manifest: Manifest | None
    synthetic: bool
    counts: dict[str, Any]


def _stored_transposed(f: _Facts) -> list[str]:
    stored = f.params.get("orientation", "official") if f.built else "official"
    return ["Orientation fixed: images here are upright. The official EMNIST idx files store "
            "them transposed (MATLAB column-major)"
            + (" and so did the build folder this was exported from" if stored == "official" else "")
            + "; the loader flipped them once, so do not transpose again."]


def _letters_variant(f: _Facts) -> list[str]:
    if f.params.get("letters_variant", "official") == "paper37":
        return ["This is the EMNIST paper's letters variant (37 classes, 2,400/400 per class), "
                "not the official 26-class release."]
    return ["Letters labels are 1..26 as in the official files; label 0 ('N/A (unused)') "
            "never occurs. Each class holds both cases of its letter.",
            "The EMNIST paper's table describes a different, earlier letters set "
            "(37 classes, 88,800/14,800 images); this config is the official 26-class "
            "release (`mnistforge build emnist-letters --letters-variant paper37` makes "
            "the paper's)."]


def _writer_split(f: _Facts) -> list[str]:
    if f.params.get("split_by") == "writer":
        return ["Train/test are writer-disjoint (no writer on both sides), unlike the official "
                "random split: scores are not comparable with published EMNIST results."]
    return ["Train and test mix NIST's census and high-school writers with a random split "
            "(not writer-disjoint), as in the official release: the same writer appears on "
            "both sides."]


def _validation_portion(f: _Facts) -> list[str]:
    size = f.info.validation_size
    validation = f.counts.get("validation", size) if f.built else size
    if not validation:
        return []
    return [f"The validation portion ({validation:,} images) is the last part of "
            "train: do not train on `train` and validate on `validation`; use "
            "`train_without_validation`."]


def _qmnist_test10k(f: _Facts) -> list[str]:
    return [_qmnist_test_caveat(f.built, f.manifest, f.counts)]


def _qmnist_nist_index(f: _Facts) -> list[str]:
    nist = f.info.split("nist").count
    digits = _sd19_digits(f.manifest) if f.built else None
    whole = (f"all {nist:,} SD19 digits" if digits in (None, nist) and not f.synthetic
             else f"all {digits:,} digits of the source" if digits else "all digits of the source")
    return ["`duplicate` is the NIST index of an earlier identical image (else 0); `nist_index` "
            f"is the row in the `nist` split ({whole})."]


def _rebuilt_from_sd19(f: _Facts) -> list[str]:
    if not f.built:
        return []
    if f.synthetic:
        return ["Built from a synthetic SD19 (QMNIST's recipe scaled to the source): the images "
                "are not MNIST's, and its test set is not MNIST's test set."]
    return ["Rebuilt from NIST SD19 (QMNIST train + the first 10,000 of QMNIST test): images "
            "differ slightly from the original MNIST bytes (see the QMNIST paper)."]


#: the card caveats a registry entry names (``card_caveats``) -> the lines they add, true of the
#: data they sit with (a build's from its manifest and parameters)
CAVEATS: dict[str, Callable[[_Facts], list[str]]] = {"stored-transposed": _stored_transposed,
                                                     "letters-variant": _letters_variant,
                                                     "writer-split": _writer_split,
                                                     "validation-portion": _validation_portion,
                                                     "qmnist-test10k": _qmnist_test10k,
                                                     "qmnist-nist-index": _qmnist_nist_index,
                                                     "rebuilt-from-sd19": _rebuilt_from_sd19}


def _caveats(info: DatasetInfo, params: dict[str, Any], built: bool, manifest: Manifest | None = None) -> list[str]:
    """The card's caveats, true of the data they sit with: for a build, from its manifest
    (counts, order, the synthetic mark), not from the official release's facts.  Which
    caveats apply is the registry's ``card_caveats`` of the dataset (:data:`CAVEATS`)."""
    entry = manifest.dataset(info.name) if manifest is not None else None
    facts = _Facts(info, params, built, manifest, synthetic=manifest is not None and manifest.from_synthetic_sd19,
                   counts=entry.counts if entry is not None else {})
    out: list[str] = []
    for name in info.card_caveats:
        try:
            rule = CAVEATS[name]
        except KeyError:
            raise ConfigError(f"registry: unknown card caveat of {info.name}", found=repr(name),
                              expected="one of " + ", ".join(CAVEATS)) from None
        out += rule(facts)
    return out


def _sd19_digits(manifest: Manifest | None) -> int | None:
    sd19 = manifest.inputs.get("sd19") if manifest is not None else None
    n = sd19.get("digits") if isinstance(sd19, dict) else None
    return n if isinstance(n, int) else None


def _qmnist_test_caveat(built: bool, manifest: Manifest | None, counts: dict[str, Any]) -> str:
    """What QMNIST's test10k/test50k are in this config (MNIST's test set only where true)."""
    official = ("The first 10,000 test images are MNIST's test set (`test10k`); the other 50,000 "
                "(`test50k`) were never published with MNIST.")
    if not built:
        return official
    n10, n50 = counts.get("test10k"), counts.get("test50k")
    published = manifest is not None and "qmnist_labels" in manifest.inputs
    if published and manifest is not None and not manifest.from_synthetic_sd19 and n10 == 10000 and n50 == 50000:
        return official
    why = ("it was built from a synthetic SD19" if manifest is not None and manifest.from_synthetic_sd19
           else "its order is the documented deterministic one, not the published QMNIST tables'"
           if not published else "this build holds fewer test images than QMNIST")
    sizes = (f"the first {n10:,} test images (`test10k`) and the other {n50:,} (`test50k`)"
             if isinstance(n10, int) and isinstance(n50, int) else "`test10k` and `test50k`")
    return f"In this build {sizes} are not MNIST's test set: {why}."


def config_from_dataset(name: str, splits: dict[str, SplitSource], classes: Iterable[Any], *,
                        root: StrPath | None = None, config_name: str | None = None,
                        built_manifest: Manifest | dict[str, Any] | None = None) -> ExportConfig:
    """An :class:`ExportConfig` for registry dataset ``name`` with arrays in ``splits``. ``splits`` maps split names to
    :class:`SplitData` (or tuples).  Provenance comes from ``built_manifest`` (a build folder's
    :class:`~mnistforge.io.manifest.Manifest` or its dict form) or, for the official files, from the registry (sha256,
    size, md5 and URL of each file)."""
    info = get_dataset(name)
    m = Manifest.coerce(built_manifest)
    built = m is not None
    synthetic = bool(m is not None and m.from_synthetic_sd19)
    params = dict(m.parameters) if m is not None else {}
    prov: dict[str, Any] = {}
    license_id: str | None
    license_name: str | None
    if m is not None:
        origin = ("a SYNTHETIC SD19 replica (`mnistforge synth-sd19`; not NIST's handwriting)"
                  if synthetic else "NIST SD19")
        source = (f"built from {origin} by mnistforge {m.version or '?'} "
                  f"(`mnistforge build`, manifest kind `{m.kind or '?'}`), loaded from "
                  f"`{Path(root).name if root else '?'}`.")
        prov["build"] = {"mnistforge_version": m.version or None, "python": m.python or None, "kind": m.kind or None}
        if synthetic:
            prov["build"]["synthetic_sd19"] = True
        if params:  # FEMNIST's per-writer counts (thousands of lines) stay in the manifest
            prov["parameters"] = by_identity({k: v for k, v in params.items() if k != "writer_counts"})
        if m.inputs:  # the sources by identity (names, fingerprint, edition), never local paths
            prov["inputs"] = by_identity(m.inputs)
        # The build folder's files (the idx files this config was read from, among others).
        used = {rel: (out.get("sha256") if isinstance(out, dict) else out) for rel, out in sorted(m.outputs.items())}
        if used:
            prov["build_outputs_sha256"] = used
        if m.notes:
            prov["notes"] = [_strip_paths(n) for n in m.notes]
        license_id, license_name = built_license()
        cites = [bibtex(info.group), bibtex("sd19")]
    elif root is not None and is_hf_repo(root, name):
        source = (f"re-exported from an earlier mnistforge export (`{Path(root).name}`); that "
                  "folder's README.md holds the original provenance.")
        prov["source_card_sha256"] = sha256_file(Path(root) / CARD)
        prov["source_shards_sha256"] = _verified_shards(root, name)
        header = read_card(root)
        synthetic = config_is_synthetic(root, name)
        license_id = header.get("license") if isinstance(header.get("license"), str) else "other"
        license_name = header.get("license_name") if license_id == "other" else None
        cites = [bibtex(info.group)]
    else:
        source = (f"official release files ({info.homepage or info.title}), fetched and verified "
                  f"against the mnistforge registry.")
        prov["source_files"] = _official_provenance(info, splits)
        license_id, license_name = hub_license(info.group)
        cites = [bibtex(info.group)]
    prov["exported_by"] = f"mnistforge {__version__}"
    cite = "\n\n".join(c for c in cites if c) or info.citation
    description = info.description
    if built:
        origin = "a synthetic SD19 replica (not NIST data)" if synthetic else "NIST SD19"
        description = (f"{info.title}, rebuilt from {origin} by mnistforge (sizes as built: see "
                       f"the splits above). The official release it reproduces: {info.description}")
    if info.licence:
        description += f"\n\nLicence of the source: {info.licence}"
    return ExportConfig(name=config_name or name, splits=splits, classes=list(classes), description=description,
                        source=source, provenance=prov, license=license_id, license_name=license_name, citation=cite,
                        label_note=info.class_note or None, caveats=_caveats(info, params, built, m),
                        pretty_name=info.title, synthetic=synthetic)


def _split_of(ds: DatasetSplit, writers: str | None = None, download: bool | None = None) -> SplitData:
    """The split's arrays; with ``writers`` (``"tables"`` for official files, else why not) a writer column where its
    metadata has none: MNIST's writer and NIST series from QMNIST's published tables (the registry's ``identities``)."""
    meta = None if ds.metadata is None else np.asarray(ds.metadata)
    if writers and not set(WRITER_FIELDS) & set(() if meta is None else meta.dtype.names or ()):
        if writers != "tables" or not ds.info.split(parse_split(ds.split)[0]).identities:
            raise ConfigError(f"--writers: the writers of {ds.name} {ds.split}'s rows are not known",
                              found="no writer in its metadata, " + ("no published table of its rows"
                                                                     if writers == "tables" else writers),
                              expected="metadata with a writer (QMNIST, EMNIST builds, FEMNIST) or MNIST's "
                              "official files (QMNIST's tables)", hint="export this dataset without --writers")
        t = identity_table(ds.name, ds.split, offline=None if download is None else not download)
        w = np.empty(len(t), [("writer", "i4"), ("hsf", "i4")])
        w["writer"], w["hsf"] = t[:, 2], t[:, 1]
        meta = w if meta is None else recfunctions.merge_arrays((meta, w), flatten=True, usemask=False)
    return SplitData(np.asarray(ds.images), np.asarray(ds.labels), meta)


def _load_split(name: str, split: str, root: StrPath | None, download: bool | None,
                writers: str | None = None) -> SplitData:
    return _split_of(load(name, split, root=root, download=download, with_metadata=True), writers, download)


def configs_from_targets(targets: Iterable[StrPath], *, download: bool | None = None,
                         writers: bool = False) -> list[ExportConfig]:
    """Load ``[CONFIG=]TARGET[:SPLIT]`` targets into export configs. TARGET is a dataset name or a folder (official or
    built files, or an exported repository), as everywhere on the command line
    (:func:`mnistforge.loaders.resolve_target`).  Targets naming the same dataset and folder merge into one config
    (``mnist:train mnist:test``); ``CONFIG=`` renames a config (to export the official and a rebuilt MNIST side by
    side).  Without ``:SPLIT`` the :func:`default_splits` are taken.  ``writers``: every config gets a writer column
    (official MNIST's from QMNIST's tables), else ConfigError."""
    resolved: list[tuple[str | None, tuple[str, str | None, Path | None]]] = []
    for text in targets:
        config, rest = parse_target(str(text))
        if os.path.isdir(rest) and is_hf_repo(rest):  # an export: each of its configs
            names = list(repo_configs(rest))
            if config and len(names) > 1:
                raise ConfigError(f"{rest} holds several configs; CONFIG= needs one",
                                  expected="FOLDER:NAME with CONFIG=", found=", ".join(names))
            resolved += [(config, (n, None, Path(rest))) for n in names]
            continue
        if os.path.isdir(rest) and not is_hf_repo(rest):
            names = datasets_in_folder(rest)
            if len(names) > 1:  # a build folder holding several datasets: one config each
                if config:
                    raise ConfigError(f"{rest} holds several datasets; CONFIG= needs one",
                                      expected="FOLDER:NAME with CONFIG=", found=", ".join(names))
                resolved += [(None, (n, None, Path(rest))) for n in names]
                continue
        resolved.append((config, resolve_target(rest)))
    sources: dict[tuple[str, str], Source | None] = {}   # each folder's resolved once

    def source_of(name: str, root: StrPath | None) -> Source | None:
        key = (name, str(root))
        if key not in sources:
            sources[key] = _source(root, name)
        return sources[key]

    groups: dict[str, dict[str, Any]] = {}
    for config, (name, split, root) in resolved:
        config = config or name
        g = groups.setdefault(config, {"name": name, "root": root, "splits": []})
        if g["name"] != name or str(g["root"]) != str(root):
            raise ConfigError(
                f"two different datasets would both be config {config!r}",
                expected="one dataset per config name",
                found=f"{g['name']} from {g['root'] or 'the cache'} and {name} from {root or 'the cache'}",
                hint="name one with CONFIG=TARGET, e.g. rebuilt=build/mnist")
        for s in ([split] if split else default_splits(name, root, source=source_of(name, root))):
            if s not in g["splits"]:
                g["splits"].append(s)
    out = []
    for config, g in groups.items():
        if not g["splits"]:
            raise MissingFileError(f"no split of {g['name']} found", path=g["root"],
                                   expected="idx files named like the official ones",
                                   found="none", hint="name a split with NAME:SPLIT")
        src = source_of(g["name"], g["root"])
        manifest = src.build_manifest()[0] if src is not None else None
        # The first split is loaded now (its classes name the labels), the others when written.
        first = load(g["name"], g["splits"][0], root=g["root"], download=download, with_metadata=True)
        how = None if not writers else "a build" if manifest else "an export" if is_hf_repo(g["root"] or "") \
            else "tables"
        data: dict[str, SplitSource] = {g["splits"][0]: _split_of(first, how, download)}
        for s in g["splits"][1:]:
            data[s] = functools.partial(_load_split, g["name"], s, g["root"], download, how)
        out.append(config_from_dataset(g["name"], data, first.classes, root=g["root"],
                                       config_name=config, built_manifest=manifest))
        if how == "tables" and first.metadata is None:
            table = get_file(get_dataset(g["name"]).split(g["splits"][0]).identities[0])  # type: ignore[index]
            out[-1].caveats.append(f"`writer_id` and `hsf` come from QMNIST's published table `{table.name}` "
                                   f"(sha256 `{table.sha256}`), whose rows are this split's in order.")
    return out


