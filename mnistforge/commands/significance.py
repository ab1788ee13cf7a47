"""``mnistforge significance FILES...``: how much differences on a shared test set mean."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, require
from .common import add_inputs, add_cache, add_json, add_offline, download_flag, lazy_import, write_json
from . import argtypes
from .overlap import add_train, training_overlap

if TYPE_CHECKING:
    from ..evaluators.errorlists import SystemOutput
    from ..evaluators.significance import Comparison

# loaded when the command runs: `mnistforge --help` stays free of NumPy
np = lazy_import("numpy")
el = lazy_import("mnistforge.evaluators.errorlists")
sg = lazy_import("mnistforge.evaluators.significance")
lw = lazy_import("mnistforge.loaders.writers")

NAME = "significance"
HELP = ("how significant differences between classifiers on one test set are "
        "(intervals, paired tests, bootstrap POI)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "files", "test_set")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="prediction files or error-list files (name, description, 1-based indices)")
    p.add_argument("--names", nargs="+", default=None, help="rename the systems, in order")
    p.add_argument("--n", type=argtypes.int_in(1, 10**8), default=None, help="test-set size for error-list files")
    p.add_argument("--bootstrap", type=argtypes.int_in(1, 10**7), default=100_000, metavar="B",
                   help="bootstrap resamples for the probability of improvement (default 100000)")
    p.add_argument("--seed", type=argtypes.seed, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--confidence", type=argtypes.confidence, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--workers", type=argtypes.workers, default=None,
                   help="processes bootstrapping the pairs (default: this one; results do not change)")
    p.add_argument("--combine", action="store_true",
                   help="add the majority-vote combination of the systems as a system")
    p.add_argument("--tie-breaker", default=None,
                   help="system that breaks ties in --combine (default: fewest errors)")
    add_json(p)
    p.add_argument("--plot", default=None, metavar="PNG", type=argtypes.output_file,
                   help="draw the POI matrix as a heat map (needs matplotlib: the [plot] extra)")
    p.add_argument("--test-set", default=None, metavar="NAME[:SPLIT]",
                   help="the test set the systems were run on (default: the prediction files' "
                        "'# test:' line; mnist:test for --example keysers2006); on MNIST/QMNIST "
                        "test the known label problems are counted")
    # no choices= here: listing them would load the evaluators (and NumPy) for --help;
    # an unknown name is refused by errorlists.load_example with the list of examples
    p.add_argument("--example", default=None, metavar="NAME",
                   help="run on a bundled example instead of FILES: keysers2006")
    one = p.add_mutually_exclusive_group()   # --cluster or --groups
    one.add_argument("--cluster", choices=["writer"], default=None,
                     help="writer-clustered intervals, design effects and NIST-series strata, the writers "
                          "from the registry (MNIST test: QMNIST's table; QMNIST, EMNIST, FEMNIST builds)")
    one.add_argument("--groups", default=None, metavar="FILE",
                     help="clustered intervals by the groups in FILE (.npy or .csv: one id per test row)")
    p.add_argument("--runs", nargs="+", type=argtypes.int_in(1, 10**4), default=None, metavar="K",
                   help="the FILEs are runs (training seeds): the first K1 of one system, the next K2 "
                        "of the next...; adds the between-run spread and a bootstrap over runs x rows")
    add_train(p)
    add_offline(p)
    add_cache(p)


def _combine(systems: Sequence[SystemOutput], tie_breaker: str | None) -> tuple[SystemOutput, str, str]:
    wrong = {s.name: s.wrong for s in systems}
    t = tie_breaker if tie_breaker is not None else systems[int(np.argmin([s.errors for s in systems]))].name
    labels = systems[0].labels
    if all(s.predictions is not None and np.array_equal(s.labels, labels) for s in systems):
        pred = sg.plurality_vote({s.name: s.predictions for s in systems}, t)
        return el.SystemOutput("vote", pred != labels, f"plurality vote, {t} breaks ties",
                               pred, labels), "plurality vote on labels", t
    return (el.SystemOutput("vote", sg.majority_vote(wrong, t), f"majority vote, {t} breaks ties"),
            "majority vote on right/wrong", t)


def _print_tables(comp: Comparison, systems: Sequence[SystemOutput]) -> None:
    conf = f"{100 * comp.confidence:g} %"
    width = max(6, *(len(s) for s in comp.names))
    print(f"{comp.n} test samples, confidence {conf}, bootstrap B={comp.resamples} "
          f"(seed {comp.seed}, ties counted half)\n")
    print(f"{'system':<{width}}  errors   rate      Wald interval   exact interval  description")
    for s, r in zip(systems, comp.rates):
        print(f"{s.name:<{width}}  {r.errors:6d}  {100 * r.rate:6.2f} %  [{100 * r.wald[0]:.2f}, "
              f"{100 * r.wald[1]:.2f}]  [{100 * r.exact[0]:.2f}, {100 * r.exact[1]:.2f}]  {s.description}")
    print(f"\nprobability of improvement POI(row beats column), {comp.resamples} paired resamples, "
          "ties counted half (strict: ties not counted):")
    print(" " * width + "".join(f"{nm:>{max(8, len(nm) + 2)}}" for nm in comp.names))
    for i, a in enumerate(comp.names):
        print(f"{a:<{width}}" + "".join(f"{'-' if i == j else f'{comp.poi[i, j]:.3f}':>{max(8, len(b) + 2)}}"
                                        for j, b in enumerate(comp.names)))
    print("\npaired comparisons (A worse than B: n12 - n21 >= z*sqrt(n12 + n21), "
          f"one-sided {conf}):")
    print(f"{'A':<{width}} {'B':<{width}} {'errA':>5} {'errB':>5} {'n12':>5} {'n21':>5}"
          f" {'POI(A>B)':>9} {'strict':>7} {'A worse':>8} {'max K':>7} {'McNemar p':>10}")
    for row in comp.pairs():
        if row["errors_a"] < row["errors_b"] or (row["errors_a"] == row["errors_b"]
                                                 and row["a"] > row["b"]):
            continue  # print each unordered pair once, the worse system first
        print(f"{row['a']:<{width}} {row['b']:<{width}} {row['errors_a']:5d} {row['errors_b']:5d}"
              f" {row['n12']:5d} {row['n21']:5d} {row['poi_a_better']:9.3f}"
              f" {row['poi_a_better_strict']:7.3f}"
              f" {'yes' if row['paired_worse'] else 'no':>8} {sg.format_k(row['max_bonferroni_k']):>7}"
              f" {row['mcnemar_p']:10.3g}")


def _clustered(args: argparse.Namespace, systems: Sequence[SystemOutput], wrong: dict[str, Any],
               result: dict[str, Any]) -> Any:
    """Print the clustered intervals (and strata) of the systems and pairs, add them to ``result``
    (``clustered``, ``strata``); return the groups (None without --cluster or --groups)."""
    conf, hsf = args.confidence, None
    if args.groups:
        groups, by = sg.read_groups(args.groups, len(next(iter(wrong.values())))), "groups"
    elif args.cluster:
        test = _test_set(args, systems)
        if test is None:
            raise ConfigError("--cluster writer needs the test set", found="no test set named",
                              expected="--test-set NAME[:SPLIT] (or prediction files that name it)")
        (groups, hsf), by = lw.row_writers(test, cache=args.cache, download=download_flag(args)), "writer"
    else:
        return None
    strata = None if hsf is None else np.array([f"hsf_{h}" for h in hsf])
    width = max(6, *(len(s) for s in wrong))
    per, pairs = sg.clustered_table(wrong, groups, strata, by, args.bootstrap, args.seed, conf, args.workers)

    def row(label: str, c: dict[str, Any], extra: str = "") -> str:
        lo, hi, nlo, nhi = (100 * v for v in (*c["interval"], *c["naive_interval"]))
        return (f"{label:<{2 * width + 1}} {100 * c['mean']:7.2f} %  [{nlo:5.2f}, {nhi:5.2f}]  [{lo:5.2f}, "
                f"{hi:5.2f}]  {c['design_effect'] or float('nan'):6.2f}{extra}")

    print(f"\n{by}-clustered (CR1) intervals, {conf:.0%}: system error rates (and per stratum), then paired "
          f"differences A - B (clustered bootstrap POI of A over B, B={args.bootstrap}):\n{'':<{2 * width + 1}}"
          f" {'mean':>9}   naive Wald      {by}-clustered   design effect")
    for r in result["systems"] + result["pairs"]:
        r["clustered"] = per[r["name"]] if "name" in r else pairs[r["a"], r["b"]]
        if strata is not None:
            r["strata"] = r["clustered"].pop("strata")
        if "name" in r:
            print("\n".join([row(r["name"], r["clustered"])] + [row(f"  {k}", v, f"  {v['n']} rows, {v['clusters']} "
                                                                   f"{by}s") for k, v in r.get("strata", {}).items()]))
        elif list(wrong).index(r["a"]) < list(wrong).index(r["b"]):
            print(row(f"{r['a']}-{r['b']}", r["clustered"], f"  POI {r['clustered']['poi_a_better']:.3f}"))
    return groups


def _runs(args: argparse.Namespace, systems: Sequence[SystemOutput], groups: Any) -> dict[str, Any]:
    """Print and return the several-runs section: each system's runs, spread and the pairs."""
    if sum(args.runs) != len(systems):
        raise ConfigError("--runs does not add up to the systems read", found=f"{args.runs}",
                          expected=f"counts adding up to {len(systems)} ({', '.join(s.name for s in systems)})")
    parts = [list(systems[sum(args.runs[:i]):sum(args.runs[:i + 1])]) for i in range(len(args.runs))]
    print(f"\nseveral runs per system (bootstrap over runs x {'clusters' if groups is not None else 'rows'}"
          f", B={args.bootstrap}):")   # a system is named by its first run
    out: dict[str, Any] = sg.runs_table([(p[0].name, [s.name for s in p], [s.wrong for s in p]) for p in parts],
                                        groups, args.bootstrap, args.seed, args.confidence, args.workers)
    for rs in out["pairs"]:
        print(f"  {rs['a']} ({rs['runs'][0]} runs, {100 * rs['rates'][0]:.2f} % +/- {100 * rs['spread'][0]:.2f}) vs "
              f"{rs['b']} ({rs['runs'][1]} runs, {100 * rs['rates'][1]:.2f} % +/- {100 * rs['spread'][1]:.2f}): POI "
              f"{rs['bootstrap']['poi']:.3f}, {rs['between_share']:.0%} of the variance between runs, runs per system "
              f"for significance at {args.confidence:.0%}: {rs['runs_needed'] or 'never (the test set is too small)'}")
    return out


