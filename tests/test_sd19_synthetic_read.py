"""The readers on the synthetic SD19: four combinations agree, and match the synthesiser's plan."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.sd19 import open_sd19
from sd19_helpers import make_tiny_sd19

synth = pytest.importorskip("mnistforge.sd19.synth")

SCALE = 0.0005
HIER = ("by_write", "by_class")
COMBOS = [(1, "zip"), (1, "dir"), (2, "zip"), (2, "dir")]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    base = tmp_path_factory.mktemp("synth")
    out = {}
    for ed, pk in COMBOS:
        root = make_tiny_sd19(base, scale=SCALE, edition=ed, packaging=pk, hierarchies=HIER)
        out[(ed, pk)] = open_sd19(root)
    return out


@pytest.fixture(scope="module")
def plan():
    return synth.plan_sd19(synth.SynthConfig(scale=SCALE, hierarchies=HIER)).rows


def test_four_combinations_identical(sources):
    ref_src = sources[(2, "zip")]
    ref_pix = ref_src.read_all(np.arange(len(ref_src)))
    assert ref_pix.any(axis=(1, 2)).all()          # every character has ink
    for combo, src in sources.items():
        assert (src.edition, src.packaging) == combo
        assert (src.index == ref_src.index).all(), combo
        assert (src.read_all(np.arange(len(src))) == ref_pix).all(), combo


def test_index_matches_the_plan(sources, plan):
    ix = sources[(1, "zip")].index
    for name in ("hsf", "writer", "template", "field", "entry", "ascii", "digit_index", "duplicate_of"):
        assert (ix[name] == plan[name]).all(), name
    assert (ix["duplicate_of"] >= 0).sum() == 3
    assert (ix["field"][ix["duplicate_of"] >= 0] == b"d").all()


def test_second_edition_without_cls_joins_completely(sources):
    src = sources[(2, "zip")]
    assert not src.cls_present
    assert src.join_report is not None and src.join_report.ok
    assert src.join_report.joined == len(src)
    assert sources[(1, "dir")].cls_present and sources[(1, "dir")].join_report is None


def test_second_edition_with_cls(tmp_path, sources):
    root = make_tiny_sd19(tmp_path, scale=SCALE, edition=2, packaging="zip",
                                hierarchies=("by_write",), by_write_cls=True)
    src = open_sd19(root, strict=True)
    assert src.cls_present and src.join_report is None
    assert (src.index == sources[(2, "zip")].index).all()
