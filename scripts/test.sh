#!/usr/bin/env bash
# Set up everything the tests need and run the whole suite: a .venv in the checkout (from
# nothing), Debian's chromium for the browser tests of the HTML report (installed with apt-get
# when missing and this user can install packages; checked first, so a machine without it stops
# here, not minutes into the run), Phoenix in .venv-phoenix (the annotation tests start a real
# one on loopback), then lint, types (mypy over the package `tracegrade`, its harness/ and
# graders/ as the editable install links them; configured in pyproject.toml), then pytest on
# every core (`-n auto`, pytest-xdist).
# This is the README's test command and what CI (.ci/run) calls. Arguments go to pytest; give
# `-n N` (or `-p no:xdist`) to choose the workers yourself.
set -euo pipefail
cd "$(dirname "$0")/.."

CHROMIUM="${TRACEGRADE_CHROMIUM:-/usr/bin/chromium}"  # the browser tests read the same variable
if [ ! -x "$CHROMIUM" ]; then
  echo "==> installing Debian's chromium (the HTML report's browser tests drive it headless)"
  if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && [ "$CHROMIUM" = /usr/bin/chromium ]; then
      apt-get update -qq && apt-get install -y -qq chromium >/dev/null || true
    elif [ "$CHROMIUM" = /usr/bin/chromium ] && command -v sudo >/dev/null 2>&1 \
      && sudo -n true 2>/dev/null; then
      sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null || true
    fi
  fi
  if [ ! -x "$CHROMIUM" ]; then
    echo "scripts/test.sh: the browser tests need Debian's chromium at $CHROMIUM, and it could" \
      "not be installed here (no apt-get, or no permission): run" \
      "'sudo apt-get install -y chromium' and run this again" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,ray]'
# A real Phoenix for the annotation tests (tests/phoenix_server.py). It pins its own
# dependencies, so it gets an environment of its own; tracegrade never imports it.
if [ ! -x .venv-phoenix/bin/python ] || ! .venv-phoenix/bin/python -c 'import phoenix' 2>/dev/null; then
  echo "==> installing arize-phoenix into .venv-phoenix (the Phoenix annotation tests start it)"
  python3 -m venv .venv-phoenix
  .venv-phoenix/bin/python -m pip install -q --disable-pip-version-check 'arize-phoenix==20.26.1'
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

workers=(-n auto)
for arg in "$@"; do
  case "$arg" in
    -n | -n* | --numprocesses | --numprocesses=* | no:xdist | -pno:xdist) workers=() ;;
  esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
