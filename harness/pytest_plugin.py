"""The pytest plugin: `pytest --tracegrade tracegrade.yaml` (registered through `pytest11`).

One test item per question per target (`tracegrade.yaml::support_desk::book_consultation`),
failing with the graders' reasons; `-k` matches the target, the question id, its split, bundle
and tags, and markers select them too (`-m tag_booking`, `-m "split_test and not
bundle_refunds"`, every item carries `tracegrade`). The gate's verdict per target is printed in
the terminal summary, and the session exits with the run's one verdict
(`tracegrade.rundir.verdict`): the code `tracegrade run` gives the same run (0, 2 or 3), or 1
when a test of the suite's own failed.

All items of a session share one run directory: the controlling process creates it (every input
checked first, as `tracegrade run` does) and each process, pytest-xdist workers included,
commits the questions it runs to it; the workers' trace files are merged at the end.

Inert without `--tracegrade` (or the `tracegrade` ini option): this module imports only pytest
at start-up, so it costs the suites of projects that install tracegrade nothing.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

__all__ = ["QuestionItem", "TracegradeFailure"]

_MEANINGS = {
    0: "every gate passed",
    1: "a test of the suite's own failed",
    2: "a gate failed",
    3: "evaluation incomplete (errored or degraded questions beyond the error budget)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracegrade", "tracegrade: evaluate LangGraph agents as tests")
    group.addoption(
        "--tracegrade",
        metavar="CONFIG",
        default=None,
        help="run the config's questions as test items, one per question per target",
    )
    group.addoption(
        "--tracegrade-target",
        action="append",
        default=[],
        metavar="NAME",
        help="only this target of the tracegrade config (repeatable; default all)",
    )
    group.addoption(
        "--tracegrade-no-cache",
        action="store_true",
        help="do not read or write the judge cache",
    )
    group.addoption(
        "--tracegrade-cassettes",
        metavar="DIR",
        default=None,
        help="record and replay the agents' model calls in DIR (as `tracegrade run --cassettes`)",
    )
    group.addoption(
        "--tracegrade-record-mode",
        choices=("none", "once", "new", "all"),
        default=None,
        help="cassette record mode (as `tracegrade run --record-mode`; default: the config's, "
        "else none)",
    )
    parser.addini("tracegrade", "tracegrade config to run as test items (as --tracegrade)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("tracegrade") or config.getini("tracegrade")
    if not path:
        return  # inert: nothing registered, nothing imported
    config.addinivalue_line("markers", "tracegrade: a question of a tracegrade config")
    plugin = _Session(config, Path(str(path)))
    config.pluginmanager.register(plugin, "tracegrade-session")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(plugin), "tracegrade-xdist")


class TracegradeFailure(Exception):
    """A question that did not pass: the graders' reasons."""

    def __init__(self, reasons: list[str], score: Any) -> None:
        super().__init__("\n".join(reasons))
        self.reasons = reasons
        self.score = score


