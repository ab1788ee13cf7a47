"""The one registry of datasets, splits and remote files (``data/registry.json``).

The table is a JSON file inside the package, read with the standard library (:mod:`json`; :mod:`importlib.resources`
only where the package is not a folder on disk).  It describes every dataset the package knows (names, splits, counts,
classes, orientation, label offset, licence, citation) and every remote file (mirrors, size, sha256 of the file *and* of
its decompressed content, md5 where that is all that is published).

Files are keyed ``"<group>/<name>"`` (e.g. ``"mnist/train-images-idx3-ubyte.gz"``); a dataset's files live in the cache
folder ``<cache>/<group>/`` under their official names, and a build folder uses the same names.

Why this module is long: it is the one reader of ``registry.json`` and every typed view of
it (datasets, splits, files, label annotations, torchvision names, superseded releases) sits
next to the parser that fills it, so that a field added to the file is added in one place.

>>> from mnistforge.registry import get_dataset, get_file
>>> ds = get_dataset("emnist-letters")
>>> ds.classes[:3], ds.orientation, ds.split("validation").count
(('N/A (unused)', 'A', 'B'), 'transposed', 20800)
>>> get_file("mnist/t10k-labels-idx1-ubyte.gz").size
4542
"""
from __future__ import annotations

import contextlib
import difflib
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, DatasetNotFoundError
from .io.compression import COMPRESSIONS, strip_compression  # noqa: F401 - part of this API
from .io.formats import FORMATS

__all__ = [
    "RemoteFile", "SplitInfo", "DatasetInfo", "get_dataset", "list_datasets", "get_file",
    "list_files", "dataset_files", "registry_notes", "strip_compression", "COMPRESSIONS",
    "emnist_splits", "balanced_datasets", "LabelAnnotation", "label_annotations",
    "TorchvisionInfo", "torchvision_datasets", "torchvision_folders", "FORMATS", "use_registry",
    "registry_path", "dataset_by_alias", "label_joins", "SupersededRelease", "superseded_releases", "find_superseded",
]

@dataclass(frozen=True)
class RemoteFile:
    """One published file: where to get it and how to recognise it.

    ``sha256``/``size``/``md5`` describe the file as published; ``content_*`` its decompressed content (mirrors that
    re-compress change the former, not the latter).  ``archive``/``member`` name the zip that holds it (EMNIST).
    ``pinned`` is false when no hash at all is known: such a file is accepted but always reported as unverified.
    """

    id: str
    group: str
    name: str
    urls: tuple[str, ...] = ()
    size: int | None = None
    sha256: str | None = None
    md5: str | None = None
    content_size: int | None = None
    content_sha256: str | None = None
    content_md5: str | None = None
    archive: str | None = None
    member: str | None = None
    pinned: bool = False
    note: str = ""
    #: XXH3-128 of the decompressed content (:data:`mnistforge.io.hashing.FAST`): how the trust
    #: gate identifies a copy on a first load; None where not recorded (content_sha256 then)
    content_xxh3_128: str | None = None
    #: how the file's array is stored: ``"idx"`` (default) or ``"npz"`` (:data:`FORMATS`)
    format: str = "idx"
    #: the array of an ``.npz`` file (``"arr_0"``, what ``np.savez`` names an unnamed array)
    array: str | None = None
    #: the Hub's parquet copy of its split, after the Hub's address (``cache/hub_parquet``)
    hub_parquet: str | None = None

    @property
    def compression(self) -> str | None:
        """``"gz"``, ``"xz"``, ``"bz2"``, ``"zip"`` or ``None`` (from the name)."""
        return next((suf for suf in ("gz", "xz", "bz2", "zip") if self.name.endswith("." + suf)), None)

    @property
    def raw_name(self) -> str:
        """Name of the decompressed copy (``t10k-images-idx3-ubyte``)."""
        return strip_compression(self.name)

    @property
    def has_raw_copy(self) -> bool:
        """Whether the cache keeps a decompressed copy of it (a compressed idx file, in an
        archive or not); an ``.npz`` or a raw idx file is read as it is."""
        return self.format == "idx" and self.compression in ("gz", "xz", "bz2")

    @property
    def pinned_how(self) -> str:
        """A short phrase saying what the file is checked against."""
        parts = []
        if self.sha256:
            parts.append("sha256")
        elif self.md5:
            parts.append("md5")
        if self.content_sha256:
            parts.append("content sha256")
        elif self.content_md5:
            parts.append("content md5")
        if parts:
            return " + ".join(parts)
        return "via archive " + self.archive if self.archive else "not pinned"


