"""Round trips of ``sqleval import`` on the public data, through ``pytest --sqleval`` as a user runs it.

Run from the repository root::

    python benchmarks/import_roundtrip.py [--shared ../shared] [--workers 2] [--keep DIR]

* Spider dev + DAIL-SQL (GPT-4) predictions: ``sqleval import spider`` then ``pytest --sqleval`` on the
  20 suites; exact match (profile spider) over the 1034 items, official 70.0, and test-suite execution
  accuracy over the 972 items whose database is present, official 83.2.
* SParC dev + ChatGPT zero-shot predictions: ``sqleval import sparc`` (no database folder: the official
  question/interaction match are exact set match); question match, official 37.7, interaction match, 20.1.
* BIRD mini-dev and LogicCat: import, then load every suite; BIRD's databases are not in the data, so its
  suites fail to load with "database file not found" naming where each file belongs; LogicCat's databases are
  schema-only, so its suites load and are tagged ``schema_only``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_sqleval.datasets.importers import import_dataset  # noqa: E402
from pytest_sqleval.errors import SuiteError  # noqa: E402
from pytest_sqleval.loader import load_suite  # noqa: E402

OFFICIAL = {"spider_em": 70.0, "spider_ex": 83.2, "sparc_qm": 37.7, "sparc_im": 20.1}


def run_pytest(directory: Path, workers: int) -> dict:
    report = directory / "report.json"
    command = [sys.executable, "-m", "pytest", "--sqleval", str(directory), "-q", "-p", "no:cacheprovider",
               "-o", "addopts=", "--rootdir", str(directory), f"--sqleval-json={report}"]
    if workers > 1:
        command += ["-n", str(workers)]
    subprocess.run(command, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if not report.exists():
        raise RuntimeError(f"pytest --sqleval produced no report: {' '.join(command)}")
    return json.loads(report.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="write the suites here instead of a temporary folder")
    args = parser.parse_args(argv)
    data = args.shared / "benchmarks"
    if not data.is_dir():
        parser.error(f"no benchmark data under {data}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sqleval-import-") as tmp:
        root = args.keep or Path(tmp)
        spider, sparc = data / "spider_dev", data / "sparc_dev"

        result = import_dataset("spider", spider, root / "spider",
                                predictions=spider / "predictions" / "raw" / "DAIL-SQL+GPT-4.txt")
        metrics = run_pytest(root / "spider", args.workers)["overall"]["metrics"]
        print(f"Spider dev + DAIL-SQL: {len(result.suites)} suites, {result.cases} cases")
        print(f"  exact match          {100 * metrics['exact_match']:5.1f}  official {OFFICIAL['spider_em']}")
        print(f"  execution (test-suite) {100 * metrics['execution_accuracy']:5.1f}  official {OFFICIAL['spider_ex']}"
              "  (over the items whose database is present)")

        result = import_dataset("sparc", sparc / "dev_gold_from_thubpm.txt", root / "sparc", tables=spider / "tables.json",
                                predictions=sparc / "predictions" / "derived" / "chatgpt_zeroshot_thubpm.txt")
        metrics = run_pytest(root / "sparc", args.workers)["overall"]["metrics"]
        print(f"SParC dev + ChatGPT zero-shot: {len(result.suites)} suites, {result.cases} turns")
        print(f"  question match       {100 * metrics['question_match']:5.1f}  official {OFFICIAL['sparc_qm']}")
        print(f"  interaction match    {100 * metrics['interaction_match']:5.1f}  official {OFFICIAL['sparc_im']}")

        for kind, src in (("bird", data / "bird_minidev"), ("logiccat", data / "logiccat")):
            result = import_dataset(kind, src, root / kind)
            loaded, errors = 0, []
            for path in result.suites:
                try:
                    load_suite(path)
                    loaded += 1
                except SuiteError as exc:
                    errors.append(exc.message)
            print(f"{kind}: {len(result.suites)} suites, {result.cases} cases; {loaded} load, {len(errors)} fail clearly"
                  + (f" (e.g. {errors[0]})" if errors else ""))
            for warning in result.warnings:
                print(f"  {warning}")
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
