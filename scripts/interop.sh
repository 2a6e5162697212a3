#!/usr/bin/env bash
# Interop check against a real Arize Phoenix on loopback (not in CI: Phoenix is a large install).
#
#   ./scripts/interop.sh
#
# Installs arize-phoenix into .interop-venv (once; PHOENIX_VENV to use another), starts Phoenix
# on 127.0.0.1 (PHOENIX_PORT, default 6006) with a throw-away working directory, runs the demo's
# passing target with OTLP export on, replays a stored run of the regressed target with
# `tracegrade export` into a second project, then reads the spans back through Phoenix's REST API and checks: the project,
# the span kinds (CHAIN question root with its input and answer, AGENT, LLM with token counts,
# TOOL under its agent), and that the replay delivered every span its trace file holds.
# Exits 0 when every check held.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PHOENIX_PORT:-6006}"
VENV="${PHOENIX_VENV:-.interop-venv}"
TG="${TRACEGRADE_BIN:-.venv/bin/tracegrade}"
[ -x "$TG" ] || { python3 -m venv .venv && .venv/bin/pip install -q -e .; }
if [ ! -x "$VENV/bin/phoenix" ]; then
  echo "==> installing arize-phoenix into $VENV (once)"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q arize-phoenix
fi
work="$(mktemp -d)"
PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$PORT" PHOENIX_WORKING_DIR="$work" \
  "$VENV/bin/phoenix" serve > "$work/phoenix.log" 2>&1 &
phoenix_pid=$!
trap 'kill $phoenix_pid 2>/dev/null || true; wait $phoenix_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break
  sleep 1
done
curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null || { tail -20 "$work/phoenix.log"; exit 1; }
"$VENV/bin/phoenix" --version 2>/dev/null | sed 's/^/phoenix /' || true

echo "==> tracegrade run (export on) into project 'examples' (the config's directory name)"
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$PORT" \
  "$TG" run --config examples/tracegrade.yaml --target support_desk --quiet \
  > "$work/run.out" 2>&1 || true
grep -E "^note|gate:" "$work/run.out"
run_dir="$(sed -n 's/^run dir: //p' "$work/run.out" | head -1)"

echo "==> tracegrade run (no export) of support_desk_regressed, then tracegrade export into 'examples-replay'"
# Phoenix keeps the first copy of a span id, so the replay sends another run's spans.
"$TG" run --config examples/tracegrade.yaml --target support_desk_regressed --quiet \
  > "$work/regressed.out" 2>&1 || true
replay_dir="$(sed -n 's/^run dir: //p' "$work/regressed.out" | head -1)"
"$TG" export "$replay_dir" --endpoint "http://127.0.0.1:$PORT" --project examples-replay
echo "==> the same replay as OTLP/JSON (Phoenix takes protobuf only: expect HTTP 415, exit 3)"
json_code=0
"$TG" export "$replay_dir" --endpoint "http://127.0.0.1:$PORT" --protocol http/json \
  --project examples-json > "$work/json.out" 2>&1 || json_code=$?
cat "$work/json.out"
sleep 2  # Phoenix ingests asynchronously

python3 - "$PORT" "$replay_dir/traces/support_desk_regressed.jsonl" "$json_code" "$work/json.out" <<'PY'
import collections, json, sys, urllib.request
port, trace_file, json_code, json_out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
stored = [s["spanId"] for line in open(trace_file) for rs in json.loads(line)["resourceSpans"]
          for ss in rs["scopeSpans"] for s in ss["spans"]]
def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}") as r:
        return json.load(r)
def spans(project):
    return get(f"/v1/projects/{project}/spans?limit=1000")["data"]
projects = [p["name"] for p in get("/v1/projects")["data"]]
print("projects:", ", ".join(projects))
live, replay = spans("examples"), spans("examples-replay")
kinds = collections.Counter(s["span_kind"] for s in live)
print("span kinds (live):", dict(sorted(kinds.items())))
by_id = {s["context"]["span_id"]: s for s in live}
roots = [s for s in live if s["name"] == "tracegrade.question"]
tools = [s for s in live if s["span_kind"] == "TOOL"]
llms = [s for s in live if s["span_kind"] == "LLM"]
checks = {
    "project 'examples' holds the run": bool(live),
    "question roots are CHAIN with input and answer": bool(roots) and all(
        s["span_kind"] == "CHAIN" and s["attributes"].get("input.value")
        and "output.value" in s["attributes"] for s in roots),
    "every tool span sits under an AGENT span": bool(tools) and all(
        by_id.get(s["parent_id"], {}).get("span_kind") == "AGENT" for s in tools),
    "tool spans carry name and arguments": all(
        s["attributes"].get("tool.name") and s["attributes"].get("input.value") for s in tools),
    "LLM spans carry token counts": bool(llms) and all(
        "llm.token_count.total" in s["attributes"] for s in llms),
    "agent spans carry gen_ai.input.messages": all(
        "gen_ai.input.messages" in s["attributes"] for s in live if s["span_kind"] == "AGENT"),
    "replay delivered every span of the trace file": sorted(s["context"]["span_id"] for s in replay)
        == sorted(stored),
    "replayed spans keep their kinds": {s["span_kind"] for s in replay} == set(kinds),
    "OTLP/JSON refused with HTTP 415 and exit 3": json_code == 3 and "HTTP 415" in open(json_out).read(),
}
print(f"questions {len(roots)}, tool spans {len(tools)}, spans live {len(live)}, replayed {len(replay)}")
for name, ok in checks.items():
    print(("ok   " if ok else "FAIL ") + name)
sys.exit(0 if all(checks.values()) else 1)
PY
