"""Datasets: the pydantic models of `schema/dataset.schema.json`, loading with validation of
every source (YAML, JSON, JSONL), split assignment and question selection.

The JSON Schema is the contract and runs first, so every error names file, line, question id
and pointer; the models enforce the same rules (tests run both over the example corpus) and
give the runner typed questions. A JSONL file holds one question object per line and no
splits block.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import DatasetError, InputError, suggest
from ..world import ToolOverride
from .blocks.checks import check_checks, check_claims, check_nodes
from .blocks.conversation import ExpectedInterrupts, SimulatedUser, Turn, check_resume
from .blocks.expected_tool import ExpectedTool, NonBlank
from .blocks.trajectory import check_trajectory
from .sourcefile import (
    Document,
    Problem,
    conforms,
    escape_pointer_token,
    load_document,
    problem_at,
    raise_problems,
    validate_document,
)
from .splits import SPLIT_NAMES, assign_split

__all__ = [
    "Dataset",
    "Expected",
    "ExpectedTool",
    "Message",
    "Question",
    "Ratios",
    "Splits",
    "StateAssertion",
    "StateSpec",
    "check_dataset",
    "check_id_patterns",
    "id_selected",
    "load_dataset",
    "select_questions",
    "unknown_label_hints",
    "validate_dataset_file",
]

FactScalar = str | int | float
SplitName = Literal["train", "validation", "test"]
RUBRIC_REF_PATTERN = r"^rubric/[a-z0-9][a-z0-9_.-]*@[0-9A-Za-z][0-9A-Za-z.+-]*$"
BUNDLE_PATTERN = r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$"

# Strict: no coercion the schema would not allow ("1" is not an integer, 1 is not a string).
_STRICT = ConfigDict(extra="forbid", strict=True)


class Message(BaseModel):
    """One message of a multi-turn input."""

    model_config = _STRICT

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks."""
    content: str
    """What they say."""


class Expected(BaseModel):
    """Grader-specific expectations; open for keys such as `answer`."""

    model_config = ConfigDict(extra="allow", strict=True)

    format: Literal["text", "json", "yaml", "markdown"] | None = None
    """The answer's format, read by format_grader."""


_STATE_CHECKS = {"sql": ("equals", "rows", "count"), "key": ("equals", "exists", "absent")}


class StateAssertion(BaseModel):
    """One `metadata.state` assertion of state_grader."""

    model_config = _STRICT

    kind: Literal["sql", "key"]
    """`sql`: a query against the environment; `key`: a key of its key-value store."""
    query: NonBlank | None = None
    """The SQL query (kind sql)."""
    key: Annotated[str, Field(min_length=1)] | None = None
    """The key (kind key)."""
    equals: Any = None
    """The first column of the first row (sql), or the key's value."""
    rows: list[list[Any]] | None = None
    """Every row, in order (sql)."""
    count: Annotated[int, Field(ge=0)] | None = None
    """How many rows (sql)."""
    exists: Literal[True] | None = None
    """The key is present (key)."""
    absent: Literal[True] | None = None
    """The key is not present (key)."""

    @model_validator(mode="after")
    def _one_check(self) -> StateAssertion:
        needed = "query" if self.kind == "sql" else "key"
        if getattr(self, needed) is None:
            raise ValueError(f"a {self.kind} assertion needs {needed}")
        allowed = _STATE_CHECKS[self.kind]
        if len([c for c in allowed if c in self.model_fields_set]) != 1:
            raise ValueError(f"a {self.kind} assertion needs exactly one of {', '.join(allowed)}")
        return self


class StateSpec(BaseModel):
    """`metadata.state`: what state_grader checks in the question's environment."""

    model_config = _STRICT

    assertions: Annotated[list[StateAssertion], Field(min_length=1)]
    """Every one must hold."""


