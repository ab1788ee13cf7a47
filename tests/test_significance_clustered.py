"""Writer-clustered intervals, strata and several runs per system (issue 42)."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from cache_helpers import put
from mnistforge.cli import main
from mnistforge.errors import ConfigError
from mnistforge.io.idx import read_idx
from mnistforge.evaluators import errorlists as el
from mnistforge.evaluators import significance as sg


@pytest.fixture(scope="module")
def mnist_writers(qmnist_reference):
    """Writer and NIST series of MNIST's 10,000 test rows: QMNIST's first 10,000 test rows
    (columns 1 and 2 of its published table), read here without the package."""
    with gzip.open(qmnist_reference / "qmnist-test-labels.tsv.gz", "rt") as f:
        table = np.loadtxt(f, dtype=np.int64, max_rows=10_000)
    return table[:, 2], table[:, 1]


def _statsmodels_se(values, groups):
    sm = pytest.importorskip("statsmodels.api", reason="statsmodels is not installed (the [bench] extra)")
    x = np.asarray(values, float)
    ols = sm.OLS(x, np.ones(x.size))
    return (float(ols.fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0]),
            float(ols.fit(cov_type="HC0").bse[0]))


def test_clustered_se_equals_statsmodels_on_real_mnist_writers(mnist_writers):
    writers, _ = mnist_writers
    systems = {s.name: s.wrong for s in el.load_example("keysers2006")}
    values = dict(systems)
    names = sorted(systems)
    values.update({f"{a}-{b}": systems[a].astype(int) - systems[b].astype(int)
                   for i, a in enumerate(names) for b in names[i + 1:]})
    des = {}
    for name, x in values.items():
        c = sg.clustered_mean(x, writers, by="writer")
        se, naive = _statsmodels_se(x, writers)
        assert c.clusters == 297 and c.n == 10_000
        assert c.se == pytest.approx(se, rel=1e-9), name
        assert c.naive_se == pytest.approx(naive, rel=1e-9), name
        assert c.design_effect == pytest.approx((se / naive) ** 2, rel=1e-9), name
        des[name] = c.design_effect
    # the naive intervals of the four systems are too narrow: writers cluster their errors
    assert all(des[s] > 1.1 for s in ("SC", "SVM", "IDM", "CNN"))


def test_the_qmnist_gap_clustered_by_writer_equals_statsmodels(qmnist_reference):
    """test10k and test50k share writers: the gap's CR1 standard error is the coefficient's of an
    OLS of the errors on a constant and 'in test10k', clustered by QMNIST's published writer ids."""
    sm = pytest.importorskip("statsmodels.api", reason="statsmodels is not installed (the [bench] extra)")
    with gzip.open(qmnist_reference / "qmnist-test-labels.tsv.gz", "rt") as f:
        writers = np.loadtxt(f, dtype=np.int64, usecols=2)
    rng = np.random.default_rng(5)   # errors with writer effects, a higher rate on the first part
    ids, codes = np.unique(writers, return_inverse=True)
    first = np.arange(writers.size) < 10_000
    wrong = rng.random(writers.size) < np.clip(0.01 + 0.005 * first + rng.normal(0, 0.01, ids.size)[codes], 0, 1)
    c = sg.clustered_gap(wrong, first, writers, by="writer")
    X = sm.add_constant(first.astype(float))
    fit = sm.OLS(wrong.astype(float), X).fit(cov_type="cluster", cov_kwds={"groups": writers})
    assert c.mean == pytest.approx(float(fit.params[1]), rel=1e-9)
    assert c.se == pytest.approx(float(fit.bse[1]), rel=1e-9)
    assert c.naive_se == pytest.approx(float(sm.OLS(wrong.astype(float), X).fit(cov_type="HC0").bse[1]), rel=1e-9)
    assert c.clusters == ids.size and c.design_effect > 1   # the writers' effects widen it
    # the card's gap uses it, and it decides the verdict
    from mnistforge.evaluators.card import qmnist_gap

    g = qmnist_gap(wrong, 10_000, writers=writers)
    assert g["clustered"]["se"] == c.se and g["significant"] == (not c.interval[0] <= 0 <= c.interval[1])