class _Session:
    """The plugin's state for one pytest process (the controller or one xdist worker)."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        from .errors import TracegradeError
        from .inputs.config import load_config, with_cassettes

        self.pytest_config = config
        self.path = path
        try:
            self.config = with_cassettes(
                load_config(path),
                directory=config.getoption("tracegrade_cassettes"),
                mode=config.getoption("tracegrade_record_mode"),
            )
            self.targets = self.config.select_targets(config.getoption("tracegrade_target"))
        except TracegradeError as exc:
            raise pytest.UsageError(f"tracegrade: {exc}") from exc
        self.workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.run: Any = None  # tracegrade.execution.run.session.RunSession, once the session starts
        self.outcome: Any = None
        self.failed_questions = 0
        """Question items that failed (the rest of session.testsfailed: the suite's own)."""
        self._include_config_in_collection(config)

    def _include_config_in_collection(self, config: pytest.Config) -> None:
        # `pytest --tracegrade cfg` alone collects the config (not the testpaths); with paths
        # given, the config is collected beside them.
        args = [str(a) for a in config.args]
        if any(Path(a.split("::")[0]).resolve() == self.path.resolve() for a in args):
            return
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            config.args.append(str(self.path))
        else:
            config.args[:] = [str(self.path)]

    # -- the run ----------------------------------------------------------------------------

    @property
    def is_worker(self) -> bool:
        return self.workerinput is not None

    @pytest.hookimpl(tryfirst=True)  # before xdist starts workers, which join this run
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.pytest_config.option.collectonly:
            return
        from .errors import TracegradeError
        from .execution.run.session import RunSession
        from .rundir.outcome import Selection

        use_cache = not self.pytest_config.getoption("tracegrade_no_cache")
        try:
            if self.workerinput is not None:
                self.run = RunSession.join(
                    self.config,
                    self.workerinput["tracegrade_run_dir"],
                    worker=str(self.workerinput["workerid"]),
                    use_cache=use_cache,
                )
            else:
                selection = Selection(targets=tuple(t.name for t in self.targets))
                self.run = RunSession.create(self.config, selection, use_cache=use_cache)
        except TracegradeError as exc:
            raise pytest.UsageError(f"tracegrade: {exc}") from exc

    @pytest.hookimpl(trylast=True)  # after -k and -m deselected items
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.run is None:
            return
        counts: dict[str, int] = {}
        for item in items:
            if isinstance(item, QuestionItem):
                counts[item.target.name] = counts.get(item.target.name, 0) + 1
        # the verdict counts only these as missing when they have no result
        self.run.select(counts)

    def _is_question(self, nodeid: str) -> bool:
        root = Path(str(self.pytest_config.rootpath))
        return (root / nodeid.split("::")[0]).resolve() == self.path.resolve()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.when == "call" and self._is_question(report.nodeid):
            self.failed_questions += 1

    def run_question(self, target: str, question_id: str) -> Any:
        if self.run is None:
            raise RuntimeError("the tracegrade run was not started")
        return asyncio.run(self.run.arun_question(target, question_id))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.run is None:
            return
        if self.is_worker:
            self.run.close()
            return
        notes = self.run.close()
        self.outcome = self.run.outcome(notes)
        if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return  # pytest's own trouble (interrupted, usage, internal): its code stands
        from .verdicts.gate import combine_exit_codes

        # The run's one verdict, as `tracegrade run` exits on it; a failed test of the suite's
        # own (not a question) still fails the session.
        own_failures = session.testsfailed - self.failed_questions
        codes = [self.outcome.exit_code] + ([1] if own_failures > 0 else [])
        session.exitstatus = combine_exit_codes(codes)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.outcome is None:
            return
        tr = terminalreporter
        tr.write_sep("=", "tracegrade")
        ran = [t for t in self.outcome.targets if t.questions]
        for t in ran:
            v = t.verdict
            mean = "-" if v.mean_composite is None else f"{v.mean_composite:.2f}"
            line = (
                f"{t.target}: {len(t.questions)} question(s), mean composite {mean}, "
                f"{v.errored} errored, {v.degraded} degraded: "
            )
            if v.exit_code == 0:
                tr.write_line(line + "gate passed", green=True)
            else:
                tr.write_line(line + f"gate FAILED (exit {v.exit_code})", red=True, bold=True)
                for reason in v.reasons:
                    tr.write_line(f"    {reason}")
        if not ran:
            tr.write_line("no question ran")
        code = self.outcome.exit_code
        tr.write_line(f"verdict: exit {code} ({_MEANINGS.get(code, 'see docs')})")
        for note in self.outcome.notes:
            tr.write_line(f"note: {note}")
        tr.write_line(f"run dir: {self.outcome.run_dir}")

    # -- collection -------------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        if file_path.resolve() == self.path.resolve():
            return ConfigFile.from_parent(parent, path=file_path, session_state=self)
        return None


class _XdistHooks:
    """Registered only where pytest-xdist is installed (its hook is unknown elsewhere)."""

    def __init__(self, session: _Session) -> None:
        self.session = session

    def pytest_configure_node(self, node: Any) -> None:
        if self.session.run is not None:
            node.workerinput["tracegrade_run_dir"] = str(self.session.run.run_dir)


def _slug(value: str) -> str:
    return re.sub(r"\W", "_", value)


class ConfigFile(pytest.File):
    """The tracegrade config: one collector per target."""

    def __init__(self, *, session_state: _Session, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_state = session_state

    def collect(self) -> Any:
        for target in self.session_state.targets:
            yield TargetNode.from_parent(self, name=target.name, target=target)


class TargetNode(pytest.Collector):
    """One target of the config: one item per selected question."""

    def __init__(self, *, target: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target

    def collect(self) -> Any:
        from .errors import TracegradeError
        from .inputs.dataset import load_dataset, select_questions

        try:
            questions = select_questions(load_dataset(self.target.dataset))
        except TracegradeError as exc:
            raise pytest.UsageError(f"tracegrade: {exc}") from exc
        for question in questions:
            yield QuestionItem.from_parent(self, name=str(question.id), question=question)


class QuestionItem(pytest.Item):
    """One question of one target: passes when the question passed every grader."""

    def __init__(self, *, question: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.question = question
        target = self.parent.target  # type: ignore[union-attr]
        self.target = target
        config = self.config
        labels = [("split", question.split), ("bundle", question.bundle)]
        labels += [("tag", tag) for tag in question.tags or ()]
        self.add_marker("tracegrade")
        for kind, value in labels:
            if value:
                name = f"{kind}_{_slug(str(value))}"
                config.addinivalue_line("markers", f"{name}: tracegrade {kind} {value}")
                self.add_marker(name)
                self.extra_keyword_matches.add(str(value))
        self.extra_keyword_matches.add(target.name)

    def runtest(self) -> None:
        from .api import failure_reasons

        session: _Session = self.parent.parent.session_state  # type: ignore[union-attr]
        trials = session.run_question(self.target.name, str(self.question.id))
        reasons = []
        for score in trials:  # one per trial (the target's `repeats`); each must pass
            self.user_properties += [
                ("composite", score.composite),
                ("objective", score.objective),
                ("trace_id", score.trace_id),
            ]
            prefix = f"trial {score.trial}: " if len(trials) > 1 else ""
            reasons += [prefix + r for r in failure_reasons(score, self.target.gate)]
        if reasons:
            failed = next(s for s in trials if failure_reasons(s, self.target.gate))
            raise TracegradeFailure(reasons, failed)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TracegradeFailure):
            failure = excinfo.value
            head = f"{self.target.name}::{self.question.id} did not pass"
            lines = [head, *(f"  - {r}" for r in failure.reasons)]
            if failure.score.trace_id:
                lines.append(f"  trace id: {failure.score.trace_id}")
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"tracegrade {self.target.name}::{self.question.id}"
