"""Loading user code: one loader for a Python file by path and for `file.py:attr` /
`module:attr` references.

Every place that runs a user's file (an agent or environment factory named in the config, a
judge's chat model, a grading module, a file judge) goes through `import_file`, so each gets
the same guarantees: the file runs under a private module name (never as `agents.*` or
`graders`, which would shadow or be shadowed by installed packages), registered in
`sys.modules` while it runs (dataclasses and pickling look modules up by name) and removed
again when it fails, and any failure at import (`SyntaxError`, an exception, `sys.exit()`) is
invalid input naming the file and the line, never a traceback or a silent exit.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ConfigError, InputError, suggest

__all__ = ["import_file", "is_file_reference", "load_object", "split_reference"]

_loaded: dict[tuple[str, Path], ModuleType] = {}


def _package_root(file: Path) -> Path:
    """The first directory above `file` that is not a package: where its own absolute
    imports (`from agents.scripted import ...`) resolve from."""
    root = file.parent
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    return root


def _user_line(exc: BaseException, file: Path) -> int | None:
    """The last line of `file` in the exception's traceback (where the user's code failed)."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == file:
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file:
            line = frame.lineno
    return line


def import_file(
    path: str | Path,
    *,
    namespace: str,
    what: str | None = None,
    error_cls: type[InputError] = InputError,
    where: Mapping[str, Any] | None = None,
    cache: bool = True,
    importable_root: bool = False,
) -> ModuleType:
    """Run the Python file at `path` as a module named `<namespace>_<stem>_<hash of path>`.

    `what` names the file in messages ("the grading module"; default its path). Errors are
    `error_cls` located at `where` (the reference in a config file) or, without it, at the
    file and the line that failed. `cache` returns the module already loaded from the same
    file under the same namespace; without it the file runs again (a grading module edited
    between two runs in one process). `importable_root` puts the first non-package directory
    above the file on `sys.path`, so the file's own absolute imports resolve.
    """
    file = Path(path).resolve()
    label = what or str(file)
    located: dict[str, Any] = dict(where) if where is not None else {"file": str(file)}
    if cache and (namespace, file) in _loaded:
        return _loaded[(namespace, file)]
    if not file.is_file():
        raise error_cls(f"{what} not found" if what else f"file not found: {file}", **located)
    digest = hashlib.sha256(str(file).encode()).hexdigest()[:12]
    name = f"{namespace}_{file.stem}_{digest}"
    if importable_root:
        root = str(_package_root(file))
        if root not in sys.path:
            sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise error_cls(f"cannot load {label} as a Python module", **located)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit, GeneratorExit) as exc:
        # SystemExit too: a file calling sys.exit() at import must not end the run with 0
        sys.modules.pop(name, None)
        if where is None:
            located["line"] = _user_line(exc, file)
        if isinstance(exc, SyntaxError):
            message = f"syntax error in {label}: {exc.msg}"
        else:
            message = f"importing {label} failed: {type(exc).__name__}: {exc}"
        raise error_cls(message, **located) from exc
    if cache:
        _loaded[(namespace, file)] = module
    return module


def split_reference(ref: str) -> tuple[str, str]:
    """(`file.py` or `module`, `attr`) of a reference; `ConfigError` when it is neither."""
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr:
        raise ConfigError(f"bad reference {ref!r}: use `path/to/file.py:attr` or `module:attr`")
    return target, attr


def is_file_reference(target: str) -> bool:
    """True when the module part of a reference is a file path (`x.py`, `a/b`), not a module."""
    return target.endswith(".py") or "/" in target or "\\" in target


def load_object(
    ref: str,
    *,
    base_dir: str | Path,
    file: str | None = None,
    line: int | None = None,
    key: str | None = None,
    namespace: str = "_tracegrade_user",
) -> Any:
    """Resolve `file.py:attr` (a file path, relative to `base_dir`) or `module:attr` (imported
    normally); `attr` may be dotted. `file`/`line`/`key` locate the reference in the config for
    error messages (`ConfigError`, exit 4)."""
    where: dict[str, Any] = {"file": file, "line": line, "key": key}
    try:
        target, attr = split_reference(ref)
    except ConfigError as exc:
        raise ConfigError(exc.message, **where) from None
    if is_file_reference(target):
        p = Path(target).expanduser()
        # normpath, not resolve: `examples/../runs` reads as `runs`, symlinks stay as written
        path = Path(os.path.normpath(p if p.is_absolute() else Path(base_dir) / p))
        module: Any = import_file(
            path,
            namespace=namespace,
            error_cls=ConfigError,
            where=where,
            importable_root=True,
        )
    else:
        try:
            module = importlib.import_module(target)
        except (Exception, SystemExit, GeneratorExit) as exc:
            raise ConfigError(
                f"cannot import {target!r}: {type(exc).__name__}: {exc}", **where
            ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                f"{target!r} has no attribute {attr!r}", hint=_callables_hint(obj, part), **where
            ) from None
    return obj


def _callables_hint(obj: Any, name: str) -> str:
    """A did-you-mean among the public callables of `obj` (a module or class), else the list."""
    names = sorted(n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n, None)))
    close = suggest(name, names)
    if close:
        return f"did you mean {close!r}?"
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"callables there: {shown or '(none)'}"