@dataclass(frozen=True)
class SplitInfo:
    """One split of a dataset.

    Either a file split (``images``, ``labels`` [+ ``labels_column`` for an idx2 label table] [+ ``metadata``]) or a
    view of another split: ``of`` with ``rows`` (``[start, stop)``, ``stop`` may be None), ``last`` (the last
    ``len(<last>)`` rows) or ``drop_last`` (all but those).
    """

    name: str
    count: int
    images: str | None = None
    labels: str | None = None
    labels_column: int | None = None
    metadata: str | None = None
    of: str | None = None
    rows: tuple[int, int | None] | None = None
    last: str | None = None
    drop_last: str | None = None
    description: str = ""
    #: sha256 of the sorted (image, label) digests: the same for a copy in any order
    #: (:func:`mnistforge.io.hashing.order_free_sha256`); None where not computed
    order_free_sha256: str | None = None
    #: exported only when asked for by ``NAME:SPLIT`` (qmnist's ``nist``: another dataset in all
    #: but name)
    opt_in: bool = False
    #: a published table (file id) and its rows ``[start, stop)``: each row's SD19 identity (MNIST, QMNIST)
    identities: tuple[str, int, int | None] | None = None

    @property
    def is_view(self) -> bool:
        return self.of is not None


@dataclass(frozen=True)
class TorchvisionInfo:
    """How ``torchvision.datasets.<cls>`` reads a dataset (the registry's ``torchvision`` entry).

    ``files`` maps each file split to the ``(images, labels)`` names torchvision
    opens in :attr:`folder` (the release files, decompressed); ``classes`` is its
    ``classes`` attribute; ``split`` is EMNIST's ``split`` argument; ``what``
    QMNIST's ``what`` values, which are this dataset's split names;
    ``needs_every_split``: the class loads only when every split's files exist.

    >>> tv = get_dataset("emnist-letters").torchvision
    >>> tv.cls, tv.split, tv.folder, tv.files["test"][0], tv.classes[:2]
    ('EMNIST', 'letters', 'EMNIST/raw', 'emnist-letters-test-images-idx3-ubyte', ('N/A', 'a'))
    """

    cls: str
    classes: tuple[str, ...]
    files: dict[str, tuple[str, str]]
    split: str | None = None
    what: tuple[str, ...] = ()
    needs_every_split: bool = False
    note: str = ""

    @property
    def folder(self) -> str:
        """``<class name>/raw``: torchvision's ``raw_folder`` relative to ``root``."""
        return f"{self.cls}/raw"


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset (or a source/archive) of the registry."""

    name: str
    group: str
    title: str
    kind: str
    description: str
    homepage: str
    licence: str
    citation: str
    classes: tuple[str, ...] = ()
    class_note: str = ""
    orientation: str = "upright"
    label_offset: int = 0
    #: height x width of every image (the trust gate refuses other shapes)
    image_shape: tuple[int, int] = (28, 28)
    metadata_fields: tuple[str, ...] = ()
    metadata_note: str = ""
    validation_size: int | None = None
    #: every split holds exactly as many images of each class (EMNIST balanced,
    #: letters, digits, mnist)
    balanced: bool = False
    splits: dict[str, SplitInfo] = field(default_factory=dict)
    extra_files: tuple[str, ...] = ()
    source_files: tuple[str, ...] = ()
    #: how torchvision's dataset class reads this dataset (None: torchvision has none)
    torchvision: TorchvisionInfo | None = None
    #: other names for it (Hugging Face Hub ids such as ``ylecun/mnist``), lower case
    aliases: tuple[str, ...] = ()
    #: the frame style its images must show (``"mnist"``: 20x20 box; ``"frame-filling"``: EMNIST);
    #: None: no expectation (``checks/statistics``)
    image_style: str | None = None
    #: handwritten Latin characters and digits: a transposed copy can be told by the strokes
    #: (``checks/statistics.check_orientation`` judges it); False for clothes, cursive Kuzushiji
    handwriting: bool = False
    #: train and test by different writers in the release (True: MNIST, QMNIST; False: EMNIST's
    #: random split, unless a build says ``split_by=writer``); None: unknown (``checks/writers``)
    writers_disjoint: bool | None = None
    #: the dataset card's caveats, by name, in the order shown (the texts: ``hub/targets.CAVEATS``)
    card_caveats: tuple[str, ...] = ()
    #: extra checks ``verify`` runs on a build of it, by name (the functions:
    #: ``checks/rows.BUILD_CHECKS``; ``leaf``: FEMNIST's writer, class and LEAF-parameter checks)
    build_checks: tuple[str, ...] = ()
    #: among datasets sharing file names (MNIST, Fashion-MNIST, KMNIST), the one a folder that
    #: nothing else tells apart is assumed to hold (``loaders/targets.detect_dataset``)
    assumed_for_shared_names: bool = False
    #: cut from NIST SD19 (MNIST, QMNIST, EMNIST, FEMNIST): may share characters and writers with another
    from_sd19: bool = False
    #: the official train/test are a random split of all SD19 characters (EMNIST ByClass, ByMerge)
    random_sd19_split: bool = False

    def split(self, name: str) -> SplitInfo:
        """Return the :class:`SplitInfo` called ``name`` (raises DatasetNotFoundError)."""
        try:
            return self.splits[name]
        except KeyError:
            raise DatasetNotFoundError(
                f"unknown split {name!r} of {self.name}",
                expected="one of " + ", ".join(self.splits) if self.splits else "a dataset with splits",
                found=name, hint=self.split_hint(name)) from None

    def split_hint(self, name: str) -> str | None:
        """"did you mean" a split of this dataset, else which datasets have the split meant."""
        if (guess := nearest(name, self.splits)) is not None:
            return f"did you mean {guess!r}?"
        other = nearest(name, {s for d in _datasets().values() for s in d.splits})
        owners = [n for n, d in _datasets().items() if other in d.splits]
        return f"{other!r} is a split of {', '.join(owners)}, not of {self.name}" if other else None

    def file_split(self, name: str) -> SplitInfo:
        """The split holding the files of ``name`` (itself, or the split it is a view of)."""
        sp = self.split(name)
        return self.split(sp.of) if sp.of else sp

    def file_names(self) -> list[str]:
        """Official names of every file of this dataset that is in the files table."""
        names: list[str] = []
        for sp in self.splits.values():
            for n in (sp.images, sp.labels, sp.metadata):
                if n and n not in names and _files().get(f"{self.group}/{n}"):
                    names.append(n)
        for n in self.extra_files + self.source_files:
            if n not in names:
                names.append(n)
        return names

    def remote_files(self) -> list[RemoteFile]:
        """The :class:`RemoteFile` entries of :meth:`file_names`."""
        return [get_file(f"{self.group}/{n}") for n in self.file_names()]


_BUNDLED = os.path.join(os.path.dirname(__file__), "data", "registry.json")
#: the registry file in use (:func:`use_registry`); None: the bundled one
_path: str | None = None


@functools.lru_cache(maxsize=1)
def _raw() -> Any:  # the parsed registry.json (its schema: docs/architecture.md#a-registry-entry)
    if _path is not None:
        with open(_path, encoding="utf-8") as f:
            return json.load(f)
    # A plain open: importlib.resources costs a one-shot load more than the parse does.
    try:
        with open(_BUNDLED, encoding="utf-8") as f:
            text = f.read()
    except OSError:  # not a folder on disk (a zip): the import system reads it
        from importlib import resources

        text = resources.files("mnistforge").joinpath("data/registry.json").read_text("utf-8")
    return json.loads(text)


def registry_path() -> str:
    """The registry file in use (the bundled ``data/registry.json`` unless :func:`use_registry`)."""
    return _path or _BUNDLED


@contextlib.contextmanager
def use_registry(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Read the registry from ``path`` (same schema as ``data/registry.json``) inside the block;
    ``None``: the bundled one.  For tests and for trying an entry before it is added: an entry
    of that file loads, verifies, shows and exports with no code change.

    >>> with use_registry(registry_path()):
    ...     get_dataset("mnist").title
    'MNIST'
    """
    global _path
    before = _path
    _path = None if path is None else os.fspath(path)
    _clear()
    try:
        _raw()  # a broken file fails here, not at the first use
        yield
    finally:
        _path = before
        _clear()


