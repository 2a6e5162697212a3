"""What a run is built from, shared by every way of driving one (start, resume, re-grade, the
pytest session, worker processes and Ray actors): the grader services, the graders a run
stored, the telemetry one target's questions are recorded with and what it reports, and the
notes every run prints about redaction. Below the executors and the lifecycle, so they import
it and not each other."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...redaction import RedactionPolicy
from ...rundir.manifest import RunManifest
from ..question.grading import AttachedGrader, attach_from_specs, build_services
from .prepared import RunSettings

if TYPE_CHECKING:
    from ...capture.telemetry import ExportReport, RunTelemetry
    from ...graders.base import GraderServices

__all__ = [
    "ANSWERS_VERBATIM_NOTE",
    "judge_identity",
    "open_telemetry",
    "redaction_notes",
    "run_services",
    "stored_attachments",
    "telemetry_notes",
]


ANSWERS_VERBATIM_NOTE = (
    "redaction.answers is false: the agent's answers are stored and reported verbatim, "
    "secrets and all (every other copy is still redacted)"
)


def redaction_notes(redaction: RedactionPolicy) -> list[str]:
    """What the console says on every run about the run's redaction policy."""
    return [] if redaction.answers else [ANSWERS_VERBATIM_NOTE]


def run_services(settings: RunSettings, run_dir: Path, use_cache: bool) -> GraderServices:
    """The grader services (judge provider, cache, rubrics, redaction, the price table) a run
    grades with."""
    services = build_services(
        judge=settings.judge,
        judge_panels=settings.judge_panels,
        redaction=settings.redaction,
        base_dir=settings.base_dir,
        runs_dir=settings.runs_dir,
        rubrics=settings.rubrics,
        use_cache=use_cache,
        workdir=run_dir,
    )
    services.prices = settings.pricing
    return services


def judge_identity(services: GraderServices) -> dict[str, object] | None:
    provider = services.judge_provider
    if provider is None:
        return None
    return {**provider.identity(), "pinned_knobs": provider.pinned_knobs()}


def open_telemetry(settings: RunSettings, trace_file: Path | None) -> RunTelemetry:
    """The `RunTelemetry` one target's questions are recorded with, as the config says."""
    from ...capture.telemetry import RunTelemetry

    return RunTelemetry(
        trace_file=trace_file,
        otlp_endpoint=settings.telemetry.otlp_endpoint,
        otlp_headers=settings.telemetry.otlp_headers,
        redaction=settings.redaction,
        project=settings.telemetry.project,
        protocol=settings.telemetry.protocol,
    )


def telemetry_notes(settings: RunSettings, target: str, report: ExportReport) -> list[str]:
    """What a shut-down telemetry's export report tells the operator."""
    notes = []
    if report.trace_file_failed:
        notes.append(
            settings.redaction.text(
                f"{target}: {report.trace_file_failed} span(s) could not be written "
                f"to the trace file {report.trace_file} ({report.trace_file_failure}); "
                "the run is incomplete (exit 3)"
            )
        )
    if report.failed:
        notes.append(
            settings.redaction.text(
                f"{target}: {report.failed} span(s) not exported to "
                f"{report.endpoint}: {report.first_failure}"
            )
        )
    if report.exported:
        notes.append(
            f"{target}: {report.exported} span(s) exported to {report.endpoint} "
            f"({report.protocol}, project {settings.telemetry.project})"
        )
    return notes


def stored_attachments(
    manifest: RunManifest, run_dir: Path, services: GraderServices
) -> dict[str, list[AttachedGrader]]:
    """Each target's graders as the run stored them (ids, options, its grading module copy)."""
    return {
        name: attach_from_specs(t.graders, run_dir=run_dir, services=services)
        for name, t in manifest.targets.items()
    }
