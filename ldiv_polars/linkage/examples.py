"""The paper's worked example (Tables 1-2 of Rameshwar & Tandon) as releases.

Two 2-diverse releases of (Gender, Postal Code) -> Disease that an adversary links on
(Female, 560010): only "Cervical cancer" survives.

>>> [r.check(2).passed for r in table2_releases()]
[True, True]
"""

from __future__ import annotations

import polars as pl

from ldiv_polars.linkage.release import Release

QI = ("gender", "postal")
SENSITIVE = "disease"


def table1_raw() -> pl.DataFrame:
    """Table 1, raw data."""
    return pl.DataFrame({
        "gender": ["Male", "Male", "Female", "Female", "Female"],
        "postal": ["560012", "560011", "560010", "560010", "560010"],
        "disease": ["Heart disease", "Lung infection", "Osteoporosis", "Cervical cancer",
                    "Osteoporosis"],
    })


def table2_releases() -> list[Release]:
    """Table 2: the anonymized datasets D1 and D2 with their class maps (explicit mappings
    from the raw (gender, postal) to the published class)."""
    d1 = pl.DataFrame({
        "gender": ["Male", "Male", "Female", "Female"],
        "postal": ["56001*", "56001*", "560010", "560010"],
        "disease": ["Heart disease", "Lung infection", "Osteoporosis", "Cervical cancer"],
    })
    m1 = {
        ("Male", "560012"): ("Male", "56001*"),
        ("Male", "560011"): ("Male", "56001*"),
        ("Female", "560010"): ("Female", "560010"),
    }
    d2 = pl.DataFrame({
        "gender": ["Female", "Female", "Female", "Female"],
        "postal": ["560008", "560008", "560010", "560010"],
        "disease": ["Irritable bowel syndrome", "Lung infection", "Cervical cancer",
                    "Amoebic dysentery"],
    })
    m2 = {
        ("Female", "560008"): ("Female", "560008"),
        ("Female", "560010"): ("Female", "560010"),
    }
    return [
        Release.from_mapping(d1, QI, SENSITIVE, m1, name="D1"),
        Release.from_mapping(d2, QI, SENSITIVE, m2, name="D2"),
    ]