def _clear() -> None:
    for f in (_raw, _files, _datasets, label_annotations, _superseded):
        f.cache_clear()


@functools.lru_cache(maxsize=1)
def _files() -> dict[str, RemoteFile]:
    out = {}
    for fid, d in _raw()["files"].items():
        out[fid] = RemoteFile(
            id=fid, group=d["group"], name=d["name"], urls=tuple(d.get("urls", ())),
            size=d.get("size"), sha256=d.get("sha256"), md5=d.get("md5"),
            content_size=d.get("content_size"), content_sha256=d.get("content_sha256"),
            content_md5=d.get("content_md5"), archive=d.get("archive"), member=d.get("member"),
            pinned=bool(d.get("pinned")), note=d.get("note", ""), format=d.get("format", "idx"), array=d.get("array"),
            content_xxh3_128=d.get("content_xxh3_128"), hub_parquet=d.get("hub_parquet"))
        if out[fid].format not in FORMATS:
            raise ConfigError(f"registry file {fid}: unknown format", expected=" or ".join(FORMATS),
                              found=repr(out[fid].format))
    return out


@functools.lru_cache(maxsize=1)
def _datasets() -> dict[str, DatasetInfo]:
    out = {}
    for name, d in _raw()["datasets"].items():
        splits = {}
        for sname, s in d.get("splits", {}).items():
            rows, ids = (tuple(s["rows"]) if s.get("rows") is not None else None), s.get("identities")
            splits[sname] = SplitInfo(
                name=sname, count=int(s["count"]), images=s.get("images"), labels=s.get("labels"),
                labels_column=s.get("labels_column"), metadata=s.get("metadata"), of=s.get("of"),
                rows=rows, last=s.get("last"), drop_last=s.get("drop_last"), description=s.get("description", ""),
                order_free_sha256=s.get("order_free_sha256"), opt_in=bool(s.get("opt_in", False)),
                identities=(ids["file"], int(ids["rows"][0]), ids["rows"][1]) if ids else None)
        out[name] = DatasetInfo(
            name=name, group=d["group"], title=d["title"], kind=d["kind"],
            description=d["description"], homepage=d.get("homepage", ""), licence=d["licence"],
            citation=d["citation"], classes=tuple(d.get("classes", ())),
            class_note=d.get("class_note", ""), orientation=d.get("orientation", "upright"),
            label_offset=int(d.get("label_offset", 0)), image_shape=tuple(d.get("image_shape", (28, 28))),
            metadata_fields=tuple(d.get("metadata_fields", ())),
            metadata_note=d.get("metadata_note", ""), validation_size=d.get("validation_size"),
            balanced=bool(d.get("balanced", False)), splits=splits, extra_files=tuple(d.get("extra_files", ())),
            source_files=tuple(d.get("files", ())), torchvision=_torchvision(d.get("torchvision")),
            aliases=tuple(a.lower() for a in d.get("aliases", ())), image_style=d.get("image_style"),
            handwriting=bool(d.get("handwriting", False)), writers_disjoint=d.get("writers_disjoint"),
            card_caveats=tuple(d.get("card_caveats", ())), build_checks=tuple(d.get("build_checks", ())),
            assumed_for_shared_names=bool(d.get("assumed_for_shared_names", False)),
            from_sd19=bool(d.get("from_sd19")), random_sd19_split=bool(d.get("random_sd19_split")))
    return out


