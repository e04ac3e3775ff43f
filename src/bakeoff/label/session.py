"""Starting a labelling session: check every input, pool, then serve the app.

Order (so that bad input fails fast and leaves the database untouched): the options; the
pool arm specifications (unknown arm -> exit 2); an existing database, opened read-only
(corrupt file, other dataset or other settings -> exit 2); the dataset and the query
source; the listening socket (port in use -> exit 2); only then is the database written:
a new one is created whole (queries and pools, :meth:`Store.create`), an existing one gets
the pools it lacks. The server listens on 127.0.0.1 unless another host is asked for.

Defaults for a new database: depth 20, seed 0, overlap 0.1 (a tenth of the queries are
routed to a second annotator). Restarting with no ``--pool``/``--depth``/... reuses the
database's settings; giving different ones is an error (a database holds one pool design).
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
from starlette.applications import Starlette

from ..arms.base import Arm
from ..cache import Cache, default_cache_dir
from ..data.datasets import DatasetSpec, open_dataset
from ..data.judgments import connect_readonly, read_meta
from ..data.model import Dataset, Queries
from ..errors import ConfigError, InputError
from ..runner.config import build_arms, parse_arm_spec
from ..runner.context import Context
from .app import NAME_RULE, annotator_name, make_app, valid_annotator
from .guard import allowed_hosts, new_key
from .guidelines import read_guidelines
from .pool import ResultsPool, pool_from_results, pool_queries, with_gold
from .sources import (
    QuerySet,
    SourceQuery,
    dataset_queries,
    log_queries,
    routed_twice,
    sample_indices,
    synthetic_queries,
)
from .store import Store, now

__all__ = ["LabelOptions", "Session", "open_session", "serve_labelling"]

log = logging.getLogger("bakeoff")

DEFAULT_DEPTH = 20
DEFAULT_OVERLAP = 0.1
DEFAULT_PORT = 8765


@dataclass(frozen=True, kw_only=True)
class LabelOptions:
    """``bakeoff label`` options; ``None`` means "the database's setting, else the default"."""

    dataset: Path | None
    db: Path
    pool: tuple[str, ...] = ()
    from_results: Path | None = None
    guidelines: Path | None = None
    gold: int | None = None
    depth: int | None = None
    split: str = "test"
    annotator: str | None = None
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    review: bool = False
    log: Path | None = None
    sample: int | None = None
    weighted: bool = False
    seed: int | None = None
    overlap: float | None = None
    cache: str = "use"
    cache_dir: Path | None = None
    progress: bool = True


def _check_options(o: LabelOptions) -> None:
    if o.from_results is not None:
        if o.pool:
            raise ConfigError("--from pools the results' own runs (or holes); give no --pool with it")
        if o.review or o.log is not None:
            raise ConfigError("--from judges the run's dataset queries; give no --review or --log with it")
        if not o.from_results.exists():
            raise ConfigError(f"--from {o.from_results}: no such results folder or holes file")
    if o.depth is not None and o.depth < 1:
        raise ConfigError(f"--depth must be at least 1, got {o.depth}")
    if o.overlap is not None and not 0.0 <= o.overlap <= 1.0:
        raise ConfigError(f"--overlap must be between 0 and 1, got {o.overlap}")
    if o.annotator is not None and not valid_annotator(o.annotator):
        raise ConfigError(f"--annotator {o.annotator!r}: use {NAME_RULE}")
    if o.review and o.log is not None:
        raise ConfigError("--review (a synthetic set) and --log (a query log) are two query sources; give one")
    if o.gold is not None and o.gold < 0:
        raise ConfigError(f"--gold must be 0 or more, got {o.gold}")
    if o.sample is not None and o.sample < 1:
        raise ConfigError(f"--sample must be at least 1, got {o.sample}")
    if not 0 <= o.port <= 65535:
        raise ConfigError(f"--port must be 0-65535, got {o.port}")
    if o.cache not in ("use", "refresh", "off"):
        raise ConfigError(f"--cache must be use, refresh or off, got {o.cache!r}")


def _source_kind(o: LabelOptions) -> str | None:
    return "synthetic" if o.review else "log" if o.log is not None else None


def _settle(o: LabelOptions, meta: dict[str, Any] | None) -> dict[str, Any]:
    """The effective settings: the database's, checked against the options given."""
    want = {"pool": [s.strip() for s in o.pool] or None, "depth": o.depth, "seed": o.seed, "overlap": o.overlap,
            "kind": _source_kind(o), "log": str(o.log.resolve()) if o.log is not None else None,
            "sample": o.sample, "weighted": o.weighted or None, "split": o.split,
            "from": str(o.from_results.resolve()) if o.from_results is not None else None, "gold": o.gold}
    if meta is None:
        if o.dataset is None and o.from_results is None:
            raise ConfigError("a new judgments database needs a dataset folder (or --from RESULTS_DIR)")
        if o.from_results is not None:
            return {"pool": None, "from": want["from"], "depth": o.depth or DEFAULT_DEPTH, "seed": o.seed or 0,
                    "overlap": DEFAULT_OVERLAP if o.overlap is None else o.overlap, "kind": "dataset",
                    "log": None, "sample": o.sample, "weighted": False, "split": o.split, "gold": o.gold or 0}
        if not want["pool"]:
            raise ConfigError("a new judgments database needs at least one --pool ARM (e.g. --pool bm25 --pool dense)")
        return {"pool": want["pool"], "from": None, "gold": o.gold or 0, "depth": o.depth or DEFAULT_DEPTH,
                "seed": o.seed or 0,
                "overlap": DEFAULT_OVERLAP if o.overlap is None else o.overlap, "kind": want["kind"] or "dataset",
                "log": want["log"], "sample": o.sample, "weighted": o.weighted, "split": o.split}
    pool, src, routing = meta.get("pool", {}), meta.get("source", {}), meta.get("routing", {})
    have = {"pool": pool.get("arms"), "depth": pool.get("depth"), "seed": pool.get("seed"),
            "overlap": routing.get("overlap"), "kind": src.get("kind"), "log": src.get("path"),
            "sample": src.get("sample"), "weighted": src.get("sampling") == "frequency-weighted" or None,
            "split": (meta.get("dataset") or {}).get("split"), "from": (pool.get("from") or {}).get("source"),
            "gold": pool.get("gold", 0)}
    flags = {"pool": "--pool", "depth": "--depth", "seed": "--seed", "overlap": "--overlap", "kind": "query source",
             "log": "--log", "sample": "--sample", "weighted": "--weighted", "split": "--split", "from": "--from",
             "gold": "--gold"}
    for key, given in want.items():
        if given is not None and key != "split" and given != have[key]:
            raise ConfigError(f"{o.db}: this database was made with {flags[key]} {have[key]!r}, not {given!r}; "
                              "restart without it (the database keeps its settings) or use another --db")
    if o.split != "test" and o.split != have["split"]:
        raise ConfigError(f"{o.db}: this database was made with --split {have['split']!r}, not {o.split!r}")
    return {**have, "weighted": bool(have["weighted"]), "split": have["split"] or o.split}


