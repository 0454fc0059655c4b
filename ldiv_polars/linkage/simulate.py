"""Monte Carlo of the (l,delta) guarantee (Theorems 4.4 and 4.5), vectorized with numpy.

Each trial draws t datasets of N i.i.d. records ``(q, s)`` from P_{Q,S} (alias sampling; uniform
marginals use integer draws), applies the broadcast classes (a gather ``class_of[q]``), counts
the records per (class, s) with one ``bincount`` per chunk of trials, and measures

* whether each dataset is l-diverse (Def. 2.1: every non-empty class has >= l distinct values),
* whether the overall post-linkage dataset (``min`` over the t counts per class and value) is.

The empirical failure rates sit below the paper's bounds ``m l (1-p)^N`` (<= delta at the
broadcast N) and t times that. :func:`simulate_pure` contrasts a dataset-dependent anonymizer:
each dataset generalized on its own by the optimal contiguous pure l-diverse partition (Greedy
with a count threshold of 1), then linked: l_[t] collapses.

>>> from ldiv_polars.linkage.distribution import JointDistribution
>>> from ldiv_polars.linkage.mechanism import plan_mechanism
>>> plan = plan_mechanism(JointDistribution.uniform(12, 4), l=2, delta=0.1, beta="1/2")
>>> res = simulate_mechanism(plan, t=2, trials=200, seed=1)
>>> res.dataset_failure_rate <= res.bound
True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.distribution import JointDistribution
from ldiv_polars.linkage.mechanism import (
    MechanismPlan,
    class_weights,
    greedy_generalize,
)

_MAX_DRAWS_PER_CHUNK = 4_000_000
_MAX_CELLS_PER_CHUNK = 4_000_000


class _Sampler:
    """Draws i.i.d. (q, s) position pairs from a JointDistribution."""

    def __init__(self, dist: JointDistribution) -> None:
        self.dist = dist
        if dist.kind == "product":
            assert dist.wq is not None and dist.ws is not None
            self.q = _Alias(np.asarray(dist.wq, dtype=np.float64))
            ws = np.asarray([float(w) / max(dist.ws) for w in dist.ws])
            self.s = _Alias(ws)
            self.cells: _Alias | None = None
        else:
            assert dist.weight is not None
            self.cells = _Alias(dist.weight.astype(np.float64))

    def draw(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        if self.cells is None:
            return self.q.draw(rng, size), self.s.draw(rng, size)
        assert self.dist.q_idx is not None and self.dist.s_idx is not None
        e = self.cells.draw(rng, size)
        return self.dist.q_idx[e], self.dist.s_idx[e]


class _Alias:
    """Walker/Vose alias table; uniform weights use plain integer draws."""

    def __init__(self, w: np.ndarray) -> None:
        k = w.size
        self.k = k
        self.uniform = bool((w == w[0]).all())
        if self.uniform:
            return
        prob = w * (k / w.sum())
        alias = np.zeros(k, dtype=np.int64)
        small = [i for i in range(k) if prob[i] < 1.0]
        large = [i for i in range(k) if prob[i] >= 1.0]
        prob = prob.copy()
        while small and large:
            s, g = small.pop(), large.pop()
            alias[s] = g
            prob[g] -= 1.0 - prob[s]
            (small if prob[g] < 1.0 else large).append(g)
        for i in small + large:
            prob[i] = 1.0
        self.prob = prob
        self.prob32 = prob.astype(np.float32)
        self.alias = alias.astype(np.int32 if k < 2**31 - 1 else np.int64)

    def draw(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        dtype = np.int32 if self.k < 2**31 - 1 else np.int64
        i = rng.integers(0, self.k, size=size, dtype=dtype)
        if self.uniform:
            return i
        u = rng.random(size, dtype=np.float32)
        return np.where(u < self.prob32[i], i, self.alias[i])


def draw_dataset(dist: JointDistribution, n: int, seed: int | np.random.Generator = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """One dataset of ``n`` i.i.d. records as QI and sensitive *positions* (into
    ``dist.domain`` and ``dist.sensitive_values``)."""
    n = require_int_at_least("n", n, 1)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return _Sampler(dist).draw(rng, n)


def dataset_frame(dist: JointDistribution, n: int, seed: int | np.random.Generator = 0) -> Any:
    """One dataset of ``n`` i.i.d. records as a Polars DataFrame with the real QI columns and the
    sensitive column (for applying a plan with the engine and the checker)."""
    q, s = draw_dataset(dist, n, seed)
    return dist.domain[q.tolist()].with_columns(dist.sensitive_values.gather(s.tolist()))


@dataclass(frozen=True)
class SimulationResult:
    """Empirical failure rates of the mechanism and the paper's bounds."""

    trials: int
    t: int
    N: int
    l: int
    classes: int
    dataset_failure_rate: float      # P[a given dataset is not l-diverse]
    any_dataset_failure_rate: float  # P[some of the t datasets is not l-diverse]
    post_linkage_failure_rate: float  # P[the post-linkage dataset is not l-diverse] (Def 2.1)
    post_linkage_strict_rate: float  # P[some class keeps < l values after linkage, even 0]
    bound: float                     # m l (1-p)^N  (<= delta at the broadcast N)
    linked_bound: float              # t m l (1-p)^N
    l_t_histogram: dict[int, int]    # post-linkage l_[t] per trial

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-ready dict."""
        return asdict(self)


def simulate_mechanism(plan: MechanismPlan, *, t: int = 2, trials: int = 10_000,
                       N: int | None = None, seed: int = 0) -> SimulationResult:
    """Monte Carlo of Mech-(l,delta) under ``plan`` (see the module docstring). ``N`` defaults
    to the plan's sample size; smaller N shows the failure probability growing against the
    bound ``m l (1-p)^N``.

    Records are drawn directly as (class, s) cells with probability
    ``P(c, s) = sum_{q in c} P(q, s)`` — the same distribution as drawing ``(q, s)`` and then
    applying the classes (:func:`dataset_frame` + ``plan.anonymize`` does the latter with the
    engine; the tests check both agree). Exact class weights come from the plan.
    """
    t = require_int_at_least("t", t, 1)
    trials = require_int_at_least("trials", trials, 1)
    n = plan.N if N is None else require_int_at_least("N", N, 1)
    dist = plan.dist
    r, ns, l = plan.classes, dist.n_sensitive, plan.l
    cells = r * ns
    cell_sampler = _Alias(_float_cell_weights(class_weights(dist, plan.partition).ravel()))
    rng = np.random.default_rng(seed)
    per_chunk = max(1, min(trials, _MAX_DRAWS_PER_CHUNK // max(1, n * t),
                           _MAX_CELLS_PER_CHUNK // max(1, cells * t)))
    tally = _LinkageTally()
    done = 0
    while done < trials:
        b = min(per_chunk, trials - done)
        rows = b * t
        idx = cell_sampler.draw(rng, (rows, n))
        idx += (np.arange(rows, dtype=idx.dtype) * cells)[:, None]
        tally.add(np.bincount(idx.ravel(), minlength=rows * cells).reshape(b, t, r, ns), l)
        done += b
    m = float(plan.m)
    bound = min(1.0, m * l * math.exp(n * math.log1p(-float(plan.p))))
    return SimulationResult(
        trials=trials, t=t, N=n, l=l, classes=r,
        dataset_failure_rate=tally.ds_fail / (trials * t),
        any_dataset_failure_rate=tally.any_fail / trials,
        post_linkage_failure_rate=tally.post_fail / trials,
        post_linkage_strict_rate=tally.strict_fail / trials,
        bound=bound, linked_bound=min(1.0, t * bound),
        l_t_histogram=dict(sorted(tally.hist.items())),
    )


def _float_cell_weights(w: np.ndarray) -> np.ndarray:
    """Cell weights as float64; exact big integers (object dtype) are scaled by the largest
    first, so that none overflows."""
    if w.dtype == object:
        top = int(max(w))
        return np.asarray([float(Fraction(int(x), top)) for x in w], dtype=np.float64)
    return w.astype(np.float64)


@dataclass
class _LinkageTally:
    """Failure counts over simulated trials: datasets that are not l-diverse (``ds_fail``;
    trials with any: ``any_fail``), trials whose linked classes are not l-diverse
    (``post_fail``; counting classes left with no shared value too: ``strict_fail``), and the
    histogram of post-linkage diversity ``l_[t]`` (0: nothing shared)."""

    ds_fail: int = 0
    any_fail: int = 0
    post_fail: int = 0
    strict_fail: int = 0
    hist: dict[int, int] = field(default_factory=dict)

    def add(self, counts: np.ndarray, l: int) -> None:
        """Count a chunk of trials: ``counts[trial, dataset, class, s]``."""
        ns = counts.shape[3]
        present = counts > 0
        distinct = present.sum(axis=3)                      # (b, t, r)
        nonempty = counts.sum(axis=3) > 0
        fail = ((distinct < l) & nonempty).any(axis=2)      # (b, t)
        self.ds_fail += int(fail.sum())
        self.any_fail += int(fail.any(axis=1).sum())
        linked = present.all(axis=1)                        # min_j n_j > 0  (b, r, ns)
        m_t = linked.sum(axis=2)                            # (b, r)
        self.post_fail += int(((m_t < l) & (m_t > 0)).any(axis=1).sum())
        self.strict_fail += int((m_t < l).any(axis=1).sum())
        masked = np.where(m_t > 0, m_t, ns + 1).min(axis=1)
        for v, c in zip(*np.unique(masked, return_counts=True)):
            key = 0 if v == ns + 1 else int(v)
            self.hist[key] = self.hist.get(key, 0) + int(c)


@dataclass(frozen=True)
class PureResult:
    """Dataset-dependent pure l-diversity, then linkage: l_[t] per trial."""

    trials: int
    t: int
    N: int
    l: int
    l_t: list[int]               # post-linkage diversity l_[t] of each trial
    classes: list[list[int]]     # classes of each dataset, per trial
    collapse_rate: float         # P[l_[t] = 1]
    below_l_rate: float          # P[l_[t] < l]
    mechanism_l_t: list[int] | None = None  # the plan's classes on the same draws

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-ready dict."""
        return asdict(self)


