"""tracegrade's library: a flat public facade over small modules (DESIGN.md floors).

`import harness` stays cheap: each name is imported from its module on first use, so the CLI
and the graders (which import `harness.records`) do not pay for LangGraph or the runner unless
they use them. Everything listed in `__all__` is public API; module paths are not.
"""

from __future__ import annotations

from harness.lazy import lazy_facade

_EXPORTS: dict[str, str] = {
    # errors and exit codes
    "CaptureError": "harness.errors",
    "ConfigError": "harness.errors",
    "DatasetError": "harness.errors",
    "EvaluationError": "harness.errors",
    "ExitCode": "harness.errors",
    "InputError": "harness.errors",
    "JudgeError": "harness.errors",
    "NothingToRunError": "harness.errors",
    "PluginError": "harness.errors",
    "ProviderError": "harness.errors",
    "RubricError": "harness.errors",
    "TracegradeError": "harness.errors",
    # the record and results
    "GradeResult": "harness.records",
    "Outcome": "harness.records",
    "RunRecord": "harness.records",
    "ToolCall": "harness.records",
    "ToolRecord": "harness.records",
    "map_to_composite": "harness.records",
    # datasets
    "Dataset": "harness.inputs.dataset",
    "Question": "harness.inputs.dataset",
    "load_dataset": "harness.inputs.dataset",
    "select_questions": "harness.inputs.dataset",
    # capture and telemetry
    "ExportReport": "harness.capture.telemetry",
    "Recorder": "harness.capture.recorder",
    "RunTelemetry": "harness.capture.telemetry",
    "read_records": "harness.capture.tracefile",
    # environments
    "Environment": "harness.environment",
    "SQLiteEnvironment": "harness.environment",
    # judging
    "JudgeCache": "harness.judging",
    "JudgeProvider": "harness.judging",
    "JudgeReply": "harness.judging",
    "JudgeRequest": "harness.judging",
    "LangChainProvider": "harness.judging",
    "OpenAICompatibleProvider": "harness.judging",
    "build_provider": "harness.judging",
    # config and runs
    "Config": "harness.inputs.config",
    "RunOutcome": "harness.runs.outcome",
    "Selection": "harness.runs.outcome",
    "aregrade_run": "harness.runs.regrade",
    "aresume_run": "harness.runs.lifecycle",
    "astart_run": "harness.runs.lifecycle",
    "load_config": "harness.inputs.config",
    "regrade_run": "harness.runs.regrade",
    "resume_run": "harness.runs.lifecycle",
    "start_run": "harness.runs.lifecycle",
    # the run record, history and comparison
    "Comparison": "harness.runs.compare",
    "QuestionResult": "harness.runs.record",
    "RunManifest": "harness.runs.record",
    "StoredRun": "harness.runs.history",
    "compare_runs": "harness.runs.compare",
    "list_runs": "harness.runs.history",
    "load_comparable": "harness.runs.history",
    "load_outcome": "harness.runs.history",
    "mcnemar_exact": "harness.runs.stats",
    "paired_bootstrap": "harness.runs.stats",
    "summarise_trials": "harness.runs.trials",
    # the Python API (docs/api.md) and the test helpers
    "RunResult": "harness.api",
    "acapture": "harness.api",
    "aevaluate": "harness.api",
    "arun": "harness.api",
    "assert_tool_calls": "harness.assertions",
    "capture": "harness.api",
    "evaluate": "harness.api",
    "failure_reasons": "harness.api",
    "run": "harness.api",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_facade(__name__, _EXPORTS)
