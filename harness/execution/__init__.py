"""Execution (floor 6): starting, resuming and re-grading runs, the concurrent runner, grading,
pre-flight, and the executors (workers, Ray, shards). Empty on purpose: import from the modules."""