def _torchvision(d: dict[str, Any] | None) -> TorchvisionInfo | None:
    if not d:
        return None
    return TorchvisionInfo(
        cls=d["class"], classes=tuple(d["classes"]),
        files={s: (f[0], f[1]) for s, f in d["files"].items()}, split=d.get("split"),
        what=tuple(d.get("what", ())), needs_every_split=bool(d.get("needs_every_split", False)),
        note=d.get("note", ""))


def list_datasets(kind: str | None = "dataset") -> list[str]:
    """Names of the registry entries of ``kind`` (``"dataset"``, ``"source"``,
    ``"archive"``; ``None`` for all), in registry order.

    >>> list_datasets()[:3]
    ['mnist', 'fashion-mnist', 'kmnist']
    """
    return [n for n, d in _datasets().items() if kind is None or d.kind == kind]


def get_dataset(name: str) -> DatasetInfo:
    """Return the :class:`DatasetInfo` called ``name``.

    Raises :class:`~mnistforge.errors.DatasetNotFoundError` naming the known ones.
    """
    try:
        return _datasets()[name]
    except KeyError:
        guess = nearest(name, _datasets())
        raise DatasetNotFoundError(
            f"unknown dataset {name!r}", expected="one of " + ", ".join(_datasets()), found=name,
            hint=f"did you mean {guess!r}?" if guess else "run `mnistforge info` for the list") from None


