"""Citation-mined bake-off on the Spanish fixture: as-of vs latest, masked vs unmasked, single cut.

Mines ``tests/fixtures/citations`` (Ley de Tránsito, 25 rulings) into a temporary folder and
runs every arm on four variants of the same index (a snapshot is a row mask, never a
re-encode; embeddings are cached once per corpus/queries in ``--cache-dir``):

* ``as-of``     masked queries, each searched against the versions in force on its date(s)
* ``latest``    masked queries against each article's latest text (positives moved to it)
* ``unmasked``  the control: same paragraphs, citations left in (as-of)
* ``single``    as-of, only queries citing exactly one target

Labels are citation-mined, so every figure is a LOWER BOUND (uncited targets are unknown).
Effectiveness only (no timings), so it needs no benchmark lock.

    HF_HUB_OFFLINE=1 python benchmarks/citations_fixture.py \
        --arm bm25:stemmer=spanish --arm minilm=dense --arm use=dense:model=use
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "citations"
VARIANTS = {
    "as-of": {"mode": "as_of"},
    "latest": {"mode": "latest"},
    "unmasked": {"mode": "as_of", "unmasked": True},
    "single": {"mode": "as_of", "only_single": True},
}
MEASURES = ("recall@1", "recall@5", "mrr@10")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arm", action="append", default=[], help="[NAME=]TYPE[:k=v,...] (repeatable)")
    ap.add_argument("--window", type=int, default=1200, help="context characters each side of a citation")
    ap.add_argument("--cap", type=int, default=4000, help="maximum characters per query")
    ap.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "bakeoff-citations-cache"))
    args = ap.parse_args()
    from bakeoff.runner.run import run_bakeoff
    from bakeoff.cache import Cache
    from bakeoff.runner.config import build_arms, parse_arm_spec
    from bakeoff.truth.citations import MineOptions
    from bakeoff.data.datasets import load_mined
    from bakeoff.truth.mined import mine_citations, write_mined
    from bakeoff.truth.patterns import load_patterns
    from bakeoff.truth.sources import read_sources
    from bakeoff.data.versions import read_targets

    specs = args.arm or ["bm25:stemmer=spanish"]
    arms = build_arms([parse_arm_spec(s) for s in specs])
    cache = Cache(Path(args.cache_dir))
    with tempfile.TemporaryDirectory() as tmp:
        mined = mine_citations(read_targets(FIX / "targets.jsonl"), read_sources(FIX / "rulings.jsonl"),
                               load_patterns(FIX / "patterns.toml"), progress=False,
                               options=MineOptions(window=args.window, cap=args.cap))
        out = write_mined(Path(tmp) / "transito", mined)
        c = mined.counts
        mean_len = sum(len(t) for t in mined.queries.texts) / len(mined.queries)
        print(f"window ±{args.window}, cap {args.cap}: mean query length {mean_len:.0f} characters")
        print(f"mined {c['queries']} queries from {c['sources']} rulings over {len(mined.corpus)} article versions "
              f"({c['no_date']} without date, {c['unknown_article']} unknown article, {c['not_in_force']} not in force, "
              f"{c['dropped_paragraphs']} verbatim paragraphs dropped, {c['masked_strings']} strings masked)")
        asof_ds, _ = load_mined(out, mode="as_of")
        latest_ds, _ = load_mined(out, mode="latest")
        moved = sum(1 for q in asof_ds.queries.ids if dict(asof_ds.qrels[q]) != dict(latest_ds.qrels[q]))
        print(f"{moved} of {len(asof_ds.queries)} queries cite a version that is not the latest one")
        table: dict[str, dict[str, dict[str, float]]] = {}
        nq: dict[str, int] = {}
        for vname, opts in VARIANTS.items():
            ds, masks = load_mined(out, mode=opts["mode"], only_single=opts.get("only_single", False),
                                   unmasked=opts.get("unmasked", False))
            nq[vname] = len(ds.queries)
            res = run_bakeoff(ds, arms, k=10, measures=MEASURES, cache=cache, progress=False, mask=masks)
            for a in res.arms:
                table.setdefault(a.name, {})[vname] = dict(a.evaluation.means)
    cols = [f"{v} {m.replace('recall', 'R').replace('mrr', 'MRR')}" for v in VARIANTS for m in MEASURES]
    print("\nLOWER BOUNDS (citation-mined labels: uncited targets are unknown, not wrong); "
          + ", ".join(f"{v}: {n} q" for v, n in nq.items()))
    w = max(len(a) for a in table) + 2
    print("arm".ljust(w) + "".join(c.rjust(16) for c in cols))
    for arm, per in table.items():
        print(arm.ljust(w) + "".join(f"{per[v][m]:16.4f}" for v in VARIANTS for m in MEASURES))
    print("\nmasking effect (unmasked - as-of) and date effect (as-of - latest), MRR@10:")
    for arm, per in table.items():
        print(f"  {arm}: masking {per['unmasked']['mrr@10'] - per['as-of']['mrr@10']:+.4f}, "
              f"as-of vs latest {per['as-of']['mrr@10'] - per['latest']['mrr@10']:+.4f}")


if __name__ == "__main__":
    main()