def test_rates_match_wald_interval_and_error_rate():
    rng = np.random.default_rng(3)
    wrong = rng.random(2000) < 0.03
    c = sg.clustered_mean(wrong, rng.integers(0, 60, 2000))
    r = sg.error_rate(wrong)
    assert c.mean == r.rate
    assert c.naive_interval == pytest.approx(r.wald, rel=1e-12)
    assert c.interval[0] <= c.mean <= c.interval[1]


def test_strata_of_real_mnist_high_school_writers_err_more(mnist_writers):
    writers, hsf = mnist_writers
    for s in el.load_example("keysers2006"):
        table = sg.by_stratum(s.wrong, [f"hsf_{h}" for h in hsf], writers, by="writer")
        assert set(table) == {"hsf_0", "hsf_4"}
        assert sum(t.n for t in table.values()) == 10_000
        for name, t in table.items():
            rows = hsf == int(name[-1])
            assert t.mean == pytest.approx(s.wrong[rows].mean())
            assert t.se == pytest.approx(sg.clustered_mean(s.wrong[rows], writers[rows]).se)
        assert table["hsf_4"].mean > table["hsf_0"].mean, s.name


def _simulate(rng, writers, sigma, base=-3.0, per_writer=34):
    u = rng.normal(0.0, sigma, writers) if sigma else np.zeros(writers)
    p = 1.0 / (1.0 + np.exp(-(base + u)))
    groups = np.repeat(np.arange(writers), per_writer)
    return rng.random(groups.size) < p[groups], groups


def _true_rate(sigma, base=-3.0):
    x, w = np.polynomial.hermite.hermgauss(80)  # E[expit(base + sigma*Z)], Gauss-Hermite
    return float(np.sum(w / (1.0 + np.exp(-(base + np.sqrt(2.0) * sigma * x)))) / np.sqrt(np.pi))


@pytest.mark.parametrize("writers, replications", [(300, 500), (60, 120)])
def test_clustered_interval_covers_the_true_rate_under_writer_effects(writers, replications):
    rng = np.random.default_rng(42)
    truth = _true_rate(1.0)
    hit = np.zeros((replications, 2), bool)
    for i in range(replications):
        wrong, groups = _simulate(rng, writers, 1.0)
        c = sg.clustered_mean(wrong, groups)
        hit[i] = [c.interval[0] <= truth <= c.interval[1], c.naive_interval[0] <= truth <= c.naive_interval[1]]
    clustered, naive = hit.mean(axis=0)
    if writers == 300:   # the check: 93-97 % at 95 %
        assert 0.93 <= clustered <= 0.97
    else:                # the fast small version: 4 binomial standard errors
        assert abs(clustered - 0.95) < 4 * np.sqrt(0.95 * 0.05 / replications) + 0.01
    assert naive < clustered


def test_design_effect_is_one_for_independent_errors():
    rng = np.random.default_rng(7)
    de = np.array([sg.clustered_mean(*_simulate(rng, 300, 0.0)).design_effect for _ in range(200)])
    assert abs(de.mean() - 1.0) < 4 * de.std(ddof=1) / np.sqrt(de.size)


def _keysers():
    return {s.name: s.wrong for s in el.load_example("keysers2006")}


@pytest.mark.parametrize("seed", [0, 11])
def test_one_run_per_system_is_todays_paired_bootstrap(seed):
    k = _keysers()
    a, b = k["SC"], k["CNN"]
    today = sg.probability_of_improvement(a, b, 5000, seed)
    assert sg.hierarchical_poi(a, b, resamples=5000, seed=seed) == today
    assert sg.hierarchical_poi([a], [b], resamples=5000, seed=seed) == today
    # the general path (each row its own cluster) draws the same multinomial: same result
    assert sg.hierarchical_poi(a, b, np.arange(a.size), 5000, seed) == today


