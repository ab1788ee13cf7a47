"""Worker bullet of issue 17: a killed worker is a named error (not a raw BrokenProcessPool), and
workers end when their parent dies (no orphan blocked for minutes).  Real processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from faults_helpers import ROOT

from mnistforge.errors import WorkerError
from mnistforge.io.workers import named_worker_errors, process_pool

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and /proc")


def _sleep(seconds):
    time.sleep(seconds)
    return os.getpid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie is dead for our purpose (its parent has not reaped it)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("attempt", range(3))
def test_a_killed_worker_is_a_named_error(attempt):
    with pytest.raises(WorkerError, match="worker process died while testing"):
        with named_worker_errors("testing"), process_pool(2) as ex:
            futures = [ex.submit(_sleep, 30) for _ in range(2)]
            while len(ex._processes) < 2:   # both started
                time.sleep(0.05)
            os.kill(next(iter(ex._processes)), signal.SIGKILL)
            for f in futures:
                f.result()


PARENT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from mnistforge.io.workers import process_pool

    def block(_):
        time.sleep(600)

    ex = process_pool(2)
    futures = [ex.submit(block, i) for i in range(4)]
    while len(ex._processes) < 2:
        time.sleep(0.05)
    print(" ".join(map(str, ex._processes)), flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("attempt", range(3))
def test_workers_end_when_their_parent_is_killed(attempt):
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(root=str(ROOT))],
                              stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        parent.kill()
        parent.wait(timeout=60)
        # bounded wait (not a timing assertion): the watchdog checks every second
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in pids), "a worker outlived its parent"
    finally:
        parent.kill()
