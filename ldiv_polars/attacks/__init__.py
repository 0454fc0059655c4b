"""Analyses of attacks on anonymized releases: the minimality attack (Cormode et al. 2010).

The names below are imported from :mod:`ldiv_polars.attacks.minimality` on first use (PEP 562),
so that the CLI can list :data:`ALGORITHMS` without importing numpy.
"""

ALGORITHMS: tuple[str, ...] = ("gg", "rgg", "sg", "mondrian-strict", "mondrian-relaxed")
"""The groupers whose minimality the attack models (``minimality_attack(algorithm=...)``)."""

_LAZY = (
    "GGDecision",
    "GroupPosterior",
    "GroupRisk",
    "InconsistentReleaseError",
    "MinimalityReport",
    "Requirement",
    "SGDecision",
    "SplitDecision",
    "even_split_bound",
    "exact_posterior",
    "gg_bucket_posteriors",
    "gg_bucket_posteriors_float",
    "gg_lemma9",
    "gg_lemma10",
    "gg_lemma11",
    "gg_limit",
    "gg_posterior_b1",
    "gg_valid_worlds",
    "minimality_attack",
    "mondrian_candidate_masks",
    "rejection_posterior",
    "sg_binary_posteriors",
    "sg_worst_case",
    "theorem6_bound",
)


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'ldiv_polars.attacks' has no attribute {name!r}")
    from ldiv_polars.attacks import minimality

    value = getattr(minimality, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = ["ALGORITHMS", *_LAZY]
