"""`tracegrade rubrics benchmark RUBRIC --gold FILE --run RUN`: tune a rubric's pass/fail
thresholds on gold labels and confirm them on held-out questions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .._arguments import (
    add_config_flag,
    add_gold_flag,
    add_json_file_flag,
    subcommand,
    subcommand_with_actions,
)

__all__ = ["register", "run_benchmark"]

DESCRIPTION = """\
A rubric judge turns the judge's outcome probabilities into Pass, Fail or Review with two
thresholds (Fail when p(unacceptable) >= fail; otherwise Pass when p(acceptable) >= pass;
otherwise Review). This command re-decides the judged checks a run stored, under every
threshold pair on a 0.05 grid with pass + fail > 1, and picks the pair whose decisions agree
best with people's pass/fail labels on the tuning split (a Review never counts as agreement;
ties go to fewer wrong decisions, then to the pair nearest the current one). It then reports
the same figures on the held-out split, which tuning never sees: agreement, Review rate, the
error rate of decided checks, false-pass and false-fail rates, for the current and the tuned
pair. No judge is called. With --write the tuned pair goes into a new rubric version (minor
version bumped) beside the rubric's file; the current version is never changed.

gold file: labels keyed by check id, e.g.
  labels:
    - {question: cancel_booking, dimension: booking-claim, pass: false}
