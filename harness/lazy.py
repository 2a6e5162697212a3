"""Lazy public facades: a package's `__getattr__` and `__dir__` that import each public name
from its defining module on first use (PEP 562), so importing the facade costs nothing.

A public name may also be a subpackage's name (`tracegrade.capture` the function, `harness/capture/`
the package; `tracegrade.graders.advisories`). The import system binds every imported submodule on its
package, which would swap the public name for the module depending on what was imported first;
the facade's module class keeps the public name. Import submodules by their dotted name
(`from tracegrade.capture.recorder import Recorder`), which never reads that attribute."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_facade"]


def lazy_facade(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for `package`, whose public names map to their modules."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        vars(sys.modules[package])[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    sys.modules[package].__class__ = _Facade
    return __getattr__, __dir__


class _Facade(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        exports = vars(self).get("_EXPORTS", {})
        if name in exports and isinstance(value, types.ModuleType):
            return  # a submodule of the same name as a public name: the public name wins
        super().__setattr__(name, value)
