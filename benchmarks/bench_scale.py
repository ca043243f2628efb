"""Scale: does a suite's run time grow linearly with its size, within bounded memory?

Run from the project root::

    python benchmarks/bench_scale.py [--sizes 10000 100000] [--workers 0 2]

For each size it generates a synthetic suite (one SQLite database, cases with distinct gold texts, half the
predictions equal to the gold, the others a different query), runs ``pytest --sqleval`` on it (serial, and
with ``-n N`` for each N of ``--workers``), and prints the wall time, the ratio of each size's time to the
smallest size's (linear growth: the ratio of the sizes), and the peak memory: the largest resident set of
any single process of the run (``ru_maxrss`` of the waited-for descendants) and the largest sum of the
resident sets of the whole process tree (pytest, xdist workers, query processes), sampled every 0.2 s, and the
peak of the pytest process itself (``VmHWM``: the serial run, or the xdist controller).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml


def write_suite(folder: Path, size: int) -> Path:
    database = folder / "scale.sqlite"
    if not database.exists():
        conn = sqlite3.connect(database)
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, price REAL)")
        conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?)",
                         [(i, f"item {i}", i % 17, (i * 37 % 1000) / 10) for i in range(2000)])
        conn.commit()
        conn.close()
    cases = []
    for i in range(size):
        gold = f"SELECT name, price FROM items WHERE grp = {i % 17} AND id > {i % 1999} ORDER BY id LIMIT 5"
        predicted = gold if i % 2 == 0 else f"SELECT name, price FROM items WHERE grp = {i % 17} ORDER BY id LIMIT 5"
        cases.append({"id": f"c{i:06d}", "gold": gold, "predicted": predicted})
    suite = folder / f"scale{size}.sqleval.yaml"
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    suite.write_text(yaml.dump({"suite": f"scale{size}", "database": str(database), "cases": cases}, Dumper=dumper,
                               sort_keys=False, width=1 << 20), encoding="utf-8")
    return suite


def _tree_rss(root: int) -> tuple[int, int]:
    """Sum of VmRSS (bytes) of ``root`` and all its descendants, and the peak (VmHWM) of the pytest process (the
    serial run, or the xdist controller: ``root``'s child)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    hwm: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        pid, ppid = int(entry), int(fields.get("PPid", "0").strip() or 0)
        children.setdefault(ppid, []).append(pid)
        value = fields.get("VmRSS", "0 kB").split()
        rss[pid] = int(value[0]) * 1024 if value else 0
        value = fields.get("VmHWM", "0 kB").split()
        hwm[pid] = int(value[0]) * 1024 if value else 0
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    pytest_process = children.get(root, [None])[0]
    return total, hwm.get(pytest_process, 0)


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, int, int]:
    """Wall seconds, peak single-process RSS (bytes), peak process-tree RSS (bytes), peak RSS of the pytest process
    (serial: the run; xdist: the controller)."""
    started = time.perf_counter()
    report = cwd / "maxrss.txt"
    process = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(report), *command], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            try:
                tree, main = _tree_rss(process.pid)
                peak[0], peak[1] = max(peak[0], tree), max(peak[1], main)
            except Exception:  # noqa: BLE001 - a process ended while being read
                pass

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}:\n{output.decode(errors='replace')[-3000:]}")
    single = int(report.read_text()) * 1024
    return elapsed, single, peak[0], peak[1]


#: Runs the command and writes the largest resident set of its waited-for descendants (KiB).
_WRAPPER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    with tempfile.TemporaryDirectory(prefix="sqleval-bench-scale-") as tmp:
        folder = Path(tmp)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        suites = {size: write_suite(folder, size) for size in sizes}
        rows = []
        for workers in args.workers:
            base: float | None = None
            for size in sizes:
                command = [sys.executable, "-m", "pytest", "--sqleval", str(suites[size]), "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), "-o", "addopts=", f"--sqleval-json={folder / 'report.json'}"]
                if workers:
                    command += ["-n", str(workers)]
                elapsed, single, tree, main = run(command, folder, env)
                base = base or elapsed
                rows.append((workers, size, elapsed, elapsed / base, size / sizes[0], single, tree, main))
                print(f"done: {'-n ' + str(workers) if workers else 'serial'} {size:,} cases {elapsed:.1f} s", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| run | cases | wall (s) | time ratio to the smallest | size ratio | peak RSS, one process (MiB) "
          "| peak RSS, process tree (MiB) | peak RSS, pytest process / xdist controller (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for workers, size, elapsed, ratio, size_ratio, single, tree, main in rows:
        print(f"| {'-n ' + str(workers) if workers else 'serial'} | {size:,} | {elapsed:.1f} | {ratio:.2f} | "
              f"{size_ratio:.0f} | {single / 2**20:.0f} | {tree / 2**20:.0f} | {main / 2**20:.0f} |")


if __name__ == "__main__":
    main()
