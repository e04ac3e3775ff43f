"""Agreement: unweighted Cohen's kappa checked against a hand computation, ordinal
Krippendorff's alpha against an independent implementation of Krippendorff's coincidence
formulas (itself checked on the worked example of Krippendorff 2011), and the CLI."""

from __future__ import annotations

import contextlib
import io
import json
from itertools import permutations

import numpy as np
import pytest

from bakeoff.cli import main
from bakeoff.label.agreement import agreement, cohen_kappa, ordinal_alpha
from bakeoff.label.pool import PooledDoc
from bakeoff.label.sources import SourceQuery
from bakeoff.label.store import Store

A = [0, 1, 2, 3, 1, 1, 0, 2, 2, 3]
B = [0, 1, 2, 2, 1, 0, 0, 2, 3, 3]


def hand_kappa(a, b):
    """p_o = 7/10; marginals A {0:2,1:3,2:3,3:2}, B {0:3,1:2,2:3,3:2}; p_e = (6+6+9+4)/100."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    p_e = sum(a.count(g) * b.count(g) for g in range(4)) / n**2
    return (p_o - p_e) / (1 - p_e)


def independent_ordinal_alpha(units):
    """Krippendorff's alpha, ordinal metric, from the coincidence matrix (Krippendorff 2011, sec. D/E)."""
    vals = sorted({v for u in units for v in u})
    idx = {v: i for i, v in enumerate(vals)}
    o = np.zeros((len(vals), len(vals)))
    for u in units:
        if len(u) < 2:
            continue
        for i, j in permutations(range(len(u)), 2):
            o[idx[u[i]], idx[u[j]]] += 1 / (len(u) - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d = np.zeros_like(o)
    for c in range(len(vals)):
        for k in range(len(vals)):
            lo, hi = min(c, k), max(c, k)
            d[c, k] = (n_c[lo:hi + 1].sum() - (n_c[c] + n_c[k]) / 2) ** 2
    return 1 - (n - 1) * (o * d).sum() / (np.outer(n_c, n_c) * d).sum()


def test_kappa_matches_hand_computation_and_sklearn():
    assert hand_kappa(A, B) == pytest.approx(0.6, abs=1e-12)
    assert cohen_kappa(A, B) == pytest.approx(0.6, abs=1e-12)
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # p_e = 1: undefined, not 1 or 0
    assert cohen_kappa([], []) is None


def hand_quadratic_kappa(a, b):
    """1 - sum(w * O) / sum(w * E), w_ij = (i - j)^2 / 9, O observed and E chance proportions."""
    n = len(a)
    o = np.zeros((4, 4))
    for x, y in zip(a, b):
        o[x, y] += 1 / n
    e = np.outer([a.count(g) / n for g in range(4)], [b.count(g) / n for g in range(4)])
    w = np.array([[(i - j) ** 2 / 9 for j in range(4)] for i in range(4)])
    return 1 - (w * o).sum() / (w * e).sum()


def test_quadratic_weighted_kappa_beside_unweighted():
    # A and B differ by one grade on 3 of 10 items: far better agreement than unweighted kappa says
    kw = hand_quadratic_kappa(A, B)
    # by hand: sum w*O = 3 * (1/9) / 10; sum w*E = 0.1155... (from the marginals)
    assert (w_o := 3 / 9 / 10) == pytest.approx(1 / 30)
    assert kw == pytest.approx(1 - w_o / ((np.outer([.2, .3, .3, .2], [.3, .2, .3, .2])
                                          * np.array([[(i - j) ** 2 for j in range(4)] for i in range(4)]) / 9).sum()))
    assert cohen_kappa(A, B, weights="quadratic") == pytest.approx(kw, abs=1e-12)
    assert kw > cohen_kappa(A, B) + 0.2
    # a 0-vs-3 disagreement costs more than a 0-vs-1 under weights, the same without
    near, far = [0, 1, 2, 3, 0], [0, 1, 2, 3, 3]
    base = [0, 1, 2, 3, 1]
    assert cohen_kappa(near, base, weights="quadratic") != cohen_kappa(far, base, weights="quadratic")
    rows = [("q", f"d{i}", who, g) for who, gs in (("ann", A), ("bob", B)) for i, g in enumerate(gs)]
    pair = agreement(rows).pairs[0]
    assert pair.kappa == pytest.approx(0.6) and pair.kappa_quadratic == pytest.approx(kw)
    assert agreement(rows).as_dict()["cohen_kappa_quadratic"][0]["kappa"] == pytest.approx(kw)


def test_independent_alpha_reproduces_krippendorff_2011_example():
    # 4 observers x 12 units, values 1-5 (missing = None): published ordinal alpha 0.815
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
            [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    units = [[row[j] for row in data if row[j] is not None] for j in range(12)]
    assert round(independent_ordinal_alpha(units), 3) == 0.815


def test_alpha_matches_independent_implementation():
    m = np.array([A, B], dtype=float)
    want = independent_ordinal_alpha([[a, b] for a, b in zip(A, B)])
    assert ordinal_alpha(m) == pytest.approx(want, abs=1e-12)
    # three annotators with gaps
    c = [0, 1, np.nan, 3, 1, np.nan, 0, 1, 2, 3]
    m3 = np.array([A, B, c], dtype=float)
    units = [[v for v in m3[:, j] if not np.isnan(v)] for j in range(10)]
    assert ordinal_alpha(m3) == pytest.approx(independent_ordinal_alpha(units), abs=1e-12)
    assert ordinal_alpha(np.array([[1.0, 1.0], [1.0, 1.0]])) is None


def test_agreement_counts_only_shared_items():
    rows = [("q", f"d{i}", "alice", g) for i, g in enumerate(A)]
    rows += [("q", f"d{i}", "bob", g) for i, g in enumerate(B)]
    rows += [("q", "only-alice", "alice", 2), ("q", "d0", "carol", 0), ("q", "d1", "carol", 2)]
    ag = agreement(rows)
    assert ag.annotators == {"alice": 11, "bob": 10, "carol": 2}
    ab = next(p for p in ag.pairs if (p.a, p.b) == ("alice", "bob"))
    assert (ab.items, ab.observed) == (10, 0.7) and ab.kappa == pytest.approx(0.6)
    ac = next(p for p in ag.pairs if (p.a, p.b) == ("alice", "carol"))
    assert ac.items == 2 and ac.kappa == pytest.approx(hand_kappa([0, 1], [0, 2]))
    assert (ag.items, ag.items_multi, ag.alpha_items, ag.alpha_judgments) == (11, 10, 10, 22)
    units = [[A[i], B[i]] + ([0] if i == 0 else [2] if i == 1 else []) for i in range(10)]
    assert ag.alpha == pytest.approx(independent_ordinal_alpha(units), abs=1e-12)


def test_agreement_cli(tmp_path):
    qs = [SourceQuery("q", "query", "dataset")]
    Store.create(tmp_path / "j.sqlite", meta={"dataset": {"name": "t"}}, queries=qs, required={"q": 2},
                 pools={"q": [PooledDoc(f"d{i}", {"bm25": i + 1}) for i in range(10)]})
    s = Store(tmp_path / "j.sqlite")
    for i in range(10):
        s.judge("alice", "q", f"d{i}", A[i])
        s.judge("bob", "q", f"d{i}", B[i])
    s.close()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["label", "agreement", "--db", str(tmp_path / "j.sqlite")]) == 0
    text = out.getvalue()
    alpha = independent_ordinal_alpha([[a, b] for a, b in zip(A, B)])
    assert "alice / bob: items 10, observed agreement 0.7000, kappa 0.6000" in text
    assert f"Krippendorff's alpha (ordinal): {alpha:.4f} over 10 items, 20 judgments, 2 annotators" in text
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["label", "agreement", "--db", str(tmp_path / "j.sqlite"), "--json"]) == 0
    got = json.loads(out.getvalue())
    assert got["cohen_kappa_unweighted"][0]["kappa"] == pytest.approx(0.6)
    assert got["krippendorff_alpha_ordinal"]["alpha"] == pytest.approx(alpha)


def test_per_annotator_figures():
    from bakeoff.label.agreement import annotator_figures

    t = "2026-01-01T10:{:02d}:00.000+00:00"
    raw = [("q", "d1", "ann", 3, "", t.format(0)), ("q", "d2", "ann", 1, "", t.format(1)),
           ("q", "d3", "ann", 0, "", t.format(4)), ("q", "d4", "ann", 0, "", t.format(59)),  # 55 min: a break
           ("q", "d1", "bob", 3, "", t.format(2)), ("q", "d2", "bob", 2, "", t.format(3))]
    ann, bob = annotator_figures(raw)
    assert (ann.annotator, ann.judgments, dict(ann.grades), ann.mean_grade) == ("ann", 4, {0: 2, 1: 1, 2: 0, 3: 1}, 1.0)
    assert ann.shared == 2 and ann.agreement == 0.5 and ann.pace == 2.0  # median of 1 and 3 min; 55 min left out
    assert bob.shared == 2 and bob.agreement == 0.5 and bob.pace == 1.0 and bob.mean_grade == 2.5
