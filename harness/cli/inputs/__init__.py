"""The subcommands that check and edit a run's inputs: `validate`, `graders`, `targets`,
`dataset`, `judges`, `rubrics`, `cassettes`. One module per subcommand."""
