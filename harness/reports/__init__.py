"""Reports of a run: console summary, JSON (a versioned, documented format), JUnit XML and a
Markdown CI job summary. Each module renders a `tracegrade.execution.run.lifecycle.RunOutcome` and nothing else."""