class Question(BaseModel):
    """One question of a dataset, as authored. Only `id` and `input` are required."""

    model_config = _STRICT

    id: NonBlank
    """Unique within the dataset."""
    input: (
        Annotated[str, Field(pattern=r"\S")] | Annotated[list[Message], Field(min_length=1)] | None
    ) = None
    """A string, or a conversation of messages (required unless `turns` is given)."""
    turns: (
        Annotated[list[Turn | Annotated[str, Field(pattern=r"\S")]], Field(min_length=1)] | None
    ) = None
    """A conversation sent turn by turn, in place of `input`: each user turn after the agent
    answered the previous one, on the same thread."""
    user: SimulatedUser | None = None
    """A simulated user that plays the person (on the judge model)."""
    resume: list[Any] | None = None
    """The answers a person would give to the graph's interrupts (`check_resume`)."""
    expected_interrupts: ExpectedInterrupts | None = None
    """Assertions about the interrupts the graph paused on (interrupt_grader)."""
    criteria: str | None = None
    """The prose standard LLM judges grade against."""
    goal: Annotated[str, Field(pattern=r"\S")] | None = None
    """What a good answer achieves: the goal judge scores the answer against it."""
    expected: Expected | None = None
    """Grader-specific expectations."""
    expected_facts: dict[str, FactScalar | list[FactScalar]] | None = None
    """Ground truth for the fact-checking judges (legacy `must_not_contain`: list of strings)."""
    expected_tools: list[ExpectedTool] | None = None
    """Assertions about the tools the agent ran."""
    trajectory: dict[str, Any] | None = None
    """Assertions about the whole run (match mode, argument matchers, forbid, only, count,
    max_calls), graded by trajectory_grader; checked by `trajectory_problems`."""
    checks: bool | dict[str, Any] | None = None
    """The record checks that need no expected answer (record_checks); `checks_problems`."""
    claims: dict[str, Any] | None = None
    """RE2 pattern -> the tool(s) whose successful call backs that claim (claims_grader)."""
    nodes: dict[str, Any] | None = None
    """The path through the graph (nodes_grader): match mode and path or steps."""
    rubric_ref: Annotated[str, Field(pattern=RUBRIC_REF_PATTERN)] | None = None
    """`rubric/<id>@<version>`: a shared rubric."""
    configurable: dict[str, Any] | None = None
    """LangGraph `config["configurable"]` for this question, merged over the target's."""
    tools: dict[NonBlank, ToolOverride] | None = None
    """The agent's world: what each tool does in this question run (a fault, a fixture, a
    delay, planted text), over the target's `tools:` tool by tool."""
    state: dict[NonBlank, Any] | None = None
    """Graph state keys seeded beside the messages (checked against the graph's state schema)."""
    start_at: NonBlank | None = None
    """A graph node: the opening state is written as its output (`update_state(as_node=)`),
    and the run continues from there."""
    choices: Annotated[list[str], Field(min_length=1)] | None = None
    """Multiple-choice options."""
    files: dict[str, str] | None = None
    """Filename -> content or path (declaration only)."""
    disabled: bool = False
    """True excludes the question from every run."""
    split: SplitName | None = None
    """An explicit split label (wins over the splits rule)."""
    bundle: Annotated[str, Field(pattern=BUNDLE_PATTERN)] | None = None
    """The snake_case eval domain of the question."""
    tags: list[NonBlank] | None = None
    """Free-form labels."""
    metadata: dict[str, Any] | None = None
    """Case-level carry-all (`metadata.state`: state_grader assertions)."""

    @field_validator("resume")
    @classmethod
    def _resume(cls, value: Any) -> Any:
        return check_resume(value)

    @model_validator(mode="after")
    def _input_or_turns(self) -> Question:
        if self.turns is not None and self.input is not None:
            raise ValueError("a question takes input or turns, not both")
        if self.turns is None and self.input is None:
            raise ValueError("a question needs id and input")
        if self.turns is not None and self.user is not None:
            raise ValueError("a question takes turns or a simulated user, not both")
        return self

    def user_turns(self) -> list[Turn]:
        """The `turns` as Turn models (a plain string is a turn of that text); [] without."""
        return [Turn(content=t) if isinstance(t, str) else t for t in self.turns or ()]

    @field_validator("trajectory")
    @classmethod
    def _trajectory_well_formed(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_trajectory(value)

    @field_validator("checks")
    @classmethod
    def _checks_well_formed(cls, value: Any) -> Any:
        return check_checks(value)

    @field_validator("claims")
    @classmethod
    def _claims_well_formed(cls, value: Any) -> Any:
        return check_claims(value)

    @field_validator("nodes")
    @classmethod
    def _nodes_well_formed(cls, value: Any) -> Any:
        return check_nodes(value)

    @field_validator("expected_facts")
    @classmethod
    def _legacy_must_not_contain(cls, value: dict | None) -> dict | None:
        banned = (value or {}).get("must_not_contain")
        if banned is not None and not (
            isinstance(banned, list) and all(isinstance(b, str) for b in banned)
        ):
            raise ValueError("must_not_contain must be a list of strings")
        return value

    @field_validator("metadata")
    @classmethod
    def _state_spec(cls, value: dict | None) -> dict | None:
        if value is None or "state" not in value:
            return value
        state = value["state"]
        if isinstance(state, list):  # the list of assertions itself
            state = {"assertions": state}
        StateSpec.model_validate(state)
        return value

    def row(self) -> dict[str, Any]:
        """The question as authored (keys given, nothing defaulted), for the grader context."""
        return self.model_dump(exclude_unset=True)

    def input_messages(self) -> list[dict[str, str]]:
        """The input as role/content messages; a plain string is one user message. A `turns`
        conversation opens with its first turn."""
        if self.input is None:
            turns = self.user_turns()
            return [{"role": "user", "content": turns[0].content}] if turns else []
        if isinstance(self.input, str):
            return [{"role": "user", "content": self.input}]
        return [message.model_dump() for message in self.input]

    def flattened_input(self) -> str:
        """The input as one string: a plain string as is, a conversation as `role: content`
        lines (what agent mode sends, since an agent takes one string); a `turns`
        conversation as its user turns, one `user:` line each."""
        if self.input is None:
            return "\n".join(f"user: {t.content}" for t in self.user_turns())
        if isinstance(self.input, str):
            return self.input
        return "\n".join(f"{m.role}: {m.content}" for m in self.input)


class Ratios(BaseModel):
    """Shares of the hash rule; they sum to 1.0 (an absent split has share 0)."""

    model_config = _STRICT

    train: Annotated[float, Field(ge=0, le=1)] | None = None
    """Share of unlabeled questions hashed into train."""
    validation: Annotated[float, Field(ge=0, le=1)] | None = None
    """Share hashed into validation."""
    test: Annotated[float, Field(ge=0, le=1)] | None = None
    """Share hashed into test."""

    @model_validator(mode="after")
    def _sum_to_one(self) -> Ratios:
        shares = self.as_dict()
        if not self.model_fields_set:
            raise ValueError("ratios must name at least one of train, validation, test")
        if not math.isclose(sum(shares.values()), 1.0, abs_tol=1e-9):
            raise ValueError(f"ratios must sum to 1.0 (values sum to {sum(shares.values()):g})")
        return self

    def as_dict(self) -> dict[str, float]:
        """Split name -> share, absent splits as 0."""
        return {name: float(getattr(self, name) or 0.0) for name in SPLIT_NAMES}


class Splits(BaseModel):
    """The dataset-level rule bucketing unlabeled questions (see harness/inputs/splits.py)."""

    model_config = _STRICT

    rule: Literal["hash"]
    """The only rule: deterministic sha256 bucketing."""
    field: NonBlank = "id"
    """The question key hashed (dots reach into mappings)."""
    ratios: Ratios
    """Cumulative shares in the order train, validation, test."""
    seed: int = 0
    """Changing it reshuffles the assignment, deterministically."""


class Dataset(BaseModel):
    """A loaded dataset. After `load_dataset`, `questions` holds the enabled questions only."""

    model_config = _STRICT

    schema_ref: str | None = Field(default=None, alias="$schema")
    """The `$schema` line, if the file has one."""
    title: str | None = Field(default=None, alias="name")
    """The document's own display name (`name:`); the dataset's name is the file stem."""
    description: str | None = None
    """Free text."""
    splits: Splits | None = None
    """The hash rule for unlabeled questions, if any."""
    questions: list[Question]
    """The questions, in file order."""

    _path: Path | None = PrivateAttr(default=None)
    _sha256: str = PrivateAttr(default="")
    _disabled_ids: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> Dataset:
        seen: set[str] = set()
        for question in self.questions:
            if question.id in seen:
                raise ValueError(f"duplicate question id {question.id!r}")
            seen.add(question.id)
        return self

    @property
    def path(self) -> Path | None:
        """The file it was loaded from."""
        return self._path

    @property
    def name(self) -> str:
        """The file stem (`support.yaml` -> `support`); "dataset" when not loaded from a file."""
        return self._path.stem if self._path is not None else "dataset"

    @property
    def sha256(self) -> str:
        """Hex sha256 of the file's bytes, recorded with results to tie them to the data."""
        return self._sha256

    @property
    def disabled_ids(self) -> list[str]:
        """Ids of the rows dropped because they are `disabled: true`."""
        return list(self._disabled_ids)

    def splits_of(self, question: Question) -> frozenset[str]:
        """The splits `question` belongs to (label; hash bucket; else train and validation)."""
        if self.splits is None:
            return assign_split(question.row())
        return assign_split(
            question.row(),
            ratios=self.splits.ratios.as_dict(),
            field=self.splits.field,
            seed=self.splits.seed,
        )


def _pydantic_problems(doc: Document, error: ValidationError) -> list[Problem]:
    """Pydantic's errors as Problems; only reached if the models and schema ever disagree."""
    problems = []
    for item in error.errors():
        parts: list[str] = []
        node: Any = doc.data
        for part in item["loc"]:
            # Union branch tags (`str`, `list[Message]`) are not keys of the document.
            in_dict = isinstance(node, dict) and part in node
            in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
            if not (in_dict or in_list):
                continue
            node = node[part]
            parts.append(escape_pointer_token(part))
        pointer = "".join("/" + p for p in parts)
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(problem_at(doc, pointer, message))
    return problems


def _read(path: Path, *, error_cls: type[InputError]) -> tuple[Document, Dataset]:
    return _from_document(load_document(path, error_cls=error_cls), error_cls=error_cls)


def _from_document(doc: Document, *, error_cls: type[InputError]) -> tuple[Document, Dataset]:
    if doc.format == "jsonl":
        doc = doc.wrapped("questions")
    if not conforms(doc, "dataset"):
        raise_problems(validate_document(doc, "dataset"), error_cls)
    try:
        dataset = _models(doc.data)
    except (ValidationError, ValueError) as exc:
        # The models enforce the schema's `x-` checks (unique ids, ratios summing to 1), which
        # the fast path skips: the schema's own wording first, then the models'. The rows were
        # let go as their models were built: read the file again for the wording.
        doc = load_document(doc.path, error_cls=error_cls)
        if doc.format == "jsonl":
            doc = doc.wrapped("questions")
        raise_problems(validate_document(doc, "dataset"), error_cls)
        try:  # the whole document at once, so each error's location is the document's
            Dataset.model_validate(doc.data)
        except ValidationError as located:
            raise_problems(_pydantic_problems(doc, located), error_cls)
        raise error_cls(str(exc), file=str(doc.path)) from exc
    return doc, dataset


def _models(data: Any) -> Dataset:
    """The Dataset model of a document's data, question by question: each raw row is let go
    once its model exists, so a large file never holds both in full (peak memory halves).
    The rows of `data` are None afterwards."""
    rows = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return Dataset.model_validate(data)
    questions = []
    for index, row in enumerate(rows):
        questions.append(Question.model_validate(row))
        rows[index] = None
    dataset = Dataset.model_validate({**data, "questions": []})
    dataset.questions = questions
    dataset._unique_ids()  # type: ignore[operator]  # the model-level rule, on the whole list
    return dataset


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a dataset file (`.yaml`, `.yml`, `.json`, `.jsonl`).

    Raises DatasetError (exit 4) listing every problem, each with file, line, question id and
    pointer. Disabled rows are validated, then dropped; duplicate ids are an error.
    """
    path = Path(path)
    _, dataset = _read(path, error_cls=DatasetError)
    dataset._path = path
    dataset._sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    dataset._disabled_ids = [q.id for q in dataset.questions if q.disabled]
    dataset.questions = [q for q in dataset.questions if not q.disabled]
    return dataset


def validate_dataset_file(path: Path, *, document: Document | None = None) -> list[Problem]:
    """Every problem of a dataset file (parse errors included); [] when it is valid.
    `document`: the file already parsed (it is not read again)."""
    return check_dataset(path, document=document)[0]


def check_dataset(
    path: Path, *, document: Document | None = None
) -> tuple[list[Problem], int | None]:
    """(every problem, the number of enabled questions) of a dataset file; the count is None
    when there are problems. `document`: the file already parsed."""
    try:
        if document is not None:
            _, dataset = _from_document(document, error_cls=DatasetError)
        else:
            _, dataset = _read(Path(path), error_cls=DatasetError)
    except DatasetError as exc:
        problems = exc.context.get("problems")
        if problems:
            return list(problems), None
        return [Problem(str(path), exc.line, exc.key or "", exc.message)], None
    return [], sum(1 for q in dataset.questions if not q.disabled)


def id_selected(question_id: str, patterns: Iterable[str]) -> bool:
    """Whether `question_id` is one of `patterns` (ids or shell-style globs: `Q0*`, `q?`,
    `[ab]*`; case-sensitive). No patterns: every id is."""
    patterns = tuple(patterns)
    return not patterns or any(fnmatch.fnmatchcase(question_id, p) for p in patterns)


def check_id_patterns(patterns: Iterable[str], ids: Iterable[str], *, key: str = "--id") -> None:
    """An `--id` that is a plain id (no glob characters) naming no question is a typo, not an
    empty selection: `InputError` (exit 4) with a did-you-mean among `ids`."""
    known = sorted(set(ids))
    for pattern in patterns:
        if any(ch in pattern for ch in "*?[") or pattern in known:
            continue
        close = suggest(pattern, known)
        raise InputError(
            f"no question has id {pattern!r}",
            key=key,
            hint=f"did you mean {close!r}?" if close else "globs work too: --id 'Q0*'",
        )


def unknown_label_hints(
    wanted: Iterable[str], carried: Iterable[str], *, flag: str = "--tag"
) -> list[str]:
    """Each of `wanted` (a `--tag` or `--bundle`) no question carries, with a did-you-mean
    among `carried`: a typo is said, not only an empty selection."""
    known = sorted(set(carried))
    out = []
    for label in wanted:
        if label in known:
            continue
        close = suggest(label, known)
        out.append(
            f"no question has {flag.removeprefix('--')} {label!r}"
            + (f" (did you mean {flag} {close}?)" if close else "")
        )
    return out


def select_questions(
    dataset: Dataset,
    *,
    split: str | None = None,
    bundles: Iterable[str] = (),
    tags: Iterable[str] = (),
    ids: Iterable[str] = (),
    limit: int | None = None,
) -> list[Question]:
    """The questions a run asks, in file order: those whose assigned splits include `split`,
    whose bundle is one of `bundles`, carrying any of `tags`, whose id matches one of `ids`
    (ids or globs; each filter applies only when given), cut to the first `limit`. An empty
    result is the caller's NothingToRunError."""
    if split is not None and split not in SPLIT_NAMES:
        raise InputError(
            f"unknown split {split!r}: use one of {', '.join(SPLIT_NAMES)}", key="--split"
        )
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1 (got {limit})", key="--limit")
    wanted_bundles = set(bundles)
    wanted_tags = set(tags)
    wanted_ids = tuple(ids)
    chosen: list[Question] = []
    for question in dataset.questions:
        if split is not None and split not in dataset.splits_of(question):
            continue
        if wanted_bundles and question.bundle not in wanted_bundles:
            continue
        if wanted_tags and not wanted_tags.intersection(question.tags or ()):
            continue
        if wanted_ids and not id_selected(question.id, wanted_ids):
            continue
        chosen.append(question)
    return chosen[:limit] if limit is not None else chosen


def questions_by_id(questions: Sequence[Question]) -> dict[str, Question]:
    """Questions keyed by id (ids are unique within a loaded dataset)."""
    return {q.id: q for q in questions}
