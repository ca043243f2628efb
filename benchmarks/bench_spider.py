"""Full scoring of Spider dev (DAIL-SQL + GPT-4 predictions, the 972 items with a database) through
``pytest --sqleval`` against the official test-suite-sql-eval ``evaluation.py --etype all``.

Run from the project root::

    python benchmarks/bench_spider.py --official-dir /tmp/official --official-python /tmp/official/venv/bin/python
        [--repeats 5] [--workers 2] [--profile OUT.prof] [--speedups-python VENV/bin/python] [--floor]

``--official-dir`` is a scratch copy of ``../shared/reference/official/test-suite-sql-eval`` prepared as its
README (``../shared/reference/official/README.md``) says (``preserve_line=True``; nltk + sqlparse installed for
``--official-python``). The same predictions go to both sides: the official script reads the gold/prediction
files, the plugin a suite written by ``spider_suites.suite_document`` (profile ``test-suite``, exact match
``spider``, hardness from ``tables.json``, soft F1 in every record). Each repetition runs the three commands
one after the other (official, serial, ``-n N``) so the machine's load hits all of them alike; the script
prints each wall time (median and best) and its ratio to the official run of the same repetition.
``--floor`` adds pytest's own floor: 972 parametrized tests whose body is ``pass``, plugin off, serial and ``-n N``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from spider_suites import suite_document  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "benchmarks" / "spider_dev"
PREDICTIONS = "predictions/raw/DAIL-SQL+GPT-4.txt"


class Turn:
    def __init__(self, gold: str, db: str, pred: str) -> None:
        self.gold, self.db, self.pred = gold, db, pred


def spider_items(spider: Path) -> list[Turn]:
    golds = [line for line in (spider / "dev_gold.sql").read_text(encoding="utf-8").splitlines() if line.strip()]
    preds = [line for line in (spider / PREDICTIONS).read_text(encoding="utf-8").splitlines() if line.strip()]
    items = []
    for gold_line, pred_line in zip(golds, preds):
        gold, db = gold_line.strip().split("\t")
        if (spider / "database" / db / f"{db}.sqlite").is_file():  # the 62 wta_1 questions have no database here
            items.append(Turn(gold, db, pred_line.strip().split("\t")[0]))
    return items


def bytecode_env(folder: Path) -> dict[str, str]:
    """The environment of the timed commands: bytecode cached (as in any normal install) but outside the tree."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