def simulate_pure(dist: JointDistribution, l: int, N: int, *, t: int = 2, trials: int = 50,
                  seed: int = 0, plan: MechanismPlan | None = None) -> PureResult:
    """Each of t datasets (N i.i.d. records) anonymized on its own by the optimal contiguous
    *pure* l-diverse generalization of its empirical counts (Greedy-Generalize with threshold
    one record), then linked: for every QI vector present in all t datasets,
    ``n_[t](s) = min_j n^(c_j(q))(s)``; ``l_[t]`` is the minimum distinct count.

    With ``plan``, the *same* draws are also anonymized with the plan's broadcast classes and
    linked (``mechanism_l_t``), so both anonymizers are compared on the same data.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when ``l`` is outside 1 to the number
    of sensitive values or the plan's domain is not the distribution's."""
    t = require_int_at_least("t", t, 2)
    trials = require_int_at_least("trials", trials, 1)
    N = require_int_at_least("N", N, 1)
    if not 1 <= l <= dist.n_sensitive:
        raise InvalidParameterError(f"l must be in [1, {dist.n_sensitive}]")
    rng = np.random.default_rng(seed)
    sampler = _Sampler(dist)
    nq = dist.n_qi
    lts: list[int] = []
    mech_lts: list[int] = []
    all_classes: list[list[int]] = []
    mech_cls = None if plan is None else plan.partition.class_of_position()
    if plan is not None and plan.dist.n_qi != nq:
        raise InvalidParameterError("the plan's domain differs from the distribution's")
    for _ in range(trials):
        lt, mech_lt, n_classes = _pure_trial(dist, sampler, rng, l, N, t, plan, mech_cls)
        lts.append(lt)
        if mech_lt is not None:
            mech_lts.append(mech_lt)
        all_classes.append(n_classes)
    arr = np.asarray(lts)
    return PureResult(trials=trials, t=t, N=N, l=l, l_t=lts, classes=all_classes,
                      collapse_rate=float((arr == 1).mean()),
                      below_l_rate=float((arr < l).mean()),
                      mechanism_l_t=mech_lts if plan is not None else None)


