"""A comparison of two runs (`tracegrade.comparison.compare.Comparison`) as console text, Markdown and
a JSON mapping (`format: tracegrade.comparison`, version 1; only ever gains keys)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import fmt
from .costs import comparison_cost_dict, comparison_cost_lines
from .escaping import html_text as _e
from .escaping import md_code, md_text

__all__ = [
    "COMPARISON_FORMAT",
    "comparison_section",
    "comparison_statistics",
    "comparison_to_dict",
    "render_comparison_console",
    "render_comparison_markdown",
    "tool_change_lines",
    "write_comparison_json",
    "write_comparison_markdown",
]

COMPARISON_FORMAT = "tracegrade.comparison"


def _value(v: Any) -> str:
    text = json.dumps(v, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def _call(name: str, args: dict[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={_value(v)}' for k, v in args.items())})"


def tool_change_lines(change: Any) -> str:
    """`+ lookup(city="Rome")`, `- book(...)`, `~ book: slot "10:00" -> "11:00"`."""
    if change.kind == "appeared":
        return f"+ {_call(change.name, change.args)}  (appeared)"
    if change.kind == "disappeared":
        return f"- {_call(change.name, change.args)}  (disappeared)"
    diffs = ", ".join(f"{k} {_value(a)} -> {_value(b)}" for k, (a, b) in change.changed.items())
    return f"~ {change.name}: {diffs}  (changed)"


def _signed(v: float | None) -> str:
    return "-" if v is None else ("+" if v > 0 else "") + fmt(v)


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def _question_lines(q: Any, indent: str) -> list[str]:
    head = f"{q.question_id}: composite {fmt(q.base_composite)} -> {fmt(q.cand_composite)}"
    head += f" ({_signed(q.composite_delta)})"
    if max(q.trials) > 1:
        head += f"; pass rate {_rate(q.base_pass_rate)} -> {_rate(q.cand_pass_rate)}"
    lines = [indent + head]
    if q.must_pass_newly_failing:
        lines.append(f"{indent}  must-pass newly failing: {', '.join(q.must_pass_newly_failing)}")
    if q.cand_error and q.cand_error != q.base_error:
        lines.append(f"{indent}  candidate agent error: {q.cand_error}")
    for g in q.graders:
        if g.delta or g.base_passed != g.cand_passed:
            delta = f" ({_signed(g.delta)})" if g.delta is not None else ""
            lines.append(
                f"{indent}  {g.grader_id} {fmt(g.base)} -> {fmt(g.cand)} / {fmt(g.max_score)}{delta}"
            )
    if q.tool_changes:
        lines.append(f"{indent}  tool calls:")
        lines += [f"{indent}    {tool_change_lines(c)}" for c in q.tool_changes]
    return lines


def comparison_statistics(c: Any) -> list[str]:
    """The McNemar and bootstrap lines, as every format prints them."""
    m = c.mcnemar
    lines = [
        f"pass/fail: {m.pass_to_fail} pass->fail, {m.fail_to_pass} fail->pass; "
        f"exact McNemar p = {m.p_value:.4g}"
    ]
    b = c.bootstrap
    if b is None:
        lines.append("mean composite delta: - (no question has a composite in both runs)")
    else:
        lines.append(
            f"mean composite delta {_signed(round(b.mean, 4))}, {b.confidence:.0%} paired bootstrap "
            f"interval [{b.low:+.2f}, {b.high:+.2f}] over {b.n} question(s) "
            f"({b.resamples} resamples, seed {b.seed})"
        )
    return lines


_SECTIONS = (
    ("newly_failing", "newly failing"),
    ("newly_passing", "newly passing"),
    ("still_failing", "still failing, changed"),
    ("still_passing", "still passing, changed"),
    ("undecided", "undecided (an evaluation failed), changed"),
)


def render_comparison_console(c: Any) -> str:
    """The text `tracegrade compare` prints."""
    lines = [f"compare {c.base}", f"     -> {c.cand}"]
    lines += [f"note: {n}" for n in c.notes]
    lines.append(
        f"  {len(c.questions)} question(s) compared; only in baseline {len(c.only_base)}, "
        f"only in candidate {len(c.only_cand)}, drifted {len(c.drifted)}"
    )
    for status, title in _SECTIONS:
        group = [q for q in c.with_status(status) if status.startswith("newly") or q.changed]
        if not group:
            continue
        lines.append(f"  {title} ({len(group)}):")
        for q in group:
            lines += _question_lines(q, "    ")
    if c.drifted:
        lines.append(f"  drifted, not compared ({len(c.drifted)}):")
        lines += [f"    {d.question_id}: {'; '.join(d.reasons)}" for d in c.drifted]
    for title, names in (("only in baseline", c.only_base), ("only in candidate", c.only_cand)):
        if names:
            lines.append(f"  {title}: {', '.join(names)}")
    lines += ["  " + s for s in comparison_statistics(c)]
    lines += ["  " + s for s in comparison_cost_lines(c)]
    words = verdict_words(c)
    if not words.startswith("no regression"):  # a verdict that fails CI stands out
        words = words.split(";")[0].upper() + words[len(words.split(";")[0]) :]
    lines.append(f"  verdict: {words} [fail on: {', '.join(c.fail_on)}]")
    lines += [f"    - {r}" for r in [*c.incomplete, *c.regressions]]
    if c.unflagged:
        lines.append(f"    - {c.unflagged}")
    return "\n".join(lines) + "\n"


def verdict_words(c: Any) -> str:
    """The verdict in words: incomplete (exit 3), regressed (exit 2) or no regression ("incomplete, allowed"
    with `--allow-missing`): a comparison that left baseline questions uncompared never reads
    as no regression alone."""
    if c.incomplete and not c.allow_missing:
        return "incomplete (exit 3)"
    words = "regressed (exit 2)" if c.regressions else "no regression"
    return f"{words}; incomplete, allowed by --allow-missing" if c.incomplete else words


def render_comparison_markdown(c: Any) -> str:
    """A Markdown section for a CI job page."""
    reasons = c.regressions
    lines = [
        f"## tracegrade compare: {verdict_words(c)}",
        "",
        f"Baseline {md_code(c.base)} → candidate {md_code(c.cand)}",
        "",
    ]
    lines += [f"> {md_text(n)}" for n in c.notes]
    lines += [f"- {md_text(r)}" for r in [*c.incomplete, *reasons]]
    if c.unflagged:
        lines.append(f"- {md_text(c.unflagged)}")
    lines += ["", *[f"{s}  " for s in comparison_statistics(c)]]
    lines += [f"{md_text(s)}  " for s in comparison_cost_lines(c)]
    lines.append("")
    changed = [q for q in c.questions if q.changed]
    if changed:
        lines += ["| question | status | composite | tool calls |", "|---|---|---|---|"]
        for q in changed:
            calls = "<br>".join(md_text(tool_change_lines(t)) for t in q.tool_changes) or "-"
            status = q.status.replace("_", " ")
            if q.must_pass_newly_failing:
                status += f" (must-pass: {md_text(', '.join(q.must_pass_newly_failing))})"
            lines.append(
                f"| {md_code(q.question_id)} | {status} | {fmt(q.base_composite)} → "
                f"{fmt(q.cand_composite)} | {calls} |"
            )
    if c.drifted:
        lines += ["", "Drifted, not compared:", ""]
        lines += [f"- {md_code(d.question_id)}: {md_text('; '.join(d.reasons))}" for d in c.drifted]
    for title, names in (("Only in baseline", c.only_base), ("Only in candidate", c.only_cand)):
        if names:
            lines += ["", f"{title}: " + ", ".join(md_code(n) for n in names)]
    return "\n".join(lines) + "\n"


def comparison_to_dict(c: Any) -> dict[str, Any]:
    """The comparison as a plain mapping (the `--json` file; also embedded in a run's JSON
    report under `comparison` when the run had a `--baseline`)."""
    b = c.bootstrap
    return {
        "format": COMPARISON_FORMAT,
        "version": 1,
        "base": c.base,
        "candidate": c.cand,
        "targets": [list(p) for p in c.targets],
        "exit_code": c.exit_code,
        "regressed": bool(c.regressions),
        "incomplete": list(c.incomplete),
        "allow_missing": c.allow_missing,
        "reasons": c.regressions,
        "not_counted": c.unflagged,
        "fail_on": list(c.fail_on),
        "mcnemar": {
            "pass_to_fail": c.mcnemar.pass_to_fail,
            "fail_to_pass": c.mcnemar.fail_to_pass,
            "p_value": c.mcnemar.p_value,
        },
        "composite_delta": None if b is None else b.as_dict(),
        "questions": [
            {
                "target": q.target,
                "id": q.question_id,
                "status": q.status,
                "base_passed": q.base_passed,
                "cand_passed": q.cand_passed,
                "base_composite": q.base_composite,
                "cand_composite": q.cand_composite,
                "composite_delta": q.composite_delta,
                "base_pass_rate": q.base_pass_rate,
                "cand_pass_rate": q.cand_pass_rate,
                "trials": list(q.trials),
                "must_pass_newly_failing": q.must_pass_newly_failing,
                "graders": [
                    {
                        "id": g.grader_id,
                        "base": g.base,
                        "cand": g.cand,
                        "delta": g.delta,
                        "max": g.max_score,
                        "base_passed": g.base_passed,
                        "cand_passed": g.cand_passed,
                        "must_pass": g.must_pass,
                    }
                    for g in q.graders
                ],
                "tool_changes": [
                    {
                        "kind": t.kind,
                        "name": t.name,
                        "args": t.args,
                        "changed": {k: list(v) for k, v in t.changed.items()},
                    }
                    for t in q.tool_changes
                ],
            }
            for q in c.questions
        ],
        "drifted": [
            {"target": d.target, "id": d.question_id, "reasons": d.reasons} for d in c.drifted
        ],
        "only_base": c.only_base,
        "only_candidate": c.only_cand,
        "notes": c.notes,
        "costs": comparison_cost_dict(c),
    }


def write_comparison_json(c: Any, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from .escaping import to_json_text

    path.write_text(to_json_text(comparison_to_dict(c)) + "\n", "utf-8")
    return path


def write_comparison_markdown(c: Any, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_comparison_markdown(c), encoding="utf-8")
    return path


def comparison_section(c: Any) -> str:
    """`run --baseline`: the comparison with the baseline, rendered here (no script needed)."""
    reasons = c.regressions
    state, word = ("failed", "regressed") if reasons else ("passed", "no regression")
    out = [
        '<section id="comparison" aria-labelledby="comparison-h">',
        f'<h2 id="comparison-h">Against the baseline: <span class="badge v-{state}">'
        f"{word}</span></h2>",
        f"<p>Baseline <code>{_e(c.base)}</code> → candidate <code>{_e(c.cand)}</code></p>",
    ]
    out += [f'<p class="advisory" role="note">{_e(n)}</p>' for n in c.notes]
    if reasons:
        out.append('<ul class="reasons">' + "".join(f"<li>{_e(r)}</li>" for r in reasons))
        out.append("</ul>")
    out += [f"<p>{_e(line)}</p>" for line in comparison_statistics(c)]
    out += [f'<p class="cost-delta">{_e(line)}</p>' for line in comparison_cost_lines(c)]
    changed = [q for q in c.questions if q.changed]
    if changed:
        out.append(
            '<table class="compare"><thead><tr><th scope="col">question</th>'
            '<th scope="col">status</th><th scope="col">composite</th>'
            '<th scope="col">tool calls</th></tr></thead><tbody>'
        )
        for q in changed:
            status = q.status.replace("_", " ")
            if q.must_pass_newly_failing:
                status += f" (must-pass: {', '.join(q.must_pass_newly_failing)})"
            calls = "<br>".join(_e(tool_change_lines(t)) for t in q.tool_changes) or "-"
            out.append(
                f'<tr data-q="{_e(q.question_id)}"><th scope="row">{_e(q.question_id)}</th>'
                f"<td>{_e(status)}</td><td>{_e(fmt(q.base_composite))} → "
                f"{_e(fmt(q.cand_composite))}</td><td>{calls}</td></tr>"
            )
        out.append("</tbody></table>")
    if c.drifted:
        out.append("<p>Drifted, not compared:</p><ul>")
        out += [f"<li>{_e(d.question_id)}: {_e('; '.join(d.reasons))}</li>" for d in c.drifted]
        out.append("</ul>")
    out.append("</section>")
    return "".join(out)
