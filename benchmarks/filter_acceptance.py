"""Do the synthetic-truth filters accept what real people write? (SciFact's human test pairs)

For every (query, relevant document) pair of a judged BEIR dataset (default: SciFact's test split,
339 pairs) and for the same queries paired with a random other document (seeded), prints the share
that passes each default filter of ``bakeoff generate describe`` and all of them together:

* before: leak cut at 0.35 and the USE cosine >= 0.5 (the absolute rules);
* after: the self-reference filter (``refers_to_document``), the drift filter for scripts
  (``foreign_script``; ``borrowed_example`` needs the prompt's examples and does not apply), the
  pasted-passage filter (longest verbatim run < 10 words), the title-copy filter (< 80 % of the query's
  words in the title), the leak quota of the uniform target (``--leak-mode target``: each 0.2-wide leak bin may
  hold ``ceil(1.25 * 0.2 * n)`` of ``n`` pairs, taken in a seeded random order) and the rank rule
  (the document must rank <= 5 among itself and 99 random documents of the corpus under USE).

A filter worth its name passes most human pairs and few random ones.

    python benchmarks/filter_acceptance.py [--data ../shared/data/scifact] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bakeoff.data.loaders import load_beir
from bakeoff.truth.answerability import (AnswerabilityOptions, answerability_ranks, answerability_scores,
                                         open_answerability)
from bakeoff.truth.drift import foreign_scripts
from bakeoff.truth.leak import copied_run, leak, title_copy
from bakeoff.truth.self_reference import refers_to_document
from bakeoff.truth.synthetic import leak_bin, leak_quota


def _doc(ds, row: int) -> str:
    t, x = ds.corpus.titles[row], ds.corpus.texts[row]
    return f"{t}\n{x}" if t else x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/scifact")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    a = ap.parse_args()
    t0 = time.perf_counter()
    ds = load_beir(a.data, split="test")
    pairs = [(ds.queries.texts[i], ds.corpus.position[d]) for i, qid in enumerate(ds.queries.ids) if qid in ds.qrels
             for d in ds.qrels.relevant(qid) if d in ds.corpus]
    rng = np.random.default_rng(a.seed)
    rand = []
    for q, r in pairs:
        o = int(rng.integers(len(ds.corpus)))
        while o == r:
            o = int(rng.integers(len(ds.corpus)))
        rand.append((q, o))
    scorer = open_answerability("use")
    opts = AnswerabilityOptions()
    out: dict[str, dict[str, float]] = {}
    for name, ps in (("human", pairs), ("random", rand)):
        leaks = [leak(q, f"{ds.corpus.titles[r]} {ds.corpus.texts[r]}") for q, r in ps]
        own = answerability_scores([(q, _doc(ds, r)) for q, r in ps], scorer, options=opts)
        ranks = answerability_ranks([q for q, _ in ps], [r for _, r in ps], own, scorer,
                                    doc_text=lambda r: _doc(ds, r), n_docs=len(ds.corpus), options=opts)
        quota = leak_quota(len(ps), (0.2,) * 5, 1.25)
        filled = [0] * 5
        quota_ok = [False] * len(ps)
        for i in np.random.default_rng(a.seed).permutation(len(ps)):
            b = leak_bin(leaks[i])
            if filled[b] < quota[b]:
                filled[b] += 1
                quota_ok[i] = True
        cut = np.array([x <= 0.35 for x in leaks])
        title_ok = np.array([title_copy(q, ds.corpus.titles[r]) < 0.8 for q, r in ps])
        self_ok = np.array([not refers_to_document(q) for q, _ in ps])
        script_ok = np.array([not foreign_scripts(q, f"{ds.corpus.titles[r]} {ds.corpus.texts[r]}") for q, r in ps])
        paste_ok = np.array([copied_run(q, f"{ds.corpus.titles[r]} {ds.corpus.texts[r]}") < 10 for q, r in ps])
        abs_ok = np.array([x >= 0.5 for x in own])
        rank_ok = np.array([x.kept(opts.reference) for x in ranks])
        quota_ok_a = np.array(quota_ok)
        out[name] = {"pairs": len(ps), "leak_cut_0.35": cut.mean(), "use_cosine_0.5": abs_ok.mean(),
                     "before_both": (cut & abs_ok).mean(), "leak_quota_uniform": quota_ok_a.mean(),
                     "rank_le_5_of_100": rank_ok.mean(), "title_copy_lt_0.8": title_ok.mean(),
                     "no_self_reference": self_ok.mean(), "no_foreign_script": script_ok.mean(),
                     "copied_run_lt_10": paste_ok.mean(),
                     "after_all": (quota_ok_a & rank_ok & title_ok & self_ok & script_ok & paste_ok).mean(),
                     "mean_leak": float(np.mean(leaks)), "median_rank": float(np.median([x.rank for x in ranks]))}
    print(f"{'filter':<22}{'human pairs':>14}{'random pairs':>14}")
    for key in out["human"]:
        h, r = out["human"][key], out["random"][key]
        fmt = (lambda v: f"{v:.0f}") if key == "pairs" else (lambda v: f"{v:.3f}") if key in ("mean_leak", "median_rank") \
            else (lambda v: f"{v:.1%}")
        print(f"{key:<22}{fmt(h):>14}{fmt(r):>14}")
    print(f"({time.perf_counter() - t0:.0f} s; data {a.data}, seed {a.seed})")
    if a.json:
        a.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