def name_key(text: str) -> str:
    """A name as compared: case, spaces and ``-_/.`` ignored (``"EMNIST_Letters"`` -> ``"emnistletters"``)."""
    return re.sub(r"[\s_\-/.]+", "", text.lower())


def nearest(text: str, choices: Iterable[str]) -> str | None:
    """The choice nearest ``text`` (case, spaces, ``-_/.`` ignored) for a "did you mean", or None.

    >>> nearest("validaton", ["train", "validation"]), nearest("MNSIT", ["mnist"]), nearest("x", ["mnist"])
    ('validation', 'mnist', None)
    """
    keys = {name_key(c): c for c in choices}
    hits = difflib.get_close_matches(name_key(text), list(keys), n=1, cutoff=0.6)
    return keys[hits[0]] if hits else None


def dataset_by_alias(text: str) -> str | None:
    """The dataset another library's name (a Hub id, the registry's ``aliases``) stands for.

    >>> dataset_by_alias("ylecun/mnist"), dataset_by_alias("nothing/here")
    ('mnist', None)
    """
    key = text.lower()
    return next((n for n, info in _datasets().items() if key in info.aliases), None)


def emnist_splits() -> tuple[str, ...]:
    """The EMNIST datasets that exist, by their short names, in registry order.

    They are the registry's ``emnist-<name>`` datasets: ``mnistforge build emnist-<name>`` builds one, ``build emnist``
    all of them.

    >>> emnist_splits()
    ('byclass', 'bymerge', 'balanced', 'letters', 'digits', 'mnist')
    """
    return tuple(info.name[len("emnist-"):] for info in _datasets().values()
                 if info.group == "emnist" and info.kind == "dataset" and info.name.startswith("emnist-"))


def balanced_datasets() -> frozenset[str]:
    """Names of the datasets whose every split has the same count per class.

    >>> sorted(balanced_datasets())
    ['emnist-balanced', 'emnist-digits', 'emnist-letters', 'emnist-mnist']
    """
    return frozenset(n for n, info in _datasets().items() if info.balanced)


def torchvision_datasets() -> list[str]:
    """The datasets a torchvision class reads, in registry order.

    >>> torchvision_datasets()[:4]
    ['mnist', 'fashion-mnist', 'kmnist', 'qmnist']
    """
    return [n for n, info in _datasets().items() if info.torchvision is not None]


def torchvision_folders() -> dict[str, str]:
    """torchvision's class folder (``root/<Class>``) -> the dataset it holds, or the group when
    several datasets share it (``EMNIST`` holds the six EMNIST sets).

    >>> torchvision_folders()["FashionMNIST"], torchvision_folders()["EMNIST"]
    ('fashion-mnist', 'emnist')
    """
    out: dict[str, str] = {}
    for name in torchvision_datasets():
        info = _datasets()[name]
        assert info.torchvision is not None
        cls = info.torchvision.cls
        out[cls] = info.group if cls in out else name
    return out


