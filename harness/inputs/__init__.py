"""Inputs (floor 2): the config, datasets and their source files, parsed and validated with a
location for every problem. Imports only floor 1 (`tracegrade.records`, `tracegrade.errors`, ...)."""
