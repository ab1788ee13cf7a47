"""Synthetic SD19: layout, determinism, duplicates, glyphs, --layout, zips, CLI."""
from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from mnistforge.errors import ConfigError, FormatError
from mnistforge.sd19 import nist_table as nt
from mnistforge.sd19.glyphs import HardCases, draw_writer_style, render_characters
from mnistforge.sd19.ihead import parse_cls, parse_mit, read_mis
from mnistforge.sd19.png1 import decode_png1_many
from mnistforge.sd19.synth import (
    PLAN_DTYPE, SynthConfig, field_class_counts, plan_sd19,
    read_xnist_table, synthesize_sd19,
)
from mnistforge.sd19.synth.write import _StoredZip
from sd19_helpers import make_tiny_sd19

PART_RANK = {p: i for i, p in enumerate(nt.PARTITION_ORDER)}
FIELD_RANK = {f: i for i, f in enumerate(nt.FIELDS)}
PNG_RE = re.compile(r"by_write/hsf_(\d)/f(\d{4})_(\d{2})/([dulc])\2_\3/\4\2_\3_(\d+)\.png$")


# --------------------------------------------------------------------------------------------
# A tiny independent walker over a 2nd-edition by_write zip (the project readers are tested
# on their own; this checks the synthesiser without depending on them).

def walk_by_write_zip(path: Path):
    """Rows in SD19 walk order: (hsf, writer, template, field, entry, image hash, class or -1)."""
    z = zipfile.ZipFile(path)
    names = set(z.namelist())
    rows = []
    for name in names:
        m = PNG_RE.match(name)
        if m:
            hsf, w, t, f, k = m.groups()
            rows.append((PART_RANK[int(hsf)], int(w), int(t), FIELD_RANK[f], int(k), name))
    rows.sort()
    images = decode_png1_many([z.read(r[5]) for r in rows], names=[r[5] for r in rows])
    cls_cache = {}
    out = []
    for r, im in zip(rows, images):
        hsf = nt.PARTITION_ORDER[r[0]]
        f = nt.FIELDS[r[3]]
        cls_name = f"by_write/hsf_{hsf}/f{r[1]:04d}_{r[2]:02d}/{f}{r[1]:04d}_{r[2]:02d}.cls"
        if cls_name not in cls_cache:
            cls_cache[cls_name] = parse_cls(z.read(cls_name).decode()) if cls_name in names else None
        codes = cls_cache[cls_name]
        out.append((hsf, r[1], r[2], f, r[4], _hash(im), -1 if codes is None else int(codes[r[4]])))
    return out, images


def _hash(im) -> bytes:
    return hashlib.blake2b(np.packbits(im).tobytes(), digest_size=16).digest()


def set_hashes_zip(path: Path, hierarchy: str) -> dict[str, list[bytes]]:
    """{set folder: [hash of member 0, 1, ...]} for a 2nd-edition hierarchy zip."""
    z = zipfile.ZipFile(path)
    sets: dict[str, list] = {}
    for name in z.namelist():
        if name.endswith(".png"):
            folder, base = name.rsplit("/", 1)
            k = int(base.rsplit("_", 1)[1][:-4])
            sets.setdefault(folder, []).append((k, name))
    out = {}
    for folder, members in sets.items():
        members.sort()
        assert [k for k, _ in members] == list(range(len(members))), folder
        ims = decode_png1_many([z.read(n) for _, n in members])
        out[folder] = [_hash(im) for im in ims]
    return out


@pytest.fixture(scope="module")
def tiny_e2(tmp_path_factory):
    """Edition 2, zips, all fields, with by_write .cls so the walker knows the classes."""
    base = tmp_path_factory.mktemp("synth")
    return make_tiny_sd19(base, scale=0.001, by_write_cls=True)


@pytest.fixture(scope="module")
def tiny_walk(tiny_e2):
    return walk_by_write_zip(tiny_e2 / "by_write.zip")


# --------------------------------------------------------------------------------------------
# Planning against NIST's published table

