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


def held_files() -> dict[str, Path]:
    """Registry id -> local file, for every file this machine holds."""
    ref = SHARED / "reference"
    out = {f"mnist/{p.name}": p for p in sorted((ref / "mnist").glob("*.gz"))}
    out.update({f"qmnist/{p.name}": p for p in sorted((ref / "qmnist").glob("*-labels*"))})
    out["label-errors/mnist_mturk.json"] = ref / "papers" / "northcutt2021-mnist-test-mturk.json"
    out.update({f"fashion-mnist/{p.name}": p for p in sorted(FASHION.glob("*.gz"))})
    return {k: v for k, v in out.items() if v.is_file()}


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):  # keep test output quiet
        pass

    def do_GET(self):
        path = self.server.files.get(self.path.lstrip("/"))  # type: ignore[attr-defined]
        if path is None:
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
def start() -> str:
    """Start the mirror once per process (a daemon thread); return its base URL."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.files = held_files()  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}"


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
    from mnistforge.settings import offline

    if os.environ.get(ENV) and not offline() and "--offline" not in sys.argv:
        redirect(os.environ[ENV])
    sys.argv[0] = "mnistforge"
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
