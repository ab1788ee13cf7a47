"""The whole pipeline on a synthetic SD19, in one call (what ``make demo`` runs).

Steps, each timed:

1. synthesise a small SD19 (2nd edition, zips as NIST serves them);
2. build QMNIST, MNIST and the six EMNIST datasets from it;
3. verify every output;
4. export them as one Hugging Face repository folder and reload one config with
   ``datasets.load_dataset``;
5. train two reference classifiers on a built split, compare them with the
   significance analysis;
6. draw a sample grid per dataset and write ``report.md`` linking everything.

No network is needed: ``run_demo("demo-out", DemoConfig(scale=0.05))``.
"""
from __future__ import annotations

import json
import logging
import shutil
import time
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from . import settings
from .builders.emnist import EmnistBuildConfig, build_emnist, emnist_product
from .builders.qmnist import QmnistBuildConfig, build_mnist, build_qmnist, mnist_product
from .checks import verify
from .checks.result import VerifyReport
from .classifiers.base import make_classifier
from .evaluators.significance import compare_systems, error_overlap, error_rate
from .errors import require
from .hub import configs_from_targets, export_hf
from .io.atomic import atomic_dir, atomic_file
from .io.manifest import Manifest, recorded_folder_problems
from .io.outputs import check_output_folder
from .loaders import load
from .plotting import grid_title, save_grid
from .registry import emnist_splits
from .sd19 import open_sd19
from .sd19.synth import SynthConfig, synthesize_sd19

logger = logging.getLogger(__name__)

#: Warnings that are the expected finding, not a defect, for a dataset family:
#: official-style EMNIST mixes writers between train and test by design, and
#: keeps every SD19 character, including SD19's three duplicated digit images.
EXPECTED_WARNINGS = {"emnist": ("writers.train-test", "duplicates.within")}


@dataclass
class DemoConfig:
    """Parameters of the demo run: ``scale``, the fraction of SD19 to synthesise (0.05: about
    40,700 characters; 45 s on an idle 2-core machine, 90 s at load 5-7 and 218 s at load 15-30 on
    a shared one); ``seed``, of the synthetic SD19 and the EMNIST splits; ``classifiers``, compared
    on the built QMNIST split; ``bootstrap``, resamples of the probability of improvement."""

    scale: float = 0.05
    seed: int = 0
    classifiers: tuple[str, ...] = ("linear", "knn:k=1")
    bootstrap: int = 10_000
    workers: int | None = None
    progress: bool | None = None


@dataclass
class Stage:
    name: str
    seconds: float = 0.0
    detail: str = ""


@dataclass
class DemoResult:
    out: Path
    stages: list[Stage] = field(default_factory=list)
    datasets: list[dict[str, Any]] = field(default_factory=list)
    evaluation: dict[str, Any] = field(default_factory=dict)
    hf_reload: dict[str, Any] = field(default_factory=dict)
    report: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "out": str(self.out), "stages": [s.__dict__ for s in self.stages],
                "report": str(self.report) if self.report else None}


class _Timer:
    """One stage: timed, logged as it starts and ends, and told to ``on_step`` (the CLI prints
    these lines when no progress bar shows, so a run into a log file says where it is)."""

    def __init__(self, result: DemoResult, on_step: Callable[[str], None] | None, name: str) -> None:
        self.stage = Stage(name)
        self.on_step = on_step
        result.stages.append(self.stage)

    def _say(self, line: str) -> None:
        logger.info("%s", line)
        if self.on_step is not None:
            self.on_step(line)

    def __enter__(self) -> Stage:
        self.t0 = time.perf_counter()
        self._say(f"demo: {self.stage.name} ...")
        return self.stage

    def __exit__(self, exc_type: object, *exc: object) -> Literal[False]:
        self.stage.seconds = round(time.perf_counter() - self.t0, 2)
        if exc_type is None:
            detail = f": {self.stage.detail}" if self.stage.detail else ""
            self._say(f"demo: {self.stage.name} done in {self.stage.seconds:.1f} s{detail}")
        else:
            self._say(f"demo: {self.stage.name} stopped after {self.stage.seconds:.1f} s")
        return False


