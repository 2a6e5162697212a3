"""`tracegrade validate [PATH...]`: check dataset, config and rubric files against their
schemas; a config also gets the run's whole pre-flight (`tracegrade.execution.run.preflight`).

Each file's kind is read from its content: a mapping with `targets` is a config, one with
`checks` (or a single check's `id` and `kind`) is a rubric, anything else a dataset. With no
PATH, `tracegrade.yaml` in the working directory. Every problem of every file is printed; the
exit code is 0 when all files are valid, 4 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ExitCode, InputError
from ...redaction import redact_text
from .._arguments import subcommand

if TYPE_CHECKING:  # imported on use: `tracegrade --help` loads no validation machinery
    from ...inputs.sourcefile import Problem

__all__ = ["VALIDATORS", "detect_kind", "register", "run", "validate_config", "validate_file"]

# kind -> "module:function", each `(path: Path) -> list[Problem]`, imported on first use so a
# kind whose module is not there yet fails only for files of that kind.
_DATASETS = "tracegrade.inputs.dataset:validate_dataset_file"
VALIDATORS: dict[str, str] = {
    "dataset": _DATASETS,
    "config": "tracegrade.cli.inputs.validate:validate_config",
    "rubric": "tracegrade.graders.rubrics:validate_rubric_file",
}

DESCRIPTION = """\
Validate dataset, config and rubric files (YAML, JSON or JSONL) against tracegrade's JSON
Schemas (schema/*.schema.json, Draft 2020-12) and the rules schemas cannot express (ratios
summing to 1.0, unique question ids, duplicate keys; in a `trajectory`, a regex that does not
compile, min above max, a count for a forbidden tool). Every problem is printed with its file,
line, question id and JSON pointer, and a typo of a known key gets a "did you mean" hint.

The kind of each file is read from its content: a mapping with `targets` is a config, one with
`checks` (or a single check's `id` and `kind`) is a rubric, anything else is a dataset.

A config is checked as `tracegrade run` would check it, and everything it references with it:
each target's dataset and rubrics, grader ids and options, the grading module, the agent and
environment factories. Each agent target's graph is built once (with a fresh environment from
its factory, closed afterwards) so every tool name and qualified id of `expected_tools` and
`trajectory` can be checked against the graph's tools and agents; `--no-build` skips that for a graph that cannot
be built without side effects. With no PATH, `tracegrade.yaml` in the working directory is
validated this way.
"""

EPILOG = """\
exit codes:
  0  every file is valid
  4  at least one file is invalid (or cannot be read); every problem is printed

In CI: `tracegrade validate datasets/*.yaml`. Any Draft 2020-12 validator (e.g.
check-jsonschema --schemafile schema/dataset.schema.json FILE) checks the same schema, minus the
checks schemas cannot express.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "validate",
        help="check dataset, config and rubric files; exit 0 if valid, 4 if not",
        description=DESCRIPTION,
        epilog=EPILOG,  # its own exit codes
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        type=Path,
        help="files to validate (default: ./tracegrade.yaml and everything it references)",
    )
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="do not build agent graphs (skips the check of expected_tools names)",
    )
    parser.set_defaults(handler=run)


def detect_kind(data: Any) -> str:
    """`config`, `rubric` or `dataset`, from a parsed document's shape."""
    if isinstance(data, dict):
        if "targets" in data:
            return "config"
        # A Jeval-style single-check rubric need not carry a criterion (tool-claim, escalation).
        if "checks" in data or ("kind" in data and "id" in data and "questions" not in data):
            return "rubric"
    return "dataset"


# path -> enabled questions, from the one parse of a valid dataset (for its summary line)
_counts: dict[Path, int | None] = {}


def _validator(kind: str) -> Callable[[Path], list[Problem]]:
    module_name, _, function = VALIDATORS[kind].partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, function)
    except (ImportError, AttributeError) as exc:
        raise InputError(
            f"cannot validate a {kind} file: its validator {VALIDATORS[kind]} is not available "
            f"in this installation ({exc})"
        ) from exc


def validate_file(
    path: Path,
    *,
    build: bool = True,
    notes: list[str] | None = None,
    plan: list[str] | None = None,
) -> tuple[str, list[Problem]]:
    """The file's kind and its problems ([] when valid). A config gets the run's pre-flight
    (graphs built unless `build=False`); what it could not check is appended to `notes`."""
    from ...inputs.sourcefile import Problem, load_document

    try:
        doc = load_document(path, error_cls=InputError)
    except InputError as exc:
        problems = exc.context.get("problems") or [Problem(str(path), exc.line, "", exc.message)]
        return "unknown", list(problems)
    kind = "dataset" if doc.format == "jsonl" else detect_kind(doc.data)
    try:
        validator = _validator(kind)
    except InputError as exc:
        return kind, [Problem(str(path), None, "", exc.message)]
    try:
        if kind == "config" and validator is validate_config:
            return kind, validate_config(path, build=build, notes=notes, plan=plan)
        if kind == "dataset" and VALIDATORS["dataset"] == _DATASETS:
            from ...inputs.dataset import check_dataset

            problems, count = check_dataset(path, document=doc)  # parsed once, not again
            _counts[path] = count
            return kind, problems
        return kind, list(validator(path))
    except InputError as exc:  # a validator that raises rather than returning its problems
        problems = exc.context.get("problems") or [
            Problem(str(path), exc.line, exc.key or "", exc.message, exc.question_id, exc.hint)
        ]
        return kind, list(problems)


def validate_config(
    path: Path,
    *,
    build: bool = True,
    notes: list[str] | None = None,
    plan: list[str] | None = None,
) -> list[Problem]:
    """A config file's problems: its own (schema, files, references), then the run's whole
    pre-flight over each target (`tracegrade.execution.run.preflight`): graders attached as `run` would
    (ids, options, a gate that can never fail), factories, datasets, rubric refs and, with
    `build`, each agent graph's tool names. What it could not check is appended to `notes`,
    each target's check plan (`tracegrade targets --plan`) to `plan`."""
    from ...execution.run.preflight import preflight
    from ...inputs.config import load_config, validate_config_file
    from ...verdicts.plan import plan_lines

    problems = validate_config_file(path)
    if problems:
        return problems
    result = preflight(load_config(path), build=build)
    if notes is not None:
        notes += result.notes
    if plan is not None and not result.problems:
        plan += ["check plan:", *plan_lines(result.plans)]
    return result.problems


def _summary(kind: str, path: Path) -> str:
    if kind == "config":
        return f"ok: {path} (config, with everything it references)"
    if kind != "dataset":
        return f"ok: {path} ({kind})"
    count = _counts.pop(path, None)
    if count is None:
        from ...inputs.dataset import load_dataset  # the dataset floor; only for the count

        count = len(load_dataset(path).questions)
    return f"ok: {path} ({count} question{'s' if count != 1 else ''})"


def run(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if not paths:
        from ...inputs.config import find_config

        paths = [find_config(None)]  # ConfigError (exit 4) naming the file when absent
    failed = 0
    for path in paths:
        notes: list[str] = []
        plan: list[str] = []
        kind, problems = validate_file(path, build=not args.no_build, notes=notes, plan=plan)
        if problems:
            failed += 1
            for problem in problems:  # a problem may quote the value it rejects
                print(problem.render(redact_text), file=sys.stderr)
        else:
            print(_summary(kind, path))
            for line in plan:
                print(f"  {line}")
        for note in notes:
            print(f"  note: {redact_text(note)}", file=sys.stderr)
    if failed:
        noun = "file" if len(paths) == 1 else "files"
        print(f"tracegrade: {failed} of {len(paths)} {noun} invalid", file=sys.stderr)
        return ExitCode.INVALID_INPUT
    return ExitCode.OK
