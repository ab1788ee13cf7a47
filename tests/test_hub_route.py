"""The Hub's parquet copies as a verified route (issue 45): when every official address of an
MNIST or Fashion-MNIST file fails, its split is taken from the Hub's parquet copy, converted back
to the official arrays and kept only if the registry's content hashes match.

Real HTTP servers on 127.0.0.1 started here stand in for the Hub (``HF_ENDPOINT``: resolve URLs
answered with a redirect to a content address, as huggingface.co does); the official hosts are
ports that refuse connections (a registry file of the test's own); never the internet.
"""
from __future__ import annotations

import hashlib
import http.server
import io
import sys

import numpy as np
import pytest
from PIL import Image

import mnistforge
from mnistforge.cache.download import fetch_file
from mnistforge.cache.hub_parquet import hub_url
from mnistforge.cache.mirrors import parse_mirrors
from mnistforge.cache.verify import read_marker
from mnistforge.cli import main
from mnistforge.errors import DownloadError, MissingDependencyError
from mnistforge.io.hashing import hash_content
from mnistforge.io.idx import read_idx
from mnistforge.registry import get_file, use_registry

from cache_helpers import closed_port, hub_routed_registry, local_server

NEEDS_PYARROW = "pyarrow (the [hf] extra) is not installed: the route reads parquet with it"