def _read_existing(db: Path) -> dict[str, Any] | None:
    if not db.exists():
        return None
    conn = connect_readonly(db)
    try:
        return read_meta(conn)
    finally:
        conn.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # listening socket says TCP (proto 0 would leave Nagle on: +40 ms per response on loopback)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        why = "is already in use" if exc.errno == 98 else f"cannot be bound ({exc.strerror})"
        raise ConfigError(f"--port {port}: {host}:{port} {why}; pick another port or --port 0 for a free one") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _queries(settings: dict[str, Any], ds: Dataset, o: LabelOptions) -> QuerySet:
    rng = np.random.default_rng(settings["seed"])
    if settings["kind"] == "synthetic":
        return synthetic_queries(ds, sample=settings["sample"], rng=rng)
    if settings["kind"] == "log":
        return log_queries(settings["log"], sample=settings["sample"], weighted=settings["weighted"], rng=rng)
    return dataset_queries(ds, sample=settings["sample"], rng=rng)


def _pooled_queries(ds: Dataset, rp: ResultsPool, settings: dict[str, Any]) -> QuerySet:
    """The dataset's queries that have something to judge in ``rp``, in dataset order (a
    seeded uniform sample of them with ``--sample``)."""
    ids = [q for q in ds.queries.ids if q in rp.pools]
    idx = sample_indices(len(ids), sample=settings["sample"], rng=np.random.default_rng(settings["seed"]))
    qs = tuple(SourceQuery(ids[i], ds.queries[ids[i]].text, "dataset") for i in idx)
    return QuerySet(qs, {"kind": "dataset", "name": ds.name, "split": ds.split, "sample": settings["sample"],
                         "counts": {"available": len(ds.queries), "with_pairs_to_judge": len(ids),
                                    "sampled": len(qs)}})


