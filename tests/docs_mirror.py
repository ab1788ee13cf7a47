"""The local download mirror the documentation examples run against (never the internet).

A real HTTP server on 127.0.0.1 serves the files this machine holds (the real MNIST test files
and QMNIST label tables of ../shared, the label-error study file, Debian's Fashion-MNIST) under
their registry ids; every registry URL is pointed at it, so a file it lacks fails to download
(404) instead of reaching out. ``python docs_mirror.py ARGS`` is the ``mnistforge`` command the
shell examples run: the CLI with the same redirection (``MNISTFORGE_DOCS_MIRROR``).
"""
from __future__ import annotations

import dataclasses
import functools
import http.server
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared"))
FASHION = Path("/usr/share/datasets/fashion-mnist")
ENV = "MNISTFORGE_DOCS_MIRROR"


MNIST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz")
QMNIST_FILES = ("qmnist-train-labels.tsv.gz", "qmnist-test-labels.tsv.gz", "qmnist-train-labels-idx2-int.gz",
                "qmnist-test-labels-idx2-int.gz", "xnist-labels.tsv.xz")
FASHION_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                 "t10k-labels-idx1-ubyte.gz")


def expected_files() -> dict[str, Path]:
    """Registry id -> where this machine may hold it (../shared, Debian's dataset-fashion-mnist)."""
    ref = SHARED / "reference"
    out = {f"mnist/{n}": ref / "mnist" / n for n in MNIST_FILES}
    out.update({f"qmnist/{n}": ref / "qmnist" / n for n in QMNIST_FILES})
    out["label-errors/mnist_mturk.json"] = ref / "papers" / "northcutt2021-mnist-test-mturk.json"
    out.update({f"fashion-mnist/{n}": FASHION / n for n in FASHION_FILES})
    return out


def held_files() -> dict[str, Path]:
    """Registry id -> local file, for every file this machine holds."""
    return {k: v for k, v in expected_files().items() if v.is_file()}


def absent_requested() -> list[str]:
    """Files asked for since the last call that this machine would hold but lacks (then the
    example needs data that is not here: it is skipped, not failed)."""
    srv = _server()
    asked, srv.missing = srv.missing, []  # type: ignore[attr-defined]
    expected = expected_files()
    return sorted({fid for fid in asked if fid in expected and not expected[fid].is_file()})


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):  # keep test output quiet
        pass

    def do_GET(self):
        path = self.server.files.get(self.path.lstrip("/"))  # type: ignore[attr-defined]
        if path is None:
            self.server.missing.append(self.path.lstrip("/"))  # type: ignore[attr-defined]
            self.send_error(404, "not held by the docs mirror")
            return
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@functools.lru_cache(maxsize=1)
def _server() -> http.server.ThreadingHTTPServer:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.files = held_files()  # type: ignore[attr-defined]
    srv.missing = []  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def start() -> str:
    """Start the mirror once per process (a daemon thread); return its base URL."""
    return f"http://127.0.0.1:{_server().server_address[1]}"


def redirect(base: str) -> dict:
    """Point every registry file at ``base``; return the replaced entries (for :func:`restore`)."""
    from mnistforge import registry

    files = registry._files()
    saved = dict(files)
    for fid, rf in saved.items():
        if rf.urls:
            files[fid] = dataclasses.replace(rf, urls=(f"{base}/{fid}",))
    return saved


def restore(saved: dict) -> None:
    from mnistforge import registry

    registry._files().update(saved)


def main(argv=None) -> int:
    """The CLI, downloads redirected to the mirror (left alone in offline mode: messages name
    the real URLs there, and nothing is downloaded anyway)."""
    from mnistforge import cli
    from mnistforge.settings import current

    if os.environ.get(ENV) and not current().offline and "--offline" not in sys.argv:
        redirect(os.environ[ENV])
    sys.argv[0] = "mnistforge"
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