def test_full_scale_plan_matches_published_table():
    plan = plan_sd19(SynthConfig(scale=1.0))
    r = plan.rows
    assert len(r) == nt.TOTAL_CHARACTERS
    totals = dict(zip(*np.unique(r["ascii"], return_counts=True)))
    assert {int(c): int(n) for c, n in totals.items()} == nt.CLASS_TOTALS
    for p, part in nt.PARTITIONS.items():
        sel = r["hsf"] == p
        for f in nt.FIELDS:
            assert int((sel & (r["field"] == f.encode())).sum()) == part.count(f), (p, f)
        writers = np.unique(r["writer"][sel])
        assert len(writers) == nt.DIGIT_WRITERS[p]
        assert writers.min() >= part.first_writer and writers.max() <= part.last_writer
    assert int((r["duplicate_of"] >= 0).sum()) == nt.DUPLICATE_DIGITS
    # writer 3951 filled two forms: two folders, as in the real table (3,580 digit folders)
    assert len(plan.folders) == sum(nt.DIGIT_WRITERS.values()) + 1
    two = plan.folders[plan.folders["writer"] == 3951]
    assert len(two) == 2 and two["template"][0] < two["template"][1]


@pytest.mark.parametrize("scale", [0.0002, 0.003, 0.02])
def test_scaled_plan_follows_table(scale):
    plan = plan_sd19(SynthConfig(scale=scale, seed=5))
    r = plan.rows
    assert r.dtype == PLAN_DTYPE
    for p, part in nt.PARTITIONS.items():
        sel = r["hsf"] == p
        assert (plan.folders["hsf"] == p).sum() >= 1
        for f in nt.FIELDS:
            n = int((sel & (r["field"] == f.encode())).sum())
            expect = max(1, round(scale * part.count(f))) if part.count(f) else 0
            assert n == expect, (p, f)
    # constitution only in hsf_0..2; class sets per field
    assert set(r["hsf"][r["field"] == b"c"].tolist()) <= {0, 1, 2}
    assert set(r["ascii"][r["field"] == b"d"].tolist()) <= set(nt.DIGITS)
    assert set(r["ascii"][r["field"] == b"u"].tolist()) <= set(nt.UPPERS)
    assert set(r["ascii"][r["field"] == b"l"].tolist()) <= set(nt.LOWERS)
    assert set(r["ascii"][r["field"] == b"c"].tolist()) <= set(nt.UPPERS + nt.LOWERS)
    # class proportions: each field's class totals are the published shares of its size
    shares = field_class_counts()
    for f in nt.FIELDS:
        codes = r["ascii"][r["field"] == f.encode()]
        total = len(codes)
        for c, full in shares[f].items():
            want = total * full / sum(shares[f].values())
            assert abs(int((codes == c).sum()) - want) <= 1, (f, chr(c))
    # walk order: partitions, then folders by name, then fields d,u,l,c, entries 0..n-1
    key = [(PART_RANK[h], w, t, FIELD_RANK[f.decode()], e)
           for h, w, t, f, e in zip(r["hsf"], r["writer"], r["template"], r["field"], r["entry"])]
    assert key == sorted(key)
    dig = r["field"] == b"d"
    assert (r["digit_index"][dig] == np.arange(dig.sum())).all()
    assert (r["digit_index"][~dig] == -1).all()


def test_field_class_counts_split_published_totals():
    c = field_class_counts()
    for code in nt.ALL_CLASSES:
        assert sum(c[f].get(code, 0) for f in nt.FIELDS) == nt.CLASS_TOTALS[code]
        assert all(c[f].get(code, 0) >= 0 for f in nt.FIELDS)
    for f, name in (("u", "uppers"), ("l", "lowers"), ("c", "const")):
        assert sum(c[f].values()) == sum(getattr(p, name) for p in nt.PARTITIONS.values())


def test_duplicates_same_writer_and_class():
    for seed in range(3):
        r = plan_sd19(SynthConfig(scale=0.002, seed=seed, fields="d")).rows
        dst = np.flatnonzero(r["duplicate_of"] >= 0)
        assert len(dst) == 3
        src = r["duplicate_of"][dst]
        assert (src < dst).all()
        assert (r["ascii"][src] == r["ascii"][dst]).all()
        assert (r["folder"][src] == r["folder"][dst]).all()