@dataclass
class Session:
    """A checked, pooled labelling session: the open store, the dataset, the bound socket."""

    options: LabelOptions
    store: Store
    dataset: Dataset
    sock: socket.socket
    pool_one: Callable[[str, str], None] | None
    key: str = field(default_factory=new_key, repr=False)

    @property
    def url(self) -> str:
        """The page to open, carrying the launch key (:mod:`bakeoff.label.guard`)."""
        host, port = self.sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        a = self._annotator
        page = "review" if a and self.store.has_review() and self.store.review_view(a).pending else "label"
        path = f"/{page}/{quote(a)}" if a else "/"
        return f"http://{shown}:{port}{path}?key={self.key}"

    @property
    def _annotator(self) -> str | None:
        return annotator_name(self.options.annotator) if self.options.annotator else None

    def app(self) -> Starlette:
        host, port = self.sock.getsockname()[:2]
        hosts = allowed_hosts(host, asked=self.options.host)
        if hosts == ["*"]:
            log.warning("listening on all interfaces (%s): any host name is accepted; the key in the printed URL "
                        "still guards every page and action", host)
        elif not ipaddress.ip_address(host).is_loopback:
            log.warning("listening on %s: anyone who can reach this address and has the printed URL can judge", host)
        ds = self.dataset
        return make_app(store=self.store, corpus=ds.corpus, title=f"{ds.name} ({ds.split})", allowed_hosts=hosts,
                        key=self.key, port=port, default_annotator=self._annotator, pool_one=self.pool_one)

    def serve(self) -> None:
        """Serve until interrupted (uvicorn on the bound socket). SIGINT and SIGTERM both stop
        it gracefully and then unwind through :func:`open_session`, whose store closing
        checkpoints the WAL into the database file; SIGTERM then exits with status 143."""
        import uvicorn

        server = uvicorn.Server(uvicorn.Config(self.app(), log_level="warning", access_log=False, lifespan="off"))
        # uvicorn re-raises the stop signal after its graceful shutdown with the handler found
        # before it started: for SIGTERM that is the default one, which would end the process
        # before the store is closed. A handler raising SystemExit lets the context unwind.
        restore = None
        if threading.current_thread() is threading.main_thread():
            restore = signal.signal(signal.SIGTERM, _exit_on_sigterm)
        try:
            server.run(sockets=[self.sock])
        finally:
            if restore is not None:
                signal.signal(signal.SIGTERM, restore)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def open_session(o: LabelOptions) -> Iterator[Session]:
    """Check every input, bind the socket, create or complete the database (module docstring)."""
    _check_options(o)
    guide = read_guidelines(o.guidelines) if o.guidelines is not None else None  # bad file -> exit 2, nothing written
    meta = _read_existing(o.db)  # corrupt / foreign database -> InputError before anything else
    settings = _settle(o, meta)
    # --from: the results' stored runs (or holes) are the pool; no arm searches anything
    arms = [] if settings["from"] else build_arms([parse_arm_spec(s) for s in settings["pool"]])  # unknown -> exit 2
    depth, seed = int(settings["depth"]), int(settings["seed"])
    rp = (pool_from_results(o.from_results, depth=depth, seed=seed, dataset=o.dataset)
          if meta is None and o.from_results is not None else None)
    folder, ds, fp = _open_folder(o, meta, settings, rp)
    qset = (_queries(settings, ds, o) if rp is None else _pooled_queries(ds, rp, settings)) if meta is None else None
    sock = _bind(o.host, o.port)
    try:
        cache = (None if o.cache == "off"
                 else Cache(o.cache_dir or default_cache_dir(), policy=o.cache))  # type: ignore[arg-type]
        ctx = Context(corpus=ds.corpus, cache=cache, progress=o.progress)

        def pool(pairs: list[tuple[str, str]]) -> dict[str, Any]:
            if not pairs or not arms:
                return {}
            log.info("pooling %d queries: top %d of %s", len(pairs), depth, ", ".join(a.name for a in arms))
            return pool_queries(arms, Queries.from_dict(dict(pairs)), ctx=ctx, depth=depth, seed=seed)

        if meta is None:
            assert qset is not None
            _create_store(o, settings, ds, folder=folder, fp=fp, qset=qset, rp=rp, arms=arms, guide=guide, pool=pool)
        store = Store(o.db)
        try:
            _update_guidelines(store, o, guide=guide, meta=meta)
            pending = store.unpooled()
            texts = dict(pending)
            for qid, docs in pool(pending).items():
                store.add_pool(qid, texts[qid], docs)
            pool_one = _live_pooler(store, arms, ctx, depth=depth, seed=seed) if store.has_review() else None
            store.mark_served()
            yield Session(o, store, ds, sock, pool_one)
        finally:
            store.close()
    finally:
        sock.close()


