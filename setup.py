"""The optional compiled part of datom: the cv1 ``chr`` values encoder.

Everything else is declared in ``pyproject.toml``. The extension is ``optional``: without a
C compiler the install still succeeds and ``datom_core._identity._chr`` encodes strings
with Arrow compute instead (same bytes, more CPU per value).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "datom_core._identity._chrenc",
            sources=["datom_core/_identity/_chrenc.c"],
            optional=True,
        )
    ]
)
