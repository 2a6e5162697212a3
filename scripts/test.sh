#!/usr/bin/env bash
# Set up (a .venv in the checkout, from nothing) and run the whole test suite: lint, types (mypy
# over harness/ and graders/, configured in pyproject.toml), then pytest.
# This is the README's test command and what CI (.ci/run) calls.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,ray]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
