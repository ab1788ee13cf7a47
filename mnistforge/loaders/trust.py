"""Is a folder's data what its file names say? Checked before :func:`mnistforge.load` returns it.

Files under official names are easy to mix up: Fashion-MNIST, KMNIST and MNIST
share theirs, and a folder may hold an old or edited copy.  So a folder load
checks, cheaply, one file of the split it reads:

* with a build manifest (``manifest.json``): the labels file against the
  sha256 the manifest recorded for it ("changed since the build");
* without one: the labels file against the registry's hashes (of the file, or
  of its decompressed content when the folder holds a raw or re-compressed
  copy), through :func:`mnistforge.cache.verify.decide`.  When the registry
  pins nothing usable for the labels, the images file is checked the same way.
  When nothing is pinned at all, the files load as ``"unpinned"`` (logged).

Label files are small (tens of kB), so a load costs a hash of kilobytes, not
of the images.  A mismatch raises :class:`~mnistforge.errors.DataMismatchError`
saying what the files are instead (when they match another registry entry) and
how to load them anyway: ``load(..., trust_files=True)``, or
``MNISTFORGE_TRUST_FILES=1`` on the command line.
"""
from __future__ import annotations

from pathlib import Path

from ..cache.verify import decide
from ..errors import DataMismatchError
from ..log import get_logger
from ..io.compression import compression_of
from ..io.hashing import hash_content, hash_file
from ..io.manifest import Manifest
from ..registry import DatasetInfo, RemoteFile, SplitInfo, get_dataset, get_file, list_datasets, list_files

logger = get_logger(__name__)  # logging only when a record could be shown

__all__ = ["check_folder", "check_folder_file", "identify", "OPT_OUT"]

OPT_OUT = ("to load them anyway, pass trust_files=True to mnistforge.load "
           "(command line: MNISTFORGE_TRUST_FILES=1)")


def _hashes(path: Path) -> dict:
    sha, md5 = hash_file(path)
    out = {"sha256": sha, "md5": md5}
    content = hash_content(path)
    if content is None:  # a raw copy: its bytes are the content
        out.update(content_sha256=sha, content_md5=md5)
    else:
        out.update(content_sha256=content[0], content_md5=content[1])
    return out


def _registry_status(path: Path, remote: RemoteFile, h: dict) -> str | None:
    """``decide``'s status for a local copy that may be raw or re-compressed; "unpinned" when
    nothing comparable is pinned."""
    same_wrapper = compression_of(path.name) == remote.compression
    has_content = bool(remote.content_sha256 or remote.content_md5)
    if same_wrapper:
        if not (remote.sha256 or remote.md5 or has_content):
            return "unpinned"
        return decide(remote, h["sha256"], h["md5"], h["content_sha256"], h["content_md5"])
    if not has_content:
        return "unpinned"  # a raw or re-compressed copy, and only the wrapper is pinned
    if compression_of(path.name) is None:
        return decide(remote, h["sha256"], h["md5"], raw=True)
    return decide(remote, None, None, h["content_sha256"], h["content_md5"])


def _usage(remote: RemoteFile) -> list[tuple[str, str]]:
    """(dataset, split) pairs whose files include ``remote``."""
    out = []
    for name in list_datasets():
        info = get_dataset(name)
        if info.group != remote.group:
            continue
        for sp in info.splits.values():
            if not sp.is_view and remote.name in (sp.images, sp.labels):
                out.append((name, sp.name))
    return out


def identify(h: dict) -> list[tuple[RemoteFile, list[tuple[str, str]]]]:
    """Registry files whose published or content hashes equal the hashes in ``h``."""
    hits = []
    for rf in list_files():
        if (rf.sha256 and rf.sha256 == h["sha256"]) or (rf.md5 and rf.md5 == h["md5"]) \
                or (rf.content_sha256 and rf.content_sha256 == h["content_sha256"]) \
                or (rf.content_md5 and rf.content_md5 == h["content_md5"]):
            hits.append((rf, _usage(rf)))
    return hits


def _manifest_sha(manifest: Manifest, fname: str) -> str | None:
    out = manifest.outputs.get(fname)
    return out.get("sha256") if isinstance(out, dict) else out


def check_folder_file(info: DatasetInfo, split: str, path: Path, fname: str,
                      manifest: Manifest | None) -> str:
    """Check the local file ``path`` (official name ``fname``) of ``info``; return its status.

    Statuses: ``"built"`` (matches the build manifest), ``exact``/``content``/``raw``
    (matches the registry, see :mod:`mnistforge.cache.verify`), ``"unpinned"``
    (nothing to compare with).  Raises DataMismatchError otherwise.
    """
    if manifest is not None:
        want = _manifest_sha(manifest, path.name)
        if want:
            sha, _ = hash_file(path)
            if sha == want:
                return "built"
            raise DataMismatchError(
                f"{info.name}: the file changed since it was built", path=path,
                expected=f"sha256 {want} (recorded in {path.parent / 'manifest.json'})",
                found=f"sha256 {sha}",
                hint="rebuild the folder (`mnistforge build`), or " + OPT_OUT)
        if not manifest.outputs:  # a manifest written before outputs were hashed: nothing to compare
            logger.info("%s: its manifest records no output hashes; not checked", path)
            return "unpinned"
    try:
        remote = get_file(f"{info.group}/{fname}")
    except KeyError:
        return "unpinned"
    h = _hashes(path)
    status = _registry_status(path, remote, h)
    if status is not None:
        return status
    hits = [(rf, uses) for rf, uses in identify(h) if rf.id != remote.id]
    pinned = next(f"{k.replace('_', ' ')} {getattr(remote, k)}" for k in
                  ("content_sha256", "sha256", "content_md5", "md5") if getattr(remote, k))
    if hits:
        rf, uses = hits[0]
        what = f"{rf.id}" + (f" ({', '.join(f'{n} {s}' for n, s in uses)})" if uses else "")
        hint = ""
        if uses:
            n, s = uses[0]
            hint = (f"load them as what they are: mnistforge.load({n!r}, {s!r}, "
                    f"root={str(path.parent)!r}); or, ")
        raise DataMismatchError(
            f"these are not {info.name}'s files", path=path,
            expected=f"{info.name} {split}: {remote.id} ({pinned})", found=f"the data of {what}",
            hint=hint + OPT_OUT)
    raise DataMismatchError(
        f"the files are not {info.name}'s", path=path,
        expected=f"{info.name} {split}: {remote.id} ({pinned})",
        found=f"other content (sha256 {h['sha256']}, content sha256 {h['content_sha256']})"
              + (", and no build manifest.json next to it" if manifest is None
                 else f", and {path.parent / 'manifest.json'} does not list {path.name}"),
        hint="a folder you built has a manifest.json (build it with `mnistforge build`); "
             "official files must be the published ones; " + OPT_OUT)


def check_folder(info: DatasetInfo, fsp: SplitInfo, src) -> None:
    """Check the files of file split ``fsp`` in folder origin ``src`` (see the module doc).

    Records each status in ``src.status``; raises DataMismatchError on a mismatch.
    """
    for fname in (fsp.labels, fsp.images):
        path = src.path_of(fname) if fname else None
        if path is None:
            return  # missing: opening it says so
        status = check_folder_file(info, fsp.name, path, fname, Manifest.read(path.parent))
        src.status[fname] = status
        if status not in ("unpinned", "archive"):
            return
    logger.info("%s %s in %s: no hash to check the files against (unverified)", info.name, fsp.name,
                src.where)
