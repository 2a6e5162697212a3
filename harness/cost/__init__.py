"""What a question run cost and how long it took: tokens and latency (`usage`) and the price table
that turns tokens into money (`pricing`)."""
