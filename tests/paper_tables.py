"""Tables printed in the papers, shared by several test modules."""

from __future__ import annotations

import polars as pl

# l-diversity paper, Fig. 1 (Inpatient Microdata): QI zip, age, nationality; sensitive condition
FIG1 = pl.DataFrame(
    {
        "zip": ["13053", "13068", "13068", "13053", "14853", "14853", "14850", "14850", "13053",
                "13053", "13068", "13068"],
        "age": [28, 29, 21, 23, 50, 55, 47, 49, 31, 37, 36, 35],
        "nationality": ["Russian", "American", "Japanese", "American", "Indian", "Russian",
                        "American", "American", "American", "Indian", "Japanese", "American"],
        "condition": ["Heart Disease", "Heart Disease", "Viral Infection", "Viral Infection",
                      "Cancer", "Heart Disease", "Viral Infection", "Viral Infection", "Cancer",
                      "Cancer", "Cancer", "Cancer"],
    }
)
FIG1_QI = ["zip", "age", "nationality"]


def _age_bucket(a: int) -> str:
    return "<30" if a < 30 else ("3*" if a < 40 else ">=40")


def fig1_hierarchies() -> dict:
    """Fig. 2's generalizations of Fig. 1 as hierarchies: zip masked right to left (raw, 1305*,
    130**, *), age to <30 / 3* / >=40 then *, nationality suppressed."""
    from ldiv_polars.hierarchy import Hierarchy, masking_hierarchy

    return {
        "zip": masking_hierarchy(FIG1["zip"], levels=2),
        "age": Hierarchy([[str(a), _age_bucket(a), "*"] for a in FIG1["age"].to_list()]),
        "nationality": Hierarchy(
            [[v, "*"] for v in FIG1["nationality"].unique().sort().to_list()]),
    }