def _pure_trial(dist: JointDistribution, sampler: _Sampler, rng: np.random.Generator, l: int,
                N: int, t: int, plan: MechanismPlan | None, mech_cls: np.ndarray | None
                ) -> tuple[int, int | None, list[int]]:
    """One trial of :func:`simulate_pure`: ``t`` datasets of ``N`` records drawn, each
    generalized on its own and linked. Returns the post-linkage ``l_[t]`` (0: no common user
    shares a value), the same for the plan's classes (None without a plan) and each dataset's
    number of classes."""
    nq, ns = dist.n_qi, dist.n_sensitive
    linked: np.ndarray | None = None
    mech_linked: np.ndarray | None = None
    present_all = np.ones(nq, dtype=bool)
    n_classes: list[int] = []
    for _j in range(t):
        q, s = sampler.draw(rng, N)
        counts = np.bincount(q * ns + s, minlength=nq * ns).reshape(nq, ns)
        present_all &= counts.sum(axis=1) > 0
        if int((counts.sum(axis=0) > 0).sum()) < l:
            raise InvalidParameterError(
                f"a dataset of N={N} holds fewer than l={l} distinct values; raise N")
        seen = counts.sum(axis=0) > 0  # values absent from this dataset play no role
        emp = JointDistribution.from_matrix(counts[:, seen], domain=dist.domain,
                                            sensitive_values=dist.sensitive_values.filter(
                                                pl.Series(seen)))
        part = greedy_generalize(emp, l, _one_record(emp))
        cls = part.class_of_position()
        ccounts = np.zeros((part.classes, ns), dtype=np.int64)
        np.add.at(ccounts, cls, counts)
        per_q = ccounts[cls]                     # class counts seen from every q: (nq, ns)
        linked = per_q if linked is None else np.minimum(linked, per_q)
        n_classes.append(part.classes)
        if mech_cls is not None:
            assert plan is not None
            mc = np.zeros((plan.classes, ns), dtype=np.int64)
            np.add.at(mc, mech_cls, counts)
            mech_linked = mc if mech_linked is None else np.minimum(mech_linked, mc)
    mech_lt = None
    if mech_linked is not None:
        mm = (mech_linked > 0).sum(axis=1)
        mm = mm[mm > 0]
        mech_lt = int(mm.min()) if mm.size else 0
    assert linked is not None
    m_q = (linked > 0).sum(axis=1)[present_all]
    m_q = m_q[m_q > 0]  # a common user (Assumption 1) needs a shared value
    return (int(m_q.min()) if m_q.size else 0), mech_lt, n_classes


