"""docs/config-reference.md is what scripts/config_reference.py writes from the config's types
today: a key added to the schema or a default changed in the dataclasses shows on the page, or
this fails."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "scripts" / "config_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_config_reference_is_current():
    page = (ROOT / "docs" / "config-reference.md").read_text(encoding="utf-8")
    assert page == _script().render(), "run: .venv/bin/python scripts/config_reference.py"


def test_every_key_of_the_schema_and_its_defaults_are_on_the_page():
    from tracegrade.inputs.config_model import GateConfig, TargetConfig
    from tracegrade.inputs.sourcefile import load_schema

    page = _script().render()
    schema = load_schema("config")
    for key in schema["properties"]:
        assert f"| `{key}` |" in page
    for key in schema["$defs"]["target"]["properties"]:
        assert f"| `{key}` |" in page
    # defaults come from the dataclasses the config is read into
    assert (
        f"| `concurrency` | integer > 0 | `{TargetConfig.__dataclass_fields__['concurrency'].default}` |"
        in page
    )
    assert (
        f"| `max_errored` | integer (>= 0) | `{GateConfig.__dataclass_fields__['max_errored'].default}` |"
        in page
    )