def test_hierarchical_bootstrap_does_not_depend_on_the_order_of_the_runs():
    k = _keysers()
    groups = np.arange(10_000) // 34
    one = sg.hierarchical_poi([k["SC"], k["SVM"], k["IDM"]], [k["CNN"], k["CC"]], groups, 3000, 5)
    two = sg.hierarchical_poi([k["IDM"], k["SC"], k["SVM"]], [k["CC"], k["CNN"]], groups, 3000, 5)
    assert one == two
    assert one != sg.hierarchical_poi([k["SC"], k["SVM"], k["IDM"]], [k["CNN"], k["CC"]], None, 3000, 5)


def test_cluster_bootstrap_agrees_with_the_clustered_wald_interval():
    rng = np.random.default_rng(5)
    a, groups = _simulate(rng, 300, 1.0)
    b = a & (rng.random(a.size) < 0.7)   # B fixes 30 % of A's errors
    boot = sg.hierarchical_poi(b, a, groups, 20_000, 1)
    c = sg.clustered_mean(b.astype(int) - a.astype(int), groups)
    lo, hi = np.array(boot.diff_interval) / a.size
    assert lo == pytest.approx(c.interval[0], abs=0.3 * (c.interval[1] - c.interval[0]))
    assert hi == pytest.approx(c.interval[1], abs=0.3 * (c.interval[1] - c.interval[0]))
    assert boot.poi > 0.99


def test_run_spread_runs_needed_by_its_formula():
    rng = np.random.default_rng(9)
    n = 5000
    base = rng.random(n) < 0.02
    runs_a = [base | (rng.random(n) < r) for r in (0.002, 0.004, 0.006)]
    runs_b = [base | (rng.random(n) < r) for r in (0.003, 0.008)]
    s = sg.run_spread(runs_a, runs_b, resamples=2000)
    rates_a = [r.mean() for r in runs_a]
    rates_b = [r.mean() for r in runs_b]
    assert s.runs == (3, 2) and s.spread[0] == pytest.approx(np.std(rates_a, ddof=1))
    assert s.diff == pytest.approx(np.mean(rates_a) - np.mean(rates_b))
    d = np.mean(runs_a, axis=0) - np.mean(runs_b, axis=0)
    within = d.var() / n * n / (n - 1)   # each row its own cluster: CR1 = var(ddof=1)/n
    z = sg.z_two_sided(0.95)
    room = (s.diff / z) ** 2 - within
    if room <= 0:
        assert s.runs_needed is None
    else:
        v = s.spread[0] ** 2 + s.spread[1] ** 2
        assert s.runs_needed == max(1, math.ceil(v / room))
        # that many runs make the difference significant, one fewer does not
        assert within + v / s.runs_needed <= (s.diff / z) ** 2
        assert s.runs_needed == 1 or within + v / (s.runs_needed - 1) > (s.diff / z) ** 2
    between = s.spread[0] ** 2 / 3 + s.spread[1] ** 2 / 2
    assert s.between_share == pytest.approx(between / (between + within))


def test_run_spread_of_identical_runs_is_zero_and_one_run_suffices():
    k = _keysers()
    s = sg.run_spread([k["SC"]] * 3, [k["CC"]] * 2, resamples=500)
    assert s.spread == (0.0, 0.0) and s.between_share == 0.0
    assert s.runs_needed == 1   # 63 vs 35 errors: significant on this test set alone
    assert sg.run_spread(k["SVM"], k["IDM"], resamples=500).runs_needed is None   # 56 vs 54: never


