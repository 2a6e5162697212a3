"""The run identity snapshot: everything needed to say what produced a run's scores.

Written to `identity.json` in the run directory when a run starts: dataset path and sha256,
the target config as authored, grader ids with declared scales and code hashes, copies of the
user grading modules (so `tracegrade grade` scores with the graders the run used, seed 003),
judge identity and pinned knobs, package versions and the git commit if any.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import platform
import subprocess
import weakref
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from .manifest import MANIFEST_VERSION, RunManifest, migrate

__all__ = [
    "IDENTITY_FILE",
    "git_commit",
    "grader_code_hash",
    "package_versions",
    "parse_manifest",
    "read_json_file",
    "read_manifest",
    "sha256_file",
    "validate_manifest",
    "write_identity",
]

IDENTITY_FILE = "identity.json"
PACKAGES = ("tracegrade", "langgraph", "langchain-core", "opentelemetry-sdk", "pydantic", "httpx")


def sha256_file(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


_code_hashes: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
"""Class or function -> its code hash: `inspect.getsource` re-reads and tokenizes the module,
which cost more per run than a short run's agent time. Keyed weakly by the object, so a
reloaded module (new objects) is hashed afresh."""


def grader_code_hash(grader: Any) -> str | None:
    """sha256 of the grader's class source (a `@grader` function's source when it wraps one),
    or of its module file; None when neither can be read."""
    own = getattr(grader, "content_sha256", None)
    if isinstance(own, str):  # a judge defined in a file: the file's content is its code
        return own
    cls = grader if isinstance(grader, type) else type(grader)
    # `@grader` stores its function as `function`; `fn`/`func` are what wrappers elsewhere use.
    fn = next(
        (f for name in ("function", "fn", "func") if callable(f := getattr(grader, name, None))),
        None,
    )
    key = fn if fn is not None else cls
    try:
        return _code_hashes[key]
    except (KeyError, TypeError):
        pass
    digest = _code_hash(fn, cls)
    with contextlib.suppress(TypeError):  # not weak-referenceable: hashed every time
        _code_hashes[key] = digest
    return digest


def _code_hash(fn: Any, cls: type) -> str | None:
    for obj in (fn, cls):
        if obj is None:
            continue
        try:
            return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()
        except (OSError, TypeError):
            continue
    try:
        file = inspect.getfile(cls)
        return sha256_file(file)
    except (OSError, TypeError):
        return None


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that decide a run's behaviour (`PACKAGES`)."""
    return dict(_package_versions())


@functools.cache  # installed packages do not change under a running process
def _package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit(directory: Path) -> str | None:
    """HEAD of the repository holding `directory` (with "-dirty" when it has changes), or None."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if status else head or None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def write_identity(run_dir: Path, manifest: RunManifest) -> Path:
    """Write the manifest: its set keys (`RunManifest.to_json`), with the version this release
    writes."""
    path = run_dir / IDENTITY_FILE
    manifest.version = MANIFEST_VERSION  # set, so it is written
    text = json.dumps(manifest.to_json(), indent=2)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def validate_manifest(identity: Mapping[str, Any]) -> RunManifest:
    """A manifest built as a mapping, validated (a malformed one is a bug of its writer, not a
    file a later `show` or `compare` trips over)."""
    return RunManifest.model_validate(_jsonable(identity))


def read_json_file(path: Path, what: str) -> Any:
    """A JSON file's content; missing or unreadable is invalid input (exit 4) naming `what`."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"no {what} at {path}", file=str(path)) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path} is not a readable {what}: {exc}", file=str(path)) from exc


def read_manifest(run_dir: Path) -> RunManifest:
    """The typed manifest of `run_dir`; a missing or malformed one is invalid input (exit 4)."""
    path = Path(run_dir) / IDENTITY_FILE
    return parse_manifest(read_json_file(path, "run manifest"), path=path)


def parse_manifest(data: Any, *, path: Path, at: str = "") -> RunManifest:
    """`data` (a manifest's JSON, at JSON pointer `at` of the file `path`) as the typed
    manifest, an older shape migrated; a malformed one, or one of a newer version, is invalid
    input (exit 4) naming the file and key."""
    version = data.get("version", 1) if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_VERSION:
        raise InputError(
            f"{path} has manifest version {version}: made by a newer tracegrade (this one "
            f"reads version {MANIFEST_VERSION})",
            file=str(path),
            key=f"{at}/version",
            hint="upgrade tracegrade to read this run",
        )
    try:
        return RunManifest.model_validate(migrate(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        key = at + "/" + "/".join(str(p) for p in first["loc"])
        raise InputError(f"{path}: {first['msg']} at {key}", file=str(path), key=key) from exc
