"""The subcommands over traces made outside tracegrade: `grade-traces`, `receive`, `export`. One
module per subcommand."""
