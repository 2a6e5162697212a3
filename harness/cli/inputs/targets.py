"""`tracegrade targets`: each target with its mode, dataset, graders and advisories."""

from __future__ import annotations

import argparse
from typing import Any

from .._arguments import add_config_flag, subcommand

__all__ = ["describe_plans", "describe_targets", "module_label", "register", "run"]


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "targets",
        help="list the config's targets with their graders (marks 'Text only' targets)",
        description="List each target of the config: mode, dataset, graders (with scale, pass "
        "bar and how each counts) and advisories. An agent-mode target with no grader that observes "
        "actions is marked 'Text only'.",
        epilog=None,
        formatter_class=argparse.HelpFormatter,  # the description wrapped to the terminal
    )
    add_config_flag(parser)
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print each target's check plan: which dataset key is checked by which grader, "
        "what the plan attaches, what is unchecked or not applicable, and why",
    )
    parser.add_argument(
        "--source",
        choices=("run", "traces"),
        default="run",
        help="with --plan: plan for a run (default) or for grading traces made elsewhere "
        "(grade-traces, receive: no live environment)",
    )
    parser.set_defaults(handler=run)


def describe_plans(config: Any, *, source: str = "run") -> str:
    """Each target's check plan over its whole dataset, as `run` (or, with source "traces",
    `grade-traces` and `receive`) would build it before any agent runs."""
    from ...execution.run.planning import attach_planned
    from ...execution.run.prepared import RunSettings
    from ...execution.run.services import run_services
    from ...inputs.dataset import load_dataset
    from ...verdicts.plan import plan_lines

    services = run_services(RunSettings.of(config), config.runs_dir, False)
    plans = {}
    for target in config.targets.values():
        questions = load_dataset(target.dataset).questions
        _, plan = attach_planned(target, questions, services=services, source=source)
        plans[target.name] = plan.as_dict()
    return "\n".join(plan_lines(plans)) + "\n"


def describe_targets(config: Any) -> str:
    from ...execution.question.grading import attach_graders, build_services
    from ...graders.advisories import TEXT_ONLY, advisories
    from ...records import scale_label
    from ...verdicts.gate import describe_gate

    services = build_services(
        judge=None,
        base_dir=config.base_dir,
        runs_dir=config.runs_dir,
        rubrics=None,
        use_cache=False,
        judge_panels=config.judge_panels,
    )
    lines = []
    for target in config.targets.values():
        attached = attach_graders(
            target.graders,
            grading_module=target.grading_module,
            services=services,
            config_file=target.config_file,
        )
        notes = [a.message for a in advisories(target.mode, [a.attachment for a in attached])]
        mark = f"  [{TEXT_ONLY}]" if any(n.startswith(TEXT_ONLY) for n in notes) else ""
        lines.append(f"{target.name} ({target.mode}){mark}")
        lines.append(f"  dataset: {target.dataset}")
        if target.grading_module:
            lines.append(f"  grading module: {module_label(target)}")
        for a in attached:
            s = a.spec
            how = []
            if s.must_pass:
                how.append("must pass")
            if s.weight != 1.0:
                how.append(f"weight {s.weight:g}")
            grader = a.attachment.grader
            bar = a.attachment.spec.pass_bar(
                min_score=float(grader.min_score),
                max_score=float(grader.max_score),
                binary=s.binary,
            )
            how.append(f"pass bar {bar}")
            if s.samples > 1:
                how.append(f"{s.samples} samples")
            flags = ["observes actions"] if s.observes_actions else []
            flags += ["LLM judge"] if s.llm else []
            if s.source == "module":
                flags.append(
                    "from the automatic grading module"
                    if target.grading_module_auto
                    else "from the grading module"
                )
            extra = f" [{', '.join(how)}]" if how else ""
            # The grader's label with its scale, as a person picks it: "Read-only run (binary, 0-1)".
            shown = f"{grader.label} " + scale_label(
                float(grader.min_score), float(grader.max_score), binary=s.binary
            )
            lines.append(
                f"  - {s.id}: {shown}{' (' + ', '.join(flags) + ')' if flags else ''}{extra}"
            )
        lines.append(f"  gate: {describe_gate(target.gate)}")
        for note in notes:
            lines.append(f"  ! {note}")
    return "\n".join(lines) + "\n"


def module_label(target: Any) -> str:
    """The grading module as `targets` and the run's console name it."""
    if target.grading_module_auto:
        return (
            f"{target.grading_module} (automatic: graders.py beside the dataset; "
            "`grading_module: false` opts out)"
        )
    return str(target.grading_module)


def run(args: argparse.Namespace) -> int:
    from ...inputs.config import load_config

    config = load_config(args.config)
    if args.plan:
        print(describe_plans(config, source=args.source), end="")
    else:
        print(describe_targets(config), end="")
    return 0
