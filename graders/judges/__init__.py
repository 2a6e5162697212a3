"""LLM judges. Placeholder list until the judges land."""

GRADERS: list = []