"""


def register(subparsers: Any) -> None:
    _, actions = subcommand_with_actions(
        subparsers,
        "rubrics",
        help="rubric tools: tune thresholds on gold labels",
        description="Tools for rubrics.",
        dest="rubrics_command",
    )
    bench = subcommand(
        actions,
        "benchmark",
        help="tune pass/fail thresholds on a tuning split, confirm on held-out questions",
        description=DESCRIPTION,
    )
    bench.add_argument("rubric", metavar="RUBRIC", help="rubric/<id>@<version>, or <id> (latest)")
    add_gold_flag(bench)
    bench.add_argument("--run", required=True, metavar="RUN", help="run directory or run id")
    add_config_flag(bench)
    bench.add_argument(
        "--tune-split",
        default="validation",
        metavar="S",
        help="split tuned on (default validation)",
    )
    bench.add_argument(
        "--confirm-split",
        default="test",
        metavar="S",
        help="held-out split, never tuned on (default test)",
    )
    bench.add_argument(
        "--write", action="store_true", help="write the tuned pair as a new rubric version"
    )
    add_json_file_flag(bench)
    bench.set_defaults(handler=run_benchmark)


def _rubric(store: Any, name: str) -> Any:
    from ...errors import RubricError

    if "@" in name:
        ref = name if name.startswith("rubric/") else f"rubric/{name}"
        return store.resolve(ref)
    versions = store.versions(name.removeprefix("rubric/"))
    if not versions:
        ids = sorted({r.id for r in store.rubrics()})
        raise RubricError(
            f"no rubric {name!r} in {store.directory}",
            key="RUBRIC",
            hint=f"rubrics available: {', '.join(ids) or '(none)'}",
        )
    latest = max(versions, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in v.split(".")))
    return store.resolve(f"rubric/{name.removeprefix('rubric/')}@{latest}")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _table(title: str, rows: dict[str, Any], pairs: dict[str, Any]) -> list[str]:
    lines = [f"  {title}"]
    head = ("thresholds", "n", "agreement", "review", "decided wrong", "false pass", "false fail")
    body = [head]
    for name, f in rows.items():
        t = pairs[name]
        body.append(
            (
                f"{name} (pass {t.pass_:g}, fail {t.fail:g})",
                str(f.n),
                _pct(f.agreement),
                _pct(f.review_rate),
                _pct(f.decided_error_rate),
                _pct(f.false_pass_rate),
                _pct(f.false_fail_rate),
            )
        )
    widths = [max(len(r[i]) for r in body) for i in range(len(head))]
    lines += [
        ("    " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))).rstrip()
        for r in body
    ]
    return lines


def _next_version(version: str, taken: list[str]) -> str:
    parts = [int(x) if x.isdigit() else 0 for x in version.split(".")] + [0, 0]
    major, minor = parts[0], parts[1]
    while True:
        minor += 1
        candidate = f"{major}.{minor}.0"
        if candidate not in taken:
            return candidate


def _write_version(store: Any, rubric: Any, tuned: Any) -> Path:
    import yaml

    from ...graders.rubrics import validate_rubric_file

    source = store.file_of(rubric)
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    version = _next_version(rubric.version, store.versions(rubric.id))
    data["version"] = version
    data["thresholds"] = {"pass": tuned.pass_, "fail": tuned.fail}
    path = source.with_name(f"{rubric.id}-{version}{source.suffix}")
    header = (
        f"# {rubric.id}@{version}: {rubric.id}@{rubric.version} with thresholds tuned by\n"
        f"# `tracegrade rubrics benchmark` (pass {tuned.pass_:g}, fail {tuned.fail:g}).\n"
    )
    path.write_text(header + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    validate_rubric_file(path)
    return path


def run_benchmark(args: argparse.Namespace) -> int:
    from ...curation.rubric_benchmark import benchmark, benchmark_items, describe
    from ...errors import InputError
    from ...graders.rubrics import RubricStore
    from ...graders.rubrics.model import DEFAULT_THRESHOLDS
    from ...inputs.config import load_config
    from ...inputs.gold import load_gold

    config = load_config(args.config)
    if config.rubrics is None:
        raise InputError(
            "the config names no rubrics directory", file=str(config.path), key="rubrics"
        )
    store = RubricStore(config.rubrics)
    rubric = _rubric(store, args.rubric)
    gold = load_gold(args.gold)
    run_dir = Path(args.run)
    if not (run_dir / "results.sqlite").is_file():
        run_dir = config.runs_dir / str(args.run)
    if not (run_dir / "results.sqlite").is_file():
        raise InputError(f"no run {args.run!r} (no results.sqlite)", key="--run")
    items, notes = benchmark_items(run_dir, rubric=rubric, gold=gold)
    for split in (args.tune_split, args.confirm_split):
        if not any(i.split == split for i in items):
            raise InputError(
                f"no labelled, judged check of {rubric.ref} in split {split!r}",
                key="--tune-split" if split == args.tune_split else "--confirm-split",
                hint="splits with labelled checks: "
                + (", ".join(sorted({str(i.split) for i in items})) or "(none)"),
            )
    defaults = rubric.thresholds or DEFAULT_THRESHOLDS
    result = benchmark(
        items, tune_split=args.tune_split, confirm_split=args.confirm_split, defaults=defaults
    )
    pairs = {"current": result.defaults, "tuned": result.tuned}
    lines = [f"rubric benchmark: {rubric.ref}, run {run_dir.name}, gold labels {args.gold}"]
    lines += _table(
        f"tuning split {result.tune_split!r}",
        {"current": result.tune["defaults"], "tuned": result.tune["tuned"]},
        pairs,
    )
    lines += _table(
        f"held-out split {result.confirm_split!r} (not tuned on)",
        {"current": result.confirm["defaults"], "tuned": result.confirm["tuned"]},
        pairs,
    )
    lines += [f"  note: {n}" for n in notes]
    written = None
    if args.write:
        written = _write_version(store, rubric, result.tuned)
        lines.append(f"  wrote {written} (pass {result.tuned.pass_:g}, fail {result.tuned.fail:g})")
    sys.stdout.write("\n".join(lines) + "\n")
    if args.json:
        data = {
            "format": "tracegrade.rubric_benchmark",
            "version": 1,
            "rubric": rubric.ref,
            "run": run_dir.name,
            "current": {"pass": result.defaults.pass_, "fail": result.defaults.fail},
            "tuned": {"pass": result.tuned.pass_, "fail": result.tuned.fail},
            "tune": {k: describe(v) for k, v in result.tune.items()},
            "confirm": {k: describe(v) for k, v in result.confirm.items()},
            "notes": notes,
            "written": str(written) if written else None,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0
