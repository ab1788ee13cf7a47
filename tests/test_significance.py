"""Significance analysis: intervals, paired tests, bootstrap POI, tables, combination."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.errors import ConfigError, FormatError
from mnistforge.evaluators import errorlists as el
from mnistforge.evaluators import significance as sg

KEYSERS = "papers/keysers2006-mnist-test-errors.tsv"


# ------------------------------------------------------------------ quantiles and intervals
def test_normal_quantiles_match_textbook_values():
    assert sg.z_two_sided(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert sg.z_one_sided(0.95) == pytest.approx(1.644854, abs=1e-6)
    assert sg.z_two_sided(0.99) == pytest.approx(2.575829, abs=1e-6)


def test_wald_interval_hand_computed():
    # p = 0.0115, sqrt(p(1-p)/n) = sqrt(0.0115*0.9885/10000) = 0.0010662...
    lo, hi = sg.wald_interval(115, 10_000, 0.95)
    half = 1.959964 * math.sqrt(0.0115 * 0.9885 / 10_000)
    assert lo == pytest.approx(0.0115 - half, abs=1e-9)
    assert hi == pytest.approx(0.0115 + half, abs=1e-9)
    assert half == pytest.approx(0.0020897, abs=1e-6)
    # clipped at 0, and degenerate at 0 errors (why the exact interval exists)
    assert sg.wald_interval(0, 100) == (0.0, 0.0)


def test_exact_interval_hand_computed():
    # 0 errors: upper = 1 - (eta/2)^(1/n) in closed form
    lo, hi = sg.exact_interval(0, 10_000, 0.95)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10_000), rel=1e-9)
    # all wrong: lower = (eta/2)^(1/n)
    lo, hi = sg.exact_interval(20, 20, 0.95)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 20), rel=1e-9)
    # 1 error of 10 (tabulated Clopper-Pearson): [0.002529, 0.445016]
    lo, hi = sg.exact_interval(1, 10, 0.95)
    assert lo == pytest.approx(0.002529, abs=1e-6) and hi == pytest.approx(0.445016, abs=1e-6)
    # exact interval is wider than Wald and contains p
    w, e = sg.wald_interval(42, 10_000), sg.exact_interval(42, 10_000)
    assert e[0] < 0.0042 < e[1] and e[1] - e[0] > 0 and e[1] > w[1]


def test_error_rate_from_vector_and_invalid_inputs():
    r = sg.error_rate(np.r_[np.ones(3, bool), np.zeros(7, bool)], confidence=0.9)
    assert (r.errors, r.n, r.rate) == (3, 10, 0.3)
    assert r.exact == sg.exact_interval(3, 10, 0.9)
    with pytest.raises(ConfigError):
        sg.error_rate(11, 10)
    with pytest.raises(ConfigError):
        sg.wald_interval(1, 10, confidence=1.5)
    with pytest.raises(ConfigError):
        sg.joint_counts([0, 2, 1], [0, 0, 0])


# ------------------------------------------------------------------ paired tests
def test_joint_counts_hand_worked():
    a = np.array([1, 1, 1, 0, 0, 0, 1, 0], bool)
    b = np.array([1, 0, 0, 1, 0, 0, 1, 0], bool)
    c = sg.joint_counts(a, b)
    assert (c.both_right, c.n12, c.n21, c.both_wrong) == (3, 2, 1, 2)
    assert (c.errors_a, c.errors_b, c.n) == (4, 3, 8)


def test_paired_test_hand_worked():
    # n12 - n21 = 16, sqrt(n12 + n21) = sqrt(36) = 6: 16 >= 1.645*6 = 9.87 -> worse at 95 %
    assert sg.paired_worse(26, 10, 0.95)
    assert not sg.paired_worse(10, 26, 0.95)
    # 99.9 %: z = 3.090, 3.090*6 = 18.5 > 16 -> not significant
    assert not sg.paired_worse(26, 10, 0.999)
    # n12 - n21 = 9 vs 1.645 * sqrt(41) = 10.53 -> not significant
    assert not sg.paired_worse(25, 16, 0.95)
    assert not sg.paired_worse(0, 0, 0.95)
    t = sg.paired_test(np.r_[np.ones(26), np.zeros(10)], np.r_[np.zeros(26), np.ones(10)])
    assert t.a_worse and not t.b_worse


@pytest.mark.parametrize("n12,n21", [(26, 10), (43, 22), (36, 22), (400, 300), (5, 0), (37, 9)])
def test_bonferroni_k_is_the_largest_integer_satisfying_the_inequality(n12, n21):
    eta = 0.05
    k = sg.max_bonferroni_k(n12, n21, 0.95)
    d, s = n12 - n21, math.sqrt(n12 + n21)

    def holds(kk):
        return d >= math.sqrt(2) * __import__("scipy.special").special.erfcinv(2 * eta / kk) * s

    if k == 0:
        assert not holds(1)
    else:
        assert holds(k) and not holds(k + 1)
        assert sg.paired_worse(n12, n21, 0.95, k) and not sg.paired_worse(n12, n21, 0.95, k + 1)


def test_bonferroni_k_boundary_constructed_exactly():
    # Choose eta so that K=7 sits exactly at the boundary: z(eta/7) = d/sqrt(s)
    from scipy.special import ndtr
    n12, n21 = 50, 20
    x = (n12 - n21) / math.sqrt(n12 + n21)
    eta_edge = 7 * float(ndtr(-x))  # the inequality holds with equality at K = 7
    conf = 1 - eta_edge * (1 + 1e-9)  # nudge so K = 7 holds, K = 8 fails
    assert sg.max_bonferroni_k(n12, n21, conf) == 7
    conf = 1 - eta_edge * (1 - 1e-9)  # nudge the other way: K = 7 no longer holds
    assert sg.max_bonferroni_k(n12, n21, conf) == 6


def test_bonferroni_k_zero_when_not_worse_and_huge_when_overwhelming():
    assert sg.max_bonferroni_k(10, 30) == 0
    assert sg.max_bonferroni_k(20, 12) == 0
    big = sg.max_bonferroni_k(3000, 0)  # far beyond float range
    assert isinstance(big, int) and big > 10 ** 400


def test_mcnemar_exact_hand_computed():
    # two-sided: 2 * P(X >= 10 | n=12, p=1/2) = 2 * (66 + 12 + 1) / 4096
    assert sg.mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096)
    assert sg.mcnemar_exact(10, 2, "greater") == pytest.approx(79 / 4096)
    assert sg.mcnemar_exact(0, 0) == 1.0
    assert sg.mcnemar_exact(5, 5) == pytest.approx(1.0)


# ------------------------------------------------------------------ bootstrap
def _random_pair(rng, n=5000, pa=0.03, pb=0.025, rho=0.5):
    base = rng.random(n) < min(pa, pb) * rho
    a = base | (rng.random(n) < pa * (1 - rho))
    b = base | (rng.random(n) < pb * (1 - rho))
    return a, b


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_count_bootstrap_agrees_with_index_resampling(seed):
    rng = np.random.default_rng(seed)
    a, b = _random_pair(rng)
    B = 4000
    fast = sg.probability_of_improvement(a, b, B, seed=seed)
    ref = sg.probability_of_improvement_resampled(a, b, B, seed=seed + 100)
    # both estimate the same probability: difference of two independent means, 5 sigma
    p = (fast.poi + ref.poi) / 2
    sigma = math.sqrt(2 * max(p * (1 - p), 1e-4) / B)
    assert abs(fast.poi - ref.poi) < 5 * sigma
    assert abs(fast.ties - ref.ties) < 5 * math.sqrt(2 * max(fast.ties, 1e-3) / B)
    # the difference distribution's percentile interval agrees too (in error counts)
    assert abs(fast.diff_interval[0] - ref.diff_interval[0]) <= 4
    assert abs(fast.diff_interval[1] - ref.diff_interval[1]) <= 4


def test_bootstrap_seeds_reproduce_exactly_and_differ_across_seeds():
    rng = np.random.default_rng(0)
    a, b = _random_pair(rng, pa=0.03, pb=0.03)
    r1 = sg.probability_of_improvement(a, b, 20_000, seed=7)
    r2 = sg.probability_of_improvement(a, b, 20_000, seed=7)
    r3 = sg.probability_of_improvement(a, b, 20_000, seed=8)
    assert r1 == r2 and r1.poi != r3.poi
    s1 = sg.probability_of_improvement_resampled(a, b, 300, seed=7)
    s2 = sg.probability_of_improvement_resampled(a, b, 300, seed=7, batch_elements=12_345)
    assert s1 == s2  # batching does not change the stream


def test_poi_of_system_against_itself_is_one_half_and_pairs_sum_to_one():
    rng = np.random.default_rng(4)
    a, b = _random_pair(rng)
    assert sg.probability_of_improvement(a, a, 10_000).poi == 0.5
    assert sg.probability_of_improvement_resampled(a, a, 200).poi == 0.5
    c = sg.compare_systems({"A": a, "B": b, "C": a}, resamples=5000)
    assert np.allclose(c.poi + c.poi.T, 1.0)
    assert c.poi[0, 2] == 0.5 and np.all(np.diag(c.poi) == 0.5)


def test_strict_poi_leaves_out_the_ties():
    rng = np.random.default_rng(5)
    a, b = _random_pair(rng)
    bs = sg.probability_of_improvement(a, b, 20_000, seed=3)
    # the same multinomial stream, counted by hand: strictly fewer errors only
    c = sg.joint_counts(a, b)
    p = np.array([c.n12, c.n21, c.both_right + c.both_wrong], float) / c.n
    draw = np.random.default_rng(3).multinomial(c.n, p, size=20_000)
    assert bs.poi_strict == np.mean(draw[:, 0] < draw[:, 1])
    assert bs.ties == np.mean(draw[:, 0] == draw[:, 1]) > 0
    assert bs.poi == pytest.approx(bs.poi_strict + bs.ties / 2, abs=1e-15)
    self_ = sg.probability_of_improvement(a, a, 1000)
    assert (self_.poi, self_.poi_strict, self_.ties) == (0.5, 0.0, 1.0)
    t = sg.compare_systems({"A": a, "B": b}, resamples=5000)
    assert np.allclose(t.poi_strict + t.poi_strict.T + t.ties, 1.0)
    assert np.allclose(t.poi, t.poi_strict + t.ties / 2)
    row = next(r for r in t.pairs() if r["a"] == "A")
    assert row["poi_a_better_strict"] == pytest.approx(row["poi_a_better"] - row["ties"] / 2)


def test_poi_direction_and_extremes():
    a = np.zeros(1000, bool)
    b = np.zeros(1000, bool)
    b[:50] = True  # B strictly worse, no sample where only A errs
    assert sg.probability_of_improvement(a, b, 2000).poi == 1.0
    assert sg.probability_of_improvement(b, a, 2000).poi == 0.0


def test_pair_poi_does_not_depend_on_the_other_systems():
    rng = np.random.default_rng(5)
    a, b = _random_pair(rng)
    c1 = sg.compare_systems({"A": a, "B": b}, resamples=3000, seed=1)
    c2 = sg.compare_systems({"Z": a ^ (rng.random(a.size) < 0.01), "B": b, "A": a},
                            resamples=3000, seed=1)
    assert c1.poi[0, 1] == c2.poi[2, 1] and c1.poi[1, 0] == c2.poi[1, 2]


# ------------------------------------------------------------------ tables, overlap, votes
def test_compare_systems_tables_hand_worked():
    a = np.zeros(100, bool); a[:30] = True
    b = np.zeros(100, bool); b[25:35] = True
    c = sg.compare_systems({"A": a, "B": b}, resamples=1000)
    assert c.n12[0, 1] == 25 and c.n12[1, 0] == 5
    assert c.worse[0, 1] and not c.worse[1, 0]
    rows = {(r["a"], r["b"]): r for r in c.pairs()}
    r = rows[("A", "B")]
    assert (r["errors_a"], r["errors_b"], r["n12"], r["n21"]) == (30, 10, 25, 5)
    assert r["error_diff"] == pytest.approx(0.2) and r["paired_worse_at_95"]
    assert r["max_bonferroni_k"] == sg.max_bonferroni_k(25, 5)
    assert rows[("B", "A")]["max_bonferroni_k"] == 0
    assert r["poi_a_better"] + rows[("B", "A")]["poi_a_better"] == pytest.approx(1.0)


def test_error_overlap_and_majority_vote_small():
    w = {"A": [1, 1, 0, 0, 1], "B": [1, 0, 1, 0, 1], "C": [1, 0, 0, 1, 0]}
    o = sg.error_overlap(w)
    assert o["common"].tolist() == [0]
    assert o["union"].tolist() == [0, 1, 2, 3, 4]
    assert {k: v.tolist() for k, v in o["unique"].items()} == {"A": [1], "B": [2], "C": [3]}
    assert o["histogram"].tolist() == [0, 3, 1, 1]
    assert sg.majority_vote(w).tolist() == [True, False, False, False, True]
    # even number of systems: ties go to the tie-breaker
    w4 = {"A": [1, 1], "B": [1, 0], "C": [0, 1], "D": [0, 0]}
    assert sg.majority_vote(w4, "D").tolist() == [False, False]
    assert sg.majority_vote(w4, "A").tolist() == [True, True]
    with pytest.raises(ConfigError):
        sg.majority_vote(w4, "nobody")


def test_plurality_vote_on_labels():
    p = np.array([[1, 2, 3, 0], [1, 4, 5, 9], [7, 4, 6, 9], [7, 2, 6, 8]])
    # col0: 1,1,7,7 tie -> tie-breaker (system 0) says 1; col1: 2,4,4,2 tie -> 2
    assert sg.plurality_vote(p, tie_breaker=0).tolist() == [1, 2, 6, 9]
    # tie-breaker 2: col0 -> 7, col1 -> 4, col2: 3,5,6,6 -> 6
    assert sg.plurality_vote(p, tie_breaker=2).tolist() == [7, 4, 6, 9]


# ------------------------------------------------------------------ Keysers 2006
def _keysers_from(systems):
    return {s.name: s.wrong for s in systems}


def _check_keysers(w):
    assert {k: int(v.sum()) for k, v in w.items()} == {
        "SC": 63, "SVM": 56, "IDM": 54, "CNN": 42, "CC": 35}
    base = {k: w[k] for k in ("SC", "SVM", "IDM", "CNN")}
    vote = sg.majority_vote(base, tie_breaker="CNN")
    assert int(vote.sum()) == 35
    assert np.array_equal(vote, w["CC"])  # the published combination, exactly
    o = sg.error_overlap(base)
    assert o["common"].size == 8
    assert 948 - 1 in o["common"]  # the paper's index 948 is 0-based 947


def test_keysers_from_shared_reference_file(reference_dir):
    path = reference_dir / KEYSERS
    if not path.is_file():
        pytest.skip(f"{path} absent")
    _check_keysers(_keysers_from(el.read_error_lists(path, n=10_000)))


def test_keysers_from_packaged_data():
    _check_keysers(_keysers_from(el.load_example("keysers2006")))


def test_packaged_lists_equal_the_shared_file(reference_dir):
    path = reference_dir / KEYSERS
    if not path.is_file():
        pytest.skip(f"{path} absent")
    shared = _keysers_from(el.read_error_lists(path, n=10_000))
    packaged = _keysers_from(el.load_example("keysers2006"))
    assert shared.keys() == packaged.keys()
    for k in shared:
        assert np.array_equal(shared[k], packaged[k]), k


def _keysers_shared(reference_dir):
    path = reference_dir / KEYSERS
    if not path.is_file():
        pytest.skip(f"{path} absent")
    return _keysers_from(el.read_error_lists(path, n=10_000))


def test_keysers_127_difficult_examples_and_8_common_errors(reference_dir):
    # Keysers (2006), section on the error overlap: "127 difficult examples" are misclassified
    # by at least one of the four systems, 8 by all four (the appendix's lists, shared file)
    w = _keysers_shared(reference_dir)
    o = sg.error_overlap({k: w[k] for k in ("SC", "SVM", "IDM", "CNN")})
    assert o["union"].size == 127
    assert (o["common"] + 1).tolist() == [948, 1902, 2131, 2183, 3423, 5938, 9730, 9851]
    assert o["histogram"].tolist() == [10_000 - 127, 73, 28, 18, 8]


def test_keysers_127_difficult_examples_cover_every_label(mnist_reference):
    # Keysers (2006) shows the 127 "difficult examples" (wrong for at least one of SC, SVM,
    # IDM, CNN) with their labels: every digit 0-9 is among them.  Their labels, read from
    # the real MNIST test labels at the appendix's indices, per digit, and those of the 8
    # errors common to all four systems (1-based 948, 1902, 2131, 2183, 3423, 5938, 9730, 9851)
    from mnistforge.io.idx import read_idx

    w = _keysers_shared(mnist_reference.parent)
    y = np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"))
    o = sg.error_overlap({k: w[k] for k in ("SC", "SVM", "IDM", "CNN")})
    per_digit = np.bincount(y[o["union"]], minlength=10)
    assert per_digit.tolist() == [4, 9, 11, 8, 13, 14, 11, 16, 14, 27] and per_digit.min() > 0
    assert y[o["common"]].tolist() == [8, 9, 4, 1, 6, 5, 5, 0]


def test_keysers_table2_error_rate_differences(reference_dir):
    # Keysers (2006), Table 2: the 10 pairwise error-rate differences (row minus column, in
    # per cent of the 10,000 test images) of SC, SVM, IDM, CNN and CC
    w = _keysers_shared(reference_dir)
    names = ["SC", "SVM", "IDM", "CNN", "CC"]
    diffs = {(a, b): round((int(w[a].sum()) - int(w[b].sum())) / 100, 2)
             for i, a in enumerate(names) for b in names[i + 1:]}
    assert diffs == {("SC", "SVM"): 0.07, ("SC", "IDM"): 0.09, ("SC", "CNN"): 0.21,
                     ("SC", "CC"): 0.28, ("SVM", "IDM"): 0.02, ("SVM", "CNN"): 0.14,
                     ("SVM", "CC"): 0.21, ("IDM", "CNN"): 0.12, ("IDM", "CC"): 0.19,
                     ("CNN", "CC"): 0.07}


def _exact_poi(n12: int, n21: int, n: int = 10_000) -> float:
    """Exact paired-bootstrap POI of system 2 over system 1 (ties half), independently of the
    package: the number of resampled disagreements is Binomial(n, (n12 + n21) / n) and, given
    it, system 1's share Binomial(d, n12 / (n12 + n21))."""
    from scipy import stats

    d = np.arange(0, 4 * (n12 + n21) + 50)
    pd = stats.binom.pmf(d, n, (n12 + n21) / n)
    q = n12 / (n12 + n21)
    total = 0.0
    for di, pdi in zip(d, pd):
        x = np.arange(di + 1)
        px = stats.binom.pmf(x, di, q)
        total += pdi * (px[2 * x > di].sum() + 0.5 * px[2 * x == di].sum())
    return float(total)