def list_files() -> list[RemoteFile]:
    """Every remote file of the registry."""
    return list(_files().values())


def get_file(name: str | RemoteFile) -> RemoteFile:
    """Return a :class:`RemoteFile` by id (``"group/name"``) or by unique file name.

    A :class:`RemoteFile` is returned as is.

    >>> get_file("gzip.zip").id
    'emnist/gzip.zip'
    """
    if isinstance(name, RemoteFile):
        return name
    files = _files()
    if name in files:
        return files[name]
    hits = [f for f in files.values() if f.name == name]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise ConfigError(
            f"file name {name!r} is ambiguous", expected="a unique name or '<group>/<name>'",
            found=", ".join(f.id for f in hits))
    raise DatasetNotFoundError(
        f"unknown file {name!r}", expected="a registry file id such as 'mnist/train-images-idx3-ubyte.gz'",
        found=name, hint="run `mnistforge info NAME` to list a dataset's files")


def dataset_files(name: str) -> list[RemoteFile]:
    """Every remote file of dataset/source/archive ``name`` (what ``mnistforge fetch NAME`` gets)."""
    return get_dataset(name).remote_files()


def registry_notes() -> list[str]:
    """The notes at the top of ``registry.json`` (provenance of the hashes)."""
    return list(_raw().get("notes", ()))


# --- human label annotations (Northcutt et al. 2021) ---------------------------

@dataclass(frozen=True)
class LabelAnnotation:
    """A file of human label votes and one file split it annotates.

    Study id ``i`` is row ``i + offset`` of ``dataset``'s file split ``split`` (views such as ``qmnist:test10k`` inherit
    it).  ``study`` names the registry entry (kind ``annotations``) with the title, licence and citation; ``side_file``
    is the idx file a build writes next to that split.
    """

    file: str
    study: str
    dataset: str
    split: str
    offset: int
    side_file: str
    workers: int
    min_given: int
    rule: str
    #: how many rows the study covers from ``offset`` on (None: the whole split)
    rows: int | None = None


@functools.lru_cache(maxsize=None)
def label_annotations(dataset: str | None = None) -> tuple[LabelAnnotation, ...]:
    """The label annotations of ``dataset`` (every one when ``None``), in registry order.

    >>> [(a.dataset, a.split, a.file) for a in label_annotations("qmnist")]
    [('qmnist', 'test', 'label-errors/mnist_mturk.json')]
    >>> label_annotations("fashion-mnist")
    ()
    """
    out = []
    for fid, d in _raw().get("label_annotations", {}).items():
        for a in d["applies_to"]:
            if dataset is None or a["dataset"] == dataset:
                out.append(LabelAnnotation(
                    file=fid, study=d["study"], dataset=a["dataset"], split=a["split"],
                    offset=int(a.get("offset", 0)), side_file=a["side_file"],
                    workers=int(d["workers"]), min_given=int(d["min_given"]), rule=d["rule"], rows=d.get("rows")))
    return tuple(out)


def label_joins(study: str) -> str:
    """One sentence saying which splits the votes of ``study`` are joined to, from the
    structured ``applies_to`` entries (dataset, split, offset, the rows the study covers).

    >>> label_joins("label-errors")
    'Joined to MNIST test and QMNIST test (first 10,000 rows) as metadata by mnistforge.load(..., with_metadata=True).'
    """
    parts = []
    for a in label_annotations():
        if a.study != study:
            continue
        info = get_dataset(a.dataset)
        n = info.split(a.split).count
        part = f"{info.title} {a.split}"
        if a.rows is not None and (a.offset, a.rows) != (0, n):
            part += (f" (first {a.rows:,} rows)" if a.offset == 0
                     else f" (rows {a.offset:,} to {a.offset + a.rows - 1:,})")
        parts.append(part)
    if not parts:
        return ""
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Joined to {joined} as metadata by mnistforge.load(..., with_metadata=True)."


# --- publishing facts (Hugging Face licence ids, licence links, BibTeX) --------

