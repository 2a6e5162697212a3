"""Grading by hand: annotations a person writes about a run's answers (`tracegrade label`).

An annotation is one answer to one yes/no item of a target's `labels:` checklist, or a
person's decision on a rubric check left in Review (`review:<check id>`), stored beside the
graders' scores in the run's results store: who, when, the answer, a note, and a fingerprint
of the answer text it was about. Annotations belong to the question, not to a grading: a
re-grade keeps them. When the stored answer changes (a resumed or re-run question), an
annotation made on the old answer is stale: shown, flagged, and never applied.

A Review decision that is not stale replaces the check's status (pass or fail) wherever a
grading is read (`ResultStore.load_scores`), so the gate, every report and `compare` use the
person's decision, and the check records who decided.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import InputError
from .schema import named_rows

__all__ = [
    "REVIEW_PREFIX",
    "Annotation",
    "ChecklistItem",
    "answer_fingerprint",
    "apply_annotations",
    "insert_annotation",
    "parse_checklist",
    "read_annotations",
]

REVIEW_PREFIX = "review:"
"""A label naming a rubric check (`review:<check id>`): a person's pass/fail for it."""


def answer_fingerprint(response: str) -> str:
    """sha256 of an answer's text: an annotation made on another text is stale."""
    return hashlib.sha256(response.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ChecklistItem:
    """One yes/no question of a target's `labels:` checklist."""

    id: str
    """Stable id the annotations key on (a snake_case slug of the question when not given)."""
    question: str
    """What the person is asked, answered yes or no."""


def _slug(text: str) -> str:
    out = "".join(c.lower() if c.isalnum() else "_" for c in text).strip("_")
    while "__" in out:
        out = out.replace("__", "_")
    return out[:60] or "label"


def parse_checklist(raw: Any) -> list[ChecklistItem]:
    """A target's `labels:` (strings, or `{id, question}` mappings) as checklist items."""
    items = []
    for entry in raw or []:
        if isinstance(entry, str):
            items.append(ChecklistItem(id=_slug(entry), question=entry))
        elif isinstance(entry, Mapping):
            question = str(entry.get("question") or entry.get("id"))
            items.append(
                ChecklistItem(id=str(entry.get("id") or _slug(question)), question=question)
            )
    return items


@dataclass(frozen=True, slots=True)
class Annotation:
    """A person's answer about one question trial of a run."""

    target: str
    """The target the question ran against."""
    question_id: str
    """The question's id."""
    trial: int
    """The trial (0-based) the answer was about."""
    label: str
    """A checklist item's id, or `review:<check id>` for a rubric check left in Review."""
    answer: bool
    """Yes / pass (True) or no / fail (False)."""
    author: str
    """Who answered."""
    created: str
    """When (UTC, ISO 8601)."""
    answer_sha256: str
    """Fingerprint of the answer text the person saw."""
    note: str | None = None
    """The person's note, if any."""
    stale: bool = False
    """The stored answer changed since (a resumed or re-run question): shown, never applied."""

    @property
    def review_check(self) -> str | None:
        """The rubric check id this decides, None for a checklist answer."""
        return self.label[len(REVIEW_PREFIX) :] if self.label.startswith(REVIEW_PREFIX) else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["by"] = data.pop("author")
        return data


def _check_ids(check: Mapping[str, Any]) -> set[str]:
    name = str(check.get("id", ""))
    ids = {name}
    if check.get("version"):
        ids.add(f"{name}@{check['version']}")
    return ids


def apply_annotations(question: Any, annotations: Iterable[Annotation]) -> None:
    """Attach `annotations` to a `QuestionResult` (newest last) and apply the Review decisions
    that are not stale: a check in `review` becomes `pass` or `fail`, recording who decided,
    when and the note. The latest decision per check wins. A judge panel's Review decided by a
    person gives its grader the decision as score (its max or min) and the question is scored
    again."""
    mine: Sequence[Annotation] = sorted(annotations, key=lambda a: a.created)
    question.annotations = [a.to_dict() for a in mine]
    decisions = {a.review_check: a for a in mine if a.review_check and not a.stale}
    if not decisions:
        return
    rescore = False
    for grader in question.graders:
        for check in grader.checks:
            if check.get("status") != "review" and "decided_by" not in check:
                continue
            decision = next((decisions[i] for i in _check_ids(check) if i in decisions), None)
            if decision is None:
                continue
            check.setdefault("judged_status", check.get("status"))
            check["status"] = "pass" if decision.answer else "fail"
            check["decided_by"] = decision.author
            check["decided_at"] = decision.created
            check["decision_note"] = decision.note
            check["rule"] = f"resolved by a person ({decision.author})"
            if check.get("kind") == "judge_panel" and not grader.error:
                # the panel decided nothing: the person's pass/fail is the grader's score
                grader.score = grader.max_score if decision.answer else grader.min_score
                grader.reason = (
                    f"decided by {decision.author}: {'pass' if decision.answer else 'fail'} "
                    f"(the panel sent it to Review: {check.get('reason', '')})"
                )
                rescore = True
    if rescore:
        from ..verdicts.scoring import score_question

        score_question(question)


# -- the annotations table of a run's store (`ResultStore.add_annotation`, `load_annotations`)
def insert_annotation(
    db: sqlite3.Connection,
    redaction: Any,
    *,
    target: str,
    question_id: str,
    trial: int = 0,
    label: str,
    answer: bool,
    author: str,
    note: str | None = None,
    answer_sha256: str | None = None,
    created: str,
) -> Annotation:
    """Store one answer a person gave about a question trial, committed at once (nothing
    lost when labelling stops half way). `answer_sha256` defaults to the stored answer's,
    `created` when it was given (`merge` keeps a shard's)."""
    if answer_sha256 is None:
        row = db.execute(
            "SELECT response FROM questions WHERE target = ? AND question_id = ? AND trial = ?",
            (target, question_id, trial),
        ).fetchone()
        if row is None:
            raise InputError(
                f"the run has no question {question_id!r} (trial {trial}) for target {target!r}"
            )
        answer_sha256 = answer_fingerprint(row[0])
    db.execute(
        "INSERT INTO annotations (target, question_id, trial, label, answer, note, author, "
        "created, answer_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            target,
            question_id,
            trial,
            label,
            int(bool(answer)),
            None if note is None else redaction.text(note),
            redaction.text(author),
            created,
            answer_sha256,
        ),
    )
    return Annotation(
        target=target,
        question_id=question_id,
        trial=trial,
        label=label,
        answer=bool(answer),
        author=author,
        created=created,
        answer_sha256=answer_sha256,
        note=note,
    )


