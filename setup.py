"""The compiled record decoder and CRC-32C (everything else about the package is in pyproject.toml).

``optional=True``: where no C compiler is at hand the package installs without it and ``v2decode`` falls back to
the pure-Python decoder, which gives the same results.
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "asyncconsumer.protocol._v2records_c",
            ["asyncconsumer/protocol/_v2records_c.c", "asyncconsumer/protocol/_crc32c.c"],
            depends=["asyncconsumer/protocol/_crc32c.h"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        )
    ]
)
