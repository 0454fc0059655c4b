"""Build script beside pyproject.toml (which holds the metadata): the package layout, the SQL
files shipped inside it, and the optional compiled kernels (the roll-ups', the ordered EMD's).

The kernel (``ldiv_polars/search/_counting.c``, plain C against the Python API, no numpy
headers) is ``optional``: without a C compiler the build prints a warning and the package
installs without it; the roll-ups then run their numpy twin (same results, slower; see
``ldiv_polars/search/counting.py``). The ordered EMD of t-closeness
(``ldiv_polars/models/_emd.c``) is optional in the same way: without it
``ldiv_polars/models/emd_arrays.py`` computes the same sums in numpy; so is the capped
floor of entropy l-diversity (``ldiv_polars/models/_floors.c``, numpy twin in
``ldiv_polars/models/entropy_floor.py``). The dictionary encoding of a String or Enum column
(``ldiv_polars/core/engines/_arrow_codes.c``) likewise: without it
``ldiv_polars/core/engines/arrow_codes.py`` casts through Polars' Enum.
"""

import sys

from setuptools import Extension, find_packages, setup

setup(
    packages=find_packages(include=["ldiv_polars", "ldiv_polars.*"]) + ["ldiv_polars.sql"],
    package_dir={"ldiv_polars.sql": "sql"},
    package_data={"ldiv_polars": ["py.typed"], "ldiv_polars.sql": ["*.sql"]},
    ext_modules=[
        Extension(
            "ldiv_polars.search._counting",
            ["ldiv_polars/search/_counting.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
        Extension(
            "ldiv_polars.core.engines._arrow_codes",
            ["ldiv_polars/core/engines/_arrow_codes.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
        Extension(
            "ldiv_polars.models._emd",
            ["ldiv_polars/models/_emd.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
        Extension(
            "ldiv_polars.models._floors",
            ["ldiv_polars/models/_floors.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
    ],
)