def _one_record(dist: JointDistribution) -> Any:
    from fractions import Fraction

    return Fraction(1, dist.total)


@dataclass(frozen=True)
class EngineResult:
    """The mechanism run end to end with the engine: t owners' tables (real QI columns),
    ``plan.anonymize`` (lazy class expression / join + the foundation checker), releases,
    :func:`~ldiv_polars.linkage.attack.post_linkage`."""

    trials: int
    t: int
    N: int
    l: int
    achieved_l: list[list[int]]   # per trial, per dataset: the checker's achieved l
    passed: list[list[bool]]      # per trial, per dataset: l-diverse?
    l_t: list[int]                # per trial: post-linkage l_[t] over the domain

    @property
    def dataset_failure_rate(self) -> float:
        """The share of (trial, release) pairs whose release failed its model."""
        flat = [p for row in self.passed for p in row]
        return 1 - sum(flat) / len(flat)

    @property
    def post_linkage_failure_rate(self) -> float:
        """The share of trials whose post-linkage diversity fell below ``l``."""
        return sum(1 for v in self.l_t if v < self.l) / len(self.l_t)

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-ready dict."""
        return asdict(self)


def simulate_engine(plan: MechanismPlan, *, t: int = 2, trials: int = 10, N: int | None = None,
                    seed: int = 0) -> EngineResult:
    """A few trials of the whole pipeline in the engine (slow next to
    :func:`simulate_mechanism`, which it cross-checks): each owner's N records become a Polars
    table with the real QI columns, the broadcast classes are applied and verified by
    ``plan.anonymize``, and the t releases are linked by ``post_linkage`` over the plan's
    domain. Draws the same records as :func:`simulate_pure` with the same ``seed``.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the sensitive column is named
    like a QI column."""
    from ldiv_polars.linkage.attack import post_linkage

    t = require_int_at_least("t", t, 1)
    trials = require_int_at_least("trials", trials, 1)
    n = plan.N if N is None else require_int_at_least("N", N, 1)
    dist = plan.dist
    rng = np.random.default_rng(seed)
    s_name = dist.sensitive
    if s_name in dist.qi:
        raise InvalidParameterError("the sensitive column is named like a QI column")
    achieved: list[list[int]] = []
    passed: list[list[bool]] = []
    lts: list[int] = []
    domain = dist.domain.lazy()
    for _ in range(trials):
        rels = []
        row_a: list[int] = []
        row_p: list[bool] = []
        for j in range(t):
            frame = dataset_frame(dist, n, rng)
            anon = plan.anonymize(frame, s_name)
            row_a.append(int(anon.achieved_l or 0))
            row_p.append(bool(anon.passed))
            rels.append(anon.release(name=f"owner{j + 1}"))
        post = post_linkage(rels, domain)
        lts.append(int(post.l_t or 0))
        achieved.append(row_a)
        passed.append(row_p)
    return EngineResult(trials=trials, t=t, N=n, l=plan.l, achieved_l=achieved, passed=passed,
                        l_t=lts)
