"""Does the synthetic verdict pick the arm people would pick? One ablation table per judged corpus and generator.

    flock /tmp/bakeoff-bench.lock python benchmarks/verdict_trust.py --data ../shared/data/cisi \
        [--llm local] [-n 100] [--seed 0] [--pipelines before,after] [--json out.json]

For each **pipeline** (how the queries are generated) it runs ``bakeoff calibrate``'s library path
(:func:`bakeoff.calibration_pipeline.run_calibration`, the default nine arms, ``--train-fraction 0``: every kept query is
evaluated, nothing is fine-tuned) on the judged corpus, then reads the same synthetic results three ways:

* ``unweighted`` — every kept query counts once (the verdict before the leak match);
* ``leak-matched`` — weighted to the generator's recorded leak target (the default target of
  :mod:`bakeoff.data.leak_bins` unless the pipeline sets one): what a user gets;
* ``own-target`` — weighted to the corpus's own human leak shares, as a user with a log of real queries
  (``--queries-like``) would approximate them;
* with ``--pool-depth K``: ``pooled`` and ``pooled, leak-matched`` — the same runs on the synthetic truth widened
  by judging every arm's top K (``bakeoff calibrate --pool-depth``: query likelihood with the generator's model).

Pipelines: ``before`` is generation as it was (a uniform leak quota with steered regenerations, three
bootstrapped examples from a pilot round, the question "this document answers"); ``after`` is today's default
(``bakeoff generate``'s defaults); ``masked`` is ``after`` with two thirds of the documents shown with half their
rare words masked (``--mask-share``, opt-in).

Printed per pipeline: kept / sampled, generations per kept query, rejections by reason, the kept queries'
leak histogram beside the human pairs', and per reading: τ-b and τ_AP of the arm orderings (NDCG@10), the
effective sample size, the human and synthetic picks, whether they agree or the synthetic pick is among the
human candidates, and the human-significant pairs kept / reversed. Generations are cached (``--cache-dir``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BAKEOFF_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _pipelines(n: int, seed: int):
    from bakeoff.truth.filters.answerability import AnswerabilityOptions
    from bakeoff.truth.filters.reference_rank import ReferenceRankOptions
    from bakeoff.truth.generation.describe import DescribeOptions

    # bakeoff generate's and calibrate's command-line defaults (min_doc_chars 60)
    after = DescribeOptions(n=n, seed=seed, min_doc_chars=60,
                            answerability=AnswerabilityOptions(reference=ReferenceRankOptions(seed=seed)))
    before = replace(after, leak_mode="target", leak_target=(0.2,) * 5, leak_target_source="uniform", bootstrap=3,
                     **_before_generation())
    masked = replace(after, mask_share=None)  # the masked view at the target's share below leak 0.4
    return {"before": before, "after": after, "masked": masked}


def _before_generation() -> dict:
    """Options of today's generation that the earlier pipeline did not have (kept at their old values)."""
    from bakeoff.truth.generation.describe import DescribeOptions

    fields = DescribeOptions.__dataclass_fields__
    return {"mask_share": 0.0} if "mask_share" in fields else {}


