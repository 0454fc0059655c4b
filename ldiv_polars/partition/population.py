"""Population counts of Mondrian's partitions, for the models judged against a population
table (:class:`~ldiv_polars.models.population_table.PopulationModel`: k-map with a population
table, delta-presence).

A Mondrian group is released as a **box**: per numeric QI the range ``[min, max]`` of its
records' values, per other QI the set of its records' values. A population record matches a
group when each of its QI values lies in the group's range or set; the group's population
count is the number of population records matching it (a record may match two groups of a
relaxed partition, whose ranges can share an end value).

:class:`PopulationBoxes` counts the population once (its frequency set on the QIs, encoded as
Mondrian encodes the sample: numeric values as floats, other values as the dense rank of the
sample's values; a population value the sample does not hold matches no set and is dropped).
Each round it matches the population keys of every partition with the boxes of its candidate
children (joins on the partition id, range filters and semi-joins on the sets: no loop over
keys or records) and keeps the keys of the chosen children. A child's box lies inside its
parent's, so a key outside a partition's box never matches a descendant and is dropped.

:func:`population_at_groups` is the independent count the release is re-verified with: the
population records matched against the released ranges and sets themselves (the values, not
the encoding).

>>> import polars as pl
>>> ranges = pl.DataFrame({"group": [0, 1], "age_min": [20, 30], "age_max": [29, 30],
...                        "zip_set": [["130", "131"], ["140"]]})
>>> pop = pl.LazyFrame({"age": [20, 25, 30, 30, 31], "zip": ["130", "140", "140", "140", "140"]})
>>> at = population_at_groups(pop, ranges, ("age", "zip"), ("age",), "group")
>>> at.group_by("group").len().sort("group").collect().rows()
[(0, 1), (1, 2)]
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ldiv_polars.core.frequency import unique_prefix
from ldiv_polars.models.population_table import check_population_columns


def child_pid(index: pl.Expr, left: pl.Expr) -> pl.Expr:
    """The partition id of a child in the next round: ``2 * index + (0 if left else 1)``,
    ``index`` being its parent's rank among the partitions that split."""
    return index * 2 + (~left).cast(pl.Int64)


class PopulationBoxes:
    """The population table ``population`` counted once and matched, round by round, with the
    boxes of Mondrian's candidate children (see the module).

    ``sample``: the rows partitioned (for the categorical values' ranks); ``qi``, ``numeric``
    (the numeric QIs), ``dims`` (the work table's encoded column of each QI) and ``pid`` (its
    partition id column) name the work table's columns; ``whole``: the work table, whose box
    (the whole table's) the first partition is. Raises the errors of
    :func:`~ldiv_polars.models.population_table.check_population_columns`."""

    def __init__(self, population: pl.LazyFrame, sample: pl.LazyFrame, qi: Sequence[str],
                 numeric: Sequence[str], dims: Sequence[str], pid: str,
                 whole: pl.DataFrame) -> None:
        check_population_columns(population.collect_schema(), qi)
        self.dims, self.pid = list(dims), pid
        self.numeric = [d for c, d in zip(qi, dims) if c in numeric]
        self.sets = [d for c, d in zip(qi, dims) if c not in numeric]
        self.n = f"{pid}_pn"
        keys = _encoded_keys(population, sample, qi, numeric, dims, self.n)
        inside = [pl.col(d).is_between(whole[d].min(), whole[d].max()) for d in self.numeric]
        self.active = keys.filter(*inside) if inside and whole.height else keys
        self.active = self.active.with_columns(pl.lit(0, dtype=pl.Int64).alias(pid))
        self.whole = int(self.active[self.n].sum())
        """Population records matching the whole table's box."""
        self._matched: pl.DataFrame | None = None

    def candidate_counts(self, work: pl.DataFrame, sides: Sequence[str], dim: str,
                         side: str) -> pl.DataFrame:
        """``(pid, dim, side, count)``: the population count of every candidate child (the
        rows of partition ``pid`` whose side of dimension ``dim``'s split is ``side``) of the
        work table ``work`` (the rows with their partition and ``sides`` columns). Children
        no population key matches are absent (count 0)."""
        pid = self.pid
        distinct = work.select(pid, *sides, *self.dims).unique().lazy()
        boxes = pl.concat([
            distinct.group_by(pid, s).agg(
                *[pl.col(d).min().alias(f"{d}_lo") for d in self.numeric],
                *[pl.col(d).max().alias(f"{d}_hi") for d in self.numeric])
            .select(pid, pl.lit(j, dtype=pl.Int32).alias(dim), pl.col(s).alias(side),
                    pl.exclude(pid, s))
            for j, s in enumerate(sides)])
        cands = self.active.lazy().join(boxes, on=pid).filter(
            *[pl.col(d).is_between(pl.col(f"{d}_lo"), pl.col(f"{d}_hi"))
              for d in self.numeric] or [pl.lit(True)])
        for d in self.sets:
            values = pl.concat([distinct.select(pid, pl.lit(j, dtype=pl.Int32).alias(dim),
                                                pl.col(s).alias(side), d).unique()
                                for j, s in enumerate(sides)])
            cands = cands.join(values, on=[pid, dim, side, d], how="semi")
        self._matched = cands.select(pid, dim, side, *self.dims, self.n).collect()
        return self._matched.group_by(pid, dim, side).agg(pl.col(self.n).sum())

    def advance(self, chosen: pl.Series, index: pl.Series, dim: str, side: str) -> None:
        """Keep the population keys matching the chosen children (``chosen``: each
        partition's split dimension, -1 when it is final; ``index``: its rank among the
        partitions that split), under the children's partition ids (:func:`child_pid`)."""
        assert self._matched is not None, "candidate_counts first"
        p = pl.col(self.pid)
        self.active = self._matched.filter(pl.col(dim) == pl.lit(chosen).gather(p)).select(
            child_pid(pl.lit(index).gather(p), pl.col(side)).alias(self.pid),
            *self.dims, self.n)
        self._matched = None