def test_bad_groups_and_runs_are_refused():
    w = np.zeros(10, bool)
    with pytest.raises(ConfigError, match="groups do not match"):
        sg.clustered_mean(w, np.arange(9))
    with pytest.raises(ConfigError, match="two clusters"):
        sg.clustered_mean(w, np.zeros(10))
    with pytest.raises(ConfigError, match="differ in length"):
        sg.hierarchical_poi([w, w[:9]], w)
    with pytest.raises(ConfigError, match="same test set"):
        sg.hierarchical_poi([w, w], np.zeros(9, bool))


# ------------------------------------------------------------------ the command
def test_cli_cluster_writer_on_keysers_gives_clustered_and_strata(qmnist_reference, cache, tmp_path, capsys):
    put(cache, "qmnist", qmnist_reference / "qmnist-test-labels-idx2-int.gz")
    out = tmp_path / "r.json"
    assert main(["significance", "--example", "keysers2006", "--cluster", "writer", "--bootstrap", "2000",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "writer-clustered (CR1) intervals" in text and "design effect" in text
    d = json.loads(out.read_text())
    writers = np.asarray(read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz"))[:10_000, 2]
    for s in d["systems"]:
        c = s["clustered"]
        assert {"by", "clusters", "se", "interval", "design_effect"} <= set(c)
        assert c["by"] == "writer" and c["clusters"] == 297
        wrong = _keysers().get(s["name"])
        if wrong is not None:
            assert c["se"] == pytest.approx(sg.clustered_mean(wrong, writers).se, rel=1e-12)
        assert set(s["strata"]) == {"hsf_0", "hsf_4"}
        assert sum(v["n"] for v in s["strata"].values()) == 10_000
        assert c["interval"][0] < s["rate"] < c["interval"][1]   # naive figures kept beside
    for p in d["pairs"]:
        c = p["clustered"]
        assert c["mean"] == pytest.approx(p["error_diff"]) and "strata" in p
        assert 0.0 <= c["poi_a_better"] <= 1.0
    # each unordered pair: the two orders mirror each other
    by_pair = {(p["a"], p["b"]): p["clustered"] for p in d["pairs"]}
    for (a, b), c in by_pair.items():
        assert c["poi_a_better"] + by_pair[b, a]["poi_a_better"] == pytest.approx(1.0)
        assert c["se"] == pytest.approx(by_pair[b, a]["se"])


def test_cli_groups_file_npy_and_csv_agree(tmp_path, capsys):
    groups = np.arange(10_000) // 25
    np.save(tmp_path / "g.npy", groups)
    (tmp_path / "g.csv").write_text("group\n" + "\n".join(f"w{g}" for g in groups) + "\n")
    docs = []
    for f in ("g.npy", "g.csv"):
        out = tmp_path / f"{f}.json"
        assert main(["significance", "--example", "keysers2006", "--groups", str(tmp_path / f),
                     "--bootstrap", "500", "--json", str(out)]) == 0
        docs.append(json.loads(out.read_text()))
    for x, y in zip(docs[0]["systems"] + docs[0]["pairs"], docs[1]["systems"] + docs[1]["pairs"]):
        cx, cy = x["clustered"], y["clustered"]   # ids sort differently: sums in another order
        assert cx["se"] == pytest.approx(cy["se"], rel=1e-12) and cx.get("poi_a_better") == cy.get("poi_a_better")
    assert docs[0]["systems"][0]["clustered"]["clusters"] == 400
    assert "strata" not in docs[0]["systems"][0]   # a groups file knows no NIST series
    (tmp_path / "short.csv").write_text("1\n2\n3\n")
    short = str(tmp_path / "short.csv")
    assert main(["significance", "--example", "keysers2006", "--groups", short]) == 1   # a data error
    assert "groups do not match the test rows" in capsys.readouterr().err


def test_cli_runs_per_system(tmp_path, capsys):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 10, 3000)
    paths = []
    for name, rate in (("a-1", 0.03), ("a-2", 0.035), ("a-3", 0.032), ("b-1", 0.05), ("b-2", 0.045)):
        paths.append(tmp_path / f"{name}.tsv")
        el.write_predictions(paths[-1], np.where(rng.random(3000) < rate, (y + 1) % 10, y), y, name=name)
    out = tmp_path / "r.json"
    assert main(["significance", *map(str, paths), "--runs", "3", "2", "--bootstrap", "1000",
                 "--json", str(out)]) == 0
    assert "several runs per system" in capsys.readouterr().out
    r = json.loads(out.read_text())["runs"]
    assert [s["name"] for s in r["systems"]] == ["a-1", "b-1"]   # named by their first runs
    (pair,) = r["pairs"]
    assert pair["runs"] == [3, 2] and 0 <= pair["between_share"] <= 1
    wrong = [el.read_predictions(p).wrong for p in paths]
    rs = sg.run_spread(wrong[:3], wrong[3:], None, 1000, sg.pair_seed(0, "a-1", "b-1"))
    assert pair == {"a": "a-1", "b": "b-1", **json.loads(json.dumps(rs.to_dict()))}
    assert main(["significance", *map(str, paths), "--runs", "3", "3"]) == 2
    assert "--runs does not add up" in capsys.readouterr().err


# ------------------------------------------------------------------ the table of docs/significance.md
DOC = Path(__file__).resolve().parents[1] / "docs" / "significance.md"


def keysers_writer_tables(writers, hsf, resamples=10_000):
    """The two tables of docs/significance.md ("Writers, strata and runs"), as Markdown lines."""
    k = _keysers()
    strata = np.array([f"hsf_{h}" for h in hsf])

    def iv(c, naive=False):
        lo, hi = c.naive_interval if naive else c.interval
        return f"{100 * lo:.2f} to {100 * hi:.2f} %"

    def st(t):
        return f"{100 * t.mean:.2f} % ({iv(t)})"

    lines = ["| system | errors | naive 95 % | writer-clustered 95 % | design effect | hsf_0 (SD-3) | "
             "hsf_4 (SD-1) | hsf_4 / hsf_0 |", "|---|---|---|---|---|---|---|---|"]
    for name, w in k.items():
        c, s = sg.clustered_mean(w, writers), sg.by_stratum(w, strata, writers)
        lines.append(f"| {name} | {w.sum()} | {iv(c, True)} | {iv(c)} | {c.design_effect:.2f} | "
                     f"{st(s['hsf_0'])} | {st(s['hsf_4'])} | {s['hsf_4'].mean / s['hsf_0'].mean:.1f} |")
    lines += ["", "| A - B | difference | naive 95 % | writer-clustered 95 % | design effect | POI(A beats B), "
                  "rows / writers resampled | hsf_0 | hsf_4 |", "|---|---|---|---|---|---|---|---|"]
    names = list(k)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            d = k[a].astype(int) - k[b].astype(int)
            c, s = sg.clustered_mean(d, writers), sg.by_stratum(d, strata, writers)
            seed = sg.pair_seed(0, a, b)
            rows = sg.hierarchical_poi(k[a], k[b], None, resamples, seed).poi
            clus = sg.hierarchical_poi(k[a], k[b], writers, resamples, seed).poi
            lines.append(f"| {a} - {b} | {100 * c.mean:+.2f} % | {iv(c, True)} | {iv(c)} | {c.design_effect:.2f} "
                         f"| {rows:.3f} / {clus:.3f} | {st(s['hsf_0'])} | {st(s['hsf_4'])} |")
    return lines


def test_docs_show_the_real_writer_table(mnist_writers):
    table = "\n".join(keysers_writer_tables(*mnist_writers))
    assert table in DOC.read_text(encoding="utf-8"), (
        "docs/significance.md does not show the current table; paste:\n" + table)


def test_identical_runs_change_nothing():
    k = _keysers()
    groups = np.arange(10_000) // 34
    one = sg.hierarchical_poi(k["SC"], k["CNN"], groups, 4000, 3)
    assert sg.hierarchical_poi([k["SC"]] * 3, [k["CNN"]] * 2, groups, 4000, 3) == one
    assert sg.run_spread([k["SC"]] * 3, [k["CNN"]] * 2, groups, 4000, 3).bootstrap == one


def test_cli_cluster_writer_on_an_emnist_build_reads_its_writer_column(tmp_path, capsys):
    import mnistforge
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    sd19 = synthesize_sd19(tmp_path / "sd19", SynthConfig(scale=0.002, workers=1), progress=False)
    out = tmp_path / "digits"
    assert main(["build", "emnist-digits", "--sd19", str(sd19), "--out", str(out), "--workers", "1"]) == 0
    ds = mnistforge.load(str(out), "test", with_metadata=True)
    y, writers = np.asarray(ds.labels), np.asarray(ds.metadata["writer"])
    rng = np.random.default_rng(0)
    files = []
    for name in ("a", "b"):
        files.append(tmp_path / f"{name}.tsv")
        el.write_predictions(files[-1], np.where(rng.random(y.size) < 0.3, (y + 1) % 10, y), y, name=name)
    js = tmp_path / "r.json"
    capsys.readouterr()
    assert main(["significance", *map(str, files), "--cluster", "writer", "--test-set", f"{out}:test",
                 "--bootstrap", "500", "--json", str(js)]) == 0
    d = json.loads(js.read_text())
    a = el.read_predictions(files[0]).wrong
    assert d["systems"][0]["clustered"]["se"] == pytest.approx(sg.clustered_mean(a, writers).se, rel=1e-12)
    assert d["systems"][0]["clustered"]["clusters"] == np.unique(writers).size
    assert set(d["systems"][0]["strata"]) == {f"hsf_{h}" for h in np.unique(ds.metadata["hsf"])}


def test_a_difference_interval_is_never_clipped_at_zero():
    rng = np.random.default_rng(2)
    groups = np.arange(400) // 4
    d = (rng.random(400) < 0.01).astype(np.int8)   # A worse on a few rows, never better
    for c in (sg.clustered_mean(d, groups), *sg.by_stratum(d, groups % 2, groups).values()):
        assert c.interval[0] < 0 < c.interval[1] or c.mean == 0
    assert sg.clustered_mean(d.astype(bool), groups).interval[0] == 0.0   # a rate is


def test_cluster_writer_on_a_shuffled_third_party_copy_through_its_row_map(mnist_reference, qmnist_reference, cache,
                                                                           tmp_path, capsys):
    """Issue 42: a copy of MNIST test in another order (an .npz) gets its writers through its row map:
    the clustered figures equal those of the official order."""
    put(cache, "qmnist", qmnist_reference / "qmnist-test-labels-idx2-int.gz")
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    images = np.asarray(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz"))
    labels = np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    perm = np.random.default_rng(3).permutation(labels.size)
    copy = tmp_path / "mnist-test-shuffled.npz"
    np.savez(copy, x_test=images[perm], y_test=labels[perm])
    keysers = _keysers()
    files = []
    for name in ("SC", "CNN"):
        wrong = keysers[name][perm]
        files.append(tmp_path / f"{name}.tsv")
        el.write_predictions(files[-1], np.where(wrong, (labels[perm] + 1) % 10, labels[perm]), labels[perm],
                             name=name)
    out = tmp_path / "r.json"
    assert main(["significance", *map(str, files), "--cluster", "writer", "--test-set", str(copy),
                 "--bootstrap", "200", "--json", str(out)]) == 0, capsys.readouterr().err
    writers = np.asarray(read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz"))[:10_000, 2]
    for s in json.loads(out.read_text())["systems"]:
        c = s["clustered"]
        assert c["clusters"] == 297
        assert c["se"] == pytest.approx(sg.clustered_mean(keysers[s["name"]], writers).se, rel=1e-9)
