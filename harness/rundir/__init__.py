"""The run directory (floor 5): its store, lock, identity, manifest, typed record, the run's
outcome types and its history. Empty on purpose: import from the modules."""