def _overlap_dict(ov: dict[str, Any]) -> dict[str, Any]:
    return {"common": (ov["common"] + 1).tolist(), "union_size": int(ov["union"].size),
            "unique": {k: (v + 1).tolist() for k, v in ov["unique"].items()},
            "histogram": ov["histogram"].tolist(), "indices": "1-based"}


def _test_set(args: argparse.Namespace, systems: Sequence[SystemOutput]) -> str | None:
    test_set: str | None = args.test_set
    if test_set:
        return test_set
    if args.example == "keysers2006":
        return "mnist:test"
    tests = {s.metadata.get("test") for s in systems}
    return tests.pop() if len(tests) == 1 and None not in tests else None


def _known_label_problems(args: argparse.Namespace, systems: Sequence[SystemOutput],
                          table_systems: Sequence[SystemOutput],
                          published: SystemOutput | None) -> dict[str, Any] | None:
    """Print how many errors fall on MNIST test's known label problems; the JSON section."""
    from ..evaluators import label_issues as kli

    test = _test_set(args, systems)
    if test is None:
        return None
    labels = next((s.labels for s in systems if s.labels is not None), None)
    why: list[str] = []
    # never a download from here: the study's file comes from the cache or not at all
    problems = kli.known_problems(test, systems[0].n, labels, download=False, why=why)
    if problems is None:
        if why:
            print(f"\nknown label problems not counted: {why[0]}")
        return None
    acc = kli.account({s.name: s.wrong for s in table_systems}, problems, args.confidence,
                      {s.name: s.predictions for s in table_systems if s.predictions is not None})
    print()
    for line in kli.format_account(acc):
        print(line)
    if published is not None:
        on = np.flatnonzero(published.wrong & problems.label_issue)
        print(f"published combination {published.name}: {on.size} of its {published.errors} errors "
              "are known label errors (1-based: " + ", ".join(str(i + 1) for i in on) + ")")
        acc["published_combination"] = {"name": published.name, "errors": published.errors,
                                        "on_label_issues": int(on.size),
                                        "indices": (on + 1).tolist(), "index_base": 1}
    return acc


