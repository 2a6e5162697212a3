"""Promotion into the dataset file a target reads (`tracegrade dataset promote --into-file`,
the app's Promote page): the question is appended to the file's `questions`, and every other
byte of the file stays as it was (comments, order, quoting, anchors), so the change reviews as
a few added lines. A YAML file gets a block list item indented like its neighbours, a JSONL
file a line; a JSON file (which holds no comments) is written again in its own key order.

The new file is validated as `tracegrade validate` would before it replaces the old one
(written beside it, then renamed over it): a promotion that would make the file invalid, or
give it a second question of the same id, is refused and nothing is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ..errors import DatasetError, InputError
from ..inputs.dataset import load_dataset
from ..rundir.manifest import RunManifest
from .promote import promoted_row

__all__ = ["append_question", "promote_into_file", "target_dataset_file"]

_QUESTIONS = re.compile(r"^questions\s*:\s*(#.*)?$")
_TOP_KEY = re.compile(r"^[^\s#-]")


def target_dataset_file(manifest: RunManifest | None, target: str) -> Path:
    """The dataset file `target` read in the run (`manifest`), or InputError when its dataset
    is not a file (a `store:` or another source's dataset: promote into the store)."""
    from ..inputs.sources import split_reference

    recorded = manifest.target(target) if manifest is not None else None
    reference = recorded.config.get("dataset") if recorded is not None else None
    path = recorded.dataset.path if recorded is not None else None
    scheme = split_reference(str(reference))[0] if reference else "file"
    if scheme != "file" or not path:
        raise InputError(
            f"target {target!r} reads the dataset {reference!r}, not a file",
            key="--into-file",
            hint="promote into a dataset of the store instead (--to NAME)",
        )
    return Path(path)


def promote_into_file(
    run_dir: Path,
    *,
    question_id: str,
    as_id: str | None = None,
    target: str | None = None,
    trial: int = 0,
    path: Path | None = None,
) -> tuple[Path, dict[str, Any], list[str], int | None]:
    """Append `question_id` of the run in `run_dir` to the dataset file its target read (or
    `path`). Returns (the file, the row written, the keys marked for review, the line the new
    question starts on)."""
    promoted = promoted_row(
        run_dir, question_id=question_id, as_id=as_id, target=target, trial=trial
    )
    file = path or target_dataset_file(promoted.manifest, promoted.target)
    line = append_question(file, promoted.row)
    return file, promoted.row, promoted.needs_review, line


def append_question(path: Path, row: dict[str, Any]) -> int | None:
    """Append `row` to the questions of the dataset file at `path`, keeping the rest of the
    file as it is; the line the new question starts on (None for JSON)."""
    path = Path(path)
    existing = load_dataset(path)  # an invalid file is refused as it is, before any write
    ids = {q.id for q in existing.questions} | set(existing._disabled_ids or ())
    if row.get("id") in ids:
        raise InputError(
            f"{path} already has a question {row.get('id')!r}",
            file=str(path),
            key="--as",
            hint="promote it under another id (--as ID, or 'As id' in the app)",
        )
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    line: int | None
    if suffix == ".jsonl":
        head = text if not text or text.endswith("\n") else text + "\n"
        line = head.count("\n") + 1
        new = head + json.dumps(row, ensure_ascii=False) + "\n"
    elif suffix == ".json":
        data = json.loads(text)
        (data["questions"] if isinstance(data, dict) else data).append(row)
        new, line = json.dumps(data, ensure_ascii=False, indent=2) + "\n", None
    else:
        new, line = _yaml_appended(path, text, row)
    _replace_validated(path, new)
    return line


def _yaml_appended(path: Path, text: str, row: dict[str, Any]) -> tuple[str, int]:
    lines = text.splitlines()
    start = next((i for i, s in enumerate(lines) if _QUESTIONS.match(s)), None)
    if start is None:
        raise DatasetError(
            "no block `questions:` list to append to (a flow list `questions: [...]` or a "
            "file without the key)",
            file=str(path),
            key="/questions",
            hint="write questions as a block list (`- id: ...` lines), or promote into the store",
        )
    end = len(lines)  # the block ends at the next top-level key
    for i in range(start + 1, len(lines)):
        if _TOP_KEY.match(lines[i]):
            end = i
            break
    items = [s for s in lines[start + 1 : end] if s.lstrip().startswith("- ")]
    indent = len(items[0]) - len(items[0].lstrip()) if items else 2
    last = max(i for i in range(start, end) if lines[i].strip() and not _comment(lines[i]))
    dumped = yaml.safe_dump([row], sort_keys=False, allow_unicode=True, width=100)
    added = [" " * indent + s if s else s for s in dumped.splitlines()]
    out = lines[: last + 1] + added + lines[last + 1 :]
    return "\n".join(out) + "\n", last + 2


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _replace_validated(path: Path, text: str) -> None:
    """Write `text` beside `path`, validate it as a dataset, then rename it over `path`."""
    fd, name = tempfile.mkstemp(prefix=".promote-", suffix=path.suffix, dir=path.parent)
    temp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            load_dataset(temp)
        except DatasetError as exc:
            raise DatasetError(
                f"promoting would make {path} invalid: {exc.message}",
                file=str(path),
                problems=exc.context.get("problems") or [],
            ) from exc
        os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