def test_keysers_table2_svm_over_sc_cell_is_inconsistent_with_the_error_counts(reference_dir):
    # Keysers (2006), Table 2 prints POI(SVM over SC) = 0.60.  With 56 vs 63 errors on the
    # same 10,000 images and c images wrong for both (n12 = 63 - c only SC wrong, n21 = 56 - c
    # only SVM wrong), the exact POI is at least 0.739 for every possible overlap c = 0..56;
    # with the appendix lists (c = 27) it is 0.807, and the package's bootstrap gives 0.809
    exact = [_exact_poi(63 - c, 56 - c) for c in range(57)]
    assert min(exact) == pytest.approx(0.7393, abs=5e-4) and int(np.argmin(exact)) == 0
    assert min(exact) > 0.60 + 0.13
    w = _keysers_shared(reference_dir)
    jc = sg.joint_counts(w["SC"], w["SVM"])
    assert (jc.n12, jc.n21) == (36, 29)            # c = 27 images wrong for both
    assert exact[27] == pytest.approx(0.8073, abs=5e-4)
    table = sg.compare_systems({k: w[k] for k in ("SC", "SVM")}, resamples=100_000, seed=0)
    poi = table.poi[table.names.index("SVM"), table.names.index("SC")]
    assert round(poi, 3) == 0.809                      # the table in docs/significance.md
    assert poi == pytest.approx(exact[27], abs=0.005)  # Monte-Carlo error ~0.0012
    assert math.sqrt(poi * (1 - poi) / 100_000) == pytest.approx(0.0012, abs=1e-4)