def _human_shares(ds) -> list[float]:
    from bakeoff.truth.generation.leak_target import judged_leak_shares

    return list(judged_leak_shares(ds.queries, ds.qrels, ds.corpus))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA / "scifact")
    ap.add_argument("--llm", default="local")
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pipelines", default="before,after")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--pool-depth", type=int, default=0,
                    help="also judge the arms' pooled top DEPTH (calibrate --pool-depth) and add the pooled readings")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()

    from bakeoff.cache import Cache
    from bakeoff.calibration_pipeline import DEFAULT_ARMS, dataset_spec, run_calibration
    from bakeoff.data.datasets import open_dataset
    from bakeoff.data.leak_bins import leak_bin_counts
    from bakeoff.report.calibration import calibration_figures
    from bakeoff.runner.results import read_results

    cache = Cache(a.cache_dir) if a.cache_dir else Cache()
    ds, _ = open_dataset(dataset_spec(str(a.data)))
    own = _human_shares(ds)
    print(f"corpus {a.data.name}: {len(ds.corpus)} documents; human pairs' leak shares per bin "
          f"{' '.join(f'{x:.2f}' for x in own)}; llm {a.llm}; n {a.n}; seed {a.seed}")
    table = {}
    for name in a.pipelines.split(","):
        opts = _pipelines(a.n, a.seed)[name]
        work = Path(tempfile.mkdtemp(prefix=f"verdict-trust-{name}-"))
        t0 = time.perf_counter()
        from bakeoff.truth.judging.assess import AssessOptions

        record = run_calibration(dataset=str(a.data), out=work / "cal", options=opts, llm=a.llm, arms=DEFAULT_ARMS,
                                 cache=cache, progress=False, n_resamples=a.resamples, seed=0, train_fraction=0.0,
                                 pool=AssessOptions(depth=a.pool_depth, method="likelihood") if a.pool_depth else None,  # calibrate --pool-method default
                                 echo=lambda s: None)
        wall = time.perf_counter() - t0
        prov = json.loads((work / "cal" / "truth" / "provenance.json").read_text())
        human = read_results(work / "cal" / "human")
        synthetic = read_results(work / "cal" / "synthetic")
        queries = [json.loads(x) for x in (work / "cal" / "truth" / "queries.jsonl").read_text().splitlines() if x]
        leak = {q["_id"]: float(q["metadata"]["leak"]) for q in queries}
        readings = {"unweighted": None, "leak-matched": None, "own-target": None}
        fig_default = calibration_figures(human, synthetic, measures=["ndcg@10"], leak=leak,
                                          leak_target=prov["leak"]["target"],
                                          target_source=prov["leak"].get("target_source", "default"),
                                          n_resamples=a.resamples)
        fig_own = calibration_figures(human, synthetic, measures=["ndcg@10"], leak=leak, leak_target=own,
                                      target_source="the corpus's human pairs", n_resamples=a.resamples)
        m = fig_default["measures"]["ndcg@10"]
        readings["unweighted"] = _reading(m["agreement"], m["pairs"], fig_default["verdict"]["synthetic_unweighted"],
                                          fig_default["verdict"]["human"], fig_default["verdict"]["agreement_unweighted"])
        readings["leak-matched"] = _reading(m["agreement_leak_matched"], m["pairs_leak_matched"] or m["pairs"], fig_default["verdict"]["synthetic"],
                                            fig_default["verdict"]["human"], fig_default["verdict"]["agreement"])
        mo = fig_own["measures"]["ndcg@10"]
        readings["own-target"] = _reading(mo["agreement_leak_matched"], mo["pairs_leak_matched"] or mo["pairs"], fig_own["verdict"]["synthetic"],
                                          fig_own["verdict"]["human"], fig_own["verdict"]["agreement"])
        pooled = record.get("pooled")
        if pooled:
            pm = pooled["measures"]["ndcg@10"]
            pv = pooled["verdict"]
            readings["pooled"] = _reading(pm["agreement"], pm["pairs"], pv["synthetic_unweighted"], pv["human"],
                                          pv["agreement_unweighted"])
            readings["pooled, leak-matched"] = _reading(pm["agreement_leak_matched"], pm["pairs_leak_matched"] or pm["pairs"],
                                                        pv["synthetic"], pv["human"], pv["agreement"])
        counts = prov["counts"]
        gens = counts.get("generations", 0)
        kept_bins = leak_bin_counts(leak.values())
        row = {"kept": counts["kept"], "sampled": counts["sampled"], "generations": gens,
               "generations_per_kept": gens / counts["kept"] if counts["kept"] else None,
               "rejections": {k: v for k, v in prov["rejections"].items() if v},
               "kept_leak_shares": [c / max(1, len(leak)) for c in kept_bins], "kept_mean_leak": prov["leak"]["kept"]["mean"],
               "human_leak_shares": own, "health": prov.get("health"), "wall_s": wall,
               "human_order": m["agreement"]["human_order"], "readings": readings,
               "usage": prov.get("usage"),
               "pooled": ({"depth": pooled["depth"], "judged": pooled["judge"]["counts"],
                           "grades": pooled["judge"]["grades"], "seconds": pooled["judge"]["seconds"],
                           "relevant_added_per_query": pooled["relevant_added_per_query"]} if pooled else None)}
        table[name] = row
        print(f"\n== pipeline {name} ({wall:.0f} s) ==")
        print(f"kept {row['kept']} of {row['sampled']} sampled; {gens} generations "
              f"({row['generations_per_kept'] or 0:.2f} per kept query); rejections: "
              + ", ".join(f"{k} {v}" for k, v in row["rejections"].items()))
        print("leak shares per bin  kept: " + " ".join(f"{x:.2f}" for x in row["kept_leak_shares"])
              + f" (mean {row['kept_mean_leak']:.2f})   human: " + " ".join(f"{x:.2f}" for x in own))
        if (row["health"] or {}).get("line"):
            print(row["health"]["line"])
        print("human order: " + " > ".join(row["human_order"]))
        if pooled:
            print(f"pooled judgments: top {pooled['depth']} of each arm, {pooled['judge']['counts']['assessed']} documents "
                  f"judged in {pooled['judge']['seconds']:.0f} s, {pooled['relevant_added_per_query']:.1f} relevant per "
                  "query beside the source")
        print(f"{'reading':<22}{'tau-b':>7}{'tau_AP':>8}{'ESS':>6}  {'synthetic pick':<16}{'human pick':<12}"
              f"{'agree':<7}{'in human cands':<16}{'sig kept/rev':>12}")
        for rname, r in readings.items():
            print(f"{rname:<22}{r['tau_b']:>7.2f}{r['tau_ap']:>8.2f}{r['ess']:>6.0f}  {r['synthetic_pick']!s:<16}"
                  f"{r['human_pick']!s:<12}{r['same_pick']!s:<7}{r['in_human_candidates']!s:<16}"
                  f"{r['sig_kept']:>5}/{r['sig_reversed']:<3} of {r['human_significant']}")
    if a.json:
        a.json.write_text(json.dumps({"data": str(a.data), "llm": a.llm, "n": a.n, "seed": a.seed,
                                      "pipelines": table}, indent=2))


def _reading(agr, pairs, synthetic_verdict, human_verdict, agreement) -> dict:
    f = agr["figures"]
    return {"tau_b": f["tau_b"]["value"], "tau_b_ci": [f["tau_b"]["ci_low"], f["tau_b"]["ci_high"]],
            "tau_ap": f["tau_ap"]["value"], "ess": float(agr.get("ess", agr["n_synthetic"])),
            "synthetic_order": agr["synthetic_order"], "synthetic_pick": synthetic_verdict.get("pick"),
            "synthetic_headline": synthetic_verdict.get("headline"), "human_pick": human_verdict.get("pick"),
            "same_pick": agreement["same_pick"], "in_human_candidates": agreement["synthetic_pick_human_candidate"],
            "human_significant": pairs["human_significant"], "sig_kept": pairs["kept"],
            "sig_reversed": pairs["reversed"]}


if __name__ == "__main__":
    main()
