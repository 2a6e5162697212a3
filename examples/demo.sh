#!/usr/bin/env bash
# The tracegrade demo: evaluate the reference support desk agent twice, offline.
#
#   1. the agent following its policy      -> its gate passes            (expected exit 0)
#   2. the same agent with planted mistakes -> its gate fails, each named (expected exit 2)
#   3. tracegrade compare of the two runs   -> the regressed questions with their tool-call
#                                              differences, and the paired statistics (exit 2)
#   4. the refund desk, an agent that stops to ask a person (an approval interrupt answered
#      from the dataset, a two-turn conversation)  -> passes (expected exit 0); the same agent
#      refunding without asking                    -> its gate fails (expected exit 2)
#   5. the support desk with a bloated prompt: every answer as good, every call dearer
#      -> its gate passes; `compare --fail-on cost:+20%` against the first run fails (exit 2),
#         naming the questions whose cost rose
#
# The reports are written to files in runs/demo/ (printed once, by the runs themselves), and
# the last lines say what to run next. Bold headings only on a terminal, never with NO_COLOR.
#
# No key, no network, no GPU: the agents run on a scripted chat model. The first run creates
# .venv in the checkout if it is missing (that step alone needs the package index, or a local
# wheelhouse through PIP_FIND_LINKS / PIP_NO_INDEX). Set TRACEGRADE_BIN to use another install.
# Reports land in runs/demo/ (or $TRACEGRADE_DEMO_OUT). The demo exits 0 when both runs ended as
# expected, 1 otherwise.
set -u

cd "$(dirname "$0")/.."
OUT="${TRACEGRADE_DEMO_OUT:-runs/demo}"
CONFIG=examples/tracegrade.yaml

if [ -z "${TRACEGRADE_BIN:-}" ]; then
  if [ ! -x .venv/bin/tracegrade ]; then
    echo "==> setting up .venv (python3 -m venv .venv && .venv/bin/pip install -e .)"
    python3 -m venv .venv && .venv/bin/pip install --quiet -e . || {
      echo "demo: could not install tracegrade into .venv" >&2
      exit 1
    }
  fi
  TRACEGRADE_BIN=.venv/bin/tracegrade
fi
mkdir -p "$OUT"

# Bold headings on a terminal only: no escape codes in a CI log or a file, none with NO_COLOR set.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  BOLD=$'\033[1m' RESET=$'\033[0m'
else
  BOLD='' RESET=''
fi
step() { printf '\n%s==> %s%s\n' "$BOLD" "$*" "$RESET"; }

step "validating the example datasets"
"$TRACEGRADE_BIN" validate examples/datasets/support_desk.yaml examples/datasets/content_agent.yaml \
  examples/datasets/refund_desk.yaml || {
  echo "demo: the example datasets did not validate" >&2
  exit 1
}

run_target() {  # run_target TARGET -> exit code of `tracegrade run`
  local target="$1"
  step "tracegrade run --config $CONFIG --target $target"
  "$TRACEGRADE_BIN" run --config "$CONFIG" --target "$target" \
    --markdown "$OUT/$target.md" --junit "$OUT/$target.junit.xml" --json "$OUT/$target.json" \
    --html "$OUT/$target.html"
}

run_target support_desk
passing=$?
run_target support_desk_regressed
regressed=$?

step "tracegrade compare $OUT/support_desk.json $OUT/support_desk_regressed.json"
"$TRACEGRADE_BIN" compare "$OUT/support_desk.json" "$OUT/support_desk_regressed.json" \
  --markdown "$OUT/compare.md" --json "$OUT/compare.json"
compared=$?

run_target refund_desk
asking=$?
run_target refund_desk_regressed
not_asking=$?

run_target support_desk_expensive
expensive=$?
step "tracegrade compare $OUT/support_desk.json $OUT/support_desk_expensive.json --fail-on cost:+20%"
"$TRACEGRADE_BIN" compare "$OUT/support_desk.json" "$OUT/support_desk_expensive.json" \
  --fail-on cost:+20% --markdown "$OUT/compare_cost.md" --json "$OUT/compare_cost.json"
costlier=$?

meaning() {
  case "$1" in
    0) echo "ran, every gate passed" ;;
    1) echo "internal error (a bug in tracegrade)" ;;
    2) echo "a gate failed: a must-pass grader, a score threshold, a critical rubric check" ;;
    3) echo "evaluation incomplete: errored or degraded questions beyond the error budget" ;;
    4) echo "invalid input: config, dataset, rubric or CLI usage" ;;
    5) echo "nothing to run: the selection matched no question" ;;
    *) echo "not a tracegrade exit code" ;;
  esac
}

step "exit codes"
for code in 0 1 2 3 4 5; do printf '  %s  %s\n' "$code" "$(meaning "$code")"; done
echo
printf '  support_desk            exited %s (%s), expected 0\n' "$passing" "$(meaning "$passing")"
printf '  support_desk_regressed  exited %s (%s), expected 2\n' "$regressed" "$(meaning "$regressed")"
printf '  compare                 exited %s (%s), expected 2\n' "$compared" "$([ "$compared" -eq 2 ] && echo 'the candidate regressed' || meaning "$compared")"
printf '  refund_desk             exited %s (%s), expected 0\n' "$asking" "$(meaning "$asking")"
printf '  refund_desk_regressed   exited %s (%s), expected 2\n' "$not_asking" "$(meaning "$not_asking")"
printf '  support_desk_expensive  exited %s (%s), expected 0\n' "$expensive" "$(meaning "$expensive")"
printf '  compare --fail-on cost  exited %s (%s), expected 2\n' "$costlier" "$([ "$costlier" -eq 2 ] && echo 'the candidate costs more' || meaning "$costlier")"
echo "  reports: $OUT/ (Markdown, JUnit XML, JSON; compare.md, compare.json and compare_cost.*; an HTML page per"
echo "           target), written to files, not printed again here"

run_id() {  # run_id REPORT.json -> the run id it reports
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1" 2>/dev/null || echo "RUN_ID"
}
regressed_run="$(run_id "$OUT/support_desk_regressed.json")"
tg="$TRACEGRADE_BIN"
[ "$tg" = .venv/bin/tracegrade ] || tg=tracegrade

if [ "$passing" -eq 0 ] && [ "$regressed" -eq 2 ] && [ "$compared" -eq 2 ] \
  && [ "$asking" -eq 0 ] && [ "$not_asking" -eq 2 ] && [ "$expensive" -eq 0 ] \
  && [ "$costlier" -eq 2 ]; then
  echo
  echo "demo: as expected. The regressed agent's mistakes were caught from what it did, not what it said."
  status=0
else
  echo
  echo "demo: unexpected exit codes (see above)" >&2
  status=1
fi
step "what to run next"
echo "  $OUT/support_desk_regressed.html   # open in a browser: each mistake on its question's tool-call timeline"
echo "  $tg show --config $CONFIG $regressed_run   # the regressed run's report again"
echo "  $tg run --config $CONFIG --target support_desk   # a run of your own"
echo "  $tg targets --config $CONFIG                 # each target's graders, pass bars and gate"
echo "  the console's terms (composite, objective, degraded, grading N): docs/running.md#reading-the-console"
exit "$status"
