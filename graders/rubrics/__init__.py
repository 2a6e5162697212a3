"""Rubrics. Placeholder list until rubrics land."""

GRADERS: list = []