def read_annotations(db: sqlite3.Connection, *, target: str | None = None) -> list[Annotation]:
    """Every annotation of the run (of `target`), oldest first, each flagged stale when the
    stored answer it was about has changed since."""
    sql = (
        "SELECT target, question_id, trial, label, answer, note, author, created, "
        "answer_sha256 FROM annotations"
    )
    args: tuple[Any, ...] = ()
    if target is not None:
        sql += " WHERE target = ?"
        args = (target,)
    rows = named_rows(db, sql + " ORDER BY annotation_id", args)
    # only the labelled answers are read and hashed: every response of a large run was
    # (3.4 s and a 20 MB peak for 44,000 question runs with no label at all)
    answers = {}
    for key in {(r["target"], r["question_id"], r["trial"]) for r in rows}:
        found = named_rows(
            db,
            "SELECT response FROM questions WHERE target = ? AND question_id = ? AND trial = ?",
            key,
        )
        if found:
            answers[key] = answer_fingerprint(found[0]["response"])
    return [
        Annotation(
            target=r["target"],
            question_id=r["question_id"],
            trial=r["trial"],
            label=r["label"],
            answer=bool(r["answer"]),
            note=r["note"],
            author=r["author"],
            created=r["created"],
            answer_sha256=r["answer_sha256"],
            stale=answers.get((r["target"], r["question_id"], r["trial"])) != r["answer_sha256"],
        )
        for r in rows
    ]
