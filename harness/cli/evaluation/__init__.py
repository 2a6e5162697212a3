"""The subcommands that run and read evaluations: `run`, `grade`, `merge`, `runs`, `show`,
`compare`, `label`. One module per subcommand."""
