"""Comparison (floor 6): two runs side by side, and the statistics behind it. Empty on purpose."""
