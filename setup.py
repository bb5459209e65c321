"""Build hook for the optional C kernels (evalab._mtkernel, evalab._rougekernel, evalab._edkernel, evalab._tieskernel); metadata lives in pyproject.toml.

``optional=True``: if no C compiler is available the install still succeeds and evalab
uses its pure-Python fallbacks, which give the same numbers (only slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "evalab._mtkernel",
            sources=["src/evalab/_mtkernel.c"],
            depends=["src/evalab/_kernels.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "evalab._rougekernel",
            sources=["src/evalab/_rougekernel.c"],
            depends=["src/evalab/_kernels.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "evalab._edkernel",
            sources=["src/evalab/_edkernel.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "evalab._tieskernel",
            sources=["src/evalab/_tieskernel.c"],
            depends=["src/evalab/_kernels.h"],
            optional=True,
            # -O3: the loop over a block of resamples is vectorised
            extra_compile_args=["-O3"],
        ),
    ]
)
