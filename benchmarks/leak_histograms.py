"""Leak of kept synthetic queries beside people's queries, per judged corpus: the text table and a figure.

    python benchmarks/leak_histograms.py --truth OUT/truth --data ../shared/data/cisi [--png leak_cisi.png]

``--truth`` is a generated ground truth (``bakeoff generate --out``, or ``OUT/truth`` of ``bakeoff calibrate``);
``--data`` the judged corpus it was generated from. Leak (:func:`bakeoff.truth.filters.leak.leak`) is the share of a
query's rare words found in its document. A synthetic query counts once, against its source document (the
value its metadata recorded); a human query counts once too, split evenly over its ``m`` relevant documents
(each (query, document) pair weighs ``1/m``: :func:`bakeoff.truth.generation.leak_target.judged_leak_shares`). Printed: the
shares per bin of :data:`bakeoff.data.leak_bins.LEAK_BINS` and the means; with ``--png``, both histograms as
bars in one figure (matplotlib, the ``figures`` extra).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np


def human_leaks(data: Path) -> tuple[list[float], list[float]]:
    """Each human (query, relevant document) pair's leak and its weight ``1/m``."""
    from bakeoff.data.loaders import load_beir
    from bakeoff.truth.filters.leak import leak

    ds = load_beir(data)
    corpus = ds.corpus
    values, weights = [], []
    for qid, text in zip(ds.queries.ids, ds.queries.texts, strict=True):
        docs = [d for d in ds.qrels.relevant(qid) if d in corpus] if qid in ds.qrels else []
        for d in docs:
            row = corpus.position[d]
            values.append(leak(text, f"{corpus.titles[row]} {corpus.texts[row]}"))
            weights.append(1 / len(docs))
    return values, weights


def shares(values: list[float], weights: list[float] | None = None) -> list[float]:
    """Weighted share of ``values`` in each leak bin."""
    from bakeoff.data.leak_bins import leak_bin

    w = weights or [1.0] * len(values)
    out = [0.0] * 5
    for v, x in zip(values, w, strict=True):
        out[leak_bin(v)] += x
    total = sum(w)
    return [x / total for x in out] if total else out


def main(argv: list[str] | None = None) -> int:
    from bakeoff.data.leak_bins import LEAK_BINS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--truth", type=Path, required=True, help="a generated truth folder (queries.jsonl)")
    ap.add_argument("--data", type=Path, required=True, help="the judged BEIR folder it was generated from")
    ap.add_argument("--png", type=Path, help="write the figure here")
    ap.add_argument("--label", default="synthetic, kept", help="the synthetic series' name in the figure")
    args = ap.parse_args(argv)

    syn = [float(json.loads(line)["metadata"]["leak"]) for line in (args.truth / "queries.jsonl").open()]
    hv, hw = human_leaks(args.data)
    s_syn, s_hum = shares(syn), shares(hv, hw)
    edges = [0.0, *LEAK_BINS, 1.0]
    bins = [f"{a:.1f}-{b:.1f}" for a, b in itertools.pairwise(edges)]
    mean_h = float(np.average(hv, weights=hw)) if hv else float("nan")
    print(f"{args.data.name}: {len(syn)} kept synthetic queries ({args.truth}); {round(sum(hw))} human queries "
          f"with {len(hv)} (query, relevant document) pairs")
    print(f"{'leak bin':<10} {'synthetic':>10} {'human':>8}")
    for b, a, h in zip(bins, s_syn, s_hum, strict=True):
        print(f"{b:<10} {a:>10.1%} {h:>8.1%}")
    print(f"{'mean':<10} {float(np.mean(syn)) if syn else float('nan'):>10.3f} {mean_h:>8.3f}")
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
        x = np.arange(len(bins))
        ax.bar(x - 0.2, s_syn, width=0.4, label=f"{args.label} (n={len(syn)}, mean {np.mean(syn):.2f})")
        ax.bar(x + 0.2, s_hum, width=0.4, label=f"human queries (n={round(sum(hw))}, mean {mean_h:.2f})")
        ax.set_xticks(x, bins)
        ax.set_xlabel("leak: share of the query's rare words found in its document")
        ax.set_ylabel("share of queries")
        ax.set_title(f"Leak of kept synthetic vs human queries: {args.data.name}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        args.png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.png)
        print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
