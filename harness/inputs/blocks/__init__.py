"""The keys a dataset question carries beyond its input, each as its model and the checks of it
that need no run (the dataset schema states the same rules in the same words): `expected_tool`
(`expected_tools`), `trajectory`, `checks` (`checks`, `claims`, `nodes`) and `conversation`
(`resume`, `expected_interrupts`, `turns`, `user`)."""
