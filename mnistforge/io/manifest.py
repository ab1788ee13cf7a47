"""Build manifests: one versioned schema, written by every builder and read by every reader.

A build folder holds ``manifest.json``: what went in, with which parameters, which package made it, the sha256
of every output, and what each dataset in the folder holds.  It carries no timestamp and its keys are sorted,
so identical builds give byte-identical manifests.

Schema (``"schema": 1``; keys absent when empty unless marked *always*)
-----------------------------------------------------------------------
``schema``           *always*; int, the layout version (:data:`SCHEMA_VERSION`)
``kind``             *always*; what wrote the folder: ``qmnist``, ``mnist``,
                     ``xnist``, ``emnist``...
``package``          *always*; ``"mnistforge"``
``version``          *always*; the package version that wrote it
``python``           *always*; the Python version that wrote it
``inputs``           *always*; the sources (SD19 path, fingerprint, edition, tables...)
``parameters``       *always*; the build parameters as given
``notes``            *always*; sentences a reader must know (variants, scaled recipes...)
``outputs``          *always*; ``{relative path: {"sha256": hex, "bytes": int}}`` of every
                     file in the folder except the manifest
``datasets``         *always*; ``{name: entry}``, one per dataset in the folder.  ``name``
                     is the registry dataset name (``qmnist``, ``mnist``), without the
                     ``emnist-`` prefix in an EMNIST build (``balanced`` for the files
                     ``emnist-balanced-*``).  An entry holds the image count of each
                     split at its top level (``train``, ``test``, ``validation``,
                     ``test10k``, ``nist``...) and, when known, ``classes`` (int),
                     ``class_names``, ``kind`` (class set, e.g. ``letters37``),
                     ``orientation``, ``files`` and ``quota``
``orientation``      how the idx images are stored: ``"upright"``, or ``"official"``
                     (transposed like the official EMNIST files)
``split_by``         how train and test sides were drawn (``"random"``/``"writer"``)
``sides``            source characters on each side: ``{"train": n, "test": n}``
``metadata_columns`` column names of the ``*-metadata-idx2-int`` files
``synthetic``        builds from SD19: ``true`` when the source was a synthetic replica (its
                     own ``synthetic-sd19.json`` said so, whatever its path), ``false`` for
                     a real-like source (absent in manifests written before it existed)

Manifests written before the schema had a version (no ``schema`` key) are read too: their ``dataset`` +
``counts`` (QMNIST builds), ``datasets`` and ``sides`` (EMNIST builds) and an orientation under ``parameters``
become the fields above; :attr:`Manifest.schema` is then 0.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "a.bin").write_bytes(b"abc")
>>> m = Manifest(kind="demo", datasets={"mnist": DatasetEntry(counts={"train": 1})}).write(d)
>>> m.outputs["a.bin"]["bytes"], Manifest.read(d).dataset("mnist").counts
(3, {'train': 1})
>>> Manifest.read(d / "nothing-here") is None
True
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, FormatError
from ..log import get_logger
from .atomic import atomic_file
from .outputs import unlisted_entries
from .types import StrPath
from .._version import __version__
from .hashing import sha256_file


logger = get_logger(__name__)

__all__ = ["MANIFEST_NAME", "SCHEMA_VERSION", "DatasetEntry", "Manifest", "build_folder_problems",
           "recorded_folder_problems", "package_version", "read_manifest", "write_manifest"]

#: version of the layout written; 0 stands for manifests written before it had one
SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"

ORIENTATIONS = ("upright", "official")


def package_version() -> str:
    return __version__


@dataclass
class DatasetEntry:
    """What one dataset of a build folder holds.

    ``counts`` are stored flat in the JSON entry (``{"train": 60000, "test": ...}``)
    next to the other keys, as EMNIST builds always wrote them.

    >>> e = DatasetEntry.from_dict({"train": 5, "test": 2, "classes": 10, "kind": "mnist"})
    >>> e.counts, e.classes, e.to_dict()["train"]
    ({'train': 5, 'test': 2}, 10, 5)
    """

    counts: dict[str, int] = field(default_factory=dict)
    kind: str | None = None
    classes: int | None = None
    class_names: list[str] | None = None
    orientation: str | None = None
    files: dict[str, str] | None = None
    quota: dict[str, Any] | None = None

    _KEYS = ("kind", "classes", "class_names", "orientation", "files", "quota")

    def to_dict(self) -> dict[str, Any]:
        clash = sorted(set(self.counts) & set(self._KEYS))
        if clash:
            raise ConfigError("a split count has the name of a dataset-entry key",
                              expected="split names such as train, test, validation", found=", ".join(clash))
        d: dict[str, Any] = {k: int(v) for k, v in self.counts.items()}
        for k in self._KEYS:
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DatasetEntry:
        # every integer that is not one of the named keys is a split count
        counts = {k: int(v) for k, v in d.items()
                  if k not in cls._KEYS and isinstance(v, int) and not isinstance(v, bool)}
        names = d.get("class_names")
        return cls(counts=counts, kind=d.get("kind"),
                   classes=d["classes"] if isinstance(d.get("classes"), int) else None,
                   class_names=[str(c) for c in names] if isinstance(names, list) else None,
                   orientation=d.get("orientation"), files=d.get("files"), quota=d.get("quota"))


@dataclass
class Manifest:
    """A build folder's ``manifest.json`` (see the module doc for the schema). Build one with the facts, then
    :meth:`write` it (that hashes the outputs); :meth:`read` returns the manifest of a folder, old layouts included."""

    kind: str
    inputs: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    datasets: dict[str, DatasetEntry] = field(default_factory=dict)
    orientation: str | None = None
    split_by: str | None = None
    sides: dict[str, int] | None = None
    metadata_columns: list[str] | None = None
    synthetic: bool | None = None
    package: str = "mnistforge"
    version: str = field(default_factory=package_version)
    python: str = field(default_factory=platform.python_version)
    #: the layout version the manifest was read from (written manifests are always current)
    schema: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.orientation is not None and self.orientation not in ORIENTATIONS + ("transposed",):
            raise ConfigError("unknown image orientation in a manifest",
                              expected=" or ".join(ORIENTATIONS), found=repr(self.orientation))

    # ------------------------------------------------------------------ reading
    @property
    def storage_orientation(self) -> str | None:
        """``"transposed"`` or ``"upright"`` (the registry's words), None if not recorded.

        >>> Manifest(kind="emnist", orientation="official").storage_orientation
        'transposed'
        """
        o = self.orientation
        return None if o is None else ("upright" if o == "upright" else "transposed")

    @property
    def from_synthetic_sd19(self) -> bool:
        """Whether the build came from a synthetic SD19 (its sizes are not the registry's).

        The ``synthetic`` field says so; a manifest written before it existed is judged by
        what its builder recorded of the source's description (never by the source's path).

        >>> Manifest(kind="emnist", inputs={"sd19": "/data/synthetic"}).from_synthetic_sd19
        False
        >>> Manifest(kind="emnist", synthetic=True).from_synthetic_sd19
        True
        """
        if self.synthetic is not None:
            return bool(self.synthetic)
        sd19 = self.inputs.get("sd19") if isinstance(self.inputs, dict) else None
        return (isinstance(sd19, dict) and "synthetic_description_sha256" in sd19) \
            or any("SYNTHETIC SD19" in str(n) for n in self.notes)

    def dataset(self, name: str) -> DatasetEntry | None:
        """The entry of registry dataset ``name`` (``emnist-letters`` finds ``letters``).

        >>> m = Manifest(kind="emnist", datasets={"letters": DatasetEntry({"train": 3})})
        >>> m.dataset("emnist-letters").counts["train"], m.dataset("mnist")
        (3, None)
        """
        if name in self.datasets:
            return self.datasets[name]
        if name.startswith("emnist-"):
            return self.datasets.get(name[len("emnist-"):])
        return None

    @classmethod
    def read(cls, folder: StrPath, name: str = MANIFEST_NAME) -> Manifest | None:
        """The manifest of build folder ``folder``, or None when it has none."""
        p = Path(folder) / name
        if not p.is_file():
            return None
        try:
            with open(p, encoding="utf-8") as f:
                d = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise FormatError("unreadable build manifest", path=p, expected="a JSON object",
                              found=str(e), hint="rebuild the folder") from None
        return cls.from_dict(d, path=p)

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, path: StrPath | None = None) -> Manifest:
        """A manifest from its JSON form, current or older (no ``schema`` key)."""
        if not isinstance(d, dict):
            raise FormatError("a build manifest must be a JSON object", path=path,
                              expected="an object", found=type(d).__name__)
        schema = d.get("schema", 0)
        if not isinstance(schema, int) or schema > SCHEMA_VERSION:
            raise FormatError("build manifest of an unknown schema version", path=path,
                              expected=f"schema {SCHEMA_VERSION} or older", found=schema,
                              hint="read it with the mnistforge version that wrote it "
                                   f"({d.get('version', '?')}) or newer")
        _check_structure(d, path)
        if schema == 0:
            d = _upgrade_v0(d)
        elif set(d) - _FIELDS:
            logger.debug("%s: ignoring unknown manifest keys %s", path, sorted(set(d) - _FIELDS))
        known = {k: d[k] for k in _FIELDS if k in d and k != "datasets"}
        known["datasets"] = {str(k): DatasetEntry.from_dict(v)
                             for k, v in (d.get("datasets") or {}).items() if isinstance(v, dict)}
        known["schema"] = schema
        for k in ("kind", "version", "python"):     # not recorded: say nothing rather than guess
            known.setdefault(k, "")
        if not isinstance(known.get("synthetic", False), (bool, type(None))):
            raise FormatError("the synthetic mark of a build manifest is not true or false",
                              path=path, expected="true or false", found=repr(known["synthetic"]))
        if known.get("orientation") not in (None,) + ORIENTATIONS + ("transposed",):
            raise FormatError("unknown image orientation in a build manifest", path=path,
                              expected=" or ".join(ORIENTATIONS), found=repr(known["orientation"]))
        return cls(**known)

    @classmethod
    def coerce(cls, manifest: Manifest | dict[str, Any] | None) -> Manifest | None:
        """A :class:`Manifest` from a Manifest, its dict form or None."""
        if manifest is None or isinstance(manifest, Manifest):
            return manifest
        return cls.from_dict(manifest)

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> dict[str, Any]:
        """The JSON form (current schema), exactly as :meth:`write` stores it."""
        d: dict[str, Any] = {"schema": SCHEMA_VERSION, "kind": self.kind, "package": self.package,
                             "version": self.version, "python": self.python, "inputs": self.inputs,
                             "parameters": self.parameters, "notes": list(self.notes), "outputs": self.outputs,
                             "datasets": {k: e.to_dict() for k, e in self.datasets.items()},}
        for k in ("orientation", "split_by", "sides", "metadata_columns", "synthetic"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        # through JSON once: tuples become lists, so the dict equals what is read back
        out: dict[str, Any] = json.loads(json.dumps(d, sort_keys=True))
        return out

    def write(self, folder: StrPath, name: str = MANIFEST_NAME) -> Manifest:
        """Hash every file of ``folder`` into ``outputs`` and write ``folder/name`` atomically. Files whose name starts
        with a dot and the manifest itself are not listed. Returns the manifest written (this one with ``outputs``
        filled in)."""
        folder = Path(folder)
        outputs: dict[str, dict[str, Any]] = {}
        for p in sorted(folder.rglob("*")):
            if p.is_file() and p.name != name and not p.name.startswith("."):
                rel = p.relative_to(folder).as_posix()
                outputs[rel] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
        done = dataclasses.replace(self, outputs=outputs, schema=SCHEMA_VERSION)
        with atomic_file(folder / name, "w") as f:
            json.dump(done.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
        return done


_FIELDS = frozenset(f.name for f in dataclasses.fields(Manifest))

#: the JSON type each field must have when present (checked on reading: a hand-edited
#: manifest whose ``outputs`` is a list is a FormatError naming the file, not a traceback)
_TYPES: dict[str, tuple[type, ...]] = {"kind": (str,), "package": (str,), "version": (str,), "python": (str,),
                                       "inputs": (dict,), "parameters": (dict,), "notes": (list,), "outputs": (dict,),
                                       "datasets": (dict,), "orientation": (str,), "split_by": (str,),
                                       "sides": (dict,), "metadata_columns": (list,)}


def _check_structure(d: dict[str, Any], path: StrPath | None) -> None:
    """Refuse a manifest whose fields have the wrong JSON types."""
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    for key, types in _TYPES.items():
        v = d.get(key)
        if v is not None and not isinstance(v, types):
            raise FormatError(f"malformed build manifest: {key!r} is {type(v).__name__}", path=path,
                              expected=f"{key!r} as {names[types[0]]}",
                              found=json.dumps(v)[:60], hint="rebuild the folder")
    for rel, entry in (d.get("outputs") or {}).items():
        if not (isinstance(entry, dict) and isinstance(entry.get("bytes", 0), int)
                and isinstance(entry.get("sha256", ""), str)):
            raise FormatError("malformed build manifest: an output entry is not "
                              '{"sha256": hex, "bytes": int}', path=path,
                              expected="an object with sha256 and bytes",
                              found=f"{rel}: {json.dumps(entry)[:60]}", hint="rebuild the folder")


# keys only the unversioned layout had
_V0_KEYS = frozenset({"dataset", "counts", "extra"})


def _dict(x: object) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _is_v0(d: dict[str, Any]) -> bool:
    sides = _dict(d.get("sides"))
    return bool(_V0_KEYS & set(d)) or any(not isinstance(v, int) for v in sides.values())


def _upgrade_v0(d: dict[str, Any]) -> dict[str, Any]:
    """Map a manifest without ``schema`` onto the current fields."""
    params, extra = _dict(d.get("parameters")), _dict(d.get("extra"))
    out = {k: d[k] for k in _FIELDS if k in d and k not in ("schema", "sides", "orientation")}
    if isinstance(d.get("datasets"), dict):                    # EMNIST builds
        out["datasets"] = d["datasets"]
    elif isinstance(d.get("counts"), dict):                    # QMNIST / MNIST / xnist builds
        out["datasets"] = {str(d.get("dataset") or d.get("kind") or ""): d["counts"]}
    for where in (d, params, extra):
        o = where.get("orientation")
        if isinstance(o, str) and o.lower() in ORIENTATIONS + ("transposed",):
            out["orientation"] = "upright" if o.lower() == "upright" else "official"
            break
    sides, split = _dict(d.get("sides")), _dict(params.get("split"))
    for where in (d, sides, split, params):
        if isinstance(where.get("split_by"), str):
            out["split_by"] = where["split_by"]
            break
    counts = {k: int(v) for k, v in sides.items() if isinstance(v, int)}
    if counts:
        out["sides"] = counts
    return out


# ---------------------------------------------------------------------------- dict API
# Older callers pass and receive plain dicts; these keep working on the same schema.

def write_manifest(folder: StrPath, *, kind: str, inputs: dict[str, Any], parameters: dict[str, Any],
                   notes: list[str] | None = None, extra: dict[str, Any] | None = None,
                   name: str = MANIFEST_NAME) -> dict[str, Any]:
    """Write ``folder/manifest.json`` (see :class:`Manifest`) and return its JSON form.

    ``extra`` holds further schema fields (``datasets``, ``orientation``,
    ``sides``...) in their JSON form; older keys (``dataset``/``counts``) are mapped.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_manifest(d, kind="demo", inputs={}, parameters={})["schema"]
    1
    """
    raw: dict[str, Any] = {"kind": kind, "inputs": inputs, "parameters": parameters, "notes": notes or []}
    raw.update(extra or {})
    unknown = set(raw) - _FIELDS - _V0_KEYS
    if unknown:
        raise ConfigError("unknown manifest fields", expected=", ".join(sorted(_FIELDS)),
                          found=", ".join(sorted(unknown)))
    m = Manifest.from_dict({**raw, "schema": 0} if _is_v0(raw) else {**raw, "schema": SCHEMA_VERSION})
    m = dataclasses.replace(m, version=package_version(), python=platform.python_version())
    return m.write(folder, name).to_dict()


def build_folder_problems(folder: StrPath) -> list[str]:
    """What ``--overwrite`` would destroy in ``folder`` beyond what mnistforge built there.

    A build folder: ``manifest.json`` with its ``schema`` field and ``"package": "mnistforge"``, and nothing but the
    files its ``outputs`` list, at their recorded sizes. A ``build all`` folder: only subfolders that each are one
    (named ``sub/file``).  Empty: the folder holds exactly that (see :func:`mnistforge.io.atomic.check_replaceable`).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.bin").write_bytes(b"abc")
    >>> _ = Manifest(kind="demo").write(d); build_folder_problems(d)
    []
    >>> _ = (d / "notes.txt").write_text("mine"); build_folder_problems(d)
    ['notes.txt (not listed)']
    """
    folder = Path(folder)
    if not os.path.lexists(folder / MANIFEST_NAME):
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            return [f"unreadable ({e.strerror})"]
        subfolders = [c for c in children if c.is_dir(follow_symlinks=False)
                      and (Path(c.path) / MANIFEST_NAME).is_file()]
        if not subfolders:
            return [f"no {MANIFEST_NAME}: not a build folder"] + unlisted_entries(folder, {})
        problems = [f"{c.name} (not a build folder)" for c in children if c not in subfolders]
        for c in subfolders:                      # `build all`: one build per subfolder
            problems += [f"{c.name}/{p}" for p in recorded_folder_problems(Path(c.path))]
        return problems
    return recorded_folder_problems(folder)


def recorded_folder_problems(folder: StrPath, name: str = MANIFEST_NAME) -> list[str]:
    """What in ``folder`` its manifest ``name`` (written by :meth:`Manifest.write`) does not list."""
    folder = Path(folder)
    p = folder / name
    if not os.path.lexists(p):
        return [f"no {name}: not a folder mnistforge wrote"] + unlisted_entries(folder, {})
    try:
        with open(p, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        return [f"{name} (unreadable: {e})"]
    if not (isinstance(d, dict) and isinstance(d.get("schema"), int)
            and d.get("package") == "mnistforge" and isinstance(d.get("outputs"), dict)):
        return [f"{name} (no schema, generator or outputs fields: not a manifest "
                "mnistforge wrote)"]
    listed: dict[str, int | None] = {name: None}
    for rel, entry in d["outputs"].items():
        size = entry.get("bytes") if isinstance(entry, dict) else None
        listed[str(rel)] = size if isinstance(size, int) else None
    return unlisted_entries(folder, listed)


def read_manifest(folder: StrPath, name: str = MANIFEST_NAME) -> dict[str, Any] | None:
    """The JSON form (current schema) of a folder's manifest, or None; see :meth:`Manifest.read`."""
    m = Manifest.read(folder, name)
    return None if m is None else m.to_dict()
