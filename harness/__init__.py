"""tracegrade's library: a flat public facade over small modules (DESIGN.md floors).

`import tracegrade` stays cheap: each name is imported from its module on first use, so the CLI
and the graders (which import `tracegrade.records`) do not pay for LangGraph or the runner unless
they use them. Everything listed in `__all__` is public API; module paths are not.
"""

from __future__ import annotations

from .lazy import lazy_facade

_EXPORTS: dict[str, str] = {
    "__version__": "tracegrade._version",
    # writing graders (the rest of the grader toolkit is `tracegrade.graders`)
    "Grader": "tracegrade.graders.base",
    "grader": "tracegrade.graders.code",
    # errors and exit codes
    "CaptureError": "tracegrade.errors",
    "ConfigError": "tracegrade.errors",
    "DatasetError": "tracegrade.errors",
    "EvaluationError": "tracegrade.errors",
    "ExitCode": "tracegrade.errors",
    "InputError": "tracegrade.errors",
    "JudgeError": "tracegrade.errors",
    "NothingToRunError": "tracegrade.errors",
    "PluginError": "tracegrade.errors",
    "ProviderError": "tracegrade.errors",
    "RubricError": "tracegrade.errors",
    "TracegradeError": "tracegrade.errors",
    # the record and results
    "GradeResult": "tracegrade.records",
    "GraderSpec": "tracegrade.records",
    "Outcome": "tracegrade.records",
    "RunRecord": "tracegrade.records",
    "ToolCall": "tracegrade.records",
    "ToolRecord": "tracegrade.records",
    "map_to_composite": "tracegrade.records",
    # datasets
    "Dataset": "tracegrade.inputs.dataset",
    "Question": "tracegrade.inputs.dataset",
    "load_dataset": "tracegrade.inputs.dataset",
    "select_questions": "tracegrade.inputs.dataset",
    # capture and telemetry
    "ExportReport": "tracegrade.capture.telemetry",
    "Recorder": "tracegrade.capture.recorder",
    "RunTelemetry": "tracegrade.capture.telemetry",
    "read_records": "tracegrade.capture.tracefile",
    # environments
    "Environment": "tracegrade.environment",
    "SQLiteEnvironment": "tracegrade.environment",
    # judging
    "JudgeCache": "tracegrade.judging",
    "JudgeProvider": "tracegrade.judging",
    "JudgeReply": "tracegrade.judging",
    "JudgeRequest": "tracegrade.judging",
    "LangChainProvider": "tracegrade.judging",
    "OpenAICompatibleProvider": "tracegrade.judging",
    "build_provider": "tracegrade.judging",
    # config and runs
    "Config": "tracegrade.inputs.config",
    "RunOutcome": "tracegrade.rundir.outcome",
    "Selection": "tracegrade.rundir.outcome",
    "aregrade_run": "tracegrade.execution.run.regrade",
    "aresume_run": "tracegrade.execution.run.lifecycle",
    "astart_run": "tracegrade.execution.run.lifecycle",
    "load_config": "tracegrade.inputs.config",
    "regrade_run": "tracegrade.execution.run.regrade",
    "resume_run": "tracegrade.execution.run.lifecycle",
    "start_run": "tracegrade.execution.run.lifecycle",
    # the run record, history and comparison
    "Comparison": "tracegrade.comparison.compare",
    "QuestionAnswer": "tracegrade.verdicts.result",
    "QuestionResult": "tracegrade.verdicts.result",
    "RunManifest": "tracegrade.rundir.manifest",
    "StoredRun": "tracegrade.rundir.history",
    "compare_runs": "tracegrade.comparison.compare",
    "list_runs": "tracegrade.rundir.history",
    "load_comparable": "tracegrade.rundir.history",
    "load_outcome": "tracegrade.rundir.history",
    # the Python API (docs/api.md) and the test helpers
    "RunResult": "tracegrade.api",
    "acapture": "tracegrade.api",
    "aevaluate": "tracegrade.api",
    "arun": "tracegrade.api",
    "assert_tool_calls": "tracegrade.assertions",
    "capture": "tracegrade.api",
    "evaluate": "tracegrade.api",
    "failure_reasons": "tracegrade.api",
    "run": "tracegrade.api",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_facade(__name__, _EXPORTS)