def test_qmnist_paper_bonferroni_example():
    # Yadav & Bottou (2019), "Cold Case: The Lost MNIST Digits", Bonferroni example: a paired difference
    # of three erfc units, (n12 - n21) / sqrt(n12 + n21) = 3 sqrt(2), keeps "worse at 95 %"
    # for K <= 0.1 / erfc(3) = 4526.8 comparisons; the paper prints 4,545 = 0.1 / 2.2e-5, with
    # erfc(3) = 2.209e-5 rounded to 2.2e-5
    from scipy.special import erfc

    assert 0.1 / erfc(3.0) == pytest.approx(4526.83, abs=0.01)
    assert math.floor(0.1 / 2.2e-5) == 4545
    for n12, n21 in ((40, 10), (130, 70)):       # 30 / sqrt(50) = 60 / sqrt(200) = 3 sqrt(2)
        assert (n12 - n21) / math.sqrt(n12 + n21) == pytest.approx(3 * math.sqrt(2))
        assert sg.max_bonferroni_k(n12, n21, 0.95) == 4526


def test_qmnist_paper_wald_example():
    # Yadav & Bottou (2019), "Cold Case: The Lost MNIST Digits" (NeurIPS 2019), section 3.1
    # "About confidence intervals", eq. (1): "an error rate close to 1.0% measured on the usual
    # 10,000 test example is reported as a 1% +- 0.2% error rate, that is, 100 +- 20
    # misclassifications" (z = sqrt(2) erfcinv(eta) "approximately equal to 2" at 95 %)
    lo, hi = sg.wald_interval(100, 10_000, 0.95)
    assert (hi - lo) / 2 == pytest.approx(0.00195, abs=5e-6)
    assert round(100 * (hi - lo) / 2, 1) == 0.2
    assert round(2 * math.sqrt(0.01 * 0.99 / 10_000) * 10_000) == 20       # "100 +- 20"
    assert round(10_000 * (hi - lo) / 2, 1) == 19.5                        # with z = 1.96