class HubHandler(http.server.BaseHTTPRequestHandler):
    """``/datasets/<repo>/resolve/<rev>/<file>`` -> 302 to ``/cas/<sha256>`` -> the bytes."""

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is not None:
            self.send_response(302)
            self.send_header("Location", f"/cas/{hashlib.sha256(body).hexdigest()}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.server.blobs.get(self.path.rsplit("/", 1)[-1])
        if body is None or not self.path.startswith("/cas/"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hub(monkeypatch):
    with local_server(HubHandler, requests=[], files={}, blobs={}) as srv:
        def serve(remote_id: str, body: bytes) -> str:
            """Serve ``body`` as the parquet copy of ``remote_id``'s split; its URL."""
            path = "/" + get_file(remote_id).hub_parquet
            srv.files[path] = body
            srv.blobs[hashlib.sha256(body).hexdigest()] = body
            return srv.base + path

        srv.serve = serve
        monkeypatch.setenv("HF_ENDPOINT", srv.base)
        for var in ("HF_HUB_OFFLINE", "MNISTFORGE_OFFLINE", "MNISTFORGE_MIRRORS"):
            monkeypatch.delenv(var, raising=False)
        yield srv


@pytest.fixture
def refused(tmp_path):
    """The bundled registry with every MNIST and Fashion-MNIST address on two refusing ports."""
    with use_registry(hub_routed_registry(tmp_path, hosts=2)):
        yield


def parquet_bytes(images: np.ndarray, labels: np.ndarray) -> bytes:
    """A split as the Hub's copies hold it: ``image`` {bytes: PNG, path: null}, ``label`` int64."""
    pa = pytest.importorskip("pyarrow", reason=NEEDS_PYARROW)
    pq = pytest.importorskip("pyarrow.parquet", reason=NEEDS_PYARROW)
    pngs = []
    for im in images:
        b = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(im)).save(b, format="PNG")
        pngs.append({"bytes": b.getvalue(), "path": None})
    table = pa.table({"image": pa.array(pngs, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                      "label": pa.array(labels.astype(np.int64))})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def mnist_test_parquet(reference_dir):
    p = reference_dir / "mnist"
    if not (p / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"real MNIST test files not found in {p}")
    images = np.asarray(read_idx(p / "t10k-images-idx3-ubyte.gz"))
    labels = np.asarray(read_idx(p / "t10k-labels-idx1-ubyte.gz"))
    return images, labels, parquet_bytes(images, labels)


@pytest.fixture(scope="module")
def fashion_test_parquet(fashion_dir):
    return parquet_bytes(np.asarray(read_idx(fashion_dir / "t10k-images-idx3-ubyte.gz")),
                         np.asarray(read_idx(fashion_dir / "t10k-labels-idx1-ubyte.gz")))


def content_sha256(path) -> str:
    return hash_content(path, path.name)[0]


# --------------------------------------------------------------------------- acceptance

def test_a_fetch_of_mnist_test_with_every_official_host_refused_is_adopted_from_the_hub(
        hub, refused, mnist_test_parquet, tmp_path, capsys):
    images, labels, body = mnist_test_parquet
    url = hub.serve("mnist/t10k-images-idx3-ubyte.gz", body)
    rc = main(["fetch", "mnist:test", "--cache", str(tmp_path), "--retries", "0"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out.count(f"adopted from {url}") == 2, out   # the images, and the labels from the same copy
    assert "2 of 2 files in the cache" in out
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        remote = get_file(f"mnist/{name}")
        assert content_sha256(tmp_path / "mnist" / name) == remote.content_sha256
        assert read_marker(tmp_path / "mnist" / name)["adopted_from"] == url
    # one download of the copy: the resolve URL (answered by a redirect), then its content
    assert [r for r in hub.requests if r.startswith("/datasets/")] == [url[len(hub.base):]]
    ds = mnistforge.load("mnist", "test", cache=tmp_path, download=False)
    assert (ds.images == images).all() and (ds.labels == labels).all()


def test_a_copy_with_wrong_content_is_refused_by_name(hub, refused, tmp_path, capsys):
    rng = np.random.default_rng(0)
    body = parquet_bytes(rng.integers(0, 256, (50, 28, 28), dtype=np.uint8), rng.integers(0, 10, 50))
    url = hub.serve("mnist/t10k-images-idx3-ubyte.gz", body)
    rc = main(["fetch", "mnist/t10k-images-idx3-ubyte.gz", "--cache", str(tmp_path), "--retries", "0"])
    err = capsys.readouterr().err
    assert rc == 1, err   # wrong data: a failed check
    assert f"mnist/t10k-images-idx3-ubyte.gz: the Hub's parquet copy {url} does not hold the " \
           "official content" in err
    assert get_file("mnist/t10k-images-idx3-ubyte.gz").content_sha256 in err
    assert "nothing was written" in err
    assert not list((tmp_path / "mnist").iterdir())   # not even a temporary file


def test_the_python_api_says_where_the_file_came_from(hub, refused, mnist_test_parquet, tmp_path):
    url = hub.serve("mnist/t10k-labels-idx1-ubyte.gz", mnist_test_parquet[2])
    r = fetch_file("mnist/t10k-labels-idx1-ubyte.gz", root=tmp_path, retries=0)
    assert (r.adopted_from, r.url, r.downloaded, r.status) == (url, url, True, "content")
    assert hub_url(get_file("mnist/t10k-labels-idx1-ubyte.gz")) == url


@pytest.mark.parametrize("fid", ["fashion-mnist/t10k-labels-idx1-ubyte.gz",
                                 "fashion-mnist/t10k-images-idx3-ubyte.gz"])
def test_fashion_mnist_from_its_hub_copy(fid, hub, refused, fashion_test_parquet, tmp_path):
    url = hub.serve(fid, fashion_test_parquet)
    assert "zalando-datasets/fashion_mnist" in url
    r = fetch_file(fid, root=tmp_path, retries=0)
    assert r.adopted_from == url and content_sha256(r.path) == get_file(fid).content_sha256


# --------------------------------------------------------------------------- when it is not taken

def test_a_file_whose_content_hash_is_not_pinned_is_never_taken_from_it(hub, refused, tmp_path):
    """MNIST's training images: no content hash is pinned, so no copy of them can be verified."""
    hub.serve("mnist/train-images-idx3-ubyte.gz", b"never asked for")
    with pytest.raises(DownloadError, match="connection refused"):
        fetch_file("mnist/train-images-idx3-ubyte.gz", root=tmp_path, retries=0)
    assert hub.requests == []


@pytest.mark.parametrize("how", ["--from URL", "HF_HUB_OFFLINE"])
def test_from_url_and_hub_offline_leave_the_route_alone(how, hub, refused, tmp_path, monkeypatch):
    hub.serve("mnist/t10k-labels-idx1-ubyte.gz", b"never asked for")
    mirrors = None
    if how == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        mirrors = parse_mirrors([f"http://127.0.0.1:{closed_port()}/"], only=True)
    with pytest.raises(DownloadError):
        fetch_file("mnist/t10k-labels-idx1-ubyte.gz", root=tmp_path, retries=0, mirrors=mirrors)
    assert hub.requests == []


def test_without_pyarrow_the_route_names_the_extra_before_downloading(hub, refused, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)   # import pyarrow raises ImportError
    hub.serve("mnist/t10k-labels-idx1-ubyte.gz", b"never asked for")
    with pytest.raises(MissingDependencyError) as e:
        fetch_file("mnist/t10k-labels-idx1-ubyte.gz", root=tmp_path, retries=0)
    msg = str(e.value)
    assert "pip install 'mnistforge[hf]'" in msg and "pyarrow" in msg
    assert "connection refused" in msg   # what failed first is still said
    assert hub.requests == []
