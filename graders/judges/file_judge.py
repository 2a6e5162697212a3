"""Judges defined in a file (seed 003 "Your own LLM judge"), attached from a grading module:

    GRADERS = [file_judge("judges/tone.md", name="tone", goal="is polite and concise")]

- A prompt template (any file but `.py`): the text sent to the configured judge model, with the
  slots `{{ goal }}`, `{{ output }}` and `{{ expected }}` (and optionally `{{ input }}`, the
  question, and `{{ tool_calls }}`, the TOOL CALLS block). The answer format is appended; the
  answer is parsed like every judge's (one JSON object with a numeric `score`).
- A Python callable module (`.py`): its `judge(goal, output, expected)` (sync or async) returns
  `{"score": n, "reasoning": "..."}`, or `{"pass": bool, "reasoning": "..."}` when `binary=True`.

A file judge is identified in the results by its path and the sha256 of its content, so editing
it in place counts as a new judge: the hash lands in the run's identity and every result, and a
re-grade whose file changed says so. A relative path resolves against the directory of the
module that calls `file_judge`.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...errors import InputError
from ...judging.rendering import fence, render_tool_calls
from ...records import GradeResult
from ...redaction import truncate
from ...usercode.loading import import_file
from ..base import Grader, GraderServices
from .base import DATA_ONLY_NOTE, LlmJudge
from .goal import expected_answer_of, goal_of

__all__ = ["TEMPLATE_SLOTS", "CallableFileJudge", "TemplateFileJudge", "file_judge"]

TEMPLATE_SLOTS = ("goal", "output", "expected", "input", "tool_calls")
"""The slots a template judge may name; `output` is required."""
_SLOT_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_ANSWER_FORMAT = {
    False: 'Answer with only a JSON object of the form {"score": <number from 0 to 5>, '
    '"reason": "<one or two sentences>"} and nothing else.',
    True: 'Answer with only a JSON object of the form {"score": <0 or 1>, "reason": "<one or '
    'two sentences>"} and nothing else. 1 means yes, 0 means no.',
}


def file_judge(
    path: str | Path,
    *,
    name: str | None = None,
    goal: str | None = None,
    binary: bool = False,
    services: GraderServices | None = None,
) -> Grader:
    """A judge defined in `path`: a prompt template, or a `.py` module with `judge(goal,
    output, expected)`. `name` is its grader id (default: the file's stem); `goal` is used for
    questions without their own; `binary` makes it pass/fail (0 or 1)."""
    file = Path(path)
    if not file.is_absolute():
        caller = inspect.stack()[1].filename
        file = Path(caller).resolve().parent / file
    if not file.is_file():
        raise InputError("judge file not found", file=str(file))
    judge_id = name or file.stem
    if not _NAME_RE.fullmatch(judge_id):
        raise InputError(f"judge name {judge_id!r} is not a valid grader id", file=str(file))
    cls = CallableFileJudge if file.suffix == ".py" else TemplateFileJudge
    return cls(file=file, judge_id=judge_id, goal=goal, binary=binary, services=services)


def _sha256(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def _identify(judge: Any, file: Path, judge_id: str, goal: str | None, binary: bool) -> None:
    """Id, label, goal, scale and file identity of a file judge (a binary one answers 0 or 1)."""
    judge.source_file = file
    judge.content_sha256 = _sha256(file)
    judge.id = judge_id
    judge.label = judge_id
    judge.dimension = judge_id  # what gold labels key on (`tracegrade judges validate`)
    judge.goal = goal
    judge.binary = binary
    if binary:
        judge.max_score = 1.0


def _file_identity(judge: Any) -> dict[str, Any]:
    return {
        "id": judge.id,
        "dimension": judge.dimension,
        "judge_file": str(judge.source_file),
        "judge_file_sha256": judge.content_sha256,
    }


class TemplateFileJudge(LlmJudge):
    """A prompt-template file judged by the configured judge model (through the run's client)."""

    id = "file_judge"
    label = "File judge"
    description = "LLM judge defined by a prompt template file (identified by path and hash)."
    sees_tool_calls = True
    slot_template: ClassVar[bool] = False
    source_file: Path
    """The judge's file."""
    content_sha256: str
    """sha256 of the file's content: editing it makes a new judge."""
    goal: str | None
    """The goal for questions without their own."""

    def __init__(
        self, *, file: Path, judge_id: str, goal: str | None, binary: bool, **kwargs: Any
    ) -> None:
        _identify(self, file, judge_id, goal, binary)
        text = file.read_text(encoding="utf-8")
        slots = set(_SLOT_RE.findall(text))
        unknown = sorted(slots - set(TEMPLATE_SLOTS))
        if unknown:
            raise InputError(
                f"unknown slot {{{{ {unknown[0]} }}}} in the judge template",
                file=str(file),
                hint=f"slots: {', '.join(TEMPLATE_SLOTS)}",
            )
        if "output" not in slots:
            raise InputError(
                "the judge template never shows the output: add {{ output }}", file=str(file)
            )
        self._text = text
        super().__init__(**kwargs)

    def default_template(self) -> str:
        return self._text

    def interpret_score(self, raw: float) -> float | None:
        if self.binary:
            return None if raw < 0.0 or raw > 1.0 else (1.0 if raw > 0.5 else 0.0)
        return super().interpret_score(raw)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), **_file_identity(self)}

    def build_prompt(self, input: str, response: str, context: Mapping[str, Any]) -> str:
        policy = self.services.redaction
        tool_calls = ""
        if "tool_calls" in context:
            tool_calls = render_tool_calls(context["tool_calls"], policy=policy) or ""
        values = {
            "goal": fence("criteria", goal_of(context, self.goal) or "(no goal given)"),
            "expected": fence("criteria", expected_answer_of(context) or "(no expected answer)"),
            "input": fence("question", input),
            "tool_calls": tool_calls or "(no tool-call record)",
            "output": fence(
                "agent_response",
                truncate(policy.text(response), self.response_char_limit),
            ),
        }
        prompt = _SLOT_RE.sub(lambda m: values[m.group(1)], self.template)
        return f"{prompt.rstrip()}\n\n{DATA_ONLY_NOTE}\n\n{_ANSWER_FORMAT[self.binary]}"


