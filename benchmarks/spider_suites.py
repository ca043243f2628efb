"""Turn Spider dev files into pytest-sqleval suites and evaluate them with the plugin itself.

Used by ``spider_fidelity.py`` for execution accuracy (profile ``test-suite``).
Each system's predictions become one ``*.sqleval.yaml`` suite (1034 cases:
gold, prediction, the database file when it exists, the ``tables.json``
schema); then one ``pytest --sqleval -n 2`` session evaluates every suite and
the numbers come from its ``--sqleval-json`` report, so the whole plugin path is
what is measured.

Before writing a case, the official test-suite-sql-eval run's text rewrites are
applied, as its ``evaluation.py``/``exec_eval.py`` do before executing:
``replace("value", "1")`` on the prediction, ``"> ="``/``"< ="``/``"! ="`` joined,
``YEAR(CURDATE())`` replaced by 2020. They are quirks of that script's input
handling, reproduced here on purpose and kept out of the plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import yaml

from pytest_sqleval.datasets.importers import official_text  # noqa: F401 - the installed importers' rules


def suite_document(name: str, turns: Iterable, spider_dir: Path) -> dict:
    tables = str((spider_dir / "tables.json").resolve())
    cases = []
    for index, turn in enumerate(turns):
        case = {
            "id": f"q{index:04d}",
            "gold": official_text(turn.gold, prediction=False),
            "predicted": official_text(turn.pred, prediction=True),
            "schema": {"tables": tables, "db_id": turn.db},
        }
        database = spider_dir / "database" / turn.db / f"{turn.db}.sqlite"
        if database.is_file():
            case["database"] = str(database.resolve())
        cases.append(case)
    return {
        "suite": name,
        "execution": "test-suite",
        "exact_match": "spider",
        "pass_if": "execution_match",
        "cases": cases,
    }


def evaluate_suites(documents: dict[str, dict], *, workers: int = 2, timeout: float = 30.0) -> dict:
    """Write the suites, run ``pytest --sqleval`` on them, return the JSON report."""
    with tempfile.TemporaryDirectory(prefix="sqleval-spider-") as tmp:
        directory = Path(tmp)
        for name, document in documents.items():
            (directory / f"{name}.sqleval.yaml").write_text(
                yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1 << 20), encoding="utf-8"
            )
        report = directory / "report.json"
        command = [
            sys.executable, "-m", "pytest", "--sqleval", str(directory), "-q", "-p", "no:cacheprovider",
            f"--sqleval-json={report}", f"--sqleval-timeout={timeout:g}", "--rootdir", str(directory),
            "-o", "addopts=", "-n", str(workers),
        ]
        subprocess.run(command, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        if not report.exists():
            raise RuntimeError(f"pytest --sqleval produced no report: {' '.join(command)}")
        return json.loads(report.read_text(encoding="utf-8"))


def verdicts_by_suite(report: dict, metric: str = "execution_match") -> dict[str, list[bool | None]]:
    """Per suite, each case's ``metric`` in case order (execution_match is None without a database)."""
    cases: dict[str, dict[str, bool | None]] = {}
    for case in report["cases"]:
        cases.setdefault(case["suite"], {})[case["id"]] = case.get(metric)
    return {suite: [by_id[key] for key in sorted(by_id)] for suite, by_id in cases.items()}
