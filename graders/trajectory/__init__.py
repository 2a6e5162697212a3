"""The trajectory grader (`grader`: `TrajectoryGrader`, a question's `trajectory:` block compiled
and held against the tool record), its argument matchers (`matchers`) and the assignment of
expected steps to calls (`matching`)."""
