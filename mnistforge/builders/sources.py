"""For every builder: what its manifest records of the SD19 source it read (``inputs``)."""
from __future__ import annotations

import os
from typing import Any, Sized

from ..io.hashing import sha256_file


def sd19_inputs(src: object, sd19: str | os.PathLike[str], index: Sized, *, missing: list[str] | None = None,
                inconsistent: list[str] | None = None, syn: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The manifest's ``inputs`` for a build from ``src`` (an opened SD19, ``sd19`` its path):
    path, fingerprint, edition, character count, what it lacks or repeats (when built with
    consent) and the sha256 of a synthetic replica's description."""
    return {"sd19": str(getattr(src, "path", sd19)), "sd19_fingerprint": getattr(src, "fingerprint", None),
            "sd19_edition": getattr(src, "edition", None), "sd19_characters": int(len(index)),
            **({"sd19_missing": missing} if missing else {}),
            **({"sd19_inconsistent": inconsistent} if inconsistent else {}),
            **({"sd19_synthetic_description_sha256": sha256_file(syn)} if syn is not None else {})}
