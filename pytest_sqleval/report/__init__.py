"""Reporting: the terminal summary, the JSON report and miss diffs."""
