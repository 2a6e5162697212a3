#!/usr/bin/env bash
# Install tracegrade the way another repository does: build the wheel, install it (and only it,
# with its dependencies) into a fresh venv outside the checkout, then, from a directory that is not
# the checkout, validate the example files and run the demo config on a copy of the examples and
# reference agents. Catches what an editable install hides: files the wheel does not ship.
#
#   ./scripts/check_wheel.sh            # work in a fresh temporary directory, removed at the end
#   KEEP=1 ./scripts/check_wheel.sh     # keep it (its path is printed)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tracegrade-wheel.XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
echo "==> wheel check in $WORK"

python3 -m venv "$WORK/venv"  # its pip builds the wheel too: the system python needs no pip
PIP=("$WORK/venv/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" wheel --quiet --no-deps --wheel-dir "$WORK/dist" "$ROOT"
rm -rf "$ROOT/build"  # setuptools' staging folder; the checkout stays as it was
WHEEL="$(ls "$WORK"/dist/tracegrade-*.whl)"
echo "built $(basename "$WHEEL")"
"${PIP[@]}" install --quiet "$WHEEL"
TG="$WORK/venv/bin/tracegrade"

# A project of its own: the example config, datasets and reference agents, no tracegrade source.
mkdir -p "$WORK/project" "$WORK/elsewhere"
cp -R "$ROOT/examples" "$ROOT/agents" "$WORK/project/"
cd "$WORK/elsewhere"
# One import package: `tracegrade` from the wheel, nothing named harness or graders at the top
# level; and a user's own graders.py (the grading module the docs tell users to write) and a
# harness/ folder in the working directory shadow nothing.
cat >"$WORK/elsewhere/graders.py" <<'PY'
raise SystemExit("the user's graders.py was imported in place of tracegrade.graders")
PY
mkdir -p "$WORK/elsewhere/harness" && echo 'raise SystemExit("harness/ shadowed")' >"$WORK/elsewhere/harness/__init__.py"
"$WORK/venv/bin/python" - "$ROOT" <<'PY'
import importlib.util, sys
root = sys.argv[1]
import tracegrade, tracegrade.graders
from tracegrade import run, grader, Grader
assert not tracegrade.__file__.startswith(root), f"tracegrade imported from the checkout: {tracegrade.__file__}"
site = [p for p in sys.path if p.endswith("site-packages")][0]
import os
for name in ("harness", "graders"):
    assert not os.path.exists(os.path.join(site, name)), f"{name} installed at the top level"
print(f"ok: tracegrade {tracegrade.__version__} imported from the installed wheel; no top-level harness or graders")
PY
"$WORK/venv/bin/tracegrade" --version >/dev/null
rm -rf "$WORK/elsewhere/harness"

P="$WORK/project/examples"
"$TG" --help >/dev/null
"$TG" validate "$P"/datasets/*.yaml "$P/tracegrade.yaml" "$P"/rubrics/*.yaml

expect() {  # expect CODE TARGET: run TARGET of the demo config, fail unless it exits CODE
  local want="$1" target="$2" got=0
  "$TG" run --config "$P/tracegrade.yaml" --target "$target" --quiet \
    --json "$WORK/$target.json" >"$WORK/$target.out" 2>&1 || got=$?
  if [ "$got" -ne "$want" ]; then
    cat "$WORK/$target.out" >&2
    echo "wheel check: tracegrade run --target $target exited $got, expected $want" >&2
    exit 1
  fi
  echo "ok: tracegrade run --target $target exited $got"
}
expect 0 support_desk
expect 2 support_desk_regressed
expect 0 refund_desk
expect 2 refund_desk_regressed

# The pytest plugin ships with the wheel (entry point pytest11) and its extra brings pytest into
# the same environment (`pip install 'tracegrade[pytest]'`, as docs/api.md says): the passing
# target's questions pass as test items, from the same other directory.
"${PIP[@]}" install --quiet "$WHEEL[pytest]"
got=0
"$WORK/venv/bin/python" -m pytest -p no:cacheprovider -q --tracegrade "$P/tracegrade.yaml" \
  --tracegrade-target support_desk >"$WORK/pytest.out" 2>&1 || got=$?
if [ "$got" -ne 0 ] || ! grep -q "9 passed" "$WORK/pytest.out"; then
  cat "$WORK/pytest.out" >&2
  echo "wheel check: pytest --tracegrade exited $got, expected 0 with 9 passed" >&2
  exit 1
fi
echo "ok: pytest --tracegrade --tracegrade-target support_desk: 9 passed"
echo "wheel check: the installed wheel validates and runs the demo config (CLI and pytest plugin) from another directory"
