"""Execution (floor 6), in three folders by what they do: `run/` (a run's lifecycle: prepared,
started, resumed, sharded, re-graded), `executors/` (where its questions run: this process,
worker processes, Ray) and `question/` (one question run: invoked, graded, accounted). Empty on
purpose: import from the modules."""