def run(args: argparse.Namespace) -> int:
    if args.plot:
        require("matplotlib", "plot", "--plot")  # fail before the work, not after
    if args.example and args.files:
        raise ConfigError("give either FILES or --example", expected="one source of systems",
                          found="both")
    if args.example:
        systems = el.load_example(args.example)
        if args.names:
            raise ConfigError("--names cannot rename the bundled example", found=args.names)
    elif args.files:
        systems = el.read_systems(args.files, n=args.n, names=args.names)
    else:
        raise ConfigError("no systems given", expected="FILE... or --example keysers2006",
                          found="nothing")
    if args.test_set:  # the one named must be the one predicted on, before the bootstrap
        sg.check_test_set(args.test_set, systems[0].n,
                          next((s.labels for s in systems if s.labels is not None), None),
                          cache=args.cache)

    combination = published = None
    if args.example == "keysers2006":
        # The four base systems vote; CC is the published combination to compare against.
        published = next(s for s in systems if s.name == "CC")
        base = [s for s in systems if s.name != "CC"]
        wrong = sg.majority_vote({s.name: s.wrong for s in base}, args.tie_breaker or "CNN")
        combination = (el.SystemOutput("vote", wrong, "majority vote of SC, SVM, IDM, CNN; "
                                       f"{args.tie_breaker or 'CNN'} breaks ties"),
                       "majority vote on right/wrong", args.tie_breaker or "CNN")
        overlap_systems = base
    else:
        overlap_systems = systems
        if args.combine:
            if len(systems) < 2:
                raise ConfigError("--combine needs at least two systems", found=len(systems))
            combination = _combine(systems, args.tie_breaker)
    table_systems = list(systems)
    if combination and not (published is not None
                            and np.array_equal(published.wrong, combination[0].wrong)):
        table_systems.append(combination[0])  # the published list already stands for it

    shared = training_overlap(args.train, _test_set(args, systems), [s.metadata for s in systems])
    comp = sg.compare_systems({s.name: s.wrong for s in table_systems}, args.bootstrap,
                              args.seed, args.confidence, args.workers)
    _print_tables(comp, table_systems)

    ov = sg.error_overlap({s.name: s.wrong for s in overlap_systems})
    names = ", ".join(ov["names"])
    print(f"\nerror overlap of {names}: {ov['common'].size} samples wrong for all, "
          f"{ov['union'].size} wrong for at least one")
    print("  wrong for exactly k systems: " + ", ".join(
        f"k={k}: {c}" for k, c in enumerate(ov["histogram"].tolist()) if k))
    print("  wrong for all (1-based): " + ", ".join(str(i + 1) for i in ov["common"]))
    for k, v in ov["unique"].items():
        print(f"  only {k} wrong: {v.size}")

    result = comp.to_dict()
    result["overlap"] = _overlap_dict(ov)
    result["sources"] = [s.source for s in systems]
    if shared:
        result["training_overlap"] = shared
    if combination:
        comb, how, t = combination
        r = sg.error_rate(comb.wrong, confidence=args.confidence)
        print(f"\ncombination ({how}, {t} breaks ties): {r}")
        result["combination"] = {"name": comb.name, "method": how, "tie_breaker": t,
                                 "errors": r.errors, "indices": comb.indices().tolist()}
        if published is not None:
            same = bool(np.array_equal(published.wrong, comb.wrong))
            diff = np.flatnonzero(published.wrong != comb.wrong) + 1
            print(f"published combination {published.name}: {published.errors} errors; "
                  + ("identical to the recomputed vote" if same else
                     f"differs at {diff.size} samples: {diff.tolist()}"))
            result["combination"]["matches_published"] = same
    groups = _clustered(args, systems, {s.name: s.wrong for s in table_systems}, result)
    if args.runs:
        result["runs"] = _runs(args, systems, groups)
    known = _known_label_problems(args, systems, table_systems, published)
    if known is not None:
        result["known_label_problems"] = known
    if write_json(args, result):
        print(f"\nwrote {args.json}")
    if args.plot:
        sg.plot_poi(comp, args.plot)
        print(f"wrote {args.plot}")
    return 0
