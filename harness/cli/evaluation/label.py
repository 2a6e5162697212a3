"""`tracegrade label RUN`: grade a run's answers by hand (a yes/no checklist, Review decisions)."""

from __future__ import annotations

import argparse
import getpass
import os
from pathlib import Path
from typing import Any

from .. import add_id_flag
from .._arguments import add_config_flag, add_run_argument, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
Walk each question of a run in the terminal (the input, the answer, the tool calls, the
graders' verdicts) and answer the target's checklist (`labels:` in the config: yes/no
questions), and decide each rubric check left in Review (pass/fail). Each answer is stored at
once beside the graders' scores, with who answered, when, and an optional note; a re-grade
keeps them. A Review decision changes the gate: `tracegrade show RUN` and `grade RUN` use the
person's verdict. An answer given about an answer text that later changed (a resumed or re-run
question) is flagged stale and never applied.

Keys: y/n (pass/fail for a Review check), s to skip, q to stop (what was answered is kept).
Non-interactive: --answers FILE (YAML/JSON), checked whole before anything is written:

  by: ana
  answers:
    - {question: q1, label: would_send, answer: yes, note: "clear and short"}
    - {question: q2, review: booking-claim, answer: fail}
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "label",
        help="grade a run's answers by hand (checklist, Review decisions)",
        description=DESCRIPTION,
    )
    add_run_argument(parser)
    add_config_flag(parser)
    parser.add_argument(
        "--answers", type=Path, default=None, metavar="FILE", help="answers file (YAML/JSON)"
    )
    parser.add_argument(
        "--by", default=None, metavar="NAME", help="who answers (default: the file's `by:`, $USER)"
    )
    add_id_flag(parser, help="only this question (repeatable; globs: 'Q0*')")
    parser.add_argument(
        "--all", action="store_true", help="also ask about questions already answered"
    )
    parser.set_defaults(handler=run)


def _config(path: Path | None) -> Any:
    from ...inputs.config import DEFAULT_CONFIG, load_config

    if path is None and not Path(DEFAULT_CONFIG).is_file():
        return None
    return load_config(path)


def run(args: argparse.Namespace) -> int:
    from ...curation.labelling import (
        checklists_of,
        label_tasks,
        read_answers_file,
        record_answer,
    )
    from ...errors import InputError
    from ...redaction import DEFAULT_POLICY
    from ...rundir.directory import RunDirectory

    config = _config(args.config)
    run = RunDirectory.resolve(args.run_dir, config_path=args.config)
    run_dir, manifest = run.path, run.manifest()
    redaction = config.redaction if config is not None else DEFAULT_POLICY
    with run.store(redaction=redaction) as store:
        tasks = label_tasks(run_dir, store, checklists_of(manifest, config), ids=tuple(args.ids))
        if not tasks:
            raise InputError("no question of the run to label", key="--id" if args.ids else "RUN")
        if args.answers is not None:
            rows, by = read_answers_file(args.answers, tasks)
            author = args.by or by or _user()
            tasks_by_key = {(t.target, t.question_id, t.trial): t for t in tasks}
            for row in rows:
                record_answer(
                    store,
                    tasks_by_key[(row.target, row.question_id, row.trial)],
                    label=row.label,
                    answer=row.answer,
                    note=row.note,
                    author=author,
                )
            print(f"tracegrade: {len(rows)} answer(s) by {author} stored in {run_dir}")
            return 0
        if not any(t.checklist or t.reviews for t in tasks):
            raise InputError(
                "nothing to ask: no target of the run has `labels:` and no rubric check is in "
                "Review",
                key="labels",
                hint='add labels: ["Would you send this answer?"] to the target',
            )
        session = LabelSession(store, author=args.by or _user(), ask_all=args.all)
        stored = session.walk(tasks)
    print(f"tracegrade: {stored} answer(s) stored in {run_dir}")
    return 0


def _user() -> str:
    try:
        return os.environ.get("TRACEGRADE_USER") or getpass.getuser()
    except Exception:  # no login name (a container): still record something honest
        return "unknown"


class LabelSession:
    """The interactive walk: one question at a time, each answer stored as it is given."""

    def __init__(self, store: Any, *, author: str, ask_all: bool = False) -> None:
        self.store = store
        self.author = author
        self.ask_all = ask_all
        self.stored = 0

    def walk(self, tasks: list[Any]) -> int:
        total = len(tasks)
        try:
            for number, task in enumerate(tasks, 1):
                if not self._one(task, number, total):
                    break
        except (EOFError, KeyboardInterrupt):
            print("\ntracegrade: stopped; every answer given so far is stored")
        return self.stored

    def _one(self, task: Any, number: int, total: int) -> bool:
        from ...curation.labelling import open_items, record_answer

        done = {a["label"] for a in task.annotations if not a.get("stale")}
        items = [(c.id, c.question, ("y", "n")) for c in task.checklist]
        items += [(label, question, ("p", "f")) for label, question in open_items(task, [])]
        todo = [i for i in items if self.ask_all or i[0] not in done]
        if not todo:
            return True
        _show(task, number, total)
        for label, question, (yes, no) in todo:
            while True:
                answer = input(f"{question} [{yes}/{no}/s=skip/q=quit] ").strip().lower()
                if answer in (yes, no, "s", "q"):
                    break
                print(f"  answer {yes}, {no}, s or q")
            if answer == "q":
                return False
            if answer == "s":
                continue
            note = input("  note (enter for none): ").strip() or None
            record_answer(
                self.store, task, label=label, answer=answer == yes, note=note, author=self.author
            )
            self.stored += 1
        return True


def _show(task: Any, number: int, total: int) -> None:
    trial = f" trial {task.trial}" if task.trial else ""
    print(f"\n=== [{number}/{total}] {task.target} / {task.question_id}{trial} ===")
    print(f"input:\n  {_indent(task.input)}")
    if task.error:
        print(f"agent error: {task.error}")
    print(f"answer:\n  {_indent(task.response or '(empty)')}")
    if task.tool_calls is None:
        print("tool calls: (no record)")
    elif not task.tool_calls:
        print("tool calls: none")
    else:
        print("tool calls:")
        for i, call in enumerate(task.tool_calls, 1):
            args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
            print(f"  #{i} {call.name}({args}) -> {call.outcome}")
    for g in task.graders:
        verdict = "error" if g.error else "skip" if g.skipped else "pass" if g.passed else "FAIL"
        score = "-" if g.score is None else f"{g.score:g}/{g.max_score:g}"
        print(f"  {g.grader_id}: {verdict} {score}  {g.reason[:160]}")
    for a in task.annotations:
        stale = " (STALE: the answer changed since)" if a.get("stale") else ""
        answer = "yes" if a["answer"] else "no"
        print(f"  labelled {a['label']}: {answer} by {a['by']}{stale}")


def _indent(text: str) -> str:
    return "\n  ".join(str(text).splitlines() or [""])
