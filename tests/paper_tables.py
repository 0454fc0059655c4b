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