def test_config_errors():
    for bad in (dict(scale=0), dict(scale=1.5), dict(edition=3), dict(packaging="tar"),
                dict(fields="dx"), dict(fields=""), dict(hierarchies=("by_page",)),
                dict(layout_partitions=(4,))):
        with pytest.raises(ConfigError):
            plan_sd19(SynthConfig(**bad))


# --------------------------------------------------------------------------------------------
# Rendered trees

def test_tree_layout_and_names(tiny_e2):
    assert sorted(p.name for p in tiny_e2.iterdir()) == [
        "by_class.zip", "by_field.zip", "by_merge.zip", "by_write.zip", "synthetic-sd19.json"]
    names = zipfile.ZipFile(tiny_e2 / "by_class.zip").namelist()
    assert all(n.startswith("by_class/") for n in names)
    assert any(re.fullmatch(r"by_class/30/hsf_4/hsf_4_00000\.png", n) for n in names)
    assert any(re.fullmatch(r"by_class/4a/train_4a/train_4a_00000\.png", n) for n in names)
    assert not any("/hsf_4" in n for n in names if "/train_" in n)
    merge = zipfile.ZipFile(tiny_e2 / "by_merge.zip").namelist()
    top = {n.split("/")[1] for n in merge if n.count("/") >= 2}
    assert "43_63" in top and "63" not in top and "61" in top and "41" in top
    assert not any("train_" in n for n in merge)
    field = zipfile.ZipFile(tiny_e2 / "by_field.zip").namelist()
    assert any(re.fullmatch(r"by_field/hsf_0/digit/30/30_00000\.png", n) for n in field)
    assert not any(re.match(r"by_field/hsf_[34567]/const/", n) for n in field)
    assert names == sorted(names)


def test_walk_reproduces_plan(tiny_e2, tiny_walk):
    rows, images = tiny_walk
    plan = plan_sd19(SynthConfig(scale=0.001, by_write_cls=True))
    r = plan.rows
    assert len(rows) == len(r)
    got = [(h, w, t, f, e, c) for h, w, t, f, e, _, c in rows]
    want = list(zip(r["hsf"].tolist(), r["writer"].tolist(), r["template"].tolist(),
                    [f.decode() for f in r["field"]], r["entry"].tolist(), r["ascii"].tolist()))
    assert got == want
    assert all(im.any() for im in images)


def test_exactly_three_duplicate_digits(tiny_walk):
    rows, _ = tiny_walk
    seen = {}
    pairs = []
    for i, row in enumerate(rows):
        h = row[5]
        if h in seen:
            pairs.append((seen[h], i))
        else:
            seen[h] = i
    assert len(pairs) == 3
    for a, b in pairs:
        assert rows[a][3] == rows[b][3] == "d"
        assert rows[a][6] == rows[b][6]
    plan = plan_sd19(SynthConfig(scale=0.001))
    dst = np.flatnonzero(plan.rows["duplicate_of"] >= 0)
    assert sorted(pairs) == sorted(zip(plan.rows["duplicate_of"][dst].tolist(), dst.tolist()))


