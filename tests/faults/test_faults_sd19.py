"""Item 4 of issue 17 (a corrupt or incomplete SD19 must not build a different dataset with
exit 0), the SD19 zip bullets (bounded members, invalid UTF-8 names) and issue 26's SD19 source
integrity (duplicated members or characters, copied writer folders, zeroed .mis files)."""
from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile

import numpy as np
import pytest
from faults_helpers import cli

from mnistforge.errors import SD19FormatError, UnsafeArchiveError
from mnistforge.sd19.ihead import g4_decode, g4_encode
from mnistforge.sd19.zipdir import list_zip


def _strip():
    rng = np.random.default_rng(0)
    a = np.zeros((128, 128), bool)
    a[20:100, 30:90] = rng.random((80, 60)) > 0.5
    return a, bytearray(g4_encode(a))


def test_a_libtiff_bad_code_word_is_an_error_not_garbage(capfd):
    a, s = _strip()
    assert (g4_decode(bytes(s), 128, 128) == a).all()
    s[len(s) // 3] ^= 0xFF      # libtiff: "Fax4Decode: Bad code word", then decodes garbage
    with pytest.raises(SD19FormatError, match="Bad code word"):
        g4_decode(bytes(s), 128, 128)
    assert "Fax4Decode" not in capfd.readouterr().err   # reported in the error, not on stderr


@pytest.fixture(scope="module")
def first_edition(tmp_path_factory):
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    return synthesize_sd19(tmp_path_factory.mktemp("e1") / "sd19",
                           SynthConfig(scale=0.002, edition=1, packaging="dir", fields="d",
                                       hierarchies=("by_write",), workers=1), progress=False)


def test_one_flipped_byte_in_a_mis_file_fails_the_build(first_edition, tmp_path):
    src = tmp_path / "sd19"
    shutil.copytree(first_edition, src)
    mis = sorted((src / "by_write").rglob("d*.mis"))[0]
    b = bytearray(mis.read_bytes())
    b[len(b) // 2] ^= 0xFF
    mis.write_bytes(bytes(b))
    r = cli("build", "qmnist", "--sd19", src, "--out", tmp_path / "out", "--workers", "2")
    assert r.returncode != 0, r.stdout
    assert "corrupt" in r.stderr and mis.name in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def _drop_partition(sd19, dest, hsf):
    shutil.copytree(sd19, dest)
    z = dest / "by_write.zip"
    tmp = dest / "bw.zip"
    with zipfile.ZipFile(z) as zi, zipfile.ZipFile(tmp, "w") as zo:
        for info in zi.infolist():
            if not info.filename.startswith(f"by_write/{hsf}/"):
                zo.writestr(info, zi.read(info))
    tmp.replace(z)
    return dest


def test_a_missing_partition_fails_unless_allowed_and_is_recorded(tiny_sd19, tmp_path):
    src = _drop_partition(tiny_sd19, tmp_path / "sd19", "hsf_4")
    r = cli("build", "qmnist", "--sd19", src, "--out", tmp_path / "q", "--workers", "1")
    assert r.returncode != 0
    assert "incomplete" in r.stderr and "hsf_4 digits" in r.stderr, r.stderr
    assert "--allow-incomplete" in r.stderr
    assert not (tmp_path / "q").exists()
    r = cli("build", "qmnist", "--sd19", src, "--out", tmp_path / "q", "--workers", "1",
            "--allow-incomplete")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "q" / "manifest.json").read_text())
    assert any(x.startswith("hsf_4 digits: 0 of") for x in m["inputs"]["sd19"]["missing"])
    assert any("INCOMPLETE" in n for n in m["notes"])


def test_emnist_refuses_an_incomplete_source_too(tiny_sd19, tmp_path):
    src = _drop_partition(tiny_sd19, tmp_path / "sd19", "hsf_0")
    r = cli("build", "emnist-letters", "--sd19", src, "--out", tmp_path / "e", "--workers", "1")
    assert r.returncode != 0 and "hsf_0" in r.stderr, r.stderr
    r = cli("build", "emnist-letters", "--sd19", src, "--out", tmp_path / "e", "--workers", "1",
            "--allow-incomplete")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "e" / "manifest.json").read_text())
    assert m["inputs"]["sd19_missing"]


def test_a_complete_source_builds_without_notes_of_incompleteness(tiny_sd19, tmp_path):
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", tmp_path / "m", "--workers", "1")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert "missing" not in m["inputs"]["sd19"]


# --------------------------------------------------------------------------- zips

def _zip_with_raw_name(path, raw_name: bytes, data=b"x", flags=0x800):
    """A one-member zip whose central directory holds ``raw_name`` as given."""
    crc = 0
    import zlib
    crc = zlib.crc32(data)
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, flags, 0, 0, 0, crc, len(data),
                        len(data), len(raw_name), 0) + raw_name + data
    cen = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, flags, 0, 0, 0, crc, len(data),
                      len(data), len(raw_name), 0, 0, 0, 0, 0, 0) + raw_name
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(cen), len(local), 0)
    path.write_bytes(local + cen + eocd)
    return path


