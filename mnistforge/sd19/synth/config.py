"""Configuration and constants of the synthetic SD19."""
from __future__ import annotations

import dataclasses
import logging
import os

import numpy as np

from ...errors import ConfigError
from .. import nist_table as nt

logger = logging.getLogger(__name__)

HIERARCHIES = ("by_write", "by_class", "by_merge", "by_field")
#: Fixed timestamp of every zip member (the earliest a zip can hold): reproducible zips.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: Form template ids are drawn from 0..TEMPLATES-1 (NIST's guide gives no list; two digits).
TEMPLATES = 100
#: The writer who filled two forms (two by_write folders) in the real SD19.
TWO_FORM_WRITER = 3951
#: Below this many characters rendering stays in-process (a pool costs more than it saves).
PARALLEL_MIN = 3000
#: Name of the description file written next to the hierarchies.
DESCRIPTION = "synthetic-sd19.json"

PLAN_DTYPE = np.dtype([
    ("hsf", "u1"), ("writer", "i2"), ("template", "u1"), ("folder", "i4"), ("field", "S1"),
    ("entry", "i4"), ("ascii", "u1"), ("digit_index", "i4"), ("duplicate_of", "i4"),
])

_SPREAD = 30.0   # Dirichlet concentration of per-writer counts (coefficient of variation ~0.18)


@dataclasses.dataclass(frozen=True)
class SynthConfig:
    """What to synthesise.

    ``scale``: Fraction of NIST's published counts, ``0 < scale <= 1`` (1 = 814,255 characters).
        With ``layout`` the digits come from the table; ``scale`` only sizes the other fields.
    ``edition``: 2 (2016, PNG per character) or 1 (1995, ``.mis`` + ``.cls`` + ``.mit``).
    ``packaging``: ``"zip"`` (``by_write.zip`` ... as NIST serves them) or ``"dir"`` (unpacked trees).
    ``seed``: Everything random derives from it; same config, same bytes.
    ``layout``: QMNIST/xnist extended-label table (``xnist-labels.tsv[.xz]``) whose digit layout to reproduce exactly.
    ``fields``: Subset of ``"dulc"``: digits, uppers, lowers, constitution.
    ``hierarchies`` (tuple of str): Which of ``by_write``, ``by_class``, ``by_merge``, ``by_field`` to write.
    ``by_write_cls``: 2nd edition only: also write ``dWWWW_TT.cls`` next to each by_write PNG
        folder (it is unknown whether NIST's zip has them; default off so that readers must join
        by_write with by_class).  The 1st edition always has them.
    ``layout_partitions``, ``layout_writers`` (tuple of int or None): With ``layout``: keep only
        these partitions / writer ids (fast tests).
    ``workers``: Processes for rendering (default: ``$MNISTFORGE_WORKERS`` or the usable cores;
        small jobs run in-process).
    ``overwrite``: Replace an existing output folder.
    """

    scale: float = 0.01
    edition: int = 2
    packaging: str = "zip"
    seed: int = 0
    layout: str | os.PathLike[str] | None = None
    fields: str = "dulc"
    hierarchies: tuple[str, ...] = HIERARCHIES
    by_write_cls: bool = False
    layout_partitions: tuple[int, ...] | None = None
    layout_writers: tuple[int, ...] | None = None
    workers: int | None = None
    overwrite: bool = False

    def validate(self) -> None:
        if not (0 < float(self.scale) <= 1):
            raise ConfigError("invalid scale", expected="0 < scale <= 1", found=self.scale)
        if self.edition not in (1, 2):
            raise ConfigError("invalid edition", expected="1 or 2", found=self.edition)
        if self.packaging not in ("zip", "dir"):
            raise ConfigError("invalid packaging", expected="'zip' or 'dir'", found=self.packaging)
        if not self.fields or set(self.fields) - set(nt.FIELDS) or len(set(self.fields)) != len(self.fields):
            raise ConfigError("invalid fields", expected="a non-empty subset of 'dulc'", found=self.fields)
        bad = set(self.hierarchies) - set(HIERARCHIES)
        if bad or not self.hierarchies:
            raise ConfigError("invalid hierarchies", expected="a non-empty subset of " +
                              ", ".join(HIERARCHIES), found=", ".join(sorted(bad)) or "none")
        if "d" not in self.fields and self.layout is not None:
            raise ConfigError("--layout describes digits", expected="fields including 'd'", found=self.fields)
        if self.layout is None and (self.layout_partitions or self.layout_writers):
            raise ConfigError("layout_partitions/layout_writers need a layout table",
                              expected="layout=<xnist-labels.tsv.xz>", found="layout=None")
