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
# setuptools stages in build/lib (a module deleted since the last build would linger there); it
# keeps the editable install's link tree in build/__editable__.*, which stays
clean_staging() { rm -rf "$ROOT/build/lib" "$ROOT"/build/bdist.* "$ROOT/tracegrade.egg-info"; }
clean_staging
"${PIP[@]}" wheel --quiet --no-deps --wheel-dir "$WORK/dist" "$ROOT"
clean_staging
WHEEL="$(ls "$WORK"/dist/tracegrade-*.whl)"
echo "built $(basename "$WHEEL")"

# The wheel holds every module of the package's folders (harness/ is `tracegrade`, graders/ is
# `tracegrade.graders`, schema/'s schemas are `tracegrade.schemas`): a layout that maps nothing
# builds a wheel without code, with no error from the build.
"$WORK/venv/bin/python" - "$ROOT" "$WHEEL" <<'PY'
import sys, zipfile
from pathlib import Path
root, wheel = Path(sys.argv[1]), sys.argv[2]
want = {f"tracegrade/{p.relative_to(root / 'harness').as_posix()}" for p in (root / "harness").rglob("*.py")}
want |= {f"tracegrade/graders/{p.relative_to(root / 'graders').as_posix()}" for p in (root / "graders").rglob("*.py")}
want |= {f"tracegrade/schemas/{p.name}" for p in (root / "schema").glob("*.schema.json")}
have = set(zipfile.ZipFile(wheel).namelist())
missing = sorted(want - have)
if missing or len(want) < 150:
    sys.exit(f"wheel check: the wheel lacks {len(missing)} of the {len(want)} files of harness/, graders/ and schema/: {missing[:10]}")
print(f"ok: the wheel holds all {len(want)} modules and schemas of harness/, graders/ and schema/")
PY

# Two other ways to build it give the same wheel: from the sdist (which carries the whole test
# suite), and from a clone made without symlinks (Git for Windows' default): the layout maps
# folders by name, it links nothing.
same_wheel() {  # same_wheel LABEL OTHER_WHEEL: the same files, byte for byte (RECORD's hashes)
  "$WORK/venv/bin/python" - "$WHEEL" "$2" "$1" <<'PY'
import sys, zipfile
def record(path):
    z = zipfile.ZipFile(path)
    name = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    return sorted(line for line in z.read(name).decode().splitlines() if ".dist-info/" not in line)
a, b = record(sys.argv[1]), record(sys.argv[2])
if a != b:
    diff = sorted(set(a) ^ set(b))
    sys.exit(f"wheel check: the wheel built {sys.argv[3]} differs from the checkout's: {diff[:10]}")
print(f"ok: the wheel built {sys.argv[3]} is the checkout's ({len(a)} files)")
PY
}
"${PIP[@]}" install --quiet build  # PyPA's frontend, for the sdist (pip builds only wheels)
"$WORK/venv/bin/python" -m build --sdist --outdir "$WORK/sdist" "$ROOT" >"$WORK/sdist.log" 2>&1 \
  || { cat "$WORK/sdist.log" >&2; echo "wheel check: the sdist did not build" >&2; exit 1; }
clean_staging
SDIST="$(ls "$WORK"/sdist/tracegrade-*.tar.gz)"
tar -xzf "$SDIST" -C "$WORK/sdist"
UNPACKED="$WORK/sdist/$(basename "$SDIST" .tar.gz)"
for f in tests/conftest.py tests/runs_support.py tests/openai_server.py tests/test_layers.py; do
  [ -f "$UNPACKED/$f" ] || { echo "wheel check: the sdist lacks $f" >&2; exit 1; }
done
echo "ok: the sdist carries the test suite ($(find "$UNPACKED/tests" -name '*.py' | wc -l) Python files under tests/)"
"${PIP[@]}" wheel --quiet --no-deps --wheel-dir "$WORK/from-sdist" "$SDIST"
same_wheel "from the sdist" "$(ls "$WORK"/from-sdist/tracegrade-*.whl)"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 && [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]; then
  git -c core.symlinks=false clone --quiet --no-hardlinks "$ROOT" "$WORK/clone"
  "${PIP[@]}" wheel --quiet --no-deps --wheel-dir "$WORK/from-clone" "$WORK/clone"
  same_wheel "from a clone without symlinks (core.symlinks=false)" "$(ls "$WORK"/from-clone/tracegrade-*.whl)"
else
  echo "note: the checkout has uncommitted changes: the symlink-less clone (of HEAD) is not compared"
fi
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
