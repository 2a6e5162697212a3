"""`otel-collector.yaml` parses and wires only components it defines, in a sane order."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

CONFIG = Path(__file__).resolve().parent.parent / "otel-collector.yaml"


def load() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def component_type(name: str) -> str:
    return name.split("/", 1)[0]  # `otlp/jaeger` is an `otlp` exporter named jaeger


def test_pipelines_reference_only_defined_components():
    config = load()
    pipelines = config["service"]["pipelines"]
    assert "traces" in pipelines
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    for name, pipeline in pipelines.items():
        assert pipeline.get("receivers") and pipeline.get("exporters"), name
        for kind in used:
            for component in pipeline.get(kind, []):
                assert component in config[kind], (
                    f"pipeline {name} uses undefined {kind} {component}"
                )
                used[kind].add(component)
    for kind, names in used.items():
        assert set(config[kind]) == names, f"{kind} defined but unused: {set(config[kind]) - names}"
    for extension in config["service"].get("extensions", []):
        assert extension in config["extensions"]


def test_receivers_processors_and_exporters_are_the_documented_ones():
    config = load()
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    processors = config["service"]["pipelines"]["traces"]["processors"]
    assert processors[0] == "memory_limiter" and processors[-1] == "batch"  # the documented order
    assert "redaction" in processors and config["processors"]["redaction"]["blocked_values"]
    exporter_types = {
        component_type(e) for e in config["service"]["pipelines"]["traces"]["exporters"]
    }
    # the names collector 0.144 introduced; `otlp` and `otlphttp` are deprecated aliases
    assert exporter_types == {"file", "otlp_grpc", "otlp_http", "debug"}
    assert config["exporters"]["file"]["path"].endswith(".jsonl")
    assert "jaeger" in config["exporters"]["otlp_grpc/jaeger"]["endpoint"]


def test_redaction_patterns_compile_and_catch_a_secret_named_argument():
    import re

    patterns = [re.compile(p) for p in load()["processors"]["redaction"]["blocked_values"]]
    arguments = '{"host": "db", "api_key": "k-999", "header": "Bearer abcdefghijklmnop"}'
    masked = arguments
    for pattern in patterns:
        masked = pattern.sub("****", masked)
    assert "k-999" not in masked and "abcdefghijklmnop" not in masked and '"host": "db"' in masked


ROOT = CONFIG.parent
COMMAND_DOCS = [ROOT / "README.md", ROOT / "docs" / "capture.md", ROOT / "docs" / "production.md"]


def _collector_command(text: str) -> str:
    """The `docker run ... otelcol` command in a text (comment markers removed)."""
    lines = [line.removeprefix("#").strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("mkdir -p traces"))
    end = next(i for i in range(start, len(lines)) if "--config /etc/otelcol" in lines[i])
    return "\n".join(lines[start : end + 1])


def test_one_collector_command_everywhere_with_a_pinned_image():
    command = _collector_command(CONFIG.read_text())
    for doc in COMMAND_DOCS:
        assert _collector_command(doc.read_text()) == command, doc
    image = re.search(r"otel/opentelemetry-collector-contrib:(\S+)", command)
    assert image and re.fullmatch(r"\d+\.\d+\.\d+", image.group(1))  # pinned, never latest
    for path in [CONFIG, *COMMAND_DOCS]:
        assert "opentelemetry-collector-contrib:latest" not in path.read_text(), path
    # the archive directory is mounted where the file exporter writes, and the collector runs
    # as the user who created it (the image's own user could not write there)
    archive = Path(load()["exporters"]["file"]["path"]).parent
    assert f"/traces:{archive}" in command
    assert '--user "$(id -u):$(id -g)"' in command