def test_other_hierarchies_hold_by_write_images_in_walk_order(tiny_e2, tiny_walk):
    rows, _ = tiny_walk
    hashes = [r[5] for r in rows]
    cls = np.array([r[6] for r in rows])
    hsf = np.array([r[0] for r in rows])
    field = np.array([r[3] for r in rows])

    def seq(mask):
        return [hashes[i] for i in np.flatnonzero(mask)]

    by_class = set_hashes_zip(tiny_e2 / "by_class.zip", "by_class")
    n = 0
    for c in np.unique(cls):
        x = nt.class_hex(c)
        for p in nt.PARTITION_ORDER:
            m = (cls == c) & (hsf == p)
            if m.any():
                assert by_class[f"by_class/{x}/hsf_{p}"] == seq(m)
                n += m.sum()
        assert by_class[f"by_class/{x}/train_{x}"] == seq((cls == c) & (hsf != 4))
    assert n == len(rows)
    by_field = set_hashes_zip(tiny_e2 / "by_field.zip", "by_field")
    assert sum(len(v) for v in by_field.values()) == len(rows)
    for key, got in by_field.items():
        _, part, fdir, x = key.split("/")
        f = {v: k for k, v in nt.FIELD_DIRS.items()}[fdir]
        assert got == seq((hsf == int(part[4:])) & (field == f) & (cls == int(x, 16)))
    by_merge = set_hashes_zip(tiny_e2 / "by_merge.zip", "by_merge")
    merged = np.array([nt.merge_class(c) for c in cls])
    assert sum(len(v) for v in by_merge.values()) == len(rows)
    for key, got in by_merge.items():
        _, x, part = key.split("/")
        assert got == seq((merged == int(x[:2], 16)) & (hsf == int(part[4:])))


def test_open_sd19_reads_every_edition_and_packaging(tmp_path):
    """The project's readers take all four kinds of tree with the metadata we planned."""
    from mnistforge.sd19 import open_sd19

    ref = None
    for edition in (2, 1):
        for packaging in ("zip", "dir"):
            # by_field carries the classes that the 2nd-edition by_write lacks (no .cls)
            cfg = SynthConfig(scale=0.0005, edition=edition, packaging=packaging, seed=6,
                              fields="dlc", hierarchies=("by_write", "by_field"))
            src = open_sd19(synthesize_sd19(tmp_path / f"{edition}{packaging}", cfg, progress=False))
            assert src.edition == edition
            assert src.hierarchies == ("by_field", "by_write")
            idx, plan = src.index, plan_sd19(cfg).rows
            for name in ("hsf", "writer", "template", "field", "entry", "ascii", "digit_index",
                         "duplicate_of"):
                assert (idx[name] == plan[name]).all(), (edition, packaging, name)
            images = src.read_all(np.arange(len(idx)))
            if ref is None:
                ref = images
            assert (images == ref).all(), (edition, packaging)


