"""Placeholder until its issue lands; replaced by the real module."""

GRADERS: list = []
