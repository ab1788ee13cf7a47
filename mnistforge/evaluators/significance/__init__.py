"""How much a difference between classifiers on one shared test set really means.

Three complementary views (``docs/significance.md`` explains when each is right), all from
per-sample "wrong" vectors (``True`` where the system errs): intervals for one error rate
(:mod:`.intervals`), paired tests on the samples where two systems disagree (:mod:`.paired`),
the bootstrap probability of improvement (:mod:`.bootstrap`); and on them, tables, error overlaps
and votes of many systems (:mod:`.systems`); writer-clustered intervals, strata and several runs
per system (:mod:`.clustered`).  Conventions: ``eta = 1 - confidence``; the
two-sided normal quantile is ``z = sqrt(2) * erfcinv(eta)`` (1.96 at 95 %), the one-sided one
``z = sqrt(2) * erfcinv(2 * eta)`` (1.645 at 95 %).
"""
from .bootstrap import (Bootstrap, pair_seed, probability_of_improvement, probability_of_improvement_from_counts,
                        probability_of_improvement_resampled)
from .clustered import (Clustered, RunSpread, by_stratum, clustered_gap, clustered_mean, clustered_table,
                        hierarchical_poi, read_groups, run_spread, runs_table)
from .intervals import (MAX_COUNT, ErrorRate, error_rate, exact_interval, wald_interval, wrong_from_predictions,
                        z_one_sided, z_two_sided)
from .paired import MAX_K, JointCounts, PairedTest, format_k, joint_counts, max_bonferroni_k, mcnemar_exact, \
    paired_test, paired_worse
from .systems import Comparison, check_test_set, compare_systems, error_overlap, majority_vote, plot_poi, \
    plurality_vote

__all__ = [
    "z_two_sided", "z_one_sided", "wald_interval", "exact_interval", "ErrorRate", "error_rate",
    "wrong_from_predictions", "JointCounts", "joint_counts", "paired_worse", "max_bonferroni_k",
    "mcnemar_exact", "PairedTest", "paired_test", "Bootstrap", "probability_of_improvement",
    "probability_of_improvement_from_counts", "probability_of_improvement_resampled", "pair_seed",
    "Comparison", "compare_systems", "error_overlap", "majority_vote", "plurality_vote",
    "plot_poi", "check_test_set", "format_k", "MAX_K", "MAX_COUNT",
    "Clustered", "clustered_mean", "by_stratum", "hierarchical_poi", "RunSpread", "run_spread", "read_groups",
    "clustered_table", "clustered_gap", "runs_table",
]
