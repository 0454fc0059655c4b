"""Checking one lattice node with a suppression limit.

A node *passes* when the rows of the classes failing any model can be suppressed within the
limit. The models are evaluated only through the foundation's
:func:`~ldiv_polars.models.evaluate_classes` on the node's rolled-up frequency set.

Semantics (decided and documented in ``docs/anonymize.md``):

- The models judge the **retained** rows: a suppressed row belongs to no class. For models
  that compare a class with the table's distribution (t-closeness, delta-disclosure,
  beta-likeness: ``model.needs_q``), the reference is the distribution of the retained rows —
  the table that is actually published, and the one :func:`ldiv_polars.check` recomputes when
  the output is re-verified. Removing classes changes that distribution, so the failing set is
  computed as a fixpoint: evaluate, drop the failing classes, re-evaluate the rest against the
  new reference (only the models that read it: a retained class keeps its rows, so the others'
  verdicts stand), until nothing new fails or the limit is exceeded.
- Monotonicity with suppression ("if a node passes, every generalization passes"): it holds
  when every model is *union-closed* — a class that contains a passing class passes. Then the
  failing rows of a generalization are a subset of the failing rows of the node. k-anonymity
  (a union of a class of size >= k has size >= k) and distinct l-diversity (>= l distinct
  values) are union-closed; entropy/recursive l-diversity, (alpha,k), t-closeness and the
  other distribution models are not (a large homogeneous class can drag a diverse one down
  when merged), so with suppression > 0 they are searched without that monotonicity; the
  search prunes them with their *suppression floors* instead (:func:`relaxations`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import FrequencySet, count_name, unique_name
from ldiv_polars.core.validate import require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import Model
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain, class_verdict
from ldiv_polars.models.evaluate import evaluate_classes
from ldiv_polars.models.population_table import population_models
from ldiv_polars.models.table_level import classes_to_suppress, table_models
from ldiv_polars.search.counting import masked_sum
from ldiv_polars.search.population import WEIGHTS, PopulationCounts, population_counts
from ldiv_polars.search.rollup import CLASS, EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled


def suppression_limit_rows(fraction: float, total: int) -> int:
    """Largest number of rows that may be suppressed: ``floor(fraction * total)``."""
    f = require_real("suppression", fraction, low=0.0, high=1.0)
    return int(math.floor(f * total + 1e-9))


def rows_in(size: np.ndarray, mask: np.ndarray) -> int:
    """The rows of the classes ``mask`` (bool) selects, ``size`` the rows of each class: an
    exact integer sum (:func:`~ldiv_polars.search.counting.masked_sum`; on a scattered mask it
    costs a fraction of ``size[mask].sum()``, which gathers the selected sizes first).

    >>> rows_in(np.array([3, 1, 4]), np.array([True, False, True]))
    7
    """
    return masked_sum(size, mask)


def predicate_monotone(models: Sequence[Model], suppression: bool) -> tuple[bool, str]:
    """Whether "node passes" is monotone over the lattice, and why (for the result)."""
    non = [m.describe() for m in models if not m.monotone]
    if non:
        return False, f"not monotone under generalization: {', '.join(non)}"
    if suppression:
        open_ = [m.describe() for m in models if not m.union_closed]
        if open_:
            return False, (f"with suppression > 0, {', '.join(open_)} is not monotone (a merged "
                           f"class can fail where a part passed)")
        return True, "monotone: every model is union-closed, so suppression keeps monotonicity"
    return True, "monotone: every model is monotone and nothing is suppressed"


def codes_suffice(models: Sequence[Model], sensitive: Sequence[str]) -> bool:
    """Whether the models may read the sensitive column as integer codes: one sensitive column
    and every model reads only the identity of its values (``Model.identity_only``). The
    caller that builds the encoded frequency set sets its ``codes_only`` from it."""
    return len(sensitive) == 1 and all(m.identity_only for m in models)


def relaxations(models: Sequence[Model]) -> list[Model]:
    """The models whose *suppression floors* (:meth:`Model.suppression_floor
    <ldiv_polars.models.Model.suppression_floor>`) the search sums: those that state one (a
    union-closed model, a model with a union-closed :meth:`~ldiv_polars.models.Model.relaxation`,
    or one that overrides the floor, e.g. entropy and recursive l-diversity, t-closeness).

    The sum of the floors over a node's classes is a lower bound of the rows suppressed at the
    node and at every specialization of it, so when it exceeds the suppression limit the node
    and everything below it fail: the sound pruning the search uses for predicates that are not
    monotone with suppression (docs/anonymize.md, "Sound pruning with suppression")."""
    own = Model.suppression_floor
    return [m for m in models if m.union_closed or m.relaxation() is not None
            or type(m).suppression_floor is not own]


FLOOR_MARGIN = 1e-9
"""Relative margin of a floor sum over the suppression limit before it decides a node: floors
are float sums (each a few roundings from its exact value), so a sum within
``FLOOR_MARGIN * rows + 1e-6`` of the limit decides nothing."""


@dataclass(frozen=True)
class NodeVerdict:
    passed: bool
    suppressed: np.ndarray  # boolean mask over the node's classes
    suppressed_rows: int
    evaluations: int
    relaxed_passed: bool = True  # the models' suppression floors sum within the limit

    @property
    def retained_classes(self) -> int:
        """The classes not suppressed (a count of the mask, no inverted copy of it)."""
        return int(self.suppressed.shape[0] - np.count_nonzero(self.suppressed))

    @property
    def zero_suppression(self) -> bool:
        """Whether the node passes without suppressing any row."""
        return self.passed and self.suppressed_rows == 0


def _sensitive_domain(efs: EncodedFrequencySet) -> SensitiveDomain:
    """The :class:`SensitiveDomain` of ``efs``'s sensitive values, made once per encoding
    (kept in its ``memo``): what the models derive from it (an ordered distance's order,
    the values a predicate selects) is then derived once per search and optimum."""
    memo = efs.encoding.memo
    dom = memo.get("sensitive_domain")
    if dom is None or dom.values is not efs.sensitive_table:  # type: ignore[attr-defined]
        dom = memo["sensitive_domain"] = SensitiveDomain(efs.sensitive_table)
    return dom  # type: ignore[return-value]


def _size_tests(models: Sequence[Model], relaxed: bool) -> tuple[int | None, int]:
    """``(size_k, size_floor)`` of a :class:`NodeChecker`'s per-class ``models``. ``size_k``:
    every model reads class sizes only, so a class fails iff its size is below the largest
    ``min_class_size`` (the models' verdict without building rows); else None. ``size_floor``:
    a class below it fails some model (``Model.min_class_size`` is a guaranteed bound), so a
    node whose such classes hold more rows than the limit fails without the models' rows
    (:meth:`NodeChecker._too_small`); 1 (no such test) beside suppression floors (``relaxed``),
    whose outcome the node's record reports."""
    if relaxed:
        return None, 1
    floor = max((m.min_class_size for m in models), default=1)
    return (floor if models and all(m.sizes_only for m in models) else None), floor


class NodeChecker:
    """Evaluates nodes' rolled-up frequency sets with the models and the suppression limit.

    The suppression floors of the ``relaxed`` models (see :func:`relaxations`) are summed on
    every check, before the models are evaluated; the result is reported separately
    (``NodeVerdict.relaxed_passed``), and a node whose floors exceed the limit is decided
    failing without evaluating the models."""

    def __init__(self, efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int,
                 relaxed: Sequence[Model] = ()) -> None:
        self.efs = efs
        self._side_models(efs, models)
        self.models = [m for m in models if not m.table_level and not m.population_based
                       and not m.needs_weight]
        # floors read sensitive ids as the values of ONE sensitive column, or of every
        # sensitive column for a model judging each attribute (multi-attribute)
        self.relaxed = [m for m in relaxed
                        if len(efs.sensitive) <= 1 or m.each_attribute is not None]
        self._relaxed_order = sorted(self.relaxed, key=lambda m: not m.union_closed)
        self._tightens = {id(m) for m in self.relaxed
                          if type(m).tighter_floor is not Model.tighter_floor}
        self.limit = int(limit_rows)
        self.global_ = [m for m in self.models if getattr(m, "needs_q", False)]
        self.global_models = bool(self.global_)
        self.evaluations = 0
        """Model evaluations (each decides every class of one or more roll-ups)."""
        self.engine_evaluations = 0
        """Those done by ``evaluate_classes`` in the query engine (the others in numpy,
        ``Model.array_verdict``)."""
        self.floor_decided = 0
        """Nodes decided failing by their suppression floors alone (no model evaluation)."""
        self.floors_first = True
        """Whether a check sums the floors before the models (a node beyond the limit is then
        decided without them). The exhaustive strategy turns it off once Flash over the
        floors has tagged the lattice: the nodes it checks after that are within the limit
        by their tags, and computing the floors again would only rarely spare an
        evaluation (the verdicts are the same either way)."""
        self._table_counts: np.ndarray | None = None
        # the engine's frame: class id and count named apart from the sensitive columns
        self._class = unique_name(CLASS, efs.sensitive)
        self._count = count_name([self._class, *efs.sensitive])
        self.codes_suffice = codes_suffice(self.models, efs.sensitive)
        """The models read only the identity of sensitive values: the encoded frequency set
        may hand them integer codes (its builder sets ``codes_only`` from this)."""
        self.arrays = len(efs.sensitive) <= 1 or all(m.each_attribute is not None
                                                     for m in self.models)
        """Whether the numpy verdicts are tried (``Model.array_verdict``; sensitive ids
        identify the values, :attr:`domain` holds them). Turned off the first time a model
        has no array form."""
        self.domain = _sensitive_domain(efs) if efs.sensitive else None
        """The sensitive values behind the ids (models reading values derive from it once:
        one domain per encoding, shared by the search's checker and the optimum's)."""
        self.size_k, self.size_floor = _size_tests(self.models, bool(self.relaxed))
        total = int(efs.total)
        self.slack = self.limit / total if total else 0.0
        self._floor_limit = self.limit + FLOOR_MARGIN * total + 1e-6

    def _side_models(self, efs: EncodedFrequencySet, models: Sequence[Model]) -> None:
        """The models judged apart from the per-class verdicts: table-level, against a
        population table, and on sums of sampling weights."""
        self.tables = table_models(list(models))
        """The table-level models (risk thresholds): judged on the retained class sizes after
        the per-class models, suppressing the smallest classes within the limit."""
        self.population = population_models(list(models))
        """The models judged against a population table (k-map with a population,
        delta-presence): each class's population count is rolled up with the node
        (:class:`~ldiv_polars.search.population.PopulationCounts`) and the model decides."""
        self._population_counts = {id(m.population): population_counts(m.population,
                                                                        efs.encoding)
                                   for m in self.population}
        self.weighted = [m for m in models if m.needs_weight]  # F_k rolled up: _weight_sums
        self._weights = _weight_sums(efs, self.weighted)

    def _evaluate(self, rows: tuple[np.ndarray, np.ndarray, np.ndarray], n_classes: int, *,
                  sizes: np.ndarray | None = None, whole: bool = False,
                  enc: EncodedRows | None = None,
                  models: Sequence[Model] | None = None) -> np.ndarray:
        """Failing-class mask of the models (``models``, default all) on the arrays ``(class,
        sensitive id, n)``: in numpy when every model has an array verdict and no class is
        uncertain there, else from one ``evaluate_classes`` call. ``enc``: the same rows
        already encoded (:meth:`encoded`)."""
        models = self.models if models is None else models
        self.evaluations += 1
        if self.arrays:
            if enc is None:
                enc = self.encoded(rows, n_classes, sizes, whole)
            out = self._evaluate_arrays(enc, models)
            if out is not None:
                return out
        self.engine_evaluations += 1
        frame = self.efs.frame_of(*rows, class_col=self._class, count=self._count)
        fs = FrequencySet(frame.lazy(), (self._class,), self.efs.sensitive, self._count)
        cols = [f"pass_{m.key}" for m in models]
        ok = pl.all_horizontal(cols) if cols else pl.lit(True)
        cl = evaluate_classes(fs, list(models)).select(
            pl.col(self._class), ok.alias("__ok")).collect(engine="in-memory")
        fail = np.zeros(n_classes, dtype=bool)
        fail[cl.get_column(self._class).to_numpy()] = ~cl.get_column("__ok").to_numpy().astype(
            bool)
        return fail

    def encoded(self, rows: tuple[np.ndarray, np.ndarray, np.ndarray], n_classes: int,
                sizes: np.ndarray | None = None, whole: bool = False) -> EncodedRows:
        """The arrays ``(class, sensitive id, n)`` as :class:`EncodedRows`. ``whole``: the rows
        are whole roll-ups (nothing suppressed), so the reference distribution is the table's
        (the same shares as summing the stacked rows); otherwise it is summed from the rows
        (the retained ones)."""
        return EncodedRows(*rows, classes=n_classes, n_sensitive=self.efs.n_sensitive,
                           reference=self._table() if whole else None, sizes=sizes,
                           domain=self.domain)

    def _evaluate_arrays(self, enc: EncodedRows, models: Sequence[Model]) -> np.ndarray | None:
        """The array verdicts (:func:`~ldiv_polars.models.encoded.class_verdict`) of
        ``models`` as a failing mask; None when a model has no array form."""
        ok = np.ones(enc.classes, dtype=bool)
        for m in models:
            v = class_verdict(m, enc)
            if v is None:  # no array form: the engine decides from now on
                self.arrays = False
                return None
            ok &= v
        return ~ok

    def floors(self, enc: EncodedRows, one_node: bool = False) -> np.ndarray | None:
        """Per class of whole roll-ups ``enc`` (:meth:`encoded` with ``whole``): the largest
        suppression floor of the ``relaxed`` models (rows that fail at this node and at every
        specialization of it, see :meth:`Model.suppression_floor
        <ldiv_polars.models.Model.suppression_floor>`); None when no model states one.
        ``one_node``: ``enc`` is one node's roll-up, and once the floors so far sum beyond the
        limit the others are not computed (their largest can only be larger; the union-closed
        models' floors, the cheapest, come first)."""
        if not self.relaxed:
            return None
        out = None
        own = []
        for m in self._relaxed_order:
            f = m.suppression_floor(enc, self.slack)
            if f is not None:
                own.append((m, f))
                out = f if out is None else np.maximum(out, f)
                if one_node and self.beyond_limit(float(out.sum())):
                    return out
        if one_node and out is not None and self._tightens:
            out = self._tighter(enc, out, own)
        return out

    def _tighter(self, enc: EncodedRows, out: np.ndarray,
                 own: list[tuple[Model, np.ndarray]]) -> np.ndarray:
        """One node's floors ``out`` (within the limit) tightened by the models' costlier
        floors (:meth:`Model.tighter_floor <ldiv_polars.models.Model.tighter_floor>`), each
        asked only while it could still decide the node: a tighter floor is positive only
        where the model's cheap one (``own``) is and at most the class's rows, so once
        those rows sum within the limit nothing can reach it."""
        for m, f in own:
            if id(m) not in self._tightens or not self.beyond_limit(
                    rows_in(enc.size, f > 0) + float(out[f <= 0].sum())):
                continue
            t = m.tighter_floor(enc, self.slack, f)
            if t is not None:
                out = np.maximum(out, t)
                if self.beyond_limit(float(out.sum())):
                    break
        return out

    def beyond_limit(self, floor_rows: float) -> bool:
        """Whether a floor sum certainly exceeds the limit (:data:`FLOOR_MARGIN`)."""
        return floor_rows > self._floor_limit

    def _table(self) -> np.ndarray:
        """Count of each sensitive id in the whole table (from the base frequency set)."""
        if self._table_counts is None:
            base = self.efs.base
            self._table_counts = np.bincount(base.s, weights=base.n,
                                             minlength=self.efs.n_sensitive).astype(np.int64)
        return self._table_counts

    def _failing_retained(self, rolled: Rolled, fail: np.ndarray) -> np.ndarray:
        """The classes failing against the distribution of the rows of the classes not in
        ``fail``: only the models comparing with it (``needs_q``) are asked, as a retained
        class holds the same rows whatever the reference (the others' verdicts stand)."""
        keep = ~fail[rolled.row_class]
        return self._evaluate(self.efs.model_rows(rolled, keep), rolled.classes,
                              sizes=np.where(fail, 0, rolled.class_size),
                              models=self.global_)

    def _failing_many(self, rolleds: Sequence[Rolled]
                      ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """First-round verdicts of several nodes in ONE evaluation, and their floors: their
        rows are stacked with disjoint class ids. Every node's rolled-up frequency set has the
        same sensitive distribution (the whole table's), so the stacked reference is the
        same."""
        offsets = np.cumsum([0] + [r.classes for r in rolleds])
        rows = self.efs.model_rows_many(rolleds, offsets[:-1])
        sizes = np.concatenate([r.class_size for r in rolleds])
        enc = self.encoded(rows, int(offsets[-1]), sizes, whole=True)
        floor = self.floors(enc) if self.floors_first else None
        fail = self._evaluate(rows, int(offsets[-1]), sizes=sizes, whole=True, enc=enc)
        return [
            (fail[offsets[i]:offsets[i + 1]].copy(),
             None if floor is None else floor[offsets[i]:offsets[i + 1]])
            for i in range(len(rolleds))
        ]

    def check_many(self, rolleds: Sequence[Rolled]) -> list[NodeVerdict]:
        """Verdicts of several nodes; the first evaluation round is batched."""
        if len(rolleds) == 1:
            return [self.check(rolleds[0])]
        nonempty = [r for r in rolleds if r.classes]
        firsts = iter(self._failing_many(nonempty)) if nonempty else iter(())
        out = []
        for r in rolleds:
            if not r.classes:
                out.append(NodeVerdict(True, np.zeros(0, dtype=bool), 0, 0))
                continue
            out.append(self.check(r, first=next(firsts)))
        if out and nonempty:  # attribute the shared evaluation to the first verdict
            v = out[0]
            out[0] = NodeVerdict(v.passed, v.suppressed, v.suppressed_rows, v.evaluations + 1,
                                 v.relaxed_passed)
        return out

    def check(self, rolled: Rolled, *,
              first: tuple[np.ndarray, np.ndarray | None] | None = None) -> NodeVerdict:
        """The verdict of one rolled-up node: which classes fail the models, how many rows
        they hold and whether that is within the suppression limit (``first``: the failing
        mask and the floors already computed by a batched evaluation)."""
        size = rolled.class_size
        evals_before = self.evaluations
        if rolled.classes == 0:
            return NodeVerdict(True, np.zeros(0, dtype=bool), 0, 0)
        if first is None and not self.models and not self.relaxed:
            first = (np.zeros(rolled.classes, dtype=bool), None)  # no per-class rows read
        if first is None and self.size_k is not None:
            self.evaluations += 1
            first = (size < self.size_k, None)
        if first is None and self.size_floor > 1:
            early = self._too_small(size)
            if early is not None:
                return early
        if first is None:
            arrays = self.efs.model_rows(rolled)
            enc = self.encoded(arrays, rolled.classes, size, whole=True)
            floor = self.floors(enc, one_node=True) if self.floors_first else None
            if floor is not None and self.beyond_limit(float(floor.sum())):
                # the node and every node below it fail: decided without the models; the
                # mask reported holds the classes with a positive floor
                self.floor_decided += 1
                mask = floor > 0
                return NodeVerdict(False, mask, rows_in(size, mask), 0, False)
            first = (self._evaluate(arrays, rolled.classes, sizes=size, whole=True, enc=enc),
                     floor)
        fail, floor = first
        if self.population:
            fail = fail | self._population_fail(rolled)
        if self.weighted:
            fk = self._weights.per_class(rolled)  # type: ignore[union-attr]
            for m in self.weighted:
                fail = fail | ~m.class_ok(fk)
        relaxed_passed = floor is None or not self.beyond_limit(float(floor.sum()))
        fail, supp_rows = self._complete(rolled, fail, rows_in(size, fail))
        passed = supp_rows <= self.limit
        # (beyond the limit, a sentinel may exceed the node's rows: reported as all of them)
        return NodeVerdict(passed, fail, supp_rows if passed else min(supp_rows, int(size.sum())),
                           self.evaluations - evals_before, relaxed_passed)

    def _too_small(self, size: np.ndarray) -> NodeVerdict | None:
        """The failing verdict of a node whose classes below :attr:`size_floor` hold more rows
        than the limit (they fail whatever else the models find, and suppression only adds
        classes: the node fails), counted as one evaluation, its mask those classes (as a
        node decided by its floors reports the classes with a floor); None otherwise."""
        small = size < self.size_floor
        rows = int(size[small].sum())
        if rows <= self.limit:
            return None
        self.evaluations += 1
        return NodeVerdict(False, small, min(rows, int(size.sum())), 1)

    def _population_fail(self, rolled: Rolled) -> np.ndarray:
        """Classes failing a model judged against a population table: its count per class
        rolled up with the node, the verdict the model's (``class_ok``)."""
        fail = np.zeros(rolled.classes, dtype=bool)
        for m in self.population:
            counts = self._population_counts[id(m.population)].per_class(rolled)
            fail |= ~m.class_ok(rolled.class_size, counts)
        return fail

    def _complete(self, rolled: Rolled, fail: np.ndarray, supp_rows: int
                  ) -> tuple[np.ndarray, int]:
        """The classes to suppress after the per-class verdicts ``fail``: the fixpoint of the
        models comparing with the retained rows, then the smallest classes the table-level
        models need (again the fixpoint when those models are present); the rows suppressed,
        above the limit when the node fails."""
        size = rolled.class_size
        while True:
            fail, supp_rows = self._retained_fixpoint(rolled, fail, supp_rows)
            if not self.tables or supp_rows > self.limit:
                return fail, supp_rows
            more = self._table_suppression(size, fail)
            if more is None:  # no prefix within the limit makes a table-level model hold
                return fail, self.limit + 1
            if not more.any():
                return fail, supp_rows
            fail = fail | more
            supp_rows = rows_in(size, fail)
            if not self.global_models:
                return fail, supp_rows

    def _retained_fixpoint(self, rolled: Rolled, fail: np.ndarray, supp_rows: int
                           ) -> tuple[np.ndarray, int]:
        """With models comparing classes with the table (``needs_q``), the classes failing
        against the distribution of the retained rows, until nothing new fails or the limit
        is exceeded (see the module); other models: ``fail`` as is."""
        size = rolled.class_size
        if self.global_models:
            while fail.any() and supp_rows <= self.limit:
                if fail.all():
                    break
                more = self._failing_retained(rolled, fail) & ~fail
                if not more.any():
                    break
                fail = fail | more
                supp_rows = rows_in(size, fail)
        return fail, supp_rows

    def _table_suppression(self, size: np.ndarray, fail: np.ndarray) -> np.ndarray | None:
        """The classes the table-level models make suppress beyond ``fail``: for each in
        turn, the smallest retained classes (ascending size, ties by class id) that make it
        hold within what is left of the limit, repeated until every one holds (ARX enforces
        its sample-based criteria one after the other). None when one cannot hold."""
        more = np.zeros(len(size), dtype=bool)
        changed = True
        while changed:
            changed = False
            keep = np.flatnonzero(~(fail | more))
            order = keep[np.argsort(size[keep], kind="stable")]
            budget = self.limit - rows_in(size, fail | more)
            for m in self.tables:
                count = classes_to_suppress(m, size[order], budget)
                if count is None:
                    return None
                if count:
                    more[order[:count]] = True
                    changed = True
                    break
        return more


def _weight_sums(efs: EncodedFrequencySet, weighted: Sequence[Model]) -> PopulationCounts | None:
    """The sampling-weight sums per raw key of the search (``efs.encoding.memo``), when a
    model reads them; a typed error when the search was started without weights."""
    if not weighted:
        return None
    sums = efs.encoding.memo.get(WEIGHTS)
    if not isinstance(sums, PopulationCounts):
        raise InvalidParameterError(
            f"{', '.join(m.describe() for m in weighted)} read(s) sampling weights: pass "
            "weight= to anonymize() (CLI: --weight)")
    return sums