#: CPU seconds (user + system) of each timed command's waited-for processes, by command, in run order: less
#: sensitive than wall time to the other jobs on a shared machine. The query processes are not in it (the kernel
#: reaps them), the zygote and the xdist workers are.
CPU: dict[str, list[float]] = {}


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None, name: str | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if name is not None:
        CPU.setdefault(name, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if done.returncode not in (0, 1):
        tail = done.stdout.decode(errors="replace")[-2000:]
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{tail}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official-dir", type=Path, required=True)
    parser.add_argument("--official-python", default=sys.executable)
    parser.add_argument("--spider", type=Path, default=SHARED)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--speedups-python", metavar="PYTHON",
                        help="also time the serial run with this interpreter: one of a venv where "
                             "`pip install -e '.[speedups]'` installed sqlglot's compiled build (sqlglotc)")
    parser.add_argument("--only", choices=("official", "serial", "xdist", "speedups", "floor", "floor-xdist"),
                        action="append",
                        help="run only these sides (repeatable)")
    parser.add_argument("--profile", metavar="OUT", help="also write a cProfile of one serial run to OUT")
    parser.add_argument("--floor", action="store_true",
                        help="also time pytest's own floor: a plain file of as many parametrized tests that do "
                             "nothing (`pass`), serial and -n N, without the plugin")
    args = parser.parse_args()
    spider = args.spider.resolve()
    items = spider_items(spider)

    with tempfile.TemporaryDirectory(prefix="sqleval-bench-spider-") as tmp:
        folder = Path(tmp)
        (folder / "gold.sql").write_text("".join(f"{t.gold}\t{t.db}\n" for t in items), encoding="utf-8")
        (folder / "pred.txt").write_text("".join(f"{t.pred}\n" for t in items), encoding="utf-8")
        suite = folder / "dail.sqleval.yaml"
        suite.write_text(yaml.safe_dump(suite_document("dail", items, spider), sort_keys=False, allow_unicode=True,
                                        width=1 << 20), encoding="utf-8")
        official = [args.official_python, str(args.official_dir.resolve() / "evaluation.py"),
                    "--gold", str(folder / "gold.sql"), "--pred", str(folder / "pred.txt"),
                    "--db", str(spider / "database"), "--table", str(spider / "tables.json"), "--etype", "all"]
        plugin = [sys.executable, "-m", "pytest", "--sqleval", str(suite), "-q", "-p", "no:cacheprovider",
                  "--rootdir", str(folder), "-o", "addopts=", f"--sqleval-json={folder / 'report.json'}"]
        env = bytecode_env(folder)
        runs = {
            "official": (official, args.official_dir.resolve(), env),
            "serial": (plugin, folder, env),
            "xdist": (plugin + ["-n", str(args.workers)], folder, env),
        }
        if args.speedups_python:  # the same command, its report written beside the serial one's
            runs["speedups"] = ([args.speedups_python, *plugin[1:-1], f"--sqleval-json={folder / 'report-speedups.json'}"],
                                folder, env)
        if args.floor:  # what pytest alone costs for as many items: no plugin, no work in the test
            (folder / "floor").mkdir()
            (folder / "floor" / "test_floor.py").write_text(
                "import pytest\n\n\n"
                f"@pytest.mark.parametrize('i', range({len(items)}))\ndef test_case(i):\n    pass\n",
                encoding="utf-8")
            plain = [sys.executable, "-m", "pytest", "test_floor.py", "-q", "-p", "no:cacheprovider", "-p",
                     "no:sqleval", "--rootdir", str(folder / "floor"), "-o", "addopts="]
            runs["floor"] = (plain, folder / "floor", env)
            runs["floor-xdist"] = (plain + ["-n", str(args.workers)], folder / "floor", env)
        sides = [s for s in runs if not args.only or s in args.only]
        for name in sides:  # warm-up (file caches, bytecode), not timed
            timed(*runs[name])
        if args.profile:
            subprocess.run([sys.executable, "-m", "cProfile", "-o", args.profile, *plugin[1:]], cwd=folder,
                           stdout=subprocess.DEVNULL, env=env, check=False)
        report = json.loads((folder / "report.json").read_text(encoding="utf-8")) if (folder / "report.json").exists() else None
        same_with_speedups = None
        if report is not None and (folder / "report-speedups.json").exists():
            other = json.loads((folder / "report-speedups.json").read_text(encoding="utf-8"))
            same_with_speedups = {k: v for k, v in report.items() if k != "run"} == \
                {k: v for k, v in other.items() if k != "run"}
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.repeats):
            for name in sides:
                times[name].append(timed(*runs[name], name=name))

    print(f"Spider dev, DAIL-SQL + GPT-4, {len(items)} items; {args.repeats} interleaved repetitions; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if report:
        overall = report.get("overall") or {}
        overall = overall.get("metrics", overall)
        print(f"plugin's report: {len(report.get('cases', []))} cases, "
              + ", ".join(f"{k} {overall[k]:.4f}" for k in ("execution_accuracy", "exact_match", "soft_f1")
                          if isinstance(overall.get(k), float)))
    print("| run | wall, median (s) | wall, best (s) | ratio to official (median of per-repetition ratios) | CPU, median (s) |")
    print("|---|---:|---:|---:|---:|")
    for name in sides:
        ratio = ""
        if "official" in times and name != "official":
            ratio = f"{statistics.median(t / o for t, o in zip(times[name], times['official'])):.2f}"
        elif name == "official":
            ratio = "1.00"
        print(f"| {name} | {statistics.median(times[name]):.2f} | {min(times[name]):.2f} | {ratio} | "
              f"{statistics.median(CPU[name]):.2f} |")
    if same_with_speedups is not None:
        print(f"the report with sqlglotc is {'identical to' if same_with_speedups else 'DIFFERENT from'} the serial "
              "one (the run block aside)")
    if "serial" in times and "speedups" in times:
        print(f"speedups / serial (median of per-repetition ratios): "
              f"{statistics.median(x / s for x, s in zip(times['speedups'], times['serial'])):.2f}")
    if "serial" in times and "xdist" in times:
        print(f"-n {args.workers} / serial (median of per-repetition ratios): "
              f"{statistics.median(x / s for x, s in zip(times['xdist'], times['serial'])):.2f}")


if __name__ == "__main__":
    main()
