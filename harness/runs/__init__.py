"""Runs (floor 4): starting and resuming a run (`lifecycle`), the concurrent runner, grading,
scoring and gates, the append-only store, the run identity, and re-grading a stored run.

Empty on purpose: import from the modules, or from the `harness` facade."""
