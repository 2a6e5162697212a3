"""A run from its config to its verdict: the inputs checked and planned once (`prepare`, `planning`,
`preflight`), started or resumed (`lifecycle`), fed one question at a time (`session`), split
into shards, re-graded."""