def _encoded_keys(population: pl.LazyFrame, sample: pl.LazyFrame, qi: Sequence[str],
                  numeric: Sequence[str], dims: Sequence[str], n: str) -> pl.DataFrame:
    """The population's frequency set on ``qi``, each QI encoded as Mondrian's work table
    encodes the sample's (``dims``): numeric values as Float64 (a value that is no number
    matches no range: dropped), other values as the dense rank of the sample's distinct
    values (compared as text; a value the sample lacks matches no set: dropped)."""
    keys = population.select(
        (pl.col(c).cast(pl.Float64, strict=False) if c in numeric else pl.col(c).cast(pl.String))
        .alias(d) for c, d in zip(qi, dims)
    ).group_by(dims).agg(pl.len().cast(pl.Int64).alias(n)).drop_nulls()
    for c, d in zip(qi, dims):
        if c not in numeric:
            rank = f"{d}_rank"
            values = sample.select(pl.col(c).unique()).drop_nulls().select(
                pl.col(c).cast(pl.String).alias(d),
                pl.col(c).rank("dense").cast(pl.Float64).alias(rank))
            keys = keys.join(values, on=d).drop(d).rename({rank: d})
    return keys.select(*dims, n).collect()


def population_at_groups(population: pl.LazyFrame, ranges: pl.DataFrame, qi: Sequence[str],
                         numeric: Sequence[str], group: str) -> pl.LazyFrame:
    """One row (column ``group``) per population record and released group it matches:
    its value of every numeric QI ``c`` within ``[c_min, c_max]`` and of every other QI in
    ``c_set`` (``ranges``: :attr:`~ldiv_polars.partition.mondrian.MondrianResult.ranges`;
    numbers compared as floats, other values as text). A population table
    generalized to the release's groups: what a
    :class:`~ldiv_polars.models.population_table.PopulationModel` re-verifies it with
    (:meth:`~ldiv_polars.models.population_table.PopulationModel.at_node`)."""
    p = unique_prefix("__ldiv_", [*population.collect_schema().names(), *ranges.columns])
    n = f"{p}n"
    keys = population.group_by(
        (pl.col(c).cast(pl.Float64, strict=False) if c in numeric else pl.col(c).cast(pl.String))
        .alias(f"{p}v{j}") for j, c in enumerate(qi)
    ).agg(pl.len().alias(n))
    cols = [pl.col(group)]
    for j, c in enumerate(qi):
        if c in numeric:
            cols += [pl.col(f"{c}_min").cast(pl.Float64).alias(f"{p}lo{j}"),
                     pl.col(f"{c}_max").cast(pl.Float64).alias(f"{p}hi{j}")]
        else:
            cols.append(pl.col(f"{c}_set").cast(pl.List(pl.String)).alias(f"{p}set{j}"))
    boxes = ranges.select(cols)
    keys_df = keys.collect()
    j = min(range(len(qi)), key=lambda i: _pairs(keys_df, boxes, i, qi[i] in numeric, p))
    v = pl.col(f"{p}v{j}")
    if qi[j] in numeric:  # a range join on the QI matching the fewest pairs, the others filtered
        matched = keys_df.lazy().join_where(boxes.lazy(), v >= pl.col(f"{p}lo{j}"),
                                            v <= pl.col(f"{p}hi{j}"))
    else:  # an equi-join on the values of that QI's sets
        matched = keys_df.lazy().join(
            boxes.lazy().with_columns(pl.col(f"{p}set{j}").alias(f"{p}v{j}")).explode(
                f"{p}v{j}"), on=f"{p}v{j}")
    matched = matched.filter(*[pl.col(f"{p}v{i}").is_between(pl.col(f"{p}lo{i}"),
                                                             pl.col(f"{p}hi{i}"))
                               for i, c in enumerate(qi) if c in numeric] or [pl.lit(True)])
    for i, c in enumerate(qi):  # each other set: a semi-join on (group, value)
        if c not in numeric and i != j:
            members = boxes.lazy().select(group, pl.col(f"{p}set{i}").alias(f"{p}v{i}")
                                          ).explode(f"{p}v{i}")
            matched = matched.join(members, on=[group, f"{p}v{i}"], how="semi")
    return matched.select(pl.col(group).repeat_by(pl.col(n))).explode(group)


def _pairs(keys: pl.DataFrame, boxes: pl.DataFrame, j: int, numeric: bool, p: str) -> int:
    """How many (population key, group) pairs match on QI ``j`` alone: the size of the join
    :func:`population_at_groups` would make on it (sorted values and ``searchsorted`` for a
    range, a join of the exploded sets with the values' key counts for a set)."""
    import numpy as np

    v = keys.get_column(f"{p}v{j}")
    if numeric:
        vals = np.sort(v.drop_nulls().to_numpy())
        lo = np.searchsorted(vals, boxes.get_column(f"{p}lo{j}").to_numpy(), side="left")
        hi = np.searchsorted(vals, boxes.get_column(f"{p}hi{j}").to_numpy(), side="right")
        return int((hi - lo).sum())
    per_value = keys.group_by(v.name).agg(pl.len().alias(f"{p}keys"))
    sets = boxes.select(pl.col(f"{p}set{j}").explode().alias(v.name))
    return int(sets.join(per_value, on=v.name).get_column(f"{p}keys").sum())