def test_qmnist_paper_wald_example_after_50_experiments():
    # Yadav & Bottou (2019), section 3.1, after the Bonferroni example (n = 10,000, n1 = 200,
    # n12 = 40, n21 = 10): "after merely K=50 experiments, the 95% confidence interval for the
    # absolute error rate of classifier 1 is already 2% +- 0.5%".  That is the Wald interval
    # (1) of 200 errors in 10,000 with the Bonferroni-corrected eta / K = 0.05 / 50 = 0.001,
    # z = sqrt(2) erfcinv(0.001) = 3.2905: half-width 0.461 %, printed +-0.5 %
    eta, K = 0.05, 50
    assert sg.z_two_sided(1 - eta / K) == pytest.approx(3.2905, abs=1e-4)
    lo, hi = sg.wald_interval(200, 10_000, 1 - eta / K)
    assert (lo + hi) / 2 == pytest.approx(0.02)
    assert (hi - lo) / 2 == pytest.approx(0.004607, abs=1e-6)
    assert round(100 * (hi - lo) / 2, 1) == 0.5
    # "too large to distinguish it from the error rate of classifier 2" (n2 = 170: 1.7 %)
    assert lo == pytest.approx(0.01539, abs=1e-5) and lo < 170 / 10_000
    # while the paired test still says classifier 1 is worse (K up to 4,526, test above)
    assert sg.paired_worse(40, 10, 0.95, K)
    # without the correction (K = 1) the same rate has the ordinary +-0.27 %
    lo1, hi1 = sg.wald_interval(200, 10_000, 0.95)
    assert (hi1 - lo1) / 2 == pytest.approx(0.002744, abs=1e-6)