def _verify_status(report: VerifyReport, family: str) -> tuple[str, list[str]]:
    """``pass``/``warn``/``fail`` with expected warnings (see EXPECTED_WARNINGS) accepted."""
    expected = EXPECTED_WARNINGS.get(family, ())
    fails = [r for r in report.results if r.status == "fail"]
    warns = [r for r in report.results if r.status == "warn"]
    unexpected = [w for w in warns if not w.name.startswith(expected)] if expected else warns
    notes = [f"{w.name}: {w.message}" for w in warns]
    if fails:
        return "fail", [f"{r.name}: {r.message}" for r in fails] + notes
    return ("warn" if unexpected else "pass"), notes


#: the splits each dataset's sample grid shows, the first one not empty (default train).  A
#: rebuilt MNIST's train set is QMNIST's: QMNIST shows its test digits, test50k when the scale
#: leaves any (the digits MNIST never published)
GRID_SPLITS = {"qmnist": ("test50k", "test")}


def run_demo(out: str | os.PathLike[str], config: DemoConfig | None = None, *,
             overwrite: bool = False, on_step: Callable[[str], None] | None = None) -> DemoResult:
    """Run the whole pipeline into ``out`` (replaced when ``overwrite``) and return its summary (stages with timings,
    split sizes and verify status per dataset, the evaluation, the report's path; also written to ``out/summary.json``).
    ``on_step`` is called with one line as each stage starts and ends ("demo: verify ...", "demo: verify done in 3.2 s:
    ..."), the lines this module logs at INFO."""
    config = config or DemoConfig()
    require("datasets", "hf", "the demo (it exports and reloads a Hugging Face repository)")
    # before any work: --overwrite replaces only a demo folder holding nothing else
    out = check_output_folder(out, overwrite=overwrite, owned=demo_problems)
    # built in <out>.incomplete and exchanged with the old folder when complete: Ctrl-C leaves
    # the old demo or the new one, never a mix; paths shown are those of the final folder
    with atomic_dir(out, overwrite=overwrite, owned=demo_problems) as work:
        res = _run(work, config, on_step)
        _relocate_result(res, work, out)
        Manifest(kind="demo", parameters={"scale": config.scale, "seed": config.seed},
                 notes=["a demo folder: mnistforge demo --overwrite replaces it only while it "
                        "holds exactly these files"]).write(work, DEMO_MANIFEST)
    return res


#: the demo folder's own record (not ``manifest.json``: the folder is no build)
DEMO_MANIFEST = "demo-manifest.json"


def demo_problems(folder: str | os.PathLike[str]) -> list[str]:
    """What ``demo --overwrite`` would destroy beyond a demo's own files (:data:`DEMO_MANIFEST`)."""
    return recorded_folder_problems(folder, DEMO_MANIFEST)


def _relocate(value: Any, work: str, out: str) -> Any:  # JSON-like: str, dict, list, other values
    """``value`` with the temporary folder's path replaced by the final one (strings in dicts/lists)."""
    if isinstance(value, str):
        return value.replace(work, out)
    if isinstance(value, dict):
        return {k: _relocate(v, work, out) for k, v in value.items()}
    return [_relocate(v, work, out) for v in value] if isinstance(value, list) else value


def _relocate_result(res: DemoResult, work: Path, out: Path) -> None:
    """Rewrite the summary, evaluation, verify reports and report with the final folder's paths."""
    w, o = str(work), str(out)
    res.out = out
    res.datasets = _relocate(res.datasets, w, o)
    res.evaluation = _relocate(res.evaluation, w, o)
    for p in sorted(work.glob("*.json")) + [work / "report.md"]:
        if p.is_file():
            p.write_text(p.read_text(encoding="utf-8").replace(w, o), encoding="utf-8")
    res.report = write_demo_report(res, work, shown=out)
    with open(work / "summary.json", "w") as f:
        json.dump(res.to_json(), f, indent=2, default=str)
    res.report = out / "report.md"


