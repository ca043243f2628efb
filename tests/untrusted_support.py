"""Shared by the untrusted-SQL QA files: run ``pytest --sqleval`` in a subprocess (a killed query process or a
crash cannot take the test run with it) with the JSON report, and write dedented files."""

from __future__ import annotations

import json
import textwrap


def run_untrusted(pytester, *args: str, timeout: float = 300):
    """The result, the report's cases by id and the report; an INTERNALERROR anywhere fails the test."""
    result = pytester.runpytest_subprocess(
        "--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json", *args, timeout=timeout
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    return result, {case["id"]: case for case in report["cases"]}, report


def write_dedented(path, text: str):
    """Write ``text`` (dedented, leading newlines dropped) to ``path``, making its folders; the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path
