"""PostgreSQL arms: full-text search (``pgfts``) and pgvector (``pgvector``).

Both run either over a table **bakeoff loads** from the corpus (default; named
after the content, created in one transaction so a half-loaded table never
exists, and reused by later runs) or over **the user's existing table**
(``table=``, with ``id_column`` and the text/vector column names). Connection:
``dsn=`` a libpq URI or ``embedded`` (default; see :mod:`._pg`). Passwords never
leave the connection call: :meth:`config` — the cache identity — holds the
redacted DSN, and for user tables the table and column names (plus
``version=``, which you bump when the table's contents change).

``pgfts`` score: ``ts_rank_cd(to_tsvector(language, text), websearch_to_tsquery(language, query), normalization)``
over rows matching the query (``@@``). ``match=all`` (default) keeps web-search semantics — every
term must occur (AND), which finds little for long natural-language queries; ``match=any`` ORs the
terms (``&`` -> ``|`` in the tsquery; phrases and ``-negations`` kept), as BM25 does; SQL orders by score desc, then id desc in
the ``"C"`` collation (byte order), i.e. the package tie rule, and the rows are
re-ranked with :func:`~bakeoff.data.ranking.rank` anyway.

``pgvector`` score: inner product (``metric=ip``, ``<#>`` negated), cosine
(``1 - (a <=> b)``) or negative L2 distance (``-(a <-> b)``). ``index=exact``
scans every row (index scans disabled, ties broken by id as above, so it
equals an exact search of the same embeddings up to float rounding);
``index=hnsw`` builds (once, ``CREATE INDEX IF NOT EXISTS``) an HNSW index with
``m``/``ef_construction`` and searches it with ``hnsw.ef_search``.

``storage`` (HNSW only) chooses what the index holds: ``vector`` (default, float32, the
distance above), ``halfvec`` (an expression index on ``v::halfvec(d)``: float16, half the
size) or ``bit`` (``binary_quantize(v)::bit(d)``: one sign bit per dimension, searched by
Hamming distance — 32x smaller than float32). With ``halfvec``/``bit`` the index yields
``rerank`` candidates (default ``ef_search``; at least ``k``), found with
``hnsw.ef_search = max(ef_search, rerank)`` because pgvector returns at most ``ef_search``
rows per scan, and those candidates are re-scored **exactly** in float32 on the table's
vectors (same score formula as above) — the returned top-``k`` carries exact scores, in
the exact path's order (score desc, then id in byte order). Results differ from
``storage=vector`` only in which documents the approximate search finds, so ``storage`` and
``rerank`` are part of the cache identity (absent, i.e. unchanged, for ``vector``). On this
machine the pgvector search is memory-latency bound (each visited graph element is a buffer
look-up, pin and page read), and the small ``bit`` index visits cheaper elements:
The docs' benchmarks page records what each storage cost at equal recall. Queries go out
``pipeline`` at a time (default 256) in one psycopg pipeline — prepared statements, query
vectors in pgvector's binary format (``pgvector.psycopg``) — so a batch costs one round trip,
not one per query; the SQL and therefore the results are the same as one query at a time.
Embeddings come from the ``base=`` dense arm (``embed_corpus``/``embed_queries``),
so bakeoff's exact dense arm and pgvector see the same vectors.

Masks (as-of search) become ``AND id = ANY(allowed ids)`` (for HNSW with
``hnsw.iterative_scan = strict_order``). A plain HNSW scan returns at most ``ef_search`` rows,
so a search deeper than ``ef_search`` (e.g. depth 100 with the default 40) also turns the
iterative scan on: the first ``ef_search`` rows are those of the plain scan, the rest come
from continuing it in distance order (until code version 2 such a run silently held only
``ef_search`` rows per query).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ...cache import cache_key
from ...data.model import Corpus, Queries, Run
from ...data.ranking import rank
from ...errors import ConfigError
from ...progress import progress_bar
from ...validation import PositiveInt
from ..base import Arm, ArmContext, DocMask, group_by_mask, register_arm
from . import _pg
from ._common import ExternalError, redact_url

__all__ = ["PgFtsArm", "PgVectorArm", "vector_literal"]

_METRICS = {"ip": ("<#>", "vector_ip_ops"), "cosine": ("<=>", "vector_cosine_ops"), "l2": ("<->", "vector_l2_ops")}
_STORAGES = ("vector", "halfvec", "bit")


def vector_literal(row: np.ndarray) -> str:
    """pgvector text form of a float32 row, exact: each float32 is printed as the shortest
    decimal of its (exact) double value, which parses back to the same float32."""
    return "[" + ",".join(repr(x) for x in np.asarray(row, dtype=np.float32).tolist()) + "]"


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for s in range(0, n, size):
        yield s, min(n, s + size)


class _PgArm(Arm):
    """Shared connection handling of the PostgreSQL arms."""

    def __init__(self, *, name: str | None, dsn: str | None, table: str | None, id_column: str,
                 version: str | None) -> None:
        super().__init__(name=name)
        self._dsn = _pg.EMBEDDED if dsn is None else str(dsn)
        # The default name is the --arm text, which may hold the DSN: never let its password out.
        self.name = _pg.scrub_name(self.name, self._dsn)
        self.table = table
        self.id_column = id_column
        self.version = None if version is None else str(version)
        self._conn: Any = None
        self._table_name: str | None = None
        self._corpus: Corpus | None = None
        if table is not None:
            _pg.split_table(table)

    @property
    def who(self) -> str:
        return f"{self.type} arm {self.name!r}"

    def _common_config(self) -> dict[str, Any]:
        # A bakeoff-loaded table is identified by its content; a user table by where it lives.
        where = None if self.table is None else redact_url(self._dsn)
        return {"dsn": where, "table": self.table, "id_column": self.id_column, "version": self.version}

    def versions(self) -> dict[str, str]:
        return {"schema": "1"}

    def _open(self) -> Any:
        if self._conn is None or self._conn.closed:
            dsn = _pg.resolve_dsn(self._dsn)
            self._conn = _pg.connect(dsn, who=self.who)
            self._real_dsn = dsn
        return self._conn

    def _ident(self, name: str) -> Any:
        from psycopg import sql

        return sql.Identifier(*_pg.split_table(name))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@register_arm("pgfts", code_version="1")
class PgFtsArm(_PgArm):
    """PostgreSQL full-text search ranked by ``ts_rank_cd`` (see module docstring)."""

    def __init__(
        self,
        *,
        name: str | None = None,
        dsn: str | None = None,
        table: str | None = None,
        id_column: str = "id",
        text_column: str = "body",
        tsvector_column: str | None = None,
        language: str = "english",
        normalization: Annotated[int, Field(ge=0, le=63)] = 0,
        match: str = "all",
        version: str | None = None,
    ) -> None:
        super().__init__(name=name, dsn=dsn, table=table, id_column=id_column, version=version)
        if match not in ("all", "any"):
            raise ConfigError(f"{self.who}: match must be all or any, got {match!r}")
        self.match = match
        self.text_column, self.tsvector_column = text_column, tsvector_column
        self.language, self.normalization = str(language), int(normalization)
        if not 0 <= self.normalization <= 63:
            raise ConfigError(f"{self.who}: normalization is a bit mask 0..63")

    def config(self) -> dict[str, Any]:
        return {**self._common_config(), "text_column": self.text_column, "tsvector_column": self.tsvector_column,
                "language": self.language, "normalization": self.normalization, "match": self.match}

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        from psycopg import sql

        conn = self._open()
        row = conn.execute("SELECT 1 FROM pg_ts_config WHERE cfgname = %s", (self.language,)).fetchone()
        if row is None:
            names = [r[0] for r in conn.execute("SELECT cfgname FROM pg_ts_config ORDER BY 1").fetchall()]
            raise ExternalError(f"{self.who}: unknown text search language {self.language!r}; known: {', '.join(names)}")
        if self.table is not None:
            cols = _pg.table_columns(conn, self.table, who=self.who, dsn=self._real_dsn)
            wanted = [(self.id_column, "id_column")]
            wanted.append((self.tsvector_column, "tsvector_column") if self.tsvector_column
                          else (self.text_column, "text_column"))
            _pg.require_columns(cols, wanted, table=self.table, who=self.who)
            self._table_name = self.table
        else:
            name = "bakeoff_fts_" + cache_key({"corpus": corpus.fingerprint(), "language": self.language,
                                               "schema": 1})[:16]
            exists = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]
            if exists is None:
                texts = corpus.full_texts()
                with conn.transaction():
                    conn.execute(sql.SQL(
                        "CREATE TABLE {t} (id text PRIMARY KEY, body text NOT NULL, "
                        "tsv tsvector GENERATED ALWAYS AS (to_tsvector({lang}::regconfig, body)) STORED)").format(
                        t=sql.Identifier(name), lang=sql.Literal(self.language)))
                    with conn.cursor().copy(sql.SQL("COPY {t} (id, body) FROM STDIN").format(t=sql.Identifier(name))) as cp:
                        for i in progress_bar(range(len(corpus)), desc=f"load {self.name}", enabled=ctx.progress,
                                              unit="doc"):
                            cp.write_row((corpus.ids[i], texts[i]))
                    conn.execute(sql.SQL("CREATE INDEX ON {t} USING gin (tsv)").format(t=sql.Identifier(name)))
                    conn.execute(sql.SQL("ANALYZE {t}").format(t=sql.Identifier(name)))
            self._table_name = name
        self._corpus = corpus

    def _query_sql(self, masked: bool) -> Any:
        from psycopg import sql

        assert self._table_name is not None
        if self.table is None:
            doc: sql.Composable = sql.Identifier("tsv")
            idc = sql.Identifier("id")
        else:
            idc = sql.Identifier(self.id_column)
            doc = (sql.Identifier(self.tsvector_column) if self.tsvector_column else
                   sql.SQL("to_tsvector(%(lang)s::regconfig, {c})").format(c=sql.Identifier(self.text_column)))
        where = sql.SQL(" AND {id}::text = ANY(%(allowed)s)").format(id=idc) if masked else sql.SQL("")
        tsq: sql.Composable = sql.SQL("websearch_to_tsquery(%(lang)s::regconfig, %(query)s)")
        if self.match == "any":  # OR the terms (phrases and negations kept)
            tsq = sql.SQL("replace({q}::text, ' & ', ' | ')::tsquery").format(q=tsq)
        return sql.SQL(
            "SELECT {id}::text, ts_rank_cd({doc}, qq.q, %(norm)s)::float8 AS score "
            "FROM {t}, (SELECT {tsq} AS q) AS qq "
            "WHERE {doc} @@ qq.q{where} ORDER BY score DESC, {id}::text COLLATE \"C\" DESC LIMIT %(k)s").format(
            id=idc, doc=doc, t=self._ident(self._table_name), where=where, tsq=tsq)

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        import psycopg

        if self._corpus is None:
            raise RuntimeError("index() must run before search()")
        conn = self._open()
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        bar = progress_bar(total=len(queries), desc=f"search {self.name}", enabled=ctx.progress)
        for m, rows in group_by_mask(queries, mask):
            stmt = self._query_sql(m is not None)
            allowed = None if m is None else [self._corpus.ids[i] for i in np.flatnonzero(m)]
            for i in rows:
                params = {"norm": self.normalization, "lang": self.language, "query": queries.texts[i], "k": k,
                          "allowed": allowed}
                try:
                    hits = conn.execute(stmt, params).fetchall()
                except psycopg.Error as exc:
                    raise ExternalError(f"{self.who}: query {queries.ids[i]!r}: "
                                        f"{_pg.scrub(str(exc).splitlines()[0], self._real_dsn)}") from None
                out[queries.ids[i]] = rank(hits)[:k]
                bar.update(1)
        bar.close()
        return Run.from_ranked(self.name, {q: out[q] for q in queries.ids})


@register_arm("pgvector", code_version="2")
class PgVectorArm(_PgArm):
    """pgvector exact or HNSW search over the ``base`` dense arm's embeddings (see module docstring)."""

    def __init__(
        self,
        *,
        name: str | None = None,
        base: Arm,
        dsn: str | None = None,
        table: str | None = None,
        id_column: str = "id",
        vector_column: str = "embedding",
        index: str = "exact",
        metric: str = "ip",
        m: PositiveInt = 16,
        ef_construction: PositiveInt = 64,
        ef_search: PositiveInt = 40,
        pipeline: PositiveInt = 256,
        storage: str = "vector",
        rerank: PositiveInt | None = None,
        version: str | None = None,
    ) -> None:
        super().__init__(name=name, dsn=dsn, table=table, id_column=id_column, version=version)
        if storage not in _STORAGES:
            raise ConfigError(f"{self.who}: storage must be one of {', '.join(_STORAGES)}, got {storage!r}")
        if storage != "vector" and index != "hnsw":
            raise ConfigError(f"{self.who}: storage={storage} needs index=hnsw (it is the HNSW index's storage)")
        if rerank is not None and storage == "vector":
            raise ConfigError(f"{self.who}: rerank= re-scores the candidates of a halfvec/bit index; "
                              f"set storage=halfvec or storage=bit")
        if rerank is not None and int(rerank) < 1:
            raise ConfigError(f"{self.who}: rerank must be >= 1, got {rerank}")
        self.storage = storage
        self.rerank = None if rerank is None else int(rerank)
        self._dims: int | None = None
        self.pipeline = int(pipeline)
        if self.pipeline < 1:
            raise ConfigError(f"{self.who}: pipeline must be >= 1, got {pipeline}")
        if not isinstance(base, Arm) or not hasattr(base, "embed_queries"):
            raise ConfigError(f"{self.who}: base= must name a dense arm (one with embed_queries)")
        if index not in ("exact", "hnsw"):
            raise ConfigError(f"{self.who}: index must be exact or hnsw, got {index!r}")
        if metric not in _METRICS:
            raise ConfigError(f"{self.who}: metric must be one of {', '.join(_METRICS)}, got {metric!r}")
        self.base, self.vector_column, self.index_kind, self.metric = base, vector_column, index, metric
        self.m, self.ef_construction, self.ef_search = int(m), int(ef_construction), int(ef_search)

    def config(self) -> dict[str, Any]:
        cfg = {**self._common_config(), "vector_column": self.vector_column, "index": self.index_kind,
               "metric": self.metric}
        if self.index_kind == "hnsw":
            cfg.update(m=self.m, ef_construction=self.ef_construction, ef_search=self.ef_search)
        if self.storage != "vector":  # absent for the default: its cache identity is unchanged
            cfg.update(storage=self.storage, rerank=self.rerank)
        return cfg

    def _candidates(self, k: int) -> int:
        """How many candidates a halfvec/bit index yields for re-scoring: ``rerank`` (default
        ``ef_search``), at least ``k``."""
        return max(k, self.ef_search if self.rerank is None else self.rerank)

    def _index_expr(self, vec: Any) -> Any:
        """What the HNSW index holds (and the query orders by): the column, or its halfvec / bit form."""
        from psycopg import sql

        if self.storage == "halfvec":
            return sql.SQL("({v}::halfvec({d}))").format(v=vec, d=sql.Literal(self._dims))
        if self.storage == "bit":
            return sql.SQL("(binary_quantize({v})::bit({d}))").format(v=vec, d=sql.Literal(self._dims))
        return vec

    def children(self) -> tuple[Arm, ...]:
        return (self.base,)

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        from psycopg import sql

        conn = self._open()
        if self.table is not None:
            cols = _pg.table_columns(conn, self.table, who=self.who, dsn=self._real_dsn)
            _pg.require_columns(cols, [(self.id_column, "id_column"), (self.vector_column, "vector_column")],
                                table=self.table, who=self.who)
            if not cols[self.vector_column].startswith("vector"):
                raise ExternalError(f"{self.who}: column {self.vector_column!r} of {self.table!r} has type "
                                    f"{cols[self.vector_column]}, not pgvector's vector")
            dims = re.fullmatch(r"vector\((\d+)\)", cols[self.vector_column])
            if self.storage != "vector" and dims is None:
                raise ExternalError(f"{self.who}: storage={self.storage} needs the column's dimension: "
                                    f"{self.vector_column!r} of {self.table!r} is {cols[self.vector_column]}, "
                                    f"not vector(N)")
            self._dims = None if dims is None else int(dims.group(1))
            self._table_name = self.table
        else:
            emb = np.asarray(self.base.embed_corpus(corpus, ctx=ctx), dtype=np.float32)  # type: ignore[attr-defined]
            name = "bakeoff_vec_" + cache_key({"corpus": corpus.fingerprint(), "base": self.base.fingerprint(),
                                               "schema": 1})[:16]
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is None:
                with conn.transaction():
                    conn.execute(sql.SQL("CREATE TABLE {t} (id text PRIMARY KEY, embedding vector({d}) NOT NULL)").format(
                        t=sql.Identifier(name), d=sql.Literal(int(emb.shape[1]))))
                    with conn.cursor().copy(sql.SQL("COPY {t} (id, embedding) FROM STDIN").format(
                            t=sql.Identifier(name))) as cp:
                        for i in progress_bar(range(len(corpus)), desc=f"load {self.name}", enabled=ctx.progress,
                                              unit="doc"):
                            cp.write_row((corpus.ids[i], vector_literal(emb[i])))
                    conn.execute(sql.SQL("ANALYZE {t}").format(t=sql.Identifier(name)))
            self._table_name = name
            self._dims = int(emb.shape[1])
        if self.index_kind == "hnsw":
            base_name = _pg.split_table(self._table_name)[-1]
            tag = {"vector": "", "halfvec": "_hv", "bit": "_bq"}[self.storage]  # vector: the name it always had
            idx = f"{base_name}_hnsw_{self.metric}_m{self.m}_ef{self.ef_construction}{tag}"
            if tag and len(idx) > 63:  # PostgreSQL truncates names to 63 bytes: keep the storage distinct
                idx = base_name[:30] + "_hnsw_" + cache_key({"i": idx})[:16] + tag
            idx = idx[:63]
            try:
                if self.table is None:  # our own table: give the build room (session setting only)
                    conn.execute("SET maintenance_work_mem = '1GB'")
                exists = conn.execute("SELECT to_regclass(%s)", (sql.Identifier(idx).as_string(conn),)).fetchone()[0]
                bar = progress_bar(total=len(corpus), desc=f"HNSW index {self.name}",
                                   enabled=ctx.progress and exists is None, unit="row")
                watch = (_pg.index_build_progress(self._real_dsn, conn.info.backend_pid, bar, who=self.who)
                         if ctx.progress and exists is None else contextlib.nullcontext())
                with watch:  # pgvector reports the build in pg_stat_progress_create_index
                    conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw ({c} {ops}) "
                                         "WITH (m = {m}, ef_construction = {ef})").format(
                        i=sql.Identifier(idx), t=self._ident(self._table_name),
                        c=self._index_expr(sql.Identifier(self.vector_column)),
                        ops=sql.SQL(self._opclass()), m=sql.Literal(self.m),
                        ef=sql.Literal(self.ef_construction)))
                bar.close()
            except Exception as exc:  # noqa: BLE001 - any driver error becomes one line
                raise ExternalError(f"{self.who}: cannot build the HNSW index: "
                                    f"{_pg.scrub(str(exc).splitlines()[0], self._real_dsn)}") from None
        self._corpus = corpus

    def _opclass(self) -> str:
        """The HNSW operator class: the metric's for vector/halfvec storage, Hamming distance for bit."""
        if self.storage == "bit":
            return "bit_hamming_ops"
        ops = _METRICS[self.metric][1]
        return ops.replace("vector_", "halfvec_") if self.storage == "halfvec" else ops

    @staticmethod
    def _binary_vectors(conn: Any) -> bool:
        """Send query vectors in pgvector's binary format (``pgvector.psycopg``: the same float32
        values as the text literal, without printing and parsing hundreds of decimals); text
        literals when that package is missing."""
        try:
            from pgvector.psycopg import register_vector
        except ImportError:
            return False
        register_vector(conn)
        return True

    def _query_sql(self, masked: bool) -> Any:
        from psycopg import sql

        assert self._table_name is not None
        op = sql.SQL(_METRICS[self.metric][0])
        vec = sql.Identifier(self.vector_column if self.table is not None else "embedding")
        idc = sql.Identifier(self.id_column if self.table is not None else "id")
        dist = sql.SQL("({v} {op} %(q)s::vector)").format(v=vec, op=op)
        score = {"ip": sql.SQL("-{d}"), "cosine": sql.SQL("1 - {d}"), "l2": sql.SQL("-{d}")}[self.metric].format(d=dist)
        where = sql.SQL(" WHERE {id}::text = ANY(%(allowed)s)").format(id=idc) if masked else sql.SQL("")
        tie_order = sql.SQL("{d} ASC, {id}::text COLLATE \"C\" DESC").format(d=dist, id=idc)
        if self.storage != "vector":
            # The quantised index finds %(cand)s candidates; they are re-scored exactly in float32
            # and ordered with the tie rule (as the exact path).
            q = sql.SQL("%(q)s::vector")
            near = (sql.SQL("{x} <~> (binary_quantize({q})::bit({d}))").format(
                        x=self._index_expr(vec), q=q, d=sql.Literal(self._dims)) if self.storage == "bit" else
                    sql.SQL("{x} {op} ({q}::halfvec({d}))").format(
                        x=self._index_expr(vec), op=op, q=q, d=sql.Literal(self._dims)))
            return sql.SQL(
                "SELECT {id}::text, ({s})::float8 FROM (SELECT {id}, {v} FROM {t}{where} ORDER BY {near} "
                "LIMIT %(cand)s) AS c ORDER BY {o} LIMIT %(k)s").format(
                id=idc, s=score, v=vec, t=self._ident(self._table_name), where=where, near=near, o=tie_order)
        # Exact: a full scan sorted with the tie rule. HNSW: ORDER BY the distance alone, so the index is used.
        order = tie_order if self.index_kind == "exact" else dist
        return sql.SQL("SELECT {id}::text, ({s})::float8 FROM {t}{where} ORDER BY {o} LIMIT %(k)s").format(
            id=idc, s=score, t=self._ident(self._table_name), where=where, o=order)

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        import psycopg

        if self._corpus is None:
            raise RuntimeError("index() must run before search()")
        qemb = np.asarray(self.base.embed_queries(queries, ctx=ctx), dtype=np.float32)
        conn = self._open()
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        bar = progress_bar(total=len(queries), desc=f"search {self.name}", enabled=ctx.progress)
        with conn.transaction():
            if self.index_kind == "exact":
                conn.execute("SET LOCAL enable_indexscan = off")
                conn.execute("SET LOCAL enable_bitmapscan = off")
            else:
                ef = self.ef_search if self.storage == "vector" else max(self.ef_search, self._candidates(k))
                conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                if mask is not None or k > ef:  # an HNSW scan alone stops at ef_search rows: continue it
                    conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            binary = self._binary_vectors(conn)
            cand = self._candidates(k)
            for m, rows in group_by_mask(queries, mask):
                stmt = self._query_sql(m is not None).as_string(conn)  # composed once, not per query
                allowed = None if m is None else [self._corpus.ids[i] for i in np.flatnonzero(m)]
                for s in range(0, len(rows), self.pipeline):
                    chunk = rows[s : s + self.pipeline]
                    curs = []
                    try:  # one pipeline: the statements go out together, no round trip per query
                        with conn.pipeline():
                            for i in chunk:
                                cur = conn.cursor()
                                q = qemb[i] if binary else vector_literal(qemb[i])
                                cur.execute(stmt, {"q": q, "k": k, "allowed": allowed, "cand": cand}, prepare=True)
                                curs.append(cur)
                        hits = [cur.fetchall() for cur in curs]
                    except psycopg.Error as exc:
                        first = queries.ids[chunk[len(curs) - 1 if curs else 0]]
                        raise ExternalError(f"{self.who}: query {first!r}"
                                            f"{'' if len(chunk) == 1 else ' (or one of the ' + str(len(chunk)) + ' sent with it)'}: "
                                            f"{_pg.scrub(str(exc).splitlines()[0], self._real_dsn)}") from None
                    for i, h in zip(chunk, hits, strict=True):
                        out[queries.ids[i]] = rank(h)[:k]
                    bar.update(len(chunk))
        bar.close()
        return Run.from_ranked(self.name, {q: out[q] for q in queries.ids})

    def extra_metrics(self, *, ctx: ArmContext, run: Run, queries: Queries, k: int, depth: int) -> dict[str, float]:
        """For ``index=hnsw``: ``ann_recall@k``, the recall of the base dense arm's exact top-``k``."""
        if self.index_kind != "hnsw":
            return {}
        from ..ann import recall_of_exact

        exact = ctx.search(self.base, queries, k=depth)
        return {f"ann_recall@{k}": recall_of_exact(run, exact, k=k, query_ids=queries.ids)}