def _run(out: Path, config: DemoConfig, on_step: Callable[[str], None] | None = None) -> DemoResult:
    """The demo's stages, writing into ``out`` (the temporary folder)."""
    res = DemoResult(out=out)
    sd19, builds, pictures = out / "sd19", out / "builds", out / "pictures"
    pictures.mkdir()

    with _Timer(res, on_step, "synthesise SD19") as st:
        synthesize_sd19(sd19, SynthConfig(scale=config.scale, edition=2, packaging="zip",
                                          seed=config.seed, workers=config.workers), progress=config.progress)
        n_chars = json.loads((sd19 / "synthetic-sd19.json").read_text()).get("characters")
        st.detail = f"{n_chars} characters, 2nd edition zips"

    qcfg = QmnistBuildConfig(workers=config.workers, progress=config.progress)
    ecfg = EmnistBuildConfig(seed=config.seed, workers=config.workers, progress=config.progress)
    with _Timer(res, on_step, "build qmnist"):
        # one pass over SD19: the index and the images of every build below from one decode
        open_sd19(sd19, progress=config.progress, workers=config.workers,
                  products=[mnist_product(qcfg.prepro), emnist_product(ecfg)])
        build_qmnist(sd19, builds / "qmnist", qcfg)
    with _Timer(res, on_step, "build mnist"):
        build_mnist(sd19, builds / "mnist", qcfg)
    with _Timer(res, on_step, "build emnist (six datasets)") as st:
        build_emnist(sd19, builds / "emnist", ecfg)

    targets = [("qmnist", builds / "qmnist", "qmnist", ("train", "test")),
               ("mnist", builds / "mnist", "mnist", ("train", "test"))]
    targets += [(f"emnist-{n}", builds / "emnist", "emnist", ("train", "test")) for n in emnist_splits()]
    build_seconds = {s.name.split()[1]: s.seconds for s in res.stages if s.name.startswith("build")}

    with _Timer(res, on_step, "verify") as st:
        for name, folder, family, splits in targets:
            target = f"{folder}:{name}" if family == "emnist" else str(folder)
            report = verify(target)
            status, notes = _verify_status(report, family)
            loaded = {sp: load(name, sp, root=folder) for sp in splits}
            sizes = {sp: len(ds) for sp, ds in loaded.items()}
            res.datasets.append({
                "dataset": name, "splits": sizes, "verify": status, "notes": notes,
                "synthetic": all(ds.synthetic for ds in loaded.values()),
                "build_seconds": build_seconds.get(family, build_seconds.get(name)), "folder": str(folder),
            })
            doc = report.to_json()
            (out / f"verify-{name}.json").write_text(doc if isinstance(doc, str)
                                                     else json.dumps(doc, indent=2, default=str))
        st.detail = ", ".join(f"{d['dataset']}={d['verify']}" for d in res.datasets)

    with _Timer(res, on_step, "sample grids"):
        for d in res.datasets:
            for split in GRID_SPLITS.get(d["dataset"], ("train",)):
                ds = load(d["dataset"], split, root=d["folder"])
                if len(ds):
                    break
            n = min(64, len(ds))
            idx = np.linspace(0, len(ds) - 1, n).astype(int)
            p = save_grid(np.asarray(ds.images)[idx], np.asarray(ds.labels)[idx], ds.classes,
                          pictures / f"{d['dataset']}.png", cols=8, title=grid_title(ds, f"{n} of {len(ds):,}"))
            d["picture"] = str(p.relative_to(out))
            d["picture_split"] = ds.split

    hf = out / "hf"
    with _Timer(res, on_step, "export Hugging Face repository") as st:
        confs = configs_from_targets([str(builds / "qmnist"), str(builds / "mnist")]
                                     + [f"{builds / 'emnist'}:emnist-{n}" for n in emnist_splits()], download=False)
        summary = export_hf(hf, confs, workers=config.workers)
        st.detail = f"{len(summary['configs'])} configs"

    with _Timer(res, on_step, "reload with datasets.load_dataset") as st:
        res.hf_reload = reload_with_datasets(hf, "qmnist", "test", builds / "qmnist", out)
        st.detail = f"qmnist/test: {res.hf_reload['rows']} rows, equal={res.hf_reload['equal']}"

    with _Timer(res, on_step, "reference classifiers + significance") as st:
        res.evaluation = evaluate_pair(builds / "qmnist", config, out)
        st.detail = ", ".join(f"{s['name']} {s['error_rate']:.2%}" for s in res.evaluation["systems"])

    return res