def _open_folder(o: LabelOptions, meta: dict[str, Any] | None, settings: dict[str, Any],
                 rp: ResultsPool | None) -> tuple[Path, Dataset, str]:
    """The dataset folder, the dataset and its corpus fingerprint, checked against an existing database's."""
    folder = rp.dataset if rp is not None else o.dataset
    if folder is None:
        assert meta is not None
        folder = Path(str((meta.get("dataset") or {}).get("path")))
    ds, _ = open_dataset(DatasetSpec(beir=str(folder), split=settings["split"]), plain=True)
    fp = ds.corpus.fingerprint()
    if meta is not None and (meta.get("dataset") or {}).get("corpus_fingerprint") != fp:
        made = meta.get("dataset") or {}
        raise InputError(f"this database was made for dataset {made.get('name')!r} (corpus fingerprint "
                         f"{str(made.get('corpus_fingerprint'))[:12]}), but {o.dataset} has corpus fingerprint "
                         f"{fp[:12]}; use the same dataset or another --db", path=o.db, field="dataset")
    return folder, ds, fp


def _create_store(o: LabelOptions, settings: dict[str, Any], ds: Dataset, *, folder: Path, fp: str, qset: QuerySet,
                  rp: ResultsPool | None, arms: list[Arm], guide: dict[str, Any] | None,
                  pool: Callable[[list[tuple[str, str]]], dict[str, Any]]) -> None:
    """Create the database: the chosen queries, their routing, their pools (with gold pairs) and the metadata."""
    depth, seed = int(settings["depth"]), int(settings["seed"])
    ready = [(q.qid, q.text) for q in qset.queries if q.status == "ready"]
    required = {q.qid: 2 if routed_twice(q.qid, overlap=settings["overlap"], seed=seed) else 1
                for q in qset.queries}
    pool_meta = _pool_meta(settings, arms, rp, qset, depth=depth, seed=seed)
    new_meta: dict[str, Any] = {
        "dataset": {"name": ds.name, "split": ds.split, "path": str(folder.resolve()),
                    "corpus_fingerprint": fp, "n_docs": len(ds.corpus)},
        "pool": pool_meta,
        "source": dict(qset.info),
        "routing": {"overlap": settings["overlap"], "seed": seed,
                    "routed_twice": sum(1 for v in required.values() if v == 2)},
        "created_at": now(),
    }
    if guide is not None:
        new_meta["guidelines"] = guide
    pools = pool(ready) if rp is None else {q: rp.pools[q] for q, _ in ready}
    pools = with_gold(pools, ds.qrels, per_query=int(settings["gold"]), seed=seed)
    new_meta["pool"]["gold"] = int(settings["gold"])
    Store.create(o.db, meta=new_meta, queries=qset.queries, required=required, pools=pools)
    _log_created(o, qset, rp, pools, pool_meta)


