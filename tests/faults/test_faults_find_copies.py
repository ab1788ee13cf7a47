"""Issue 41, find-copies over folders it may not read: the unreadable folder is said in a
warning and the search goes on (was a raw PermissionError); a DIR that cannot be looked at is
one named error.  Run as an unprivileged user (root reads everything)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from faults_helpers import ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
NOBODY = 65534


def _as_user(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MNISTFORGE_HOME=args[-1] + "/cache")
    cmd = [sys.executable, "-m", "mnistforge", "find-copies", *args[:-1], "--only"]
    if os.geteuid() == 0:   # root ignores permissions: the command runs as nobody
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop to an unprivileged user")
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
        probe = subprocess.run([*cmd[:4], sys.executable, "-c", "import mnistforge"], env=env,
                               capture_output=True, text=True, timeout=120, cwd=args[-1], check=False)
        if probe.returncode != 0:   # e.g. a checkout under a 0700 folder (.ci/run's mktemp -d)
            pytest.skip(f"the unprivileged user cannot import mnistforge from {ROOT} "
                        f"({probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else 'no output'})")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=args[-1],
                          check=False)


@pytest.fixture
def tree():
    top = tempfile.mkdtemp(prefix="mnistforge-find-copies-")   # readable by nobody (not tmp_path)
    os.chmod(top, 0o755)
    os.makedirs(os.path.join(top, "scan", "locked", "inner"))
    os.chmod(os.path.join(top, "scan"), 0o755)
    os.chmod(os.path.join(top, "scan", "locked"), 0o000)
    yield top
    os.chmod(os.path.join(top, "scan", "locked"), 0o755)
    shutil.rmtree(top)


def test_an_unreadable_folder_is_said_and_the_search_goes_on(tree):
    r = _as_user(os.path.join(tree, "scan"), tree)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "not searched, cannot list" in r.stderr and "locked" in r.stderr
    assert "0 copies found" in r.stdout


def test_a_dir_that_cannot_be_looked_at_is_one_named_error(tree):
    r = _as_user(os.path.join(tree, "scan", "locked", "inner"), tree)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "cannot look at it" in r.stderr and "Permission denied" in r.stderr


def test_an_npz_of_empty_arrays_is_named_not_a_raw_value_error(tmp_path):
    import numpy as np
    from faults_helpers import cli

    z, y = np.zeros((0, 28, 28), np.uint8), np.zeros(0, np.uint8)
    np.savez(tmp_path / "mnist.npz", x_train=z, y_train=y, x_test=z, y_test=y)
    env = {"MNISTFORGE_HOME": str(tmp_path / "cache")}
    for args in (("find-copies", tmp_path, "--only"), ("fetch", "mnist", "--from", tmp_path / "mnist.npz")):
        r = cli(*args, env=env, timeout=120)
        assert "Traceback" not in r.stderr and "ValueError" not in r.stdout + r.stderr, r.stderr
        assert "0 images" in r.stdout or "MISSING" in r.stdout
