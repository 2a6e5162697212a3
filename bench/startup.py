"""Start-up time of the `tracegrade` command and of the public facades.

Each probe runs in a fresh interpreter (`python -c ...`), `--repeats` times, interleaved with a
bare interpreter start so the ratio is measured side by side on the same load. Prints the median
wall time of each probe, the time over a bare start, and how many modules it imported.

    .venv/bin/python bench/startup.py               # this checkout's install
    /other/venv/bin/python bench/startup.py          # any other install, e.g. before a change

The console script `tracegrade --help` is timed through the same interpreter the script was
run with (`tracegrade.cli:main` is what the `tracegrade` entry point runs), from a directory outside
the checkout, so the install under test is the one imported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

PROBES: dict[str, str] = {
    "bare interpreter": "pass",
    "tracegrade --help": (
        "import sys; sys.argv = ['tracegrade', '--help']\n"
        "from tracegrade.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    ),
    "tracegrade run --help": (
        "from tracegrade.cli import main\n"
        "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass"
    ),
    "import tracegrade": "import tracegrade",
    "import tracegrade.graders": "import tracegrade.graders",
    "from tracegrade.graders import ToolUsageGrader": "from tracegrade.graders import ToolUsageGrader",
}
COUNT = "\nimport sys as _s; print(len(_s.modules), file=_s.stderr)"


def _time(code: str) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code + COUNT],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),  # not the checkout: `-c` puts the cwd first on sys.path
    )
    return time.perf_counter() - started, int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in PROBES}
    modules: dict[str, int] = {}
    _time("pass")  # warm the file cache
    for _ in range(args.repeats):
        for name, code in PROBES.items():  # interleaved: load changes hit every probe alike
            elapsed, count = _time(code)
            times[name].append(elapsed)
            modules[name] = count
    bare = statistics.median(times["bare interpreter"])
    print(f"python {sys.version.split()[0]} at {sys.executable}; median of {args.repeats}")
    print(f"{'probe':<38} {'median':>9} {'over bare':>10} {'x bare':>7} {'modules':>8}")
    for name in PROBES:
        median = statistics.median(times[name])
        print(
            f"{name:<38} {median * 1000:7.0f} ms {(median - bare) * 1000:7.0f} ms "
            f"{median / bare:6.1f}x {modules[name]:8d}"
        )


if __name__ == "__main__":
    main()
