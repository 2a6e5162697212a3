"""What `tracegrade label RUN` walks and writes: each question trial of a run with what a person
needs to judge it (the input, the answer, the tool calls, the graders' verdicts, the rubric
checks left in Review), the target's checklist, and an answers file read and checked whole
before anything is written (every problem naming file, line and key, exit 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..inputs.sourcefile import Problem, load_document, pointer_of, raise_problems
from ..rundir.annotations import REVIEW_PREFIX, ChecklistItem, parse_checklist
from ..rundir.manifest import RunManifest
from ..rundir.record import ToolCallResult
from ..rundir.store import ResultStore
from ..verdicts.scoring import GraderVerdict

__all__ = [
    "AnswerRow",
    "LabelTask",
    "checklists_of",
    "label_problem",
    "label_tasks",
    "open_items",
    "read_answers_file",
    "record_answer",
]

_YES = {"yes", "y", "true", "pass", "1"}
_NO = {"no", "n", "false", "fail", "0"}


@dataclass(slots=True)
class LabelTask:
    """One question trial to label."""

    target: str
    question_id: str
    trial: int
    input: str
    """The question as the agent got it (flattened)."""
    response: str
    """The stored answer."""
    error: str | None
    """Why the agent failed, if it did."""
    tool_calls: list[ToolCallResult] | None
    """From the trace file (redacted); None when no record is known."""
    graders: list[GraderVerdict]
    """The latest grading's verdicts."""
    checklist: list[ChecklistItem]
    """The target's `labels:`."""
    reviews: list[dict[str, Any]] = field(default_factory=list)
    """Rubric checks of the latest grading left in Review (or decided by a person)."""
    annotations: list[dict[str, Any]] = field(default_factory=list)
    """What people answered already (stale ones flagged)."""


def checklists_of(
    manifest: RunManifest | None, config: Any = None
) -> dict[str, list[ChecklistItem]]:
    """Each target's checklist: the config's `labels:` now when it names the target (a
    checklist may be written after the run), else the one the run's manifest recorded."""
    out = {}
    for name, stored in (manifest.targets if manifest is not None else {}).items():
        raw = stored.config.get("labels")
        current = getattr(config, "targets", {}).get(name) if config is not None else None
        if current is not None and current.raw.get("labels") is not None:
            raw = current.raw["labels"]
        out[name] = parse_checklist(raw)
    return out


def label_tasks(
    run_dir: Path,
    store: ResultStore,
    checklists: Mapping[str, list[ChecklistItem]],
    *,
    ids: Sequence[str] = (),
) -> list[LabelTask]:
    """Every question trial of the run (those matching `ids`, ids or globs), in run order."""
    from ..inputs.dataset import id_selected
    from ..rundir.history import tool_calls_of

    tasks = []
    scores = {(q.target, q.id, q.trial): q for q in store.load_scores()}
    for target in store.targets():
        calls = tool_calls_of(run_dir, target)
        for run in store.load_runs(target):
            if not id_selected(run.id, ids):
                continue
            score = scores.get((target, run.id, run.trial))
            graders = list(score.graders) if score is not None else []
            reviews = [
                {"grader": g.grader_id, **c}
                for g in graders
                for c in g.checks
                if c.get("status") == "review" or c.get("decided_by")
            ]
            tasks.append(
                LabelTask(
                    target=target,
                    question_id=run.id,
                    trial=run.trial,
                    input=run.answer.input,
                    response=run.answer.response,
                    error=run.error,
                    tool_calls=calls.get((run.id, run.trial)) if run.answer.has_record else None,
                    graders=graders,
                    checklist=list(checklists.get(target, [])),
                    reviews=reviews,
                    annotations=list(score.annotations) if score is not None else [],
                )
            )
    return tasks


@dataclass(frozen=True, slots=True)
class AnswerRow:
    """One answer from an answers file, checked against the run."""

    target: str
    question_id: str
    trial: int
    label: str
    """A checklist id, or `review:<check id>`."""
    answer: bool
    note: str | None


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str | int) and str(value).strip().lower() in _YES | _NO:
        return str(value).strip().lower() in _YES
    return None


