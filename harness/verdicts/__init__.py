"""Verdicts and scoring (floor 4): the composite, objective, degraded flag and gate verdicts, and
repeated trials. Empty on purpose: import from the modules, or from the `tracegrade` facade."""
