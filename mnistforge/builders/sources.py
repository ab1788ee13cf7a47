"""What a build's manifest records of the SD19 source it read (``inputs``), for every builder."""
from __future__ import annotations

from ..io.hashing import sha256_file


def sd19_inputs(src, sd19, index, *, missing=None, inconsistent=None, syn=None) -> dict:
    """The manifest's ``inputs`` for a build from ``src`` (an opened SD19, ``sd19`` its path):
    path, fingerprint, edition, character count, what it lacks or repeats (when built with
    consent) and the sha256 of a synthetic replica's description."""
    return {"sd19": str(getattr(src, "path", sd19)),
            "sd19_fingerprint": getattr(src, "fingerprint", None),
            "sd19_edition": getattr(src, "edition", None),
            "sd19_characters": int(len(index)),
            **({"sd19_missing": missing} if missing else {}),
            **({"sd19_inconsistent": inconsistent} if inconsistent else {}),
            **({"sd19_synthetic_description_sha256": sha256_file(syn)} if syn is not None else {})}