def read_answers_file(path: Path, tasks: Sequence[LabelTask]) -> tuple[list[AnswerRow], str | None]:
    """The answers of a YAML/JSON answers file and its `by:` (None when absent):

        by: ana
        answers:
          - {question: q1, label: would_send, answer: yes, note: "..."}
          - {question: q2, review: booking-claim, answer: fail}

    `target` is needed only when the run has several targets, `trial` only with repeats. Every
    problem (an unknown question, label or check, an answer that is not yes/no) is reported
    at once with its line (exit 4); nothing is written then."""
    doc = load_document(path, error_cls=InputError)
    data = doc.data
    problems: list[Problem] = []

    def problem(parts: list[Any], message: str, hint: str | None = None) -> None:
        pointer = pointer_of(parts)
        problems.append(Problem(str(path), doc.line_of(pointer), pointer, message, hint=hint))

    if not isinstance(data, Mapping) or not isinstance(data.get("answers"), list):
        problem([], "an answers file is a mapping with an `answers` list")
        raise_problems(problems, InputError)
    by = data.get("by")
    if by is not None and (not isinstance(by, str) or not by.strip()):
        problem(["by"], "`by` must be a non-empty string (who answered)")
    targets = sorted({t.target for t in tasks})
    index = {(t.target, t.question_id, t.trial): t for t in tasks}
    rows = []
    for i, entry in enumerate(data["answers"]):
        at = ["answers", i]
        if not isinstance(entry, Mapping):
            problem(at, "an answer is a mapping: {question, label | review, answer, note}")
            continue
        unknown = sorted(
            set(entry) - {"question", "target", "trial", "label", "review", "answer", "note"}
        )
        for key in unknown:
            problem([*at, key], f"unknown key {key!r}")
        target = entry.get("target")
        if target is None:
            if len(targets) != 1:
                problem(at, f"the run has several targets: name one ({', '.join(targets)})")
                continue
            target = targets[0]
        trial = entry.get("trial", 0)
        question = entry.get("question")
        task = index.get((str(target), str(question), trial if isinstance(trial, int) else -1))
        if task is None:
            known = sorted({t.question_id for t in tasks if t.target == target})
            problem(
                [*at, "question"],
                f"the run has no question {question!r} (trial {trial}) for target {target!r}",
                hint=f"questions: {', '.join(known[:10])}" if known else None,
            )
            continue
        has_label, has_review = "label" in entry, "review" in entry
        if has_label == has_review:
            problem(at, "an answer names exactly one of `label` (a checklist id) or `review`")
            continue
        label = str(entry["label"]) if has_label else REVIEW_PREFIX + str(entry["review"])
        wrong = label_problem(task, label)
        if wrong is not None:
            problem([*at, "label" if has_label else "review"], wrong[0], hint=wrong[1])
            continue
        answer = _truth(entry.get("answer"))
        if answer is None:
            problem([*at, "answer"], "answer must be yes/no (or pass/fail, true/false)")
            continue
        note = entry.get("note")
        if note is not None and not isinstance(note, str):
            problem([*at, "note"], "note must be a string")
            continue
        rows.append(AnswerRow(task.target, task.question_id, task.trial, label, answer, note))
    raise_problems(problems, InputError)
    return rows, by


def label_problem(task: LabelTask, label: str) -> tuple[str, str | None] | None:
    """(message, hint) when `label` (a checklist id, or `review:<check id>`) is nothing a
    person can answer about `task`; None when it is."""
    if label.startswith(REVIEW_PREFIX):
        check = label[len(REVIEW_PREFIX) :]
        names = {str(c.get("id")) for c in task.reviews} | {
            f"{c.get('id')}@{c.get('version')}" for c in task.reviews if c.get("version")
        }
        if check not in names:
            return (
                f"question {task.question_id!r} has no rubric check {check!r} in Review",
                f"in Review: {', '.join(sorted(names))}" if names else None,
            )
        return None
    ids = [c.id for c in task.checklist]
    if label not in ids:
        return (
            f"target {task.target!r} has no checklist item {label!r}",
            f"labels: {', '.join(ids)}" if ids else "add `labels:` to the target",
        )
    return None


def record_answer(
    store: Any,
    task: LabelTask,
    *,
    label: str,
    answer: bool,
    author: str,
    note: str | None = None,
) -> Any:
    """Store one person's answer about `task` (every way of labelling ends here: the
    terminal walk, an answers file, `tracegrade serve`). A label the task cannot be answered
    about is an `InputError`; nothing is written then. Returns the stored `Annotation`."""
    wrong = label_problem(task, label)
    if wrong is not None:
        raise InputError(wrong[0], key="label", hint=wrong[1], question_id=task.question_id)
    return store.add_annotation(
        target=task.target,
        question_id=task.question_id,
        trial=task.trial,
        label=label,
        answer=answer,
        note=note,
        author=author,
    )


def open_items(question: Any, checklist: Sequence[ChecklistItem]) -> list[tuple[str, str]]:
    """What still waits for a person on one graded question (a `QuestionResult` with its
    annotations applied): (label, what is asked) for each required-or-not rubric check still
    in Review and each checklist item without a current (not stale) answer."""
    answered = {a["label"] for a in getattr(question, "annotations", []) if not a.get("stale")}
    out = [
        (
            REVIEW_PREFIX + str(c.get("id")),
            f"rubric check {c.get('id')} is in Review: "
            f"{c.get('criterion') or c.get('reason') or ''}".rstrip(": "),
        )
        for g in question.graders
        for c in g.checks
        if c.get("status") == "review"
    ]
    out += [(c.id, c.question) for c in checklist if c.id not in answered]
    return out