def test_invalid_utf8_member_name_is_a_named_error(tmp_path):
    z = _zip_with_raw_name(tmp_path / "by_write.zip", b"by_write/\xff\xfe.png")
    with pytest.raises(SD19FormatError, match="not valid UTF-8"):
        list_zip(z)
    from mnistforge.cache.archive import member_names
    with pytest.raises(UnsafeArchiveError):
        member_names(z)


def test_a_huge_member_is_refused_before_inflating(tmp_path):
    # 64 MiB of zeros deflate to ~64 kB (about 1000:1): refused from the directory alone
    z = tmp_path / "by_class.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("by_class/30/train_30.mis", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))
    with pytest.raises(UnsafeArchiveError, match="absurd size"):
        list_zip(z)


def test_a_png_member_larger_than_any_sd19_png_is_refused(tmp_path):
    z = tmp_path / "by_write.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("by_write/hsf_0/f0000_14/d0000_14/d0000_14_00000.png",
                    np.random.default_rng(0).bytes(2 << 20))
    with pytest.raises(UnsafeArchiveError, match="absurd size"):
        list_zip(z)


# --------------------------------------------------------------------------- integrity (issue 26)
# Duplicated zip members or characters, repeated character indices, copied writer folders and
# zeroed .mis files once built different datasets with a clean manifest.  Each is now refused
# with a named error naming the files, or built with --allow-inconsistent and listed.

def _rewrite_by_write(sd19, dest, edit):
    """A copy of ``sd19`` whose by_write.zip members are ``edit([(ZipInfo, bytes), ...])``."""
    shutil.copytree(sd19, dest, ignore=shutil.ignore_patterns(".mnistforge"))
    z = dest / "by_write.zip"
    tmp = dest / "bw.zip"
    with zipfile.ZipFile(z) as zi:
        items = [(i, zi.read(i)) for i in zi.infolist()]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # zipfile warns of the duplicated name
        with zipfile.ZipFile(tmp, "w") as zo:
            for info, data in edit(items):
                zo.writestr(info, data)
    tmp.replace(z)
    return dest


def _member(items, suffix):
    return next(k for k, (info, _) in enumerate(items) if info.filename.endswith(suffix))


def _first_digit_member(items):
    return next(info.filename for info, _ in items
                if "/d" in info.filename and info.filename.endswith("_00003.png"))


def _refused(src, tmp_path, target="mnist", *extra):
    out = tmp_path / "out"
    r = cli("build", target, "--sd19", src, "--out", out, "--workers", "1", *extra)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()
    return r.stderr


def _allowed(src, tmp_path, target="mnist"):
    out = tmp_path / "allowed"
    r = cli("build", target, "--sd19", src, "--out", out, "--workers", "1", "--allow-inconsistent")
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "manifest.json").read_text())
    listed = m["inputs"]["sd19"]["inconsistent"] if target in ("mnist", "qmnist", "xnist") \
        else m["inputs"]["sd19_inconsistent"]
    assert any("INCONSISTENT" in n for n in m["notes"])
    return listed


def test_a_duplicated_zip_member_is_refused_and_listed_with_consent(tiny_sd19, tmp_path):
    name = {}

    def dup(items):
        k = _member(items, _first_digit_member(items))
        name["m"] = items[k][0].filename
        return items[:k + 1] + [items[k]] + items[k + 1:]

    src = _rewrite_by_write(tiny_sd19, tmp_path / "sd19", dup)
    err = _refused(src, tmp_path)
    assert "InconsistentSourceError" not in err      # a sentence, not a class name
    assert f"{name['m']} is stored twice in by_write.zip" in err
    assert "--allow-inconsistent" in err
    listed = _allowed(src, tmp_path)
    assert any(f"{name['m']} is stored twice" in p for p in listed)


def test_a_duplicated_member_with_other_bytes_and_a_repeated_index_are_refused(tiny_sd19, tmp_path):
    def other_bytes(items):
        k = _member(items, _first_digit_member(items))
        j = _member(items, _first_digit_member(items).replace("_00003", "_00009"))
        return items[:k + 1] + [(items[k][0], items[j][1])] + items[k + 1:]

    src = _rewrite_by_write(tiny_sd19, tmp_path / "a", other_bytes)
    assert "stored twice in by_write.zip" in _refused(src, tmp_path, "emnist-digits")

    def renumbered(items):   # _0003.png next to _00003.png: the same character index twice
        k = _member(items, _first_digit_member(items))
        info = zipfile.ZipInfo(items[k][0].filename.replace("_00003", "_0003"), items[k][0].date_time)
        return items + [(info, items[k][1])]

    src = _rewrite_by_write(tiny_sd19, tmp_path / "b", renumbered)
    err = _refused(src, tmp_path)
    assert "carry the same character index 3" in err and "_0003.png" in err


