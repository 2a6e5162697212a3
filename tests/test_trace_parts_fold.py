"""A worker's trace file is folded into its target's trace file a block at a time: folding the
parts of a large archive's grading (`grade-traces --workers`, `receive --workers`) holds a
bounded buffer, never a whole part (a 1 GB archive's parts are ~90 MB each)."""

from __future__ import annotations

import tracemalloc

from tracegrade.rundir.directory import RunDirectory


def test_folding_parts_holds_a_block_not_a_part(tmp_path):
    directory = RunDirectory(tmp_path)
    line = '{"resourceSpans":[' + "x" * 4000 + "]}\n"
    (tmp_path / "traces").mkdir()
    directory.trace_file("t").write_text("first\n")
    for k in range(2):
        with directory.trace_part("t", f"w{k}").open("w") as f:
            f.write(line * 1500)  # ~6 MB each
            f.write("torn")  # a killed worker's last line, without its newline
    tracemalloc.start()
    try:
        assert directory.fold_traces("t") == 2
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, peak  # a part is 6 MB: whole, it peaked at 12 MB
    lines = directory.trace_file("t").read_text().split("\n")
    assert lines[0] == "first" and lines[-1] == ""
    assert lines[1:-1] == ([line[:-1]] * 1500 + ["torn"]) * 2  # the torn line stays one line
    assert not directory.trace_parts("t")
