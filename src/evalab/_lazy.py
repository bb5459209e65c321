"""Names a package gives from its modules, imported on first use (PEP 562), so that
importing the package stays cheap: ``__getattr__ = lazy_exports(__name__, {module: names})``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` that imports each name of ``exports``
    (a module, relative to the package -> the names it gives) on first use and keeps it in
    the package, so later look-ups find it without this function."""
    module_of = {name: f"{package}.{module}" for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
