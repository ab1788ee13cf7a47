"""Placing files in a test's cache (see the ``cache`` fixture in conftest.py)."""
from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import socket
import threading

from mnistforge.registry import registry_path


def put(cache, group, src, name=None):
    """Copy ``src`` into ``cache/<group>/`` (under ``name`` if given); return the new path."""
    d = cache / group
    d.mkdir(parents=True, exist_ok=True)
    return shutil.copy(src, d / (name or os.path.basename(src)))


@contextlib.contextmanager
def local_server(handler, **state):
    """A real HTTP server on 127.0.0.1 in a thread of its own: ``state`` as its attributes,
    ``base`` its URL; shut down on exit."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    for name, value in state.items():
        setattr(srv, name, value)
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def closed_port() -> int:
    """A port nothing listens on (bound, then closed): connections are refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def hub_routed_registry(tmp_path, hosts: int = 1):
    """The bundled registry with every file that has a Hub parquet copy on ``hosts`` refusing
    ports (its path): a fetch of them can only succeed through the Hub route."""
    reg = json.loads(open(registry_path(), encoding="utf-8").read())
    dead = [f"http://127.0.0.1:{closed_port()}" for _ in range(hosts)]
    for fid, entry in reg["files"].items():
        if entry.get("hub_parquet"):
            entry["urls"] = [f"{d}/{fid}" for d in dead]
    path = tmp_path / "registry.json"
    path.write_text(json.dumps(reg))
    return path
