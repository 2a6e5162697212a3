"""The writable dataset store: named datasets of questions in one SQLite file (the config's
`dataset_store:`, default `datasets.sqlite` beside the config), the only dataset source that
accepts new questions. `tracegrade dataset promote` writes a run's question into it;
`dataset export` writes a dataset as YAML; a target reads one with `dataset: store:NAME`.

Every question is validated against the dataset schema when it is written, and the whole
dataset again when a run reads it (`StoreSource`), so a store never hands a run a row the
schema rejects. A run reads the dataset as the YAML file `StoreSource` exports beside the store
(`<store>.datasets/NAME.yaml`): the run records that file's path and sha256 like any dataset's.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import yaml

from ..canonical import content_hash
from ..errors import DatasetError, InputError

__all__ = [
    "DEFAULT_STORE",
    "NAME_PATTERN",
    "DatasetStore",
    "StoreSource",
    "StoredQuestion",
    "row_problems",
    "row_revision",
]

DEFAULT_STORE = "datasets.sqlite"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
"""A dataset name: letters, digits, `_`, `.`, `-` (it becomes a file name on export)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY,
    description TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS questions (
    dataset TEXT NOT NULL REFERENCES datasets(name),
    id TEXT NOT NULL,
    position INTEGER NOT NULL,
    row TEXT NOT NULL,
    needs_review TEXT NOT NULL DEFAULT '[]',
    origin TEXT,
    added TEXT NOT NULL,
    PRIMARY KEY (dataset, id)
);
"""


class StoredQuestion:
    """One question of a stored dataset."""

    __slots__ = ("added", "id", "needs_review", "origin", "row")

    def __init__(
        self, row: dict[str, Any], needs_review: list[str], origin: str | None, added: str
    ) -> None:
        self.id = str(row["id"])
        self.row = row
        """The question as the dataset schema has it."""
        self.needs_review = needs_review
        """Keys a person should check before relying on them (`expected_tools` of a draft)."""
        self.origin = origin
        """Where it came from (`run <id> question <q>`)."""
        self.added = added


class DatasetStore:
    """The SQLite dataset store at `path` (created on first write)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"not a dataset store: {exc}", file=str(self.path)) from exc

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> DatasetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def names(self) -> list[tuple[str, int]]:
        """(name, number of questions) of every dataset, by name."""
        return [
            (r[0], r[1])
            for r in self._db.execute(
                "SELECT d.name, COUNT(q.id) FROM datasets d LEFT JOIN questions q "
                "ON q.dataset = d.name GROUP BY d.name ORDER BY d.name"
            )
        ]

    def has(self, name: str) -> bool:
        return (
            self._db.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone()
            is not None
        )

    def questions(self, name: str) -> list[StoredQuestion]:
        """The questions of dataset `name` in order; `InputError` when there is no such one."""
        if not self.has(name):
            known = ", ".join(n for n, _ in self.names()) or "(none)"
            raise InputError(
                f"no dataset {name!r} in the store {self.path}", hint=f"datasets: {known}"
            )
        return [
            StoredQuestion(json.loads(r[0]), json.loads(r[1]), r[2], r[3])
            for r in self._db.execute(
                "SELECT row, needs_review, origin, added FROM questions WHERE dataset = ? "
                "ORDER BY position",
                (name,),
            )
        ]

    def add(
        self,
        name: str,
        row: Mapping[str, Any],
        *,
        needs_review: Sequence[str] = (),
        origin: str | None = None,
    ) -> None:
        """Append a question to dataset `name` (created when new). The row is validated
        against the dataset schema first; an id already in the dataset is refused."""
        if not NAME_PATTERN.match(name):
            raise InputError(f"dataset name {name!r}: use letters, digits, _ . -", key="--to")
        _validate_rows(name, [dict(row)])
        now = datetime.now(UTC).isoformat(timespec="seconds")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(
                "INSERT OR IGNORE INTO datasets (name, created) VALUES (?, ?)", (name, now)
            )
            taken = self._db.execute(
                "SELECT 1 FROM questions WHERE dataset = ? AND id = ?", (name, str(row["id"]))
            ).fetchone()
            if taken:
                raise InputError(
                    f"dataset {name!r} already has a question {row['id']!r}",
                    key="--id",
                    hint="promote it under another id with --as NEW_ID",
                )
            position = self._db.execute(
                "SELECT COALESCE(MAX(position), -1) + 1 FROM questions WHERE dataset = ?", (name,)
            ).fetchone()[0]
            self._db.execute(
                "INSERT INTO questions (dataset, id, position, row, needs_review, origin, added) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    str(row["id"]),
                    position,
                    json.dumps(dict(row)),
                    json.dumps(list(needs_review)),
                    origin,
                    now,
                ),
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def update(
        self,
        name: str,
        row: Mapping[str, Any],
        *,
        needs_review: Sequence[str],
        revision: str | None = None,
        question_id: str | None = None,
    ) -> None:
        """Replace question `question_id` (default `row["id"]`) of dataset `name` with `row`
        (validated first; a new id must be free). With `revision` (`row_revision` of the row
        the editor started from), a question changed since by anyone else is refused
        (`InputError`), so two editors never silently overwrite each other."""
        _validate_rows(name, [dict(row)])
        old_id = str(question_id if question_id is not None else row["id"])
        with self._write():
            found = self._db.execute(
                "SELECT row FROM questions WHERE dataset = ? AND id = ?", (name, old_id)
            ).fetchone()
            if found is None:
                raise InputError(f"dataset {name!r} has no question {old_id!r}", key="id")
            if revision is not None and row_revision(json.loads(found[0])) != revision:
                raise InputError(
                    f"question {old_id!r} of dataset {name!r} changed since it was opened",
                    key="revision",
                    hint="reload it and apply the change again",
                )
            if (
                str(row["id"]) != old_id
                and self._db.execute(
                    "SELECT 1 FROM questions WHERE dataset = ? AND id = ?", (name, str(row["id"]))
                ).fetchone()
            ):
                raise InputError(f"dataset {name!r} already has a question {row['id']!r}", key="id")
            self._db.execute(
                "UPDATE questions SET id = ?, row = ?, needs_review = ? WHERE dataset = ? AND id = ?",
                (
                    str(row["id"]),
                    json.dumps(dict(row)),
                    json.dumps(list(needs_review)),
                    name,
                    old_id,
                ),
            )

    def create(self, name: str, *, description: str | None = None) -> None:
        """An empty dataset `name` (nothing happens when it exists)."""
        if not NAME_PATTERN.match(name):
            raise InputError(f"dataset name {name!r}: use letters, digits, _ . -", key="name")
        now = datetime.now(UTC).isoformat(timespec="seconds")
        self._db.execute(
            "INSERT OR IGNORE INTO datasets (name, description, created) VALUES (?, ?, ?)",
            (name, description, now),
        )

    def move(self, name: str, question_id: str, to: int) -> None:
        """Put question `question_id` at position `to` (0-based, clamped) of dataset `name`,
        the others keeping their order."""
        with self._write():
            ids = [
                r[0]
                for r in self._db.execute(
                    "SELECT id FROM questions WHERE dataset = ? ORDER BY position", (name,)
                )
            ]
            if question_id not in ids:
                raise InputError(f"dataset {name!r} has no question {question_id!r}", key="id")
            ids.remove(question_id)
            ids.insert(max(0, min(to, len(ids))), question_id)
            for position, qid in enumerate(ids):
                self._db.execute(
                    "UPDATE questions SET position = ? WHERE dataset = ? AND id = ?",
                    (position, name, qid),
                )

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, taken at once (`BEGIN IMMEDIATE`): a second writer (another
        tab, the CLI) waits for it instead of interleaving, so no write is lost."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def remove(self, name: str, question_id: str) -> None:
        """Drop question `question_id` of dataset `name`."""
        self._db.execute("DELETE FROM questions WHERE dataset = ? AND id = ?", (name, question_id))

    def document(self, name: str) -> dict[str, Any]:
        """Dataset `name` as a dataset document (what `export` writes)."""
        return {"name": name, "questions": [q.row for q in self.questions(name)]}

    def export_yaml(self, name: str) -> str:
        """Dataset `name` as YAML text: a header saying where it came from and which questions
        carry drafts to review, then the document."""
        questions = self.questions(name)
        lines = [
            f"# Dataset {name!r}, exported from the tracegrade dataset store {self.path.name}."
        ]
        drafts = [q for q in questions if q.needs_review]
        if drafts:
            lines.append("# Drafts to review before relying on them (metadata.needs_review):")
            lines += [f"#   {q.id}: {', '.join(q.needs_review)}" for q in drafts]
        body = yaml.safe_dump(self.document(name), sort_keys=False, allow_unicode=True)
        return "\n".join(lines) + "\n" + body