def test_qmnist_paper_table3_wald_intervals():
    # Yadav & Bottou (2019), Table 3 (LeNet-5 trained on MNIST / QMNIST): 0.82 %, 0.81 %,
    # 0.80 % (+-0.2 %) on the 10,000 MNIST or QMNIST10K images and 1.08 % (+-0.1 %) on the
    # 50,000 QMNIST50K images: eq. (1)'s 95 % Wald half-widths, rounded to one decimal
    for rate, n, printed in ((0.0082, 10_000, 0.2), (0.0081, 10_000, 0.2),
                             (0.0080, 10_000, 0.2), (0.0108, 50_000, 0.1)):
        lo, hi = sg.wald_interval(round(rate * n), n, 0.95)
        assert round(100 * (hi - lo) / 2, 1) == printed, (rate, n)
    lo, hi = sg.wald_interval(540, 50_000, 0.95)
    assert (hi - lo) / 2 == pytest.approx(0.000905, abs=1e-6)   # 0.09 %: a 5x larger test set


def test_qmnist_paper_four_errors_suffice_for_the_paired_test():
    # Yadav & Bottou (2019), section 3.1, after eq. (2): "four additional misclassifications
    # out of 10,000 examples is sufficient to make such a determination" (n12 = 4, n21 = 0:
    # 4 >= 1.645 sqrt(4) = 3.29; a round figure: 3 of 3 pass too, 2 do not), a 0.04 %
    # difference, "roughly ten times smaller than what would be needed to observe disjoint
    # error bars" (two Wald half-widths of a 1 % rate: 2 x 0.195 % = 0.39 %)
    assert sg.paired_worse(4, 0, 0.95)
    assert sg.paired_worse(3, 0, 0.95) and not sg.paired_worse(2, 0, 0.95)
    lo, hi = sg.wald_interval(100, 10_000, 0.95)
    assert round((2 * (hi - lo) / 2) / 0.0004) == 10   # 0.39 % / 0.04 %: "ten times"


