"""Manitest: exact geometry checks, metric vs finite differences, stopping rules, CLI."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import ndimage

from mnistforge.evaluators.augment import AugmentConfig, apply_similarity, augment_similarity
from mnistforge.evaluators.manitest import (TransformGroup, fast_march, get_group, manitest,
                                            metric, score_image, spline_image, transform_images,
                                            warp_nodes)
from mnistforge.evaluators.manitest.warp import interpolate

H = W = 28
C = (H - 1) / 2.0
YY, XX = np.mgrid[0:H, 0:W].astype(np.float64)


def bump(cx=C, cy=C, rx=4.0, ry=4.0):
    """A smooth blob with compact support (zero beyond the ellipse of radii rx, ry)."""
    r2 = ((XX - cx) / rx) ** 2 + ((YY - cy) / ry) ** 2
    return np.where(r2 < 1, (1 - r2) ** 3, 0.0)


def asymmetric_image():
    return 0.8 * bump(C + 4, C - 1, 2.5, 4.0) + 0.6 * bump(C - 3, C + 3, 3.0, 2.0)


def constant_label(x):
    return np.zeros(len(x), int)


def centre_of_mass_x(x):
    return (x * XX).sum(axis=(1, 2)) / x.sum(axis=(1, 2))


# --------------------------------------------------------------------------- warps and metric

@pytest.mark.parametrize("order", [1, 3])
def test_warp_equals_scipy_map_coordinates(order):
    rng = np.random.default_rng(0)
    img = asymmetric_image()
    for name in ("rotation", "translation", "dilation-rotation", "similarity", "affine"):
        g = get_group(name)
        T = rng.normal(0, 0.3, (3, g.dim))
        out = warp_nodes(spline_image(img, order), g, T, jacobian=False)
        for t, o in zip(T, out):
            # independent inverse map: q = c + L^-1 (p - c - b), in (x, y) = (col, row)
            L, b = g.linear(t), g.shift(t)
            P = np.stack([XX.ravel() - C - b[0], YY.ravel() - C - b[1]])
            q = np.linalg.solve(L, P) + C
            ref = ndimage.map_coordinates(img, [q[1], q[0]], order=order, mode="grid-constant",
                                          cval=0.0).reshape(H, W)
            np.testing.assert_allclose(o, ref, atol=1e-9)


def test_identity_reproduces_the_image_and_translation_moves_it():
    img = asymmetric_image()
    g = get_group("translation")
    out = warp_nodes(spline_image(img), g, [[0.0, 0.0], [3.0, -2.0]], jacobian=False)
    np.testing.assert_allclose(out[0], img, atol=1e-6)
    np.testing.assert_allclose(out[1][2:20, 3:], img[4:22, :-3], atol=1e-6)   # right 3, up 2


def test_rotation_turns_clockwise_on_screen_and_dilation_enlarges():
    img = bump(C + 8, C, 2.0, 2.0)                      # a dot right of the centre
    rot = transform_images(img[None], "rotation", [[math.pi / 2]])[0]
    y, x = np.unravel_index(rot.argmax(), rot.shape)
    assert (y, x) in {(21, 13), (21, 14), (22, 13), (22, 14)}   # now below the centre
    big = transform_images(bump()[None], "dilation-rotation", [[math.log(1.5), 0.0]])[0]
    assert (big > 1e-3).sum() > 1.8 * (bump() > 1e-3).sum()


def test_generator_fields_are_the_jacobian_directions_at_identity():
    img = asymmetric_image()
    for name in ("rotation", "similarity", "affine"):
        g = get_group(name)
        J = warp_nodes(spline_image(img), g, np.zeros((1, g.dim)))[1][0]        # P x dim
        F = g.generator_fields((H, W))                                          # dim x 2 x H x W
        gy, gx = np.gradient(img)                     # the image moves along F: dI = -grad.F
        approx = -(gx[None] * F[:, 0] + gy[None] * F[:, 1]).reshape(g.dim, -1).T
        for i in range(g.dim):
            cos = J[:, i] @ approx[:, i] / np.linalg.norm(J[:, i]) / np.linalg.norm(approx[:, i])
            assert cos > 0.97, (name, g.params[i], cos)


@pytest.mark.parametrize("order", [1, 3])
def test_analytic_metric_matches_finite_differences(order):
    rng = np.random.default_rng(1)
    img = asymmetric_image()
    for name in ("rotation", "translation", "dilation-rotation", "similarity", "affine"):
        g = get_group(name)
        T = rng.normal(0, 0.25, (4, g.dim)) + 0.013   # off the pixel lines (order 1 has kinks)
        Ga = metric(img, g, T, order=order, method="analytic")
        Gf = metric(img, g, T, order=order, method="fd")
        scale = np.abs(Ga).max()
        # cubic: smooth, FD error O(h^2); bilinear: a sample point crossing a pixel line
        # inside the FD step meets a kink, which shows up in a few pixels only
        assert np.abs(Ga - Gf).max() <= (1e-5 if order == 3 else 2e-3) * scale, name
        J = warp_nodes(spline_image(img, order), g, T)[1]
        np.testing.assert_allclose(Ga, np.einsum("mpi,mpj->mij", J, J), rtol=1e-12)


def test_bilinear_sample_is_exactly_linear_between_pixels():
    img = np.zeros((5, 5)); img[2, 2] = 1.0
    spl = spline_image(img, order=1)
    v, gx, gy = interpolate(spl, np.array([2.25, 1.5, 30.0]), np.array([2.0, 2.0, 2.0]), True)
    np.testing.assert_allclose(v, [0.75, 0.5, 0.0])
    np.testing.assert_allclose(gx, [-1.0, 1.0, 0.0])


# --------------------------------------------------------------------------- exact geometry

@pytest.mark.parametrize("rx,ry", [(6.0, 6.0), (4.5, 7.0)])
def test_translation_distances_equal_sqrt_tGt(rx, ry):
    img = bump(rx=rx, ry=ry)
    g = TransformGroup("translation", ("tx", "ty"), bounds=((-5, 5), (-5, 5)))  # stays inside
    G = metric(img, g, [[0.0, 0.0], [0.5, 0.0], [2.5, -3.0], [-4.5, 4.5]])
    np.testing.assert_allclose(G, np.broadcast_to(G[0], G.shape), rtol=0.015,
                               atol=1e-3 * G[0, 0, 0])
    r = score_image(img, constant_label, g, keep_map=True, cap=10_000)
    assert r.status == "boundary" and r.score is None and r.visited == 21 * 21
    t, dist = r.distance_map["params"], r.distance_map["distance"]
    exact = np.sqrt(np.einsum("ni,ij,nj->n", t, G[0], t))
    away = np.abs(t).max(axis=1) >= 1.0                     # 2 grid steps from the origin
    rel = np.abs(dist[away] - exact[away]) / exact[away]
    assert rel.max() < 0.02, rel.max()


def test_rotation_distances_equal_the_integral_of_the_tangent_norm():
    img = asymmetric_image()
    r = score_image(img, constant_label, "rotation", keep_map=True)
    assert r.status == "boundary" and r.visited == 41        # -pi..pi in steps of pi/20
    theta = r.distance_map["params"][:, 0]
    dist = r.distance_map["distance"]

    def rotated(th):   # independent: scipy map_coordinates on q = c + R(-th) (p - c)
        c, s = math.cos(th), math.sin(th)
        x, y = XX - C, YY - C
        return ndimage.map_coordinates(img, [C - s * x + c * y, C + c * x + s * y], order=3,
                                       mode="grid-constant", cval=0.0)

    def integral(th_end, n=801):
        ths = np.linspace(0.0, th_end, n)
        eps = 1e-5
        speed = [np.linalg.norm((rotated(t + eps) - rotated(t - eps)) / (2 * eps)) for t in ths]
        return abs(np.trapezoid(speed, ths))

    for k in (2, 5, 10, 20, -7, -20):
        th = k * math.pi / 20
        got = dist[np.argmin(np.abs(theta - th))]
        want = integral(th)
        assert abs(got - want) <= 0.01 * want, (k, got, want)


@pytest.mark.parametrize("d,radius,cap", [(2, 14, 10**6), (3, 5, 10**6), (4, 3, 700)])
def test_constant_isotropic_metric_gives_euclidean_distances(d, radius, cap):
    def evaluate(K):
        return np.broadcast_to(np.eye(d), (len(K), d, d)), None

    h = 0.5
    for factored in (True, False):
        res = fast_march([h] * d, [-radius] * d, [radius] * d, evaluate, cap=cap,
                         factored=factored)
        K = np.array(res.order, float)
        u = np.array([res.values[k] for k in res.order])
        r = h * np.linalg.norm(K, axis=1)
        err = u[r > 0] - r[r > 0]
        if factored:      # exact for a constant metric
            assert np.abs(err).max() < 1e-9
        else:             # classic scheme: an upper bound, first-order error h log(r/h)
            assert err.min() > -1e-9
            assert (err / (h * (1 + np.log(r[r > 0] / h)))).max() < 0.5
            assert err.max() > 0.05 * h          # the check can tell the two schemes apart


def test_classic_scheme_error_is_first_order():
    def evaluate(K):
        return np.broadcast_to(np.eye(2), (len(K), 2, 2)), None

    errs = []
    for h in (0.5, 0.25, 0.125):
        n = int(round(4 / h))
        res = fast_march([h, h], [-n, -n], [n, n], evaluate, factored=False)
        node = (int(round(3 / h)), int(round(2 / h)))        # the point (3, 2)
        errs.append(res.values[node] - math.hypot(3, 2))
    assert errs[0] > errs[1] > errs[2] > 0
    # first order up to the log factor: error / (h (1 + ln(r/h))) stays about constant
    assert errs[2] < 0.5 * errs[0]
    scaled = [e / (h * (1 + math.log(3.6 / h))) for e, h in zip(errs, (0.5, 0.25, 0.125))]
    assert max(scaled) < 1.5 * min(scaled)


def test_anisotropic_constant_metric_and_admissibility():
    G = np.array([[4.0, 0.0], [0.0, 1.0]])

    def evaluate(K):
        return np.broadcast_to(G, (len(K), 2, 2)), None

    res = fast_march([1.0, 1.0], [-12, -12], [12, 12], evaluate)
    for node in [(3, 4), (-5, 2), (10, -1), (0, 9)]:
        t = np.array(node, float)
        assert abs(res.values[node] - math.sqrt(t @ G @ t)) < 1e-9
    assert res.simplex_updates > 0 and res.edge_updates > 0
    values = [res.values[n] for n in res.order]
    assert values == sorted(values)                       # accepted in distance order


# --------------------------------------------------------------------------- stopping rules

def test_ink_classifier_only_changes_when_ink_leaves_the_frame():
    img = bump()
    ink0 = img.sum()

    def ink(x):
        return (x.sum(axis=(1, 2)) > 0.5 * ink0).astype(int)

    capped = score_image(img, ink, "translation", cap=150)
    assert capped.status == "cap" and capped.score is None and capped.params is None
    assert capped.lower_bound > 0 and capped.visited == 150
    inside = TransformGroup("translation", ("tx", "ty"), bounds=((-6, 6), (-6, 6)))
    bounded = score_image(img, ink, inside)
    assert bounded.status == "boundary" and bounded.score is None
    res = manitest(img[None], ink, inside, samples=None)
    assert res.reached_cap == 1 and res.reached_boundary == 1 and res.mean_score is None
    assert res.scores == [None] and res.to_json()["scores"] == [None]

    full = score_image(img, ink, "translation", keep_map=True)
    assert full.status == "changed"
    t = np.array(full.params)
    assert np.abs(t).max() >= C - 4.0                       # the blob crosses the border
    moved = transform_images(img[None], "translation", [t])[0]
    assert moved.sum() <= 0.5 * ink0 < img.sum()
    P = full.distance_map["params"]
    fully_inside = np.abs(P).max(axis=1) <= C - 4.0 - 0.5
    assert fully_inside.sum() > 100 and np.all(full.distance_map["labels"][fully_inside] == 1)


@pytest.mark.parametrize("order,jac", [(3, "analytic"), (1, "analytic"), (3, "fd")])
def test_centre_of_mass_classifier_changes_at_the_known_translation(order, jac):
    img = bump()

    def right(x):
        return (centre_of_mass_x(x) > C + 1.2).astype(int)

    r = score_image(img, right, "translation", order=order, jacobian=jac, cap=3000)
    assert r.status == "changed" and r.label == 0 and r.new_label == 1
    np.testing.assert_allclose(r.params, [1.5, 0.0])       # first grid shift beyond 1.2 px
    G = metric(img, "translation", [[0.0, 0.0]], order=order)[0]
    straight = 1.5 * math.sqrt(G[0, 0])
    if order == 3:
        assert abs(r.distance - straight) <= 0.02 * r.distance
    else:
        # bilinear: the metric is not translation invariant (x-moves are cheaper at half-pixel
        # y offsets), so the geodesic may leave the axis; never longer than the straight path
        assert 0.8 * straight <= r.distance <= straight * (1 + 1e-9)
    assert r.score == pytest.approx(r.distance / np.linalg.norm(img))


def bars(n, rng):
    X = np.zeros((n, H, W))
    y = rng.integers(0, 2, n)
    for i in range(n):
        c = rng.uniform(10, 17)
        w = rng.uniform(1.5, 3.0)
        prof = np.exp(-((np.arange(H) - c) / w) ** 2)
        X[i] = np.outer(prof, np.ones(W)) if y[i] == 0 else np.outer(np.ones(H), prof)
        X[i, :4] = X[i, -4:] = 0
        X[i, :, :4] = X[i, :, -4:] = 0
    X += rng.normal(0, 0.05, X.shape)
    return np.clip(X, 0, 1), y


@pytest.mark.parametrize("group", ["dilation-rotation", "similarity"])
def test_returned_transformation_changes_the_label_and_nothing_closer_did(group):
    from mnistforge.classifiers.base import make_classifier

    rng = np.random.default_rng(3)
    X, y = bars(300, rng)
    clf = make_classifier("linear").fit(X, y)
    img = X[np.flatnonzero(y == 0)[0]]
    r = score_image(img, clf, group, keep_map=True)
    assert r.status == "changed"
    g = get_group(group)
    moved = transform_images(img[None], g, [r.params])[0]
    np.testing.assert_allclose(moved, r.transformed, atol=1e-9)
    assert clf.predict(moved[None])[0] != r.label == clf.predict(img[None])[0]
    m = r.distance_map
    assert m["distance"].max() <= r.march_distance * (1 + 1e-12)   # t*: the stop node or a
    assert r.distance >= r.chord                                    # Trial node ranked behind
    closer = m["distance"] < m["distance"].max()     # accepted before the march stopped
    assert closer.sum() >= 1
    again = clf.predict(transform_images(np.repeat(img[None], closer.sum(), 0), g,
                                         m["params"][closer]))
    assert np.all(again == r.label)                     # recomputed, not the stored labels
    path = np.array(r.path) / np.array(g.steps)
    assert np.allclose(path[0], 0) and np.allclose(r.path[-1], r.params)
    assert np.all(np.abs(np.diff(path, axis=0)).sum(axis=1).round(9) == 1)   # grid neighbours


def test_global_score_is_seeded_and_workers_do_not_change_it():
    rng = np.random.default_rng(5)
    X, y = bars(60, rng)
    from mnistforge.classifiers.base import make_classifier

    clf = make_classifier("linear").fit(X, y)
    a = manitest(X, clf, "rotation", samples=6, seed=1, workers=1)
    b = manitest(X, clf, "rotation", samples=6, seed=1, workers=2)
    c = manitest(X, clf, "rotation", samples=6, seed=2, workers=1)
    assert a.indices == b.indices != c.indices
    assert a.scores == b.scores and a.statuses == b.statuses
    got = [s for s in a.scores if s is not None]
    assert a.mean_score == pytest.approx(np.mean(got))
    assert a.ci95[0] < a.mean_score < a.ci95[1]
    doc = json.loads(json.dumps(a.to_json()))
    for key in ("group", "classifier", "samples", "mean_score", "ci95", "scores", "reached_cap"):
        assert key in doc
    assert doc["samples"] == 6 and len(doc["scores"]) == 6


def test_user_classifier_callable_and_errors():
    from mnistforge.errors import ConfigError
    from mnistforge.evaluators.manitest import as_predictor, load_callable

    with pytest.raises(ConfigError):
        get_group("shear-only")
    with pytest.raises(ConfigError):
        load_callable("no_such_module_xyz:f")
    with pytest.raises(ConfigError):
        as_predictor(42)
    with pytest.raises(ConfigError):
        fast_march([1.0] * 7, [-1] * 7, [1] * 7, lambda K: (None, None))


# --------------------------------------------------------------------------- augmentation

def test_augmentation_is_seeded_bounded_and_applies_its_parameters():
    rng = np.random.default_rng(0)
    imgs = (np.clip(bars(20, rng)[0], 0, 1) * 255).astype(np.uint8)
    a, pa = augment_similarity(imgs, seed=4, copies=2, return_params=True)
    b, pb = augment_similarity(imgs, seed=4, copies=2, return_params=True)
    assert a.shape == (40, H, W) and a.dtype == np.uint8
    assert np.array_equal(a, b) and np.array_equal(pa, pb)
    assert np.all(np.abs(pa[:, :2]) <= 3) and np.all(np.abs(pa[:, 2]) <= 0.2)
    assert np.all((pa[:, 3] >= 0.7) & (pa[:, 3] <= 1.3))
    assert pa[:, 0].std() > 1 and pa[:, 3].std() > 0.1
    X, y = augment_similarity(imgs, np.arange(20), copies=3, include_original=True)
    assert len(X) == len(y) == 80 and np.array_equal(X[:20], imgs)
    assert np.array_equal(y, np.tile(np.arange(20), 4))
    dot = np.zeros((1, H, W)); dot[0, 14, 14] = 1.0
    moved = apply_similarity(dot, [[2.0, -3.0, 0.0, 1.0]])
    assert np.unravel_index(moved[0].argmax(), (H, W)) == (11, 16)
    same = augment_similarity(imgs, seed=1, config=AugmentConfig(0.0, (1.0, 1.0), 0.0))
    assert np.abs(same.astype(int) - imgs).max() <= 1


# --------------------------------------------------------------------------- CLI

def write_folder(folder, rng):
    from mnistforge.io.idx import write_idx

    folder.mkdir()
    X, y = bars(120, rng)
    X = (X * 255).astype(np.uint8)
    write_idx(folder / "train-images-idx3-ubyte.gz", X[:80])
    write_idx(folder / "train-labels-idx1-ubyte.gz", y[:80].astype(np.uint8))
    write_idx(folder / "t10k-images-idx3-ubyte.gz", X[80:])
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", y[80:].astype(np.uint8))
    return folder


@pytest.fixture
def trusted(monkeypatch):
    # the synthetic folders use MNIST's file names but not its bytes, and have no build
    # manifest: the loader refuses them unless told to trust the files
    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")


def test_cli_reference_classifier_on_a_folder(tmp_path, capsys, trusted):
    from mnistforge.cli import main

    d = write_folder(tmp_path / "bars", np.random.default_rng(7))
    out = tmp_path / "m.json"
    rc = main(["manitest", f"{d}:test", "--classifier", "linear", "--train", f"{d}:train",
               "--group", "rotation,dilation-rotation", "--samples", "4", "--seed", "3",
               "--json", str(out), "--workers", "1", "--slice", "10:40"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "rotation: mean score" in text and "dilation-rotation" in text
    doc = json.loads(out.read_text())
    first = doc["groups"][0]
    assert first["group"] == "rotation" and first["samples"] == 4
    assert all(10 <= i < 40 for i in first["indices"])
    assert first["reached_cap"] == sum(s is None for s in first["scores"])


def test_cli_user_callable_and_augment(tmp_path, capsys, monkeypatch, trusted):
    from mnistforge.cli import main

    d = write_folder(tmp_path / "bars", np.random.default_rng(8))
    (tmp_path / "usermodel.py").write_text(
        "import numpy as np\n"
        "def predict(x):\n"
        "    return (x.sum(axis=1).max(axis=1) > x.sum(axis=2).max(axis=1)).astype(int)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "u.json"
    assert main(["manitest", str(d), "--classifier", "usermodel:predict", "--group",
                 "rotation", "--samples", "3", "--json", str(out), "--workers", "1"]) == 0
    doc = json.loads(out.read_text())
    assert doc["classifier"] == "usermodel:predict" and len(doc["scores"]) == 3
    assert main(["manitest", str(d), "--classifier", "usermodel:predict", "--augment"]) == 2
    assert main(["manitest", str(d), "--classifier", "linear", "--group", "rotation",
                 "--samples", "2", "--augment", "--augment-copies", "1", "--workers", "1"]) == 0
    assert "augmented copies" in capsys.readouterr().out


def test_cli_plots(tmp_path, trusted):
    pytest.importorskip("matplotlib")
    from mnistforge.cli import main

    d = write_folder(tmp_path / "bars", np.random.default_rng(9))
    pics = tmp_path / "pics"
    assert main(["manitest", str(d), "--classifier", "linear", "--group", "dilation-rotation",
                 "--samples", "3", "--plot", str(pics), "--workers", "1"]) == 0
    names = sorted(p.name for p in pics.iterdir())
    assert "dilation-rotation-strip.png" in names
    assert any(n.startswith("dilation-rotation-map-") for n in names)


def test_real_mnist_linear_scores(mnist_reference):
    from mnistforge.classifiers.base import make_classifier
    from mnistforge.io.idx import read_idx

    X = np.asarray(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz"))
    y = np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"))
    clf = make_classifier("linear").fit(X[:2000], y[:2000])
    res = manitest(X[5000:], clf, "dilation-rotation", samples=5, seed=0, workers=1)
    assert res.reached_cap == 0 and 0 < res.mean_score < 5
    for r in res.images:
        moved = transform_images(X[5000 + r.index][None], "dilation-rotation", [r.params])
        assert clf.predict(moved)[0] == r.new_label != r.label


# --------------------------------------------------------------------------- reported distances

def test_one_step_nodes_keep_their_straight_line_start_values():
    # a metric growing away from the origin: the factored update from the origin would give
    # h (sqrt(G0) + sqrt(Gm)) / 2 < sqrt(t^T Gm t) at the four one-step nodes
    A = np.array([[2.0, 0.3], [0.3, 1.0]])

    def ev(K):
        r2 = (K.astype(float) ** 2).sum(1)
        return (1 + 3 * r2)[:, None, None] * A, None

    res = fast_march([0.5, 0.5], [-4, -4], [4, 4], ev, cap=40)
    for node in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
        t = np.array(node) * 0.5
        want = math.sqrt(t @ ((A + 4 * A) / 2) @ t)
        assert res.values[node] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("group", ["translation", "dilation-rotation"])
def test_distance_is_a_path_length_between_chord_and_reference_synthetic(group):
    from manitest_reference import Warper, reference_geodesic

    img = asymmetric_image()
    lab = lambda x: (centre_of_mass_x(x) > C + 0.9).astype(int)   # noqa: E731
    if group == "dilation-rotation":
        lab = lambda x: (np.abs(x[:, 4:9, :]).sum(axis=(1, 2)) > 0.5).astype(int)  # noqa: E731
    r = score_image(img, lab, group, cap=3000)
    assert r.status == "changed"
    ref, straight, chord = reference_geodesic(img, group, r.params)
    moved = Warper(img, group)(np.array([r.params]))[0]
    assert lab(moved.reshape(1, H, W))[0] != r.label            # independent warp flips it
    assert r.chord == pytest.approx(chord, rel=1e-6)
    assert r.distance >= chord
    assert abs(r.distance / ref - 1) <= 0.02
    assert r.to_json()["chord"] == r.chord and r.to_json()["params"] == r.params


@pytest.mark.slow   # minutes on 2 cores: make test-slow (issue 44's CI budget)
def test_real_mnist_distances_within_two_percent_of_an_independent_geodesic(mnist_reference):
    # 30 real test digits, linear classifier trained on 0-4999, both 2-D groups; the issue's
    # examples 6384 (one grid step: 2.9968 was reported, below the chord 3.0685) and 9666
    # (non-diagonal metric: 5.1225 against a straight path of 4.4887) among them
    from manitest_reference import Warper, reference_geodesic

    from mnistforge.classifiers.base import make_classifier
    from mnistforge.io.idx import read_idx

    X = np.asarray(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz"))
    y = np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"))
    clf = make_classifier("linear").fit(X[:5000], y[:5000])
    idx = list(range(5000, 5028)) + [6384, 9666]
    for group in ("translation", "dilation-rotation"):
        ratios = []
        for i in idx:
            r = score_image(X[i], clf, group, index=i)
            assert r.status == "changed"
            ref, straight, chord = reference_geodesic(X[i], group, r.params)
            moved = Warper(X[i], group)(np.array([r.params]))
            assert clf.predict(moved.reshape(1, H, W))[0] == r.new_label != r.label
            assert r.distance >= chord, (group, i)
            assert r.distance <= straight * 1.001, (group, i)   # never worse than straight
            ratios.append(r.distance / ref)
            if group == "translation" and i == 6384:
                assert r.params == [0.0, 0.5] and r.distance > 3.0685
                assert r.distance == pytest.approx(3.1454, rel=0.02)
            if group == "translation" and i == 9666:
                assert r.params == [-0.5, 1.0]
                assert r.distance == pytest.approx(4.4887, rel=0.02)
        assert np.max(np.abs(np.array(ratios) - 1)) <= 0.02, group


#: what docs/manitest.md states and these tests measure: every reported distance is at most
#: this much (relative) above the independent geodesic of ``dijkstra_geodesic``
GEODESIC_BOUND = 0.003
#: the other way: the two lengths' quadratures agree to this (the reported path is real)
QUADRATURE = 0.002
FAST_IMAGES = [9434, 5004]           # 9434: the bent geodesic (k-NN, dilation)
SLOW_IMAGES = [9434, 6384, 9666] + list(range(5000, 5021))


def _mnist_arrays(mnist_reference):
    from mnistforge.io.idx import read_idx

    return (np.asarray(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz")),
            np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")))


def _check_against_dijkstra(mnist_reference, spec, group, images):
    # The reference (tests/manitest_reference.py) shares no code with the package: SciPy
    # warps, a finite-difference metric, Dijkstra on a grid 4x finer than the package's with
    # 32 directions, then that path (4 corners) shortened by L-BFGS-B on Richardson-
    # extrapolated inscribed polylines.  Classifiers trained on MNIST test images 0-4999.
    from manitest_reference import Warper, dijkstra_geodesic

    from mnistforge.classifiers.base import make_classifier

    X, y = _mnist_arrays(mnist_reference)
    clf = make_classifier(spec).fit(X[:5000], y[:5000])
    worst = 0.0
    for i in images:
        r = score_image(X[i], clf, group, index=i)
        assert r.status == "changed", i
        ref = dijkstra_geodesic(X[i], group, r.params)
        moved = Warper(X[i], group)(np.array([r.params]))
        assert clf.predict(moved.reshape(1, H, W))[0] == r.new_label != r.label, i
        assert r.distance >= ref["chord"], i
        assert r.distance <= ref["length"] * (1 + GEODESIC_BOUND), (i, r.distance, ref)
        assert r.distance >= ref["length"] * (1 - QUADRATURE), (i, r.distance, ref)
        worst = max(worst, r.distance / ref["length"] - 1)
        if i == 9434 and spec == "knn:k=3" and group == "dilation-rotation":
            # issue 32: reported 19.1336 (the straight path) where a path bending through
            # rotation has length 19.047
            assert r.params == [0.9, 0.0] and r.distance < 19.07
            assert ref["length"] == pytest.approx(19.047, abs=0.01)
            assert ref["straight"] == pytest.approx(19.1336, abs=0.01)
            # docs/manitest.md: the geodesic bends "through rotation by about 0.02 rad"
            assert 0.015 < np.abs(ref["vertices"][:, 1]).max() < 0.03
            assert r.path_kind == "bent" and np.abs(np.array(r.refined_path)[:, 1]).max() > 0.01
    return worst


# one pair in the fast suite; the other three take minutes on 2 cores (make test-slow)
@pytest.mark.parametrize("spec", ["linear", pytest.param("knn:k=3", marks=pytest.mark.slow)])
@pytest.mark.parametrize("group", ["translation", pytest.param("dilation-rotation", marks=pytest.mark.slow)])
def test_real_mnist_distances_within_bound_of_a_dijkstra_geodesic(mnist_reference, spec, group):
    _check_against_dijkstra(mnist_reference, spec, group, FAST_IMAGES)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["linear", "knn:k=3"])
@pytest.mark.parametrize("group", ["translation", "dilation-rotation"])
def test_real_mnist_sweep_within_bound_of_a_dijkstra_geodesic(mnist_reference, spec, group):
    worst = _check_against_dijkstra(mnist_reference, spec, group, SLOW_IMAGES)
    print(f"{spec} {group}: largest reported / reference - 1 = {worst:.5f}")


def test_docs_experiment_linear_row_is_a_fresh_run(mnist_reference):
    # the plain linear row of docs/manitest.md's experiment table (the CLI line it names),
    # recomputed: score, 95 % interval, images without a change, visited median / max
    from pathlib import Path

    from mnistforge.classifiers.base import make_classifier
    from mnistforge.io.idx import read_idx

    X = np.asarray(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz"))
    y = np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"))
    clf = make_classifier("linear").fit(X[:5000], y[:5000])
    res = manitest(X[5000:], clf, "dilation-rotation", samples=100, seed=0, workers=1)
    err = (clf.predict(X[5000:]) != y[5000:]).mean()
    v = [r.visited for r in res.images]
    lo, hi = res.ci95
    row = (f"| linear | plain | {100 * err:.1f} % | {res.mean_score:.3f} ({lo:.3f}–{hi:.3f}) | "
           f"{res.reached_cap} | {np.median(v):g} / {max(v):,} |")
    doc = (Path(__file__).resolve().parents[1] / "docs" / "manitest.md").read_text()
    assert row in doc.splitlines()
    assert all(r.distance >= r.chord for r in res.images)


def test_docs_experiment_prose_follows_from_its_table():
    # docs/manitest.md's experiment: the percentages and ratios of "What it shows" are those
    # of the table's scores (the table's rows: the linear one by the test above, the others
    # measured with the CLI line the page gives)
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "manitest.md").read_text()
    section = doc.split("## Experiment:", 1)[1]
    score = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[1] in ("plain", "augmented"):
            score[cells[0].split(",")[0], cells[1]] = float(cells[3].split()[0])
    assert len(score) == 6
    gain = {k: round(100 * (score[k, "augmented"] / score[k, "plain"] - 1))
            for k in ("linear", "ELM", "k-NN")}
    text = " ".join(section.split())
    assert f"by {gain['linear']} % for the linear classifier and {gain['ELM']} % for the ELM" \
        in text
    assert f"by {gain['k-NN']} % for k-NN" in text
    assert f"yet {gain['linear']} % more invariant" in text
    assert round(score["k-NN", "plain"] / score["linear", "plain"], 1) == 2.0  # "twice"
    assert score["linear", "plain"] < score["ELM", "plain"] < score["k-NN", "plain"]


def test_docs_group_table_is_the_code():
    # docs/manitest.md's table of parameter kinds: grid steps and bounds are the code's
    # defaults (the paper's steps), the five groups have the dimensions the page gives, and
    # the 12-pixel prefilter padding leaves less than the stated 2e-7 of boundary effect
    from pathlib import Path

    from mnistforge.evaluators.manitest.groups import DEFAULT_BOUNDS, DEFAULT_STEPS, GROUPS
    from mnistforge.evaluators.manitest.warp import PREFILTER_PAD

    doc = (Path(__file__).resolve().parents[1] / "docs" / "manitest.md").read_text()
    table = doc.split("| kind | meaning |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    seen = set()
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        kinds = [k.strip("` ") for k in cells[0].split(",")]
        step_text = cells[2].replace(" px", "")
        step = math.pi / float(step_text[2:]) if step_text.startswith("π/") else float(step_text)
        bound = cells[3].split()[0].lstrip("±")
        bound = math.pi if bound == "π" else float(bound)
        for k in kinds:
            assert DEFAULT_STEPS[k] == pytest.approx(step), k
            assert DEFAULT_BOUNDS[k] == pytest.approx((-bound, bound)), k
            seen.add(k)
        if "×20" in cells[3]:
            assert round(math.exp(bound)) == 20
    assert seen == set(DEFAULT_STEPS)
    assert {k: g.dim for k, g in GROUPS.items()} == {"rotation": 1, "translation": 2,
                                                     "dilation-rotation": 2, "similarity": 4,
                                                     "affine": 6}
    assert (2 - math.sqrt(3)) ** PREFILTER_PAD < 2e-7     # the cubic prefilter's pole, 0.268


@pytest.mark.parametrize("threshold", [1.2, 0.7])
def test_flip_moves_t_star_to_the_label_change_between_grid_nodes(threshold):
    img = bump()

    def right(x):
        return (centre_of_mass_x(x) > C + threshold).astype(int)

    grid = score_image(img, right, "translation", cap=3000)
    r = score_image(img, right, "translation", cap=3000, flip=True)
    assert r.grid_params == grid.params and r.status == "changed"
    tx = r.params[0]
    assert threshold - 0.02 < tx <= threshold + 0.02 and abs(r.params[1]) < 1e-9
    # independently: SciPy warps on either side of the reported point
    from manitest_reference import Warper, reference_geodesic

    w = Warper(img, "translation")
    before, after = w(np.array([[tx - 0.02, 0.0], [tx, 0.0]])).reshape(2, H, W)
    assert right(before[None])[0] == r.label and right(after[None])[0] == r.new_label != r.label
    ref, _, chord = reference_geodesic(img, "translation", r.params)
    assert chord <= r.distance <= grid.distance
    assert abs(r.distance / ref - 1) <= 0.02
    assert r.score == pytest.approx(r.distance / np.linalg.norm(img))
