"""The layout every checkout builds the same way: pyproject.toml maps the package's folders by name
(`tracegrade` from harness/, `tracegrade.graders` from graders/, the schemas from schema/), with
no links, and names every subpackage, so no folder of code is left out of the wheel.
scripts/check_wheel.sh builds the wheels (from the checkout, the sdist and a symlink-less clone)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_the_package_folders_are_mapped_by_name():
    assert SETUPTOOLS["package-dir"] == {
        "tracegrade": "harness",
        "tracegrade.graders": "graders",
        "tracegrade.schemas": "schema",
    }


def test_every_folder_of_code_is_a_listed_package():
    # A subpackage missing from `packages` builds a wheel without it, and no error says so.
    found = set()
    for package, folder in SETUPTOOLS["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *parts)))
    listed = set(SETUPTOOLS["packages"])
    assert not found - listed, f"add {sorted(found - listed)} to [tool.setuptools] packages"
    assert not listed - found, f"no such folder for {sorted(listed - found)}"


def test_no_link_in_the_sources():
    # A clone without symlinks (Git for Windows' default) sees a link as a small text file.
    links = [
        str(p.relative_to(ROOT))
        for folder in ("harness", "graders", "schema", "tests", "agents", "examples")
        for p in (ROOT / folder).rglob("*")
        if p.is_symlink()
    ]
    assert not (ROOT / "src").exists()
    assert not links


def test_the_sdist_carries_the_test_suite():
    manifest = (ROOT / "MANIFEST.in").read_text().split()
    for folder in ("harness", "graders", "schema", "tests", "examples", "agents"):
        assert folder in manifest


def test_the_license_file_is_the_license_pyproject_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "MIT"}
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    # the sdist ships them beside the code
    include = next(
        line
        for line in (ROOT / "MANIFEST.in").read_text().splitlines()
        if line.startswith("include ")
    )
    assert {"LICENSE", "CHANGELOG.md", "CONTRIBUTING.md"} <= set(include.split())
