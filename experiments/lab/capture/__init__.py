"""Checks of a capture (experiments/capture/check.py): what it costs, whether its timeline and its
access sets hold."""
