"""A hostile or broken Hub behind the parquet route (issue 45): a web page instead of parquet, an
endless body, parquet without an image column, labels out of range, a hash-matching file's
neighbour that differs. Every official address is a port that refuses (a registry file of the
test's own); the Hub is a real HTTP server on 127.0.0.1 (``HF_ENDPOINT``); never the internet."""
from __future__ import annotations

import http.server
import io

import numpy as np
import pytest

from mnistforge.cache import download
from mnistforge.cache.download import fetch_file
from mnistforge.errors import DownloadError, HashMismatchError
from mnistforge.registry import get_file, use_registry

from cache_helpers import hub_routed_registry, local_server

pa = pytest.importorskip("pyarrow", reason="pyarrow (the [hf] extra) is not installed: the route reads parquet with it")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the [hf] extra) is not installed")

LABELS = "mnist/t10k-labels-idx1-ubyte.gz"


def parquet(columns: dict) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out)
    return out.getvalue()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.server.hits.append(self.path)
        if self.server.mode == "endless":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"\0" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                return
        body = self.server.body
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with local_server(Handler, hits=[], mode="body", body=b"") as srv:
        monkeypatch.setenv("HF_ENDPOINT", srv.base)
        for var in ("HF_HUB_OFFLINE", "MNISTFORGE_OFFLINE", "MNISTFORGE_MIRRORS"):
            monkeypatch.delenv(var, raising=False)
        with use_registry(hub_routed_registry(tmp_path)):
            yield srv


def nothing_written(cache) -> bool:
    return not (cache / "mnist").exists() or not any((cache / "mnist").iterdir())


def test_a_web_page_instead_of_parquet_is_refused_by_name(hub, tmp_path):
    hub.body = b"<!DOCTYPE html><html><body>Sign in to continue</body></html>"
    with pytest.raises(HashMismatchError) as e:
        fetch_file(LABELS, root=tmp_path / "c", retries=0)
    assert f"{LABELS}: " in str(e.value) and "is not a parquet copy of it" in str(e.value)
    assert nothing_written(tmp_path / "c")


def test_an_endless_body_is_cut_and_nothing_is_kept(hub, tmp_path, monkeypatch):
    monkeypatch.setattr(download, "MAX_BYTES", 1 << 20)
    hub.mode = "endless"
    with pytest.raises(DownloadError) as e:
        fetch_file(LABELS, root=tmp_path / "c", retries=0)
    msg = str(e.value)
    assert "the Hub's parquet copy" in msg and f"more than {1 << 20} bytes" in msg
    assert nothing_written(tmp_path / "c")


def test_parquet_without_images_is_refused(hub, tmp_path):
    hub.body = parquet({"text": ["a", "b"], "label": [1, 2]})
    with pytest.raises(HashMismatchError, match="is not a parquet copy of it"):
        fetch_file(LABELS, root=tmp_path / "c", retries=0)
    assert nothing_written(tmp_path / "c")


def test_labels_out_of_a_byte_are_refused_not_wrapped(hub, tmp_path):
    """10,000 labels, one of them 266 (10 mod 256): never cast into the official file's bytes."""
    from mnistforge.io.hf.png import encode_png

    png = encode_png(np.zeros((28, 28), np.uint8))
    labels = np.zeros(10_000, np.int64)
    labels[5] = 266
    hub.body = parquet({"image": pa.array([{"bytes": png, "path": None}] * 10_000),
                        "label": pa.array(labels)})
    with pytest.raises(HashMismatchError, match="does not hold the official content"):
        fetch_file(LABELS, root=tmp_path / "c", retries=0)
    assert nothing_written(tmp_path / "c")
    assert get_file(LABELS).content_sha256   # the check that refused it
