"""One grader spec (how a grader counts) and one grader verdict, everywhere.

`GraderSpec` is declared once and validated when it is built, whichever way a user writes it
(a config entry, `@grader(...)`, a code grader's keywords, an `Attachment`); `GraderVerdict`
is the one aggregated verdict, written to and read back from the JSON report in its
documented shape.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.runs_support import write_project
from tracegrade import GradeResult, GraderSpec, InputError
from tracegrade.cli import main
from tracegrade.graders import Attachment, Contains, load_grading_module
from tracegrade.verdicts.scoring import GraderVerdict, aggregate_samples, summarise_graders


@pytest.mark.parametrize(
    ("declaration", "field"),
    [
        ("@grader(weight=-1)", "weight"),
        ("@grader(samples=0)", "samples"),
        ("@grader(must_pass='yes')", "must_pass"),
        ("@grader(threshold=float('nan'))", "threshold"),
    ],
)
def test_a_bad_spec_in_a_grading_module_is_invalid_input_at_its_line(tmp_path, declaration, field):
    # Before: `@grader(...)` kept whatever it was given (a negative weight bent the objective,
    # samples=0 ran the grader once anyway, a string must_pass was truthy).
    module = tmp_path / "graders.py"
    module.write_text(
        textwrap.dedent(
            f"""\
            from tracegrade.graders import grader


            {declaration}
            def mentions_paris(output):
                return "Paris" in output
            """
        )
    )
    with pytest.raises(InputError) as info:
        load_grading_module(module)
    assert info.value.exit_code == 4
    assert info.value.file == str(module) and info.value.line == 4
    assert field in info.value.message


def test_a_bad_spec_in_the_config_stops_the_run_with_exit_4(tmp_path, capsys):
    config = write_project(tmp_path, target={"graders": [{"id": "contains", "weight": -2}]})
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    assert "weight" in capsys.readouterr().err


def test_every_way_of_writing_a_spec_builds_the_same_frozen_value():
    spec = GraderSpec(weight=3, must_pass=True, threshold=0.5)
    assert Attachment(Contains(), weight=3, must_pass=True, threshold=0.5).spec == spec
    assert Attachment(Contains(), spec=spec).spec is spec
    assert Contains(weight=3, must_pass=True, threshold=0.5).spec == spec
    with pytest.raises(ValidationError):
        spec.weight = 2  # type: ignore[misc]  # frozen
    with pytest.raises(TypeError, match="not both"):
        Attachment(Contains(), spec=spec, weight=2)
    with pytest.raises(ValidationError):
        Attachment(Contains(), samples=0)
    assert not GraderSpec().threshold_set and GraderSpec(threshold=0).threshold_set


scales = st.sampled_from([(0.0, 1.0), (0.0, 5.0), (1.0, 10.0), (-1.0, 1.0)])


@given(
    scale=scales,
    binary=st.booleans(),
    bar=st.floats(0, 1),
    must_pass=st.booleans(),
    weight=st.floats(0, 10),
    samples=st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=4),
    error=st.booleans(),
)
def test_the_verdict_reads_its_bar_from_the_spec_and_round_trips_through_the_report(
    scale, binary, bar, must_pass, weight, samples, error
):
    lo, hi = scale
    spec = GraderSpec(weight=weight, must_pass=must_pass, threshold=lo + bar * (hi - lo))
    results = [
        GradeResult(
            grader_id="g",
            score=None if s is None else lo + s * (hi - lo),
            reason="r",
            error=error and i == 0,
            min_score=lo,
            max_score=hi,
        )
        for i, s in enumerate(samples)
    ]
    verdict = aggregate_samples(results, spec=spec, binary=binary)
    if verdict.score is not None:
        assert verdict.passed is spec.passes(verdict.score, max_score=hi, binary=binary)
    else:
        assert verdict.passed is None
    summary = summarise_graders([_question(verdict)])[0]
    assert (summary.pass_bar, summary.must_pass) == (verdict.pass_bar, must_pass)
    # The report's shape: written as documented, read back into the same verdict.
    written = json.loads(json.dumps(verdict.model_dump(mode="json")))
    assert list(written) == [
        "id", "score", "min", "max", "mapped", "reason", "error", "skipped", "binary", "passed",
        "must_pass", "weight", "threshold", "pass_bar", "samples", "spread", "details",
    ]  # fmt: skip
    back = GraderVerdict.model_validate(written)
    assert back.model_dump(mode="json") == written
    assert (back.spec.weight, back.spec.must_pass, back.spec.threshold) == (
        spec.weight,
        spec.must_pass,
        spec.threshold,
    )


def _question(verdict):
    from tracegrade import QuestionResult

    return QuestionResult(target="t", id="q", graders=[verdict])


def _config_schema() -> dict:
    from tracegrade.inputs.sourcefile import load_schema

    return load_schema("config")


def _resolved(schema: dict, node: dict) -> dict:
    ref = node.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[1]] if ref else node


def test_the_config_schema_says_what_the_grader_spec_model_says():
    schema = _config_schema()
    entry = next(o for o in schema["$defs"]["grader"]["oneOf"] if o.get("type") == "object")
    written = {k: _resolved(schema, v) for k, v in entry["properties"].items() if k != "id"}
    model = GraderSpec.model_json_schema()["properties"]
    assert set(written) == set(model)
    for key, rule in model.items():
        assert written[key]["type"] == rule["type"], key
        assert written[key].get("minimum") == rule.get("minimum"), key


def test_the_config_schema_and_the_gate_and_telemetry_models_name_the_same_keys():
    import dataclasses

    from tracegrade.inputs.config import GateConfig, TelemetryConfig

    schema = _config_schema()
    gate = schema["$defs"]["gate"]["properties"]
    assert set(gate) == {f.name for f in dataclasses.fields(GateConfig)}
    telemetry = schema["properties"]["telemetry"]["properties"]
    assert set(telemetry) == {f.name for f in dataclasses.fields(TelemetryConfig)}


def test_config_objects_are_built_in_code_by_keyword_only():
    from pathlib import Path

    from tracegrade import Config
    from tracegrade.inputs.config import GateConfig, GraderEntry, TargetConfig

    gate = GateConfig(max_errored=1, min_pass_rate=0.9)
    target = TargetConfig(
        name="t",
        mode="agent",
        factory=lambda: None,
        dataset=Path("questions.yaml"),
        graders=[GraderEntry(id="contains", spec=GraderSpec(must_pass=True))],
        gate=gate,
    )
    config = Config(
        path=Path("x"), base_dir=Path("."), runs_dir=Path("runs"), targets={"t": target}
    )
    assert config.select_targets(["t"])[0].graders[0].spec.must_pass
    assert callable(target.load_factory())  # an object on a target built in code is used as is
    with pytest.raises(TypeError):
        GateConfig(None, 1)  # type: ignore[misc]  # keyword-only
    with pytest.raises(TypeError):
        GraderEntry("contains")  # type: ignore[misc]