def reload_with_datasets(repo: str | os.PathLike[str], config_name: str, split: str,
                         source_folder: str | os.PathLike[str], out: Path) -> dict[str, Any]:
    """Load one exported config back with ``datasets.load_dataset`` and compare with the source."""
    import datasets

    cache = out / ".hf-cache"
    if not settings.current().bars:
        datasets.disable_progress_bars()
    ds = datasets.load_dataset(str(repo), config_name, split=split, cache_dir=str(cache))
    src = load(config_name, split, root=source_folder)
    images = np.stack([np.asarray(im) for im in ds["image"]])
    equal = bool(np.array_equal(images, np.asarray(src.images))
                 and np.array_equal(np.asarray(ds["label"]), np.asarray(src.labels)))
    shutil.rmtree(cache, ignore_errors=True)
    return {"config": config_name, "split": split, "rows": len(ds), "equal": equal, "features": sorted(ds.features)}


def evaluate_pair(folder: str | os.PathLike[str], config: DemoConfig, out: Path) -> dict[str, Any]:
    """Train the reference classifiers on QMNIST train, test on QMNIST test, compare them."""
    train, test = (load("qmnist", s, root=folder) for s in ("train", "test"))
    wrong: dict[str, np.ndarray] = {}
    systems: list[dict[str, Any]] = []
    for spec in config.classifiers:
        clf = make_classifier(spec)
        t0 = time.perf_counter()
        clf.fit(np.asarray(train.images), np.asarray(train.labels))
        pred = clf.predict(np.asarray(test.images))
        w = pred != np.asarray(test.labels)
        wrong[spec] = w
        er = error_rate(w)
        systems.append({"name": spec, "errors": int(w.sum()), "n": int(w.size),
                        "error_rate": float(w.mean()), "exact95": list(er.exact),
                        "seconds": round(time.perf_counter() - t0, 3)})
    comp = compare_systems(wrong, resamples=config.bootstrap, seed=config.seed)
    overlap = error_overlap(wrong)
    doc = {"train": f"{folder}:train", "test": f"{folder}:test", "systems": systems,
           "pairs": comp.pairs(), "wrong_for_all": int(len(overlap["common"]))}
    with open(out / "evaluation.json", "w") as f:
        json.dump(doc, f, indent=2, default=str)
    return doc


def format_summary(res: DemoResult) -> str:
    """The short summary table the CLI prints."""
    lines = [f"{'dataset':<17} {'train':>7} {'test':>7} {'verify':>7} {'build s':>8}  folder"]
    for d in res.datasets:
        lines.append(f"{d['dataset']:<17} {d['splits'].get('train', 0):>7} "
                     f"{d['splits'].get('test', 0):>7} {d['verify']:>7} "
                     f"{(d['build_seconds'] or 0):>8.1f}  {d['folder']}")
    lines += ["", "stages: " + ", ".join(f"{s.name} {s.seconds:.1f}s" for s in res.stages)]
    if res.evaluation:
        for s in res.evaluation["systems"]:
            lines.append(f"{s['name']}: {s['errors']}/{s['n']} errors ({s['error_rate']:.2%}) "
                         f"on the built QMNIST test split")
        for p in res.evaluation["pairs"][:1]:
            lines.append(f"P({p['a']} better than {p['b']}) = {p['poi_a_better']:.3f}; "
                         f"n12={p['n12']}, n21={p['n21']}")
    lines += [f"pictures: {res.out / 'pictures'}", f"report:   {res.report}"]
    return "\n".join(lines)