def hub_license(group: str) -> tuple[str, str | None]:
    """``(license, license_name)`` for the Hub card of an official release of ``group``.

    >>> hub_license("mnist")
    ('cc-by-sa-3.0', None)
    >>> hub_license("emnist")
    ('other', 'nist-sd19')
    """
    hub = _raw()["hub"]
    lic = hub["licenses"].get(group)
    return (lic, None) if lic else ("other", hub["built_license"]["license_name"])


def built_license() -> tuple[str, str]:
    """``(license, license_name)`` of a dataset rebuilt from NIST SD19."""
    b = _raw()["hub"]["built_license"]
    return b["license"], b["license_name"]


def license_link(name: str | None) -> str | None:
    """The URL of a named licence (``license_name`` on the Hub), if the registry knows it."""
    return _license_entry(name, "link")


def license_text(name: str | None) -> str | None:
    """One sentence naming the terms of a named licence, if the registry knows it."""
    return _license_entry(name, "text")


def _license_entry(name: str | None, key: str) -> str | None:
    entry = _raw()["hub"]["license_names"].get(name or "")
    return str(entry[key]) if entry else None


def bibtex(group: str) -> str:
    """The BibTeX entry to cite for ``group`` (``mnist``, ``qmnist``, ``emnist``, ``sd19``...), or ``""``.

    >>> bibtex("qmnist").splitlines()[0]
    '@incollection{yadav2019cold,'
    """
    return str(_raw()["hub"]["bibtex"].get(group, ""))


# --- superseded releases -------------------------------------------------------

@dataclass(frozen=True)
class SupersededRelease:
    """An older release of a dataset's file or split, recognised by its public hashes.

    ``file`` is the registry file it preceded (``kmnist/train-images-idx3-ubyte.gz``), or None for a split-level entry
    (``order_free_sha256`` of the split's pairs); ``release`` its date; ``superseded_by`` what replaced it and why;
    ``source`` where the hashes are published. Read from ``superseded_releases`` in ``data/registry.json``.
    """

    dataset: str
    split: str | None
    release: str
    superseded_by: str
    file: str | None = None
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    content_sha256: str | None = None
    content_md5: str | None = None
    order_free_sha256: str | None = None
    source: str = ""
    note: str = ""

    def describe(self) -> str:
        """``the release of DATE of <dataset> <split> (<file>), superseded by ...``."""
        what = f"{self.dataset}" + (f" {self.split}" if self.split else "")
        if self.file:
            what += f" ({self.file.rsplit('/', 1)[-1]})"
        return f"the release of {self.release} of {what}, superseded by {self.superseded_by}"


_HASH_FIELDS = ("sha256", "md5", "content_sha256", "content_md5", "order_free_sha256")


@functools.lru_cache(maxsize=1)
def _superseded() -> tuple[SupersededRelease, ...]:
    entries = _raw().get("superseded_releases", {}).get("releases", [])
    return tuple(SupersededRelease(
        dataset=e["dataset"], split=e.get("split"), release=e["release"],
        superseded_by=e["superseded_by"], file=e.get("file"), size=e.get("size"),
        source=e.get("source", ""), note=e.get("note", ""), **{k: e.get(k) for k in _HASH_FIELDS}) for e in entries)


def superseded_releases() -> tuple[SupersededRelease, ...]:
    """Every superseded release the registry knows (see :class:`SupersededRelease`)."""
    return _superseded()


def find_superseded(**hashes: str | None) -> SupersededRelease | None:
    """The superseded release one of ``hashes`` (``sha256=``, ``md5=``, ``content_sha256=``,
    ``content_md5=``, ``order_free_sha256=``) belongs to, or None.

    >>> find_superseded(sha256="0" * 64) is None
    True
    """
    if unknown := set(hashes) - set(_HASH_FIELDS):
        raise ConfigError("unknown hash kind", expected=", ".join(_HASH_FIELDS), found=", ".join(sorted(unknown)))
    return next((rel for rel in superseded_releases()
                 if any(v and getattr(rel, k) == v for k, v in hashes.items())), None)