def _pool_meta(settings: dict[str, Any], arms: list[Arm], rp: ResultsPool | None, qset: QuerySet, *, depth: int,
               seed: int) -> dict[str, Any]:
    """The database's ``pool`` metadata: the arms pooled (or the results pooled from), depth and seed."""
    pool_meta: dict[str, Any] = {"arms": settings["pool"], "depth": depth, "seed": seed,
                                 "arm_types": {a.name: a.type for a in arms}}
    if rp is not None:
        arm_names = rp.info.get("arms") or sorted({a for docs in rp.pools.values() for d in docs
                                                   for a in d.ranks})
        by_query = rp.info["already_judged_by_query"]
        chosen = {q.qid for q in qset.queries}
        pool_meta = {"arms": arm_names, "depth": depth, "seed": seed, "arm_types": {},
                     "from": {**{k: v for k, v in rp.info.items() if k != "already_judged_by_query"},
                              "source": settings["from"],
                              "already_judged": sum(n for q, n in by_query.items() if q in chosen)}}
    return pool_meta


def _log_created(o: LabelOptions, qset: QuerySet, rp: ResultsPool | None, pools: dict[str, Any],
                 pool_meta: dict[str, Any]) -> None:
    """Log what the new database holds: its queries, the pairs pooled from results, the query log's counts."""
    log.info("created %s: %d queries from %s", o.db, len(qset.queries), qset.info.get("kind"))
    if rp is not None:
        log.info("pooled from %s (%s): %d pairs to judge over %d queries; %d pairs left out as the "
                 "dataset's qrels already judge them", rp.info["results"], rp.info["kind"],
                 sum(len(v) for v in pools.values()), len(pools), pool_meta["from"]["already_judged"])
    c = qset.info.get("counts", {})
    if qset.info.get("kind") == "log":
        log.info("query log: %d rows (total count %d), %d distinct texts, %d unique after normalisation "
                 "(%d merged, %d empty), %d sampled (%s)", c["rows"], c["total_count"], c["distinct_texts"],
                 c["unique_after_normalisation"], c["merged_by_normalisation"],
                 c["empty_after_normalisation"], c["sampled"], qset.info["sampling"])


def _update_guidelines(store: Store, o: LabelOptions, *, guide: dict[str, Any] | None,
                       meta: dict[str, Any] | None) -> None:
    """Store new ``--guidelines`` in an existing database, keeping the hashes of those they replace."""
    old = (meta or {}).get("guidelines")
    if guide is not None and meta is not None and (old or {}).get("sha256") != guide["sha256"]:
        replaced = [*(old or {}).get("replaced", []), *([old["sha256"]] if old else [])]
        store.set_meta("guidelines", {**guide, "replaced": replaced, "set_at": now()})
        log.info("guidelines %s (sha256 %s) %s", o.guidelines, guide["sha256"][:12],
                 "replace the earlier ones" if old else "added")


def _live_pooler(store: Store, arms: list[Arm], ctx: Context, *, depth: int,
                 seed: int) -> Callable[[str, str], None]:
    """The pooler of queries added while serving (review mode): the arms indexed now, then one query at a time."""
    for arm in arms:
        ctx.ensure_indexed(arm)

    ctx_lock = threading.Lock()  # the run context is not thread-safe; accepts pool one at a time

    def pool_one(qid: str, text: str) -> None:
        with ctx_lock:
            docs = pool_queries(arms, Queries.from_dict({qid: text}), ctx=ctx, depth=depth, seed=seed)
        store.add_pool(qid, text, docs[qid])

    return pool_one


def serve_labelling(o: LabelOptions, *, announce: Callable[[str], None]) -> None:
    """Check, pool and serve until interrupted (module docstring). ``announce(url)`` is
    called once the socket accepts connections."""
    with open_session(o) as session:
        announce(session.url)
        session.serve()