# ------------------------------------------------------------------ files and CLI
def test_prediction_file_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 500)
    p = np.where(rng.random(500) < 0.1, (y + 1) % 10, y)
    for name in ("p.tsv", "p.tsv.gz"):
        el.write_predictions(tmp_path / name, p, y, name="sys", metadata={"train": "mnist:train"})
        s = el.read_predictions(tmp_path / name)
        assert s.name == "sys" and s.metadata["train"] == "mnist:train"
        assert np.array_equal(s.predictions, p) and np.array_equal(s.labels, y)
        assert np.array_equal(s.wrong, p != y)


def test_error_list_round_trip_and_errors(tmp_path):
    w = np.zeros(20, bool); w[[0, 5, 19]] = True
    s = el.SystemOutput("X", w, "demo")
    el.write_error_lists(tmp_path / "e.tsv", [s], header="test")
    back = el.read_error_lists(tmp_path / "e.tsv")  # n from the '# n:' line
    assert back[0].indices().tolist() == [1, 6, 20] and np.array_equal(back[0].wrong, w)
    (tmp_path / "bad.tsv").write_text("X\tdemo\t1,25\n")
    with pytest.raises(FormatError, match="1..20"):
        el.read_error_lists(tmp_path / "bad.tsv", n=20)
    with pytest.raises(ConfigError, match="--n"):
        el.read_error_lists(tmp_path / "bad.tsv")
    (tmp_path / "pred.tsv").write_text("index\tlabel\tprediction\n0\t1\t1\n2\t1\t1\n")
    with pytest.raises(FormatError, match="permutation"):
        el.read_predictions(tmp_path / "pred.tsv")


