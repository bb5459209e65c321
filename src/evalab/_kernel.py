"""The optional compiled kernel (``evalab._mtkernel``), or ``None`` where it is not built.

Callers read :data:`kernel` at call time, so tests can set it to ``None`` to exercise the
pure-Python fallbacks, which give identical results.
"""

from __future__ import annotations

from types import ModuleType

kernel: ModuleType | None
try:
    from evalab import _mtkernel as kernel
except ImportError:  # no C compiler at install time: the fallbacks are used
    kernel = None
