"""Leak of SciFact's human test queries vs describe-mode queries generated over SciFact documents.

    python benchmarks/leak_scifact.py [--scifact ../shared/data/scifact] [-n 50] [--llm local]

Human side: every SciFact test query against the concatenated (title + text) of its judged
relevant documents. Synthetic side: ``bakeoff generate describe`` logic over ``n`` sampled
documents with the local Gemma 3 270M (leak filter *off*, threshold 1.0, so the raw
distribution shows) and, from the same generations, the set the default filter (0.35) keeps.
Generations are cached, so a re-run prints the same figures in seconds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bakeoff.cache import Cache, default_cache_dir
from bakeoff.data import load_beir
from bakeoff.truth.leak import leak_stats
from bakeoff.truth.llm import LLMClient, parse_llm_spec
from bakeoff.truth.local_llm import LocalLLMServer
from bakeoff.truth.synthetic import DescribeOptions, describe_truth, histogram_table, leak_report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scifact", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"))
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--llm", default="local")
    args = ap.parse_args()
    ds = load_beir(args.scifact, split="test")
    human = leak_report(ds.queries, ds.qrels, ds.corpus)
    cache = Cache(default_cache_dir())
    opts = DescribeOptions(n=args.n, seed=args.seed, leak_threshold=1.0, max_regenerations=1)
    t0 = time.perf_counter()
    if args.llm == "local":
        with LocalLLMServer() as srv, LLMClient(srv.config(), cache=cache) as client:
            truth = describe_truth(ds.corpus, client, options=opts)
    else:
        with LLMClient(parse_llm_spec(args.llm), cache=cache) as client:
            truth = describe_truth(ds.corpus, client, options=opts)
    elapsed = time.perf_counter() - t0
    raw = [float(m["leak"]) for m in truth.queries.metadata]
    kept = [v for v in raw if v <= 0.35]
    print(f"SciFact: {len(human)} human test queries; {len(raw)} describe-mode queries over {args.n} "
          f"sampled documents ({truth.provenance['llm']['model']}, generation {elapsed:.1f} s, "
          f"{truth.provenance['usage']['cache_hits']} cached requests)\n")
    print(histogram_table({"human (test)": human, "describe (raw)": raw, "describe (kept<=0.35)": kept}))
    hs, ss = leak_stats(human, threshold=0.35), leak_stats(raw, threshold=0.35)
    print(f"\nshare of queries the 0.35 filter would reject: human {hs['share_above']:.1%}, "
          f"describe raw {ss['share_above']:.1%}")


if __name__ == "__main__":
    main()
