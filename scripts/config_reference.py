"""Write docs/config-reference.md, every key of `tracegrade.yaml`, from the config's own types:
the JSON Schema the config is validated against (each key's type, bounds, choices, whether it is
required, its description) and the dataclasses the config is read into
(`tracegrade.inputs.config_model`: defaults, and the descriptions of keys the schema leaves
undescribed, from their attribute docstrings).

    .venv/bin/python scripts/config_reference.py          # rewrite the page
    .venv/bin/python scripts/config_reference.py --check  # exit 1 when the page is out of date

tests/test_config_reference.py fails when the committed page differs from what this writes."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from tracegrade.inputs import config_model
from tracegrade.inputs.sourcefile import load_schema

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "config-reference.md"

# schema section -> the dataclass it is read into
TYPES: dict[str, type] = {
    "": config_model.Config,
    "target": config_model.TargetConfig,
    "gate": config_model.GateConfig,
    "telemetry": config_model.TelemetryConfig,
    "cassettes": config_model.CassetteSettings,
}


def field_docs(cls: type) -> dict[str, str]:
    """Each field's attribute docstring (the string literal right after its annotation)."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    out = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[node.target.id] = " ".join(after.value.value.split())
    return out


def field_defaults(cls: type) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING and isinstance(f.default, str | int | float | bool):
            out[f.name] = f.default
    return out


class Writer:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("$defs", {})
        self.lines: list[str] = []

    def resolve(self, node: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.rsplit("/", 1)[1]
            return self.defs[name], name
        return node, None

    def kind(self, node: dict[str, Any]) -> str:
        node, name = self.resolve(node)
        if name in ("positiveInt", "positiveNumber"):
            return "integer > 0" if name == "positiveInt" else "number > 0"
        if name == "objectRef":
            return "reference (`file.py:attr` or `module:attr`)"
        if name:
            return f"{name} (below)"
        if "enum" in node:
            return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
        if "const" in node:
            return f"`{node['const']}`"
        for key in ("oneOf", "anyOf"):
            if key in node:
                return " or ".join(dict.fromkeys(self.kind(n) for n in node[key]))
        kind = node.get("type", "any")
        kind = " or ".join(kind) if isinstance(kind, list) else str(kind)
        if kind == "array" and isinstance(node.get("items"), dict):
            kind = f"list of {self.kind(node['items'])}"
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
            kind = f"mapping of name to {self.kind(node['additionalProperties'])}"
        bounds = [
            f"{word} {node[key]}"
            for key, word in (
                ("minimum", ">="),
                ("exclusiveMinimum", ">"),
                ("maximum", "<="),
                ("minItems", "items >="),
            )
            if key in node
        ]
        return kind + (f" ({', '.join(bounds)})" if bounds else "")

    def table(self, section: str, node: dict[str, Any], path: str) -> None:
        props: dict[str, Any] = node.get("properties") or {}
        required = set(node.get("required") or ())
        cls = TYPES.get(section)
        docs = field_docs(cls) if cls else {}
        defaults = field_defaults(cls) if cls else {}
        self.lines += ["| key | type | default | what it is |", "|---|---|---|---|"]
        for key, sub in props.items():
            resolved, _ = self.resolve(sub)
            text = sub.get("description") or resolved.get("description") or docs.get(key, "")
            default = "required" if key in required else ""
            if not default and "default" in resolved:
                default = f"`{json.dumps(resolved['default'])}`"
            elif not default and key in defaults:
                default = f"`{json.dumps(defaults[key])}`"
            cell = " ".join(str(text).split()).replace("|", "\\|")
            self.lines.append(f"| `{key}` | {self.kind(sub)} | {default} | {cell} |")
        self.lines.append("")
        for key, sub in props.items():  # an inline block: its own table below
            if isinstance(sub, dict) and "properties" in sub and "$ref" not in sub:
                inner = f"{path}.{key}" if path else key
                self.lines += [f"### `{inner}`", ""]
                self.table(key, sub, inner)

    def render(self) -> str:
        self.lines = [
            "# Config reference (`tracegrade.yaml`)",
            "",
            "Every key of the config file, written by `scripts/config_reference.py` from the config's",
            "own types (its JSON Schema and the dataclasses it is read into); do not edit by hand.",
            "[running.md](running.md) explains the config with examples; `tracegrade validate",
            "tracegrade.yaml` checks a file against exactly these rules.",
            "",
            "## Top level",
            "",
        ]
        self.table("", self.schema, "")
        for name, node in self.defs.items():
            if "properties" not in node:
                continue
            self.lines += [f"## `{name}`", ""]
            if node.get("description"):
                self.lines += [" ".join(str(node["description"]).split()), ""]
            self.table(name, node, name)
        return "\n".join(self.lines).rstrip("\n") + "\n"


def render() -> str:
    return Writer(load_schema("config")).render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if current != text:
            print(f"{PAGE} is out of date: run scripts/config_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