def test_deterministic_bytes(tmp_path):
    cfg = dict(scale=0.0005, fields="du", hierarchies=("by_write", "by_class"))
    a = synthesize_sd19(tmp_path / "a", SynthConfig(seed=3, **cfg), progress=False)
    b = synthesize_sd19(tmp_path / "b", SynthConfig(seed=3, **cfg), progress=False)
    c = synthesize_sd19(tmp_path / "c", SynthConfig(seed=4, **cfg), progress=False)
    for name in ("by_write.zip", "by_class.zip", "synthetic-sd19.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "by_write.zip").read_bytes() != (c / "by_write.zip").read_bytes()


def test_parallel_equals_serial(tmp_path, monkeypatch):
    import mnistforge.sd19.synth as synth

    monkeypatch.setattr(synth.render, "PARALLEL_MIN", 0)
    cfg = dict(scale=0.002, fields="d", hierarchies=("by_write",), seed=1)
    a = synthesize_sd19(tmp_path / "a", SynthConfig(workers=1, **cfg), progress=False)
    b = synthesize_sd19(tmp_path / "b", SynthConfig(workers=2, **cfg), progress=False)
    assert (a / "by_write.zip").read_bytes() == (b / "by_write.zip").read_bytes()


def test_edition1_dir_same_pixels_as_edition2(tmp_path):
    cfg = dict(scale=0.0005, fields="dul", seed=2)
    e1 = synthesize_sd19(tmp_path / "e1", SynthConfig(edition=1, packaging="dir", **cfg),
                         progress=False)
    e2 = synthesize_sd19(tmp_path / "e2", SynthConfig(edition=2, **cfg), progress=False)
    z = zipfile.ZipFile(e2 / "by_write.zip")
    plan = plan_sd19(SynthConfig(**cfg))
    checked = 0
    for mis in sorted((e1 / "by_write").rglob("*.mis")):
        imgs = read_mis(mis)
        codes = parse_cls((mis.with_suffix(".cls")).read_text())
        assert len(codes) == len(imgs)
        rel = mis.relative_to(e1).with_suffix("").as_posix()
        base = mis.stem
        pngs = decode_png1_many([z.read(f"{rel}/{base}_{k:05d}.png") for k in range(len(imgs))])
        assert (pngs == imgs).all()
        checked += len(imgs)
    assert checked == len(plan)
    assert not list((e1 / "by_write").rglob("*.mit"))
    # .mit of by_class points back at by_write entries with the same pixels
    mits = sorted((e1 / "by_class").rglob("hsf_*.mit"))
    assert mits
    for mit in mits[:10]:
        entries = parse_mit(mit.read_text())
        imgs = read_mis(mit.with_suffix(".mis"))
        codes = parse_cls(mit.with_suffix(".cls").read_text())
        assert len(entries) == len(imgs) == len(codes)
        assert (codes == int(mit.parent.name, 16)).all()
        for (path, k), im in zip(entries, imgs):
            assert (read_mis(e1 / "by_write" / path)[k] == im).all()


def test_stored_zip_zip64_end_records(tmp_path):
    p = tmp_path / "big.zip"
    with _StoredZip(p) as z:
        z.add("d/", b"")
        for i in range(66000):   # more than 65,535 members needs the ZIP64 end records
            z.add(f"d/{i:06d}.bin", i.to_bytes(3, "big"))
    with zipfile.ZipFile(p) as zf:
        names = zf.namelist()
        assert len(names) == 66001
        assert zf.read("d/065999.bin") == (65999).to_bytes(3, "big")
        assert zf.getinfo("d/000001.bin").date_time == (1980, 1, 1, 0, 0, 0)


def test_accidental_identical_images_are_refused(monkeypatch, tmp_path):
    import mnistforge.sd19.synth as synth
    from mnistforge.errors import BuildError

    def blank(codes, style, rng, hard=None):   # a broken renderer: every image empty
        return np.zeros((len(codes), 128, 128), bool)

    monkeypatch.setattr(synth.render, "render_characters", blank)
    with pytest.raises(BuildError, match="identical images"):
        synthesize_sd19(tmp_path / "x", SynthConfig(scale=0.0005, fields="d",
                                                    hierarchies=("by_write",)), progress=False)
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.incomplete").exists()


def test_make_tiny_sd19_reuses(tmp_path):
    a = make_tiny_sd19(tmp_path, scale=0.0005, fields="d")
    mtime = (a / "by_write.zip").stat().st_mtime_ns
    b = make_tiny_sd19(tmp_path, scale=0.0005, fields="d")
    assert a == b and (b / "by_write.zip").stat().st_mtime_ns == mtime


# --------------------------------------------------------------------------------------------
# Glyphs

def _render(n, seed, hard=HardCases()):
    rng = np.random.default_rng(seed)
    codes = rng.choice(np.array(nt.ALL_CLASSES), n)
    out = []
    for k in range(0, n, 50):
        style = draw_writer_style(rng)
        out.append(render_characters(codes[k:k + 50], style, rng, hard))
    return codes, np.concatenate(out)


def _ink_box(im):
    ys, xs = np.nonzero(im)
    return ys.min(), ys.max(), xs.min(), xs.max()


def test_glyphs_ink_sizes_and_hard_cases():
    _, ims = _render(1000, 0, HardCases(speck=0.0, small=0.03, touch=0.03))
    assert ims.shape == (1000, 128, 128) and ims.dtype == bool
    assert all(im.any() for im in ims)
    heights = np.array([b[1] - b[0] + 1 for b in map(_ink_box, ims)])
    assert heights.std() > 8                    # sizes vary between writers and characters
    assert (heights < 20).sum() >= 5            # very small characters occur
    border = ims[:, 0, :].any(1) | ims[:, -1, :].any(1) | ims[:, :, 0].any(1) | ims[:, :, -1].any(1)
    assert 5 <= border.sum() <= 200             # some touch the frame, most do not
    ink = ims.mean(axis=(1, 2))
    assert ink.min() > 0.001 and ink.max() < 0.6


def test_glyphs_cut_by_the_frame_stay_visible():
    # narrow glyphs (a bare '1' is one pen wide), small and thin, all pushed over the frame
    narrow = np.frombuffer(b"1lIij" * 200, np.uint8)
    rng = np.random.default_rng(11)
    for k in range(0, len(narrow), 100):
        style = draw_writer_style(rng)
        style = type(style)(**{**style.__dict__, "pen": 3.0, "variants": 1})
        ims = render_characters(narrow[k:k + 100], style, rng, HardCases(0, 0.5, 1.0))
        assert ims.any(axis=(1, 2)).all()
        border = ims[:, 0].any(1) | ims[:, -1].any(1) | ims[:, :, 0].any(1) | ims[:, :, -1].any(1)
        assert border.all()


def test_glyph_specks_are_away_from_the_character():
    digits = np.frombuffer(b"0123456789" * 20, np.uint8)
    rng = np.random.default_rng(1)
    style = draw_writer_style(rng)
    clean = render_characters(digits, style, np.random.default_rng(2), HardCases(0, 0, 0))
    noisy = render_characters(digits, style, np.random.default_rng(2), HardCases(1.0, 0, 0))
    n_clean = np.array([ndimage.label(im, np.ones((3, 3)))[1] for im in clean])
    n_noisy = np.array([ndimage.label(im, np.ones((3, 3)))[1] for im in noisy])
    assert n_noisy.mean() >= n_clean.mean() + 0.8


def test_glyphs_deterministic_and_distinct():
    a = _render(60, 7)[1]
    b = _render(60, 7)[1]
    c = _render(60, 8)[1]
    assert (a == b).all() and not (a == c).all()
    assert len({_hash(im) for im in a}) == len(a)


# --------------------------------------------------------------------------------------------
# --layout on the real QMNIST/xnist table

LAYOUT_WRITERS = (0, 1, 2, 3, 896, 2100, 3951)


@pytest.fixture(scope="module")
def xnist(reference_dir):
    p = reference_dir / "qmnist" / "xnist-labels.tsv.xz"
    if not p.is_file():
        pytest.skip(f"{p} not found")
    return p


@pytest.fixture(scope="module")
def xnist_table(xnist):
    return read_xnist_table(xnist)


def _check_layout_walk(rows, images, table):
    digits = [(i, r) for i, r in enumerate(rows) if r[3] == "d"]
    assert len(digits) == len(table)
    got = np.array([[r[6] - 0x30, r[0], r[1], r[4], r[6]] for _, r in digits])
    want = table[:, :5].copy()
    want[:, 4] = want[:, 4] - 30 + 0x30
    assert (got == want).all()
    assert (np.diff(table[:, 5]) > 0).all()          # walk order == table order, row for row
    pos = {int(g): k for k, g in enumerate(table[:, 5])}
    dups = 0
    for k in np.flatnonzero(table[:, 6]).tolist():
        if int(table[k, 6]) in pos:
            a, b = digits[pos[int(table[k, 6])]][0], digits[k][0]
            assert (images[a] == images[b]).all()
            dups += 1
    assert len({r[5] for _, r in digits}) == len(digits) - dups
    return dups


def test_layout_subset_reproduces_xnist(tmp_path, xnist, xnist_table):
    cfg = SynthConfig(layout=xnist, layout_writers=LAYOUT_WRITERS, fields="dl", scale=0.05,
                      hierarchies=("by_write",), by_write_cls=True, seed=9)
    out = synthesize_sd19(tmp_path / "lay", cfg, progress=False)
    rows, images = walk_by_write_zip(out / "by_write.zip")
    table = xnist_table[np.isin(xnist_table[:, 2], LAYOUT_WRITERS)]
    assert _check_layout_walk(rows, images, table) == 2   # 896 (hsf_1) and 2100 (hsf_4)
    # writer 3951 has two folders, each numbered from 0, in table order
    folders = sorted({(r[1], r[2]) for r in rows if r[1] == 3951})
    assert len(folders) == 2
    first = [r[4] for r in rows if (r[1], r[2]) == folders[0] and r[3] == "d"]
    assert first == list(range(len(first))) and len(first) == 123
    # the lower-case field follows the scaled table for these writers
    assert any(r[3] == "l" for r in rows)
    plan = plan_sd19(cfg)
    assert (plan.rows["digit_index"][plan.rows["field"] == b"d"] == np.arange(len(table))).all()
    # and the project's reader sees the same digit table
    from mnistforge.sd19 import open_sd19

    idx = open_sd19(out).index
    d = idx[idx["field"] == b"d"]
    got = np.stack([d["ascii"].astype(int) - 0x30, d["hsf"], d["writer"], d["entry"],
                    d["ascii"].astype(int) - 0x30 + 30], axis=1)
    assert (got == table[:, :5]).all()
    assert (d["digit_index"] == np.arange(len(table))).all()
    dup = np.flatnonzero(d["duplicate_of"] >= 0)
    assert len(dup) == 2 and (table[dup, 6] > 0).all()


def test_layout_rejects_bad_tables(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text("0\t0\t0\t0\t30\t0\t0\t0\n1\t0\t0\t5\t31\t1\t0\t0\n")
    with pytest.raises(FormatError, match="column 3"):
        plan_sd19(SynthConfig(layout=p, fields="d"))
    p.write_text("0\t0\t0\t0\t30\t0\t0\n")
    with pytest.raises(FormatError):
        plan_sd19(SynthConfig(layout=p, fields="d"))
    p.write_text("0\t1\t500\t0\t30\t0\t0\t0\n0\t0\t0\t0\t30\t1\t0\t0\n")
    with pytest.raises(FormatError, match="walk order"):
        plan_sd19(SynthConfig(layout=p, fields="d"))


def test_layout_full_plan(xnist, xnist_table):
    """The full table plans in seconds; rendering it all is the slow test below."""
    plan = plan_sd19(SynthConfig(layout=xnist, fields="d"))
    r = plan.rows
    t = xnist_table
    assert len(r) == len(t) == nt.TOTAL_DIGITS
    assert (r["ascii"] - 0x30 == t[:, 0]).all() and (r["hsf"] == t[:, 1]).all()
    assert (r["writer"] == t[:, 2]).all() and (r["entry"] == t[:, 3]).all()
    assert (r["digit_index"] == t[:, 5]).all()
    dup = np.flatnonzero(r["duplicate_of"] >= 0)
    assert dup.tolist() == np.flatnonzero(t[:, 6]).tolist()
    assert (r["duplicate_of"][dup] == t[dup, 6]).all()
    assert len(plan.folders) == 3580
    names = [f"{h}/{w:04d}_{tt:02d}" for h, w, tt in
             zip(plan.folders["hsf"], plan.folders["writer"], plan.folders["template"])]
    assert len(set(names)) == 3580


@pytest.mark.slow
def test_layout_full_run_reproduces_xnist(tmp_path, xnist, xnist_table):
    cfg = SynthConfig(layout=xnist, fields="d", hierarchies=("by_write",), by_write_cls=True)
    out = synthesize_sd19(tmp_path / "full", cfg, progress=False)
    rows, images = walk_by_write_zip(out / "by_write.zip")
    assert _check_layout_walk(rows, images, xnist_table) == 3


# --------------------------------------------------------------------------------------------
# CLI

def test_cli(tmp_path, capsys):
    from mnistforge.cli import main

    out = tmp_path / "cli"
    rc = main(["synth-sd19", str(out), "--scale", "0.0005", "--fields", "d", "--dir",
               "--edition", "1", "--hierarchies", "by_write,by_field", "--quiet", "--seed", "4"])
    assert rc == 0
    assert "synthetic SD19" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["by_field", "by_write", "synthetic-sd19.json"]
    assert list((out / "by_write").rglob("d*.mis")) and not list((out / "by_write").rglob("u*"))
    assert main(["synth-sd19", str(out), "--scale", "0.0005", "--quiet"]) == 2   # exists: usage error
    assert main(["synth-sd19", str(tmp_path / "x"), "--scale", "3"]) == 2
    assert main(["synth-sd19", str(tmp_path / "y"), "--fields", "q"]) == 2