def row_revision(row: Mapping[str, Any]) -> str:
    """A short fingerprint of a stored question: what an editor started from."""
    return content_hash(dict(row))[:16]


def row_problems(name: str, rows: list[Any]) -> list[Any]:
    """Every problem of `rows` as the questions of dataset `name`, checked as a whole document
    against the dataset schema and models (each `Problem` names the dataset, its pointer and
    the rule)."""
    import dataclasses
    import tempfile

    from .dataset import validate_dataset_file

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"questions": rows}, sort_keys=False), encoding="utf-8")
        return [
            # the temporary file means nothing to a person: name the dataset instead
            dataclasses.replace(p, file=f"store dataset {name!r}")
            for p in validate_dataset_file(path)
        ]


def _validate_rows(name: str, rows: list[dict[str, Any]]) -> None:
    """The whole document against the dataset schema and models (`DatasetError`, exit 4)."""
    from .sourcefile import raise_problems

    raise_problems(row_problems(name, rows), DatasetError)


class StoreSource:
    """`store:NAME`: a dataset of the writable store, exported (validated whole) for the run."""

    name: ClassVar[str] = "store"

    def materialize(self, reference: str, *, base_dir: Path, store_path: Path) -> Path:
        from .dataset import validate_dataset_file
        from .sourcefile import raise_problems

        if not store_path.is_file():
            raise DatasetError(
                f"no dataset store at {store_path} (for dataset store:{reference})",
                hint="tracegrade dataset promote RUN --id Q --to NAME creates it",
            )
        with DatasetStore(store_path) as store:
            try:
                text = store.export_yaml(reference)
            except InputError as exc:
                raise DatasetError(exc.message, hint=exc.hint) from None
        out = store_path.with_name(store_path.name + ".datasets") / f"{reference}.yaml"
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            out.write_text(text, encoding="utf-8")  # unchanged: left alone (same sha256, mtime)
        raise_problems(validate_dataset_file(out), DatasetError)
        return out
