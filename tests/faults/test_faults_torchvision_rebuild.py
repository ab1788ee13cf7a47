"""`build --layout torchvision --overwrite` over its own earlier output: it was refused ("MNIST/raw/
manifest.json (not listed)": the check was a build folder's, not a torchvision root's), and the
manifest named the run's temporary staging folder, so two builds of the same input differed."""
from __future__ import annotations

from faults_helpers import cli


def _manifests(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("manifest.json"))}


def test_a_torchvision_build_replaces_its_own_output_with_the_same_bytes(tiny_sd19, tmp_path):
    out = tmp_path / "tv"
    args = ("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--layout", "torchvision",
            "--workers", "1", "--no-progress")
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    first = _manifests(out)
    assert "MNIST/raw/manifest.json" in first and b".idx-" not in b"".join(first.values())
    r = cli(*args, "--overwrite")
    assert r.returncode == 0, r.stderr
    assert _manifests(out) == first
