"""A minimal in-tree PEP 517 build backend, so this plugin installs with pip offline and with
nothing but pip itself (setuptools would need the `wheel` package on old versions).

It builds a pure-Python wheel of the packages named in `[tool.plugin-backend] packages`, with
the project's name, version and entry points from `pyproject.toml`.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

ROOT = Path.cwd()


def _project() -> tuple[dict, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["project"], data["tool"]["plugin-backend"]["packages"]


def _dist(name: str) -> str:
    return name.replace("-", "_")


def _metadata_files(project: dict) -> dict[str, str]:
    metadata = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    wheel = (
        "Wheel-Version: 1.0\nGenerator: plugin_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    lines = []
    for group, entries in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in entries.items()]
        lines.append("")
    return {"METADATA": metadata, "WHEEL": wheel, "entry_points.txt": "\n".join(lines)}


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project, packages = _project()
    dist = _dist(project["name"])
    info = f"{dist}-{project['version']}.dist-info"
    name = f"{dist}-{project['version']}-py3-none-any.whl"
    files: dict[str, bytes] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    for file_name, text in _metadata_files(project).items():
        files[f"{info}/{file_name}"] = text.encode()
    record = []
    for arcname, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arcname},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(Path(wheel_directory) / name, "w") as archive:
        for arcname, data in files.items():
            archive.writestr(arcname, data)
    return name