def test_cli_example_keysers(tmp_path, capsys):
    out = tmp_path / "k.json"
    assert main(["significance", "--example", "keysers2006", "--bootstrap", "20000",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "identical to the recomputed vote" in text and "8 samples wrong for all" in text
    d = json.loads(out.read_text())
    assert d["combination"]["errors"] == 35 and d["combination"]["matches_published"]
    assert len(d["overlap"]["common"]) == 8
    rows = {(r["a"], r["b"]): r for r in d["pairs"]}
    r = rows[("SC", "CNN")]
    for key in ("a", "b", "errors_a", "errors_b", "n12", "n21", "poi_a_better", "poi_a_better_strict", "error_diff",
                "paired_worse_at_95", "max_bonferroni_k"):
        assert key in r
    assert (r["errors_a"], r["errors_b"], r["n12"], r["n21"]) == (63, 42, 43, 22)
    assert r["paired_worse_at_95"] and r["max_bonferroni_k"] == sg.max_bonferroni_k(43, 22)
    assert len(d["pairs"]) == 5 * 4


def test_cli_files_mixed_and_combine(tmp_path, capsys):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 10, 2000)
    paths = []
    for i, rate in enumerate((0.05, 0.06, 0.08)):
        p = np.where(rng.random(2000) < rate, (y + 1 + i) % 10, y)
        paths.append(tmp_path / f"s{i}.tsv")
        el.write_predictions(paths[-1], p, y, name=f"s{i}")
    out = tmp_path / "r.json"
    assert main(["significance", *map(str, paths), "--combine", "--bootstrap", "2000",
                 "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert [s["name"] for s in d["systems"]] == ["s0", "s1", "s2", "vote"]
    assert d["combination"]["method"] == "plurality vote on labels"
    assert len(d["pairs"]) == 12
    # error lists need the test-set size
    el.write_error_lists(tmp_path / "e.tsv", [el.read_predictions(paths[0])], n=2000)
    (tmp_path / "e2.tsv").write_text("E\tno n\t1,2,3\n")
    assert main(["significance", str(tmp_path / "e2.tsv"), str(paths[1])]) == 2
    assert main(["significance", str(tmp_path / "e2.tsv"), str(paths[1]), "--n", "2000",
                 "--names", "E", "S1", "--bootstrap", "100"]) == 0
    assert main(["significance"]) == 2


def test_cli_plot_heat_map_or_clear_error(tmp_path, capsys):
    png = tmp_path / "poi.png"
    rc = main(["significance", "--example", "keysers2006", "--bootstrap", "200",
               "--plot", str(png)])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # a missing optional dependency is an unavailable resource (3) by the table of `--help`
        assert rc == 3 and "matplotlib" in capsys.readouterr().err and not png.exists()
        return
    assert rc == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_docs_keysers_example_output_is_a_fresh_run(capsys):
    # every number of the worked example in docs/significance.md (errors, intervals, POI,
    # strict POI, verdicts, K, p-values, overlap) is what the command prints today
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "significance.md").read_text()
    head = "$ mnistforge significance --example keysers2006       # add --json keysers.json for the JSON\n"
    block = doc.split(head, 1)[1].split("```", 1)[0]
    assert main(["significance", "--example", "keysers2006"]) == 0
    assert capsys.readouterr().out == block


def test_docs_keysers_reading_figures_are_computed():
    # the figures of the "Reading it" bullets of docs/significance.md (they restate the
    # worked example, whose block the test above regenerates): thresholds, K, p-values, POIs
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "significance.md").read_text()
    doc = " ".join(doc.split("Reading it:", 1)[1].split("### The QMNIST paper", 1)[0].split())
    w = _keysers_from(el.load_example("keysers2006"))
    t = sg.compare_systems(w, resamples=100_000, seed=0)
    poi = {(a, b): t.poi[t.names.index(a), t.names.index(b)] for a in w for b in w}
    z = sg.z_one_sided(0.95)
    for a, b in (("SC", "CNN"), ("SVM", "CNN"), ("CNN", "CC")):
        c = sg.joint_counts(w[a], w[b])
        assert f"{z * math.sqrt(c.n12 + c.n21):.1f}" in doc, (a, b)
    assert "43 + 22 = 65" in doc and "`43 - 22 = 21 >=" in doc
    assert sg.max_bonferroni_k(43, 22) == 10 and "**K = 10**" in doc
    assert sg.max_bonferroni_k(36, 22) == 1 and "**K = 1**" in doc
    assert f"{sg.z_one_sided(1 - 0.05 / 2) * math.sqrt(58):.1f} > 14" in doc      # 14.9
    assert f"McNemar p = {sg.mcnemar_exact(36, 22):.3f} (one-sided " \
           f"{sg.mcnemar_exact(36, 22, 'greater'):.3f})" in doc
    assert f"POI(CNN beats SC) = {poi['CNN', 'SC']:.3f}" in doc
    assert f"POI = {poi['CNN', 'SVM']:.3f}" in doc
    assert f"POI {poi['SVM', 'IDM']:.2f}/{poi['IDM', 'SVM']:.2f}" in doc
    assert f"POI(CC beats CNN) = {poi['CC', 'CNN']:.3f}" in doc
    ks = [sg.max_bonferroni_k(sg.joint_counts(w[a], w["CC"]).n12,
                              sg.joint_counts(w[a], w["CC"]).n21) for a in ("SC", "SVM", "IDM")]
    assert f"(K = {ks[0]}, {ks[1]}, {ks[2]})" in doc
    r_sc, r_cc = sg.error_rate(w["SC"]), sg.error_rate(w["CC"])
    assert f"SC ({100 * r_sc.exact[0]:.2f}–{100 * r_sc.exact[1]:.2f} %)" in doc
    assert f"CC ({100 * r_cc.exact[0]:.2f}–{100 * r_cc.exact[1]:.2f} %)" in doc


def test_long_classifier_specs_are_shown_by_a_short_name(tmp_path, capsys):
    # issue 27: LeNet/CNN prediction files printed their 160-character spec as the system name
    from mnistforge.classifiers.base import make_classifier

    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 500)
    paths = []
    for spec, flip in (("lenet:epochs=3", 0.02), ("cnn", 0.03)):
        full = make_classifier(spec).spec()
        assert len(full) > 100
        p = tmp_path / f"{spec.split(':')[0]}.tsv"
        pred = np.where(rng.random(500) < flip, (y + 1) % 10, y)
        el.write_predictions(p, pred, y, name=full, metadata={"classifier": full})
        paths.append(p)
    systems = el.read_systems(paths)
    assert [s.name for s in systems] == ["lenet:epochs=3", "cnn"]
    assert systems[0].description.startswith("lenet:seed=0,epochs=3,")   # the full spec is kept
    assert main(["significance", *map(str, paths), "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    assert "cnn            lenet:epochs=3" in out       # the pairwise table uses the short names
    # the whole spec is said once, in the description column of the error-rate table
    assert out.count("weight_decay") == 2 and out.count(make_classifier("cnn").spec()) == 1
