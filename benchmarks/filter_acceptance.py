"""Do the synthetic-truth filters accept what real people write? (SciFact's human test pairs)

For every (query, relevant document) pair of a judged BEIR dataset (default: SciFact's test split,
339 pairs) and for the same queries paired with a random other document (seeded), prints the share
that passes each default filter of ``bakeoff generate describe`` and all of them together:

* before: leak cut at 0.35 and the USE cosine >= 0.5 (the absolute rules);
* after: every text filter of describe mode's chain with its defaults
  (:func:`bakeoff.truth.filters.chain.describe_chain`, each reported by its rejection name: ``copies_title``,
  ``copies_passage``, ``refers_to_document``, ``foreign_script``, ``truncated``, …; ``copied_example`` and
  ``borrowed_example`` need the prompt's examples and pass) and the rank rule (the document must rank <= 5
  among itself and 99 random documents of the corpus under USE; the references are drawn once, seeded, and a
  reference judged relevant to the query is replaced by the next draw: a document people judged relevant is not
  a random irrelevant one, which matters where a query has forty relevant documents);
* for reference, the leak quota of the uniform target that generation applied before leak matching moved to the
  verdict (each 0.2-wide leak bin may hold ``ceil(1.25 * 0.2 * n)`` of ``n`` pairs, in a seeded random order):
  it is no longer a filter.

It also prints the human queries' leak shares per bin, each query weighted 1 (the figures of
``bakeoff.data.leak_bins.JUDGED_LEAK_SHARES``). A filter worth its name passes most human pairs and few random
ones.

    python benchmarks/filter_acceptance.py [--data ../shared/data/scifact] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bakeoff.data.leak_bins import leak_bin
from bakeoff.data.loaders import load_beir
from bakeoff.truth.filters.answerability import (
    AnswerabilityOptions,
    answerability_scores,
    answerability_text,
    open_answerability,
)
from bakeoff.truth.filters.chain import Draft, describe_chain
from bakeoff.truth.filters.leak import leak
from bakeoff.truth.generation.leak_target import leak_quota


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
    relevant: dict[str, set[int]] = {}
    for q, r in pairs:
        relevant.setdefault(q, set()).add(r)
    rng = np.random.default_rng(a.seed)
    rand = []
    for q, r in pairs:
        o = int(rng.integers(len(ds.corpus)))
        while o == r or o in relevant[q]:  # a random document people did not judge relevant
            o = int(rng.integers(len(ds.corpus)))
        rand.append((q, o))
    scorer = open_answerability("use")
    opts = AnswerabilityOptions()
    out: dict[str, dict[str, float]] = {}
    for name, ps in (("human", pairs), ("random", rand)):
        leaks = [leak(q, f"{ds.corpus.titles[r]} {ds.corpus.texts[r]}") for q, r in ps]
        own = answerability_scores([(q, _doc(ds, r)) for q, r in ps], scorer, options=opts)
        ranks = _ranks(ds, ps, own, scorer, opts, relevant)
        quota = leak_quota(len(ps), (0.2,) * 5, 1.25)
        filled = [0] * 5
        quota_ok = [False] * len(ps)
        for i in np.random.default_rng(a.seed).permutation(len(ps)):
            b = leak_bin(leaks[i])
            if filled[b] < quota[b]:
                filled[b] += 1
                quota_ok[i] = True
        cut = np.array([x <= 0.35 for x in leaks])
        drafts = [_draft(q, ds.corpus.titles[r], ds.corpus.texts[r]) for q, r in ps]
        passes = {f.name: np.array([f.check(d) is None for d in drafts]) for f in describe_chain().text}
        text_ok = np.logical_and.reduce(list(passes.values()))
        abs_ok = np.array([x >= 0.5 for x in own])
        rank_ok = np.array([x <= opts.reference.max_rank for x in ranks])
        quota_ok_a = np.array(quota_ok)
        out[name] = {"pairs": len(ps), "leak_cut_0.35": cut.mean(), "use_cosine_0.5": abs_ok.mean(),
                     "before_both": (cut & abs_ok).mean(), "leak_quota_uniform": quota_ok_a.mean(),
                     "rank_le_5_of_100": rank_ok.mean(), **{f"no_{k}": v.mean() for k, v in passes.items()},
                     "after_all": (rank_ok & text_ok).mean(), "with_old_quota": (quota_ok_a & rank_ok & text_ok).mean(),
                     "mean_leak": float(np.mean(leaks)), "median_rank": float(np.median(ranks))}
        if name == "human":
            per_query: dict[str, list[float]] = {}
            for (q, _), v in zip(ps, leaks):
                per_query.setdefault(q, []).append(v)
            shares = np.zeros(5)
            for vs in per_query.values():
                for v in vs:
                    shares[leak_bin(v)] += 1 / len(vs)
            shares /= shares.sum()
            out["leak_shares_per_query"] = {f"bin{i}": float(x) for i, x in enumerate(shares)}
    shares = out.pop("leak_shares_per_query")
    print("human queries' leak shares per bin (each query weighted 1): "
          + " ".join(f"{v:.3f}" for v in shares.values()))
    print(f"{'filter':<22}{'human pairs':>14}{'random pairs':>14}")
    for key in out["human"]:
        h, r = out["human"][key], out["random"][key]
        fmt = (lambda v: f"{v:.0f}") if key == "pairs" else (lambda v: f"{v:.3f}") if key in ("mean_leak", "median_rank") \
            else (lambda v: f"{v:.1%}")
        print(f"{key:<22}{fmt(h):>14}{fmt(r):>14}")
    print(f"({time.perf_counter() - t0:.0f} s; data {a.data}, seed {a.seed})")
    if a.json:
        a.json.write_text(json.dumps({**out, "leak_shares_per_query": shares}, indent=2))


def _draft(query: str, title: str, text: str) -> Draft:
    """``query`` as describe mode's filter chain reads it beside its document."""
    return Draft(" ".join(query.split()), title, f"{title} {text}", frozenset(), (), "en")


def _ranks(ds, pairs, own, scorer, opts, relevant) -> list[int]:
    """Rank of each pair's document among R references (bakeoff's rule, 1 + #{ref >= own - 1e-6}), the references
    drawn once (seeded) with R + 200 spares; per pair, the document itself and the query's judged relevant documents
    are skipped and the first R others count."""
    ref = opts.reference
    n_ref = ref.references
    draw = np.random.default_rng(ref.seed).choice(len(ds.corpus), size=min(len(ds.corpus), n_ref + 200), replace=False)
    queries = sorted({q for q, _ in pairs})
    qpos = {q: i for i, q in enumerate(queries)}
    m = np.asarray(scorer.score_matrix(queries, [answerability_text(_doc(ds, int(r)), max_doc_chars=opts.max_doc_chars)
                                                 for r in draw]), dtype=np.float64)
    out = []
    for (q, r), s in zip(pairs, own):
        skip = relevant.get(q, set()) | {r}
        keep = [j for j, row in enumerate(draw) if int(row) not in skip][:n_ref]
        out.append(1 + int(np.count_nonzero(m[qpos[q], keep] >= float(s) - 1e-6)))
    return out


if __name__ == "__main__":
    main()