def test_a_writer_folder_copied_under_another_writers_name_is_refused(tiny_sd19, tmp_path):
    folder = {}

    def copy(items):
        first = items[_member(items, ".png")][0].filename.split("/")[2]      # fWWWW_TT
        w, t = first[1:5], first[6:8]
        new = f"{int(w) + 1:04d}_{t}"
        folder.update(old=f"f{w}_{t}", new=f"f{new}")
        extra = [(zipfile.ZipInfo(i.filename.replace(f"{w}_{t}", new), i.date_time), d)
                 for i, d in items if f"/f{w}_{t}/" in i.filename]
        return items + extra

    src = _rewrite_by_write(tiny_sd19, tmp_path / "sd19", copy)
    for target in ("mnist", "emnist-letters"):
        err = _refused(src, tmp_path, target)
        assert "copied writer folder" in err and folder["new"] in err and folder["old"] in err, err
        assert "more problems: `mnistforge sd19 info" in err
    listed = _allowed(src, tmp_path, "emnist-letters")
    assert any(p.startswith("copied writer folder") for p in listed)
    # the partition now holds more characters and writer folders than the description says
    assert any("more than the" in p and "characters" in p for p in listed)
    assert any("2 writer folders" in p for p in listed), listed


def test_a_writer_folder_replaced_by_another_writers_files_is_refused(first_edition, tmp_path):
    # 1st edition (with .cls): hsf_1's writer folder now holds hsf_0's writer's digits
    src = tmp_path / "sd19"
    shutil.copytree(first_edition, src, ignore=shutil.ignore_patterns(".mnistforge"))
    (a,) = (src / "by_write" / "hsf_0").iterdir()
    (b,) = (src / "by_write" / "hsf_1").iterdir()
    for ext in ("mis", "cls"):
        (b / f"d{b.name[1:]}.{ext}").write_bytes((a / f"d{a.name[1:]}.{ext}").read_bytes())
    err = _refused(src, tmp_path)
    assert f"by_write/hsf_1/{b.name} are exact copies of by_write/hsf_0/{a.name}'s" in err, err


def test_a_mis_file_zeroed_at_the_same_size_is_refused(first_edition, tmp_path):
    from mnistforge.sd19 import open_sd19
    from mnistforge.sd19.ihead import read_mis

    src = tmp_path / "sd19"
    shutil.copytree(first_edition, src)
    open_sd19(src, workers=1)                             # its index is cached next to it
    mis = sorted((src / "by_write").rglob("d*.mis"))[1]
    data = mis.read_bytes()
    ref = read_mis(data)
    # the raster behind a kept header zeroed from 90 %: libtiff decodes it silently into
    # blank characters (the build once went on with them)
    k = 296 + int((len(data) - 296) * 0.9)
    zeroed = data[:k] + bytes(len(data) - k)
    st = mis.stat()
    mis.write_bytes(zeroed)
    os.utime(mis, ns=(st.st_atime_ns, st.st_mtime_ns))   # same size, same mtime: cache trusted
    assert mis.stat().st_size == st.st_size
    err = _refused(src, tmp_path)
    assert "G4 raster zeroed" in err and mis.name in err and "re-copy" in err
    with pytest.raises(SD19FormatError, match="zeroed"):
        read_mis(zeroed)
    assert ref.shape[0] > 1
    mis.write_bytes(bytes(len(data)))                     # the whole file zeroed
    err = _refused(src, tmp_path)
    assert "header is zeroed" in err and mis.name in err


def test_a_real_like_source_with_more_duplicates_than_sd19_is_refused(tmp_path):
    from mnistforge.builders.qmnist import check_consistent
    from mnistforge.errors import InconsistentSourceError
    from mnistforge.sd19 import open_sd19
    from sd19_helpers import write_tree

    root, chars, _ = write_tree(tmp_path / "sd19", edition=2, packaging="dir")
    src = open_sd19(root, workers=1)
    assert check_consistent(src, ("d",), False) == []    # its one duplicate is within SD19's 3
    digits = sorted((root / "by_write").rglob("d*/d*_000*.png"))
    for p in digits[4:8]:                                 # four more copies of one image
        p.write_bytes(digits[0].read_bytes())
    src = open_sd19(root, workers=1, reindex=True)
    with pytest.raises(InconsistentSourceError, match="exact copies") as e:
        check_consistent(src, ("d",), False)
    assert isinstance(e.value, ValueError) and str(root) in str(e.value)
    listed = check_consistent(src, ("d",), True)          # consent: returned for the manifest
    assert any("5 digits are exact copies" in p and "NIST's published counts allows 3 digits" in p
               for p in listed), listed
    assert any("within a writer folder: 4" in p and digits[0].name in p for p in listed), listed
