"""Benchmark of dataset validation (`tracegrade validate FILE`) at 1k, 10k and 250k questions.

Each size is validated in its own child process (so each peak RSS is that size's own), through
the same function the CLI calls. Printed per size: file size, seconds, questions/s, the rate as
a share of the smallest size's rate (linear validation keeps it near 1.0; the target at 250k
is at least 0.7), peak RSS and peak RSS as a multiple of the file size (target: at most 10).

Rows cycle through the support desk example questions (multi-key rows with tool expectations
and state assertions), each with a unique id.

    .venv/bin/python bench/datasets.py                       # 1k, 10k, 250k, YAML
    .venv/bin/python bench/datasets.py --sizes 1000 10000 --format jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "examples" / "datasets" / "support_desk.yaml"

CHILD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from tracegrade.cli.inputs import validate
path = Path(sys.argv[1])
started = time.perf_counter()
kind, problems = validate.validate_file(path)
summary = validate._summary(kind, path)  # the CLI's `ok: FILE (N questions)` line
seconds = time.perf_counter() - started
assert kind == "dataset" and not problems, [str(p) for p in problems[:3]]
count = int(summary.rsplit("(", 1)[1].split()[0])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "peak": peak, "count": count}))
"""


def write_dataset(path: Path, questions: int, fmt: str) -> None:
    rows = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))["questions"]
    for row in rows:
        row.pop("rubric_ref", None)
        row.pop("disabled", None)
    # each source row rendered once, with a slot for its unique id
    templates = []
    for row in rows:
        slot = dict(row, id="@@ID@@")
        if fmt == "jsonl":
            templates.append(json.dumps(slot) + "\n")
        else:
            text = yaml.safe_dump([slot], sort_keys=False, width=1000)
            templates.append("".join("  " + line + "\n" for line in text.splitlines()))
    with path.open("w", encoding="utf-8") as out:
        if fmt == "yaml":
            out.write("questions:\n")
        for i in range(questions):
            source = i % len(rows)
            out.write(templates[source].replace("@@ID@@", f"{rows[source]['id']}-{i}"))


def measure(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"validating {path} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 250_000])
    parser.add_argument("--format", choices=["yaml", "jsonl"], default="yaml")
    args = parser.parse_args()
    print(f"dataset validation ({args.format}), one child process per size")
    print(
        f"{'questions':>10} {'file MB':>8} {'seconds':>8} {'questions/s':>12} "
        f"{'rate vs first':>13} {'peak RSS MB':>12} {'RSS/file':>9}"
    )
    first_rate = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"d{size}.{args.format}"
            write_dataset(path, size, args.format)
            result = measure(path)
            assert result["count"] == size
            file_bytes = path.stat().st_size
            rate = size / result["seconds"]
            first_rate = first_rate or rate
            print(
                f"{size:>10,} {file_bytes / 1e6:>8.1f} {result['seconds']:>8.2f} {rate:>12,.0f} "
                f"{rate / first_rate:>13.2f} {result['peak'] / 1e6:>12.0f} "
                f"{result['peak'] / file_bytes:>9.1f}"
            )
            path.unlink()


if __name__ == "__main__":
    main()
