"""A question run's cassette (`tracegrade.capture.replay`): opened when its target records or
replays model calls, closed after the agent ran. A call the cassette refused (`none` mode, or
`once` over an existing cassette) errors the question with the drift it names, even when the
agent caught the exception; a cassette that cannot be written errors it too.

Nothing here is imported, and nothing wraps a model, unless a target configures cassettes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...capture.replay import ReplaySession
    from ...inputs.config import TargetConfig
    from ...inputs.dataset import Question
    from ...records import RunRecord
    from ...redaction import RedactionPolicy

__all__ = ["close_session", "open_session"]


def open_session(
    target: TargetConfig, policy: RedactionPolicy, question: Question, trial: int
) -> ReplaySession | None:
    """The question run's `ReplaySession` (`policy`: the run's redaction); None when its
    target has no cassettes."""
    settings = target.cassettes
    if settings is None:
        return None
    from ...capture.cassette import cassette_path
    from ...capture.replay import ReplaySession

    if settings.record_tools:
        from ...capture.replay_tools import install_tools

        install_tools()
    return ReplaySession(
        cassette_path(settings.dir, target.name, str(question.id), trial),
        settings.mode,
        question_id=str(question.id),
        trial=trial,
        target=target.name,
        policy=policy,
        record_tools=frozenset(settings.record_tools),
    )


def close_session(session: ReplaySession, run: RunRecord) -> None:
    """Fold the session into the question's `RunRecord`: a refused call is its error (the
    first miss, and how many more), then write the cassette when this mode recorded."""
    from .errortext import bounded

    if session.misses:
        more = len(session.misses) - 1
        run.error = bounded(session.misses[0] + (f" (+{more} more missed call(s))" if more else ""))
        run.error_type = "ReplayMiss"
    try:
        session.finish()
    except OSError as exc:
        run.error = bounded(f"cassette {session.path} could not be written: {exc}")
        run.error_type = "CassetteError"