def _synthetic_line(datasets: list[dict[str, Any]]) -> str:
    """Whether every dataset carries the synthetic mark its build manifest should hold."""
    if not (unmarked := [d["dataset"] for d in datasets if not d.get("synthetic")]):
        return (f"All {len(datasets)} datasets are marked synthetic in their build manifests "
                "(`ds.synthetic`, `mnistforge info`, the dataset card and the sample grids say so).")
    return ("**Not marked synthetic although built from the synthetic SD19:** " + ", ".join(unmarked) + ".")


def write_demo_report(res: DemoResult, out: Path, shown: Path | None = None) -> Path:
    """``out/report.md``: the summary, verify results, pictures, evaluation and where things are
    (paths shown under ``shown``, the final folder, default ``out``)."""
    folder, out = out, shown or out
    L = ["# mnistforge demo report", "",
         "Everything below was produced from a **synthetic** SD19 replica (no real NIST data),",
         "so the numbers describe the pipeline, not the real datasets.", "", _synthetic_line(res.datasets), "",
         "## Datasets", "", "| dataset | train | test | verify | build (s) | sample |", "|---|---|---|---|---|---|"]
    for d in res.datasets:
        L.append(f"| {d['dataset']} | {d['splits'].get('train', 0)} | {d['splits'].get('test', 0)} "
                 f"| {d['verify']} ([json](verify-{d['dataset']}.json)) | {d['build_seconds']} "
                 f"| [grid]({d.get('picture', '')}) |")
    if notes := [(d["dataset"], n) for d in res.datasets for n in d["notes"]]:
        L += ["", "Verify notes (warnings; expected for official-style EMNIST: writers shared between "
                  "train and test, and SD19's three duplicated digit images, kept on one side):", ""]
        L += [f"- {name}: {n}" for name, n in notes]
    L += ["", "## Stages", "", "| stage | seconds | detail |", "|---|---|---|"]
    L += [f"| {s.name} | {s.seconds} | {s.detail} |" for s in res.stages]
    if res.evaluation:
        L += ["", "## Reference classifiers on the built QMNIST split", "",
              "| classifier | errors | error rate | exact 95 % interval |", "|---|---|---|---|"]
        for s in res.evaluation["systems"]:
            lo, hi = s["exact95"]
            L.append(f"| {s['name']} | {s['errors']}/{s['n']} | {s['error_rate']:.2%} "
                     f"| {lo:.2%} - {hi:.2%} |")
        L += ["", "| A | B | n12 | n21 | P(A better) | A worse at 95 % | max Bonferroni K |",
              "|---|---|---|---|---|---|---|"]
        for p in res.evaluation["pairs"]:
            L.append(f"| {p['a']} | {p['b']} | {p['n12']} | {p['n21']} | {p['poi_a_better']:.3f} "
                     f"| {p['paired_worse_at_95']} | {p['max_bonferroni_k']} |")
    if res.hf_reload:
        h = res.hf_reload
        L += ["", "## Hugging Face export", "",
              f"Repository folder: [hf/](hf/) (dataset card: [hf/README.md](hf/README.md)). "
              f"`datasets.load_dataset('{out / 'hf'}', '{h['config']}', split='{h['split']}')` "
              f"gave {h['rows']} rows; identical to the idx source: {h['equal']}."]
    L += ["", "## Pictures", ""]
    L += [f"![{d['dataset']}]({d['picture']})" for d in res.datasets if d.get("picture")]
    L += ["", "## Where things are", "", "- `sd19/`: the synthetic SD19 (2nd edition zips)",
          "- `builds/`: the built datasets (idx files + `manifest.json`)",
          "- `hf/`: the Hugging Face repository folder",
          "- `pictures/`: sample grids", "- `summary.json`, `evaluation.json`, `verify-*.json`", ""]
    path = folder / "report.md"
    with atomic_file(path, "w") as f:
        f.write("\n".join(L))
    return path


__all__ = ["run_demo", "DemoConfig", "DemoResult", "format_summary"]
