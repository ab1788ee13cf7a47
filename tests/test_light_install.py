"""The light core (issue 45): without the [hf] extra (datasets, pyarrow, pandas) loading, verifying
and CSV copies work, and what needs it stops first with MissingDependencyError naming the extra.
The extra is made absent in this process with ``sys.modules[name] = None``, in a subprocess with
an import hook; .ci/light checks the same in a real install without it."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mnistforge
from mnistforge.errors import MissingDependencyError
from mnistforge.io.idx import write_idx
from mnistforge.io.manifest import Manifest

HF = ("datasets", "pyarrow", "pandas")


@pytest.fixture
def no_hf(monkeypatch):
    for name in [m for m in sys.modules if m.split(".")[0] in HF]:
        monkeypatch.delitem(sys.modules, name)
    for name in HF:
        monkeypatch.setitem(sys.modules, name, None)   # `import name` fails as if not installed


def _digits(folder, n=30):
    rng = np.random.default_rng(0)
    for part in ("train", "test"):   # a built folder: its manifest vouches for the files
        write_idx(folder / f"emnist-digits-{part}-images-idx3-ubyte.gz",
                  rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(folder / f"emnist-digits-{part}-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))
    Manifest(kind="emnist").write(folder)
    return folder


def test_loading_and_verifying_import_no_hf_module(tmp_path):
    folder = _digits(tmp_path / "idx")
    code = textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {HF!r}:
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Block())
        import mnistforge
        from mnistforge.cli import main
        ds = mnistforge.load({str(folder)!r}, "test")
        images, labels = ds.to_numpy()
        assert main(["verify", {str(folder)!r}, "--no-near"]) in (0, 1)   # ran every check
        assert main(["info", {str(folder)!r}]) == 0
        print(len(labels), sorted(m for m in sys.modules if m.split(".")[0] in {HF!r}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "30 []"


def test_to_hf_names_the_extra(tmp_path, no_hf):
    ds = mnistforge.load(str(_digits(tmp_path)), "test")
    with pytest.raises(MissingDependencyError, match=r"pip install 'mnistforge\[hf\]'"):
        ds.to_hf()


def test_export_hf_stops_before_writing(tmp_path, no_hf):
    from mnistforge.hub import ExportConfig, SplitData, export_hf

    cfg = ExportConfig("toy", {"test": SplitData(np.zeros((2, 28, 28), np.uint8), np.array([0, 1]))}, ["a", "b"])
    with pytest.raises(MissingDependencyError, match=r"export hf.*mnistforge\[hf\]"):
        export_hf(tmp_path / "repo", [cfg], workers=1)
    assert list(tmp_path.iterdir()) == []


def test_the_demo_stops_before_writing(tmp_path, no_hf):
    from mnistforge.demo import run_demo

    with pytest.raises(MissingDependencyError, match=r"mnistforge\[hf\]"):
        run_demo(tmp_path / "demo")
    assert list(tmp_path.iterdir()) == []


def test_reading_an_export_names_the_extra(tmp_path, monkeypatch):
    pytest.importorskip("datasets", reason="the [hf] extra is not installed: no export to read")
    from mnistforge.hub import ExportConfig, SplitData, export_hf

    cfg = ExportConfig("mnist", {"test": SplitData(np.zeros((2, 28, 28), np.uint8), np.array([0, 1]))},
                       [str(i) for i in range(10)])
    export_hf(tmp_path / "repo", [cfg], workers=1)
    for name in [m for m in sys.modules if m.split(".")[0] in HF]:
        monkeypatch.delitem(sys.modules, name)
    for name in HF:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError, match=r"reading a Hugging Face export.*mnistforge\[hf\]"):
        mnistforge.load("mnist", "test", root=tmp_path / "repo")


def test_a_float_csv_reads_the_same_without_pyarrow(tmp_path, monkeypatch):
    from mnistforge.io.foreign.csvfile import read_csv

    x = np.random.default_rng(1).integers(0, 256, (3, 4)) / 255
    rows = [f"{i % 2}," + ",".join(f"{v:.6f}" for v in r) for i, r in enumerate(x)]
    (tmp_path / "f.csv").write_text("label," + ",".join(f"p{i}" for i in range(4)) + "\n" + "\n".join(rows))
    with_pa = read_csv(tmp_path / "f.csv").splits
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.csv", None)
    without = read_csv(tmp_path / "f.csv").splits
    assert with_pa.keys() == without.keys()
    for k in with_pa:
        np.testing.assert_array_equal(with_pa[k].images, without[k].images)
        np.testing.assert_array_equal(with_pa[k].labels, without[k].labels)
    np.testing.assert_allclose(without[k].images.reshape(3, 4), x, atol=1e-6)
