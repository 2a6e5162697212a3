"""`tracegrade serve`: a local review app over a config's run directories and dataset store."""