class CallableFileJudge(Grader):
    """A Python module whose `judge(goal, output, expected)` scores the answer itself."""

    id = "file_judge"
    label = "File judge"
    description = "A judge defined by a Python module's judge(goal, output, expected)."
    source_file: Path
    """The judge's file."""
    content_sha256: str
    """sha256 of the file's content: editing it makes a new judge."""
    goal: str | None
    """The goal for questions without their own."""

    def __init__(
        self, *, file: Path, judge_id: str, goal: str | None, binary: bool, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        _identify(self, file, judge_id, goal, binary)
        self.function = _load_judge_function(file, self.content_sha256)

    async def agrade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        identity = _file_identity(self)
        goal = goal_of(context, self.goal)
        answer = self.function(goal, response, expected_answer_of(context))
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, Mapping):
            return self.result(
                None,
                f"{self.id}: judge() returned {type(answer).__name__}, not a mapping",
                True,
                identity=identity,
            )
        reason = str(answer.get("reasoning", answer.get("reason", "")))
        key = "pass" if self.binary else "score"
        value = answer.get(key)
        if self.binary:
            if not isinstance(value, bool):
                return self.result(
                    None, f"{self.id}: judge() gave no boolean `pass`", True, identity=identity
                )
            return self.result(1.0 if value else 0.0, reason, raw=dict(answer), identity=identity)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return self.result(
                None, f"{self.id}: judge() gave no numeric `score`", True, identity=identity
            )
        if not self.min_score <= value <= self.max_score:
            return self.result(
                None,
                f"{self.id}: judge() scored {value:g}, outside its 0-5 scale",
                True,
                identity=identity,
            )
        return self.result(float(value), reason, raw=dict(answer), identity=identity)


def _load_judge_function(file: Path, digest: str) -> Any:
    # The namespace carries the content's hash: an edited judge file is loaded anew.
    module = import_file(
        file, namespace=f"tracegrade_file_judge_{digest[:12]}", what="the judge module"
    )
    function = getattr(module, "judge", None)
    if not callable(function):
        raise InputError(
            "the judge module defines no judge(goal, output, expected)", file=str(file)
        )
    return function
