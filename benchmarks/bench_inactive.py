"""What installing pytest-sqleval adds to a plain pytest run that does not use it (no ``--sqleval``).

Run from the project root::

    python benchmarks/bench_inactive.py [--repeats 30] [--dont-write-bytecode]

Two measures, each from fresh interpreters, interleaved, so the machine's load hits both sides alike:

* ``run``: the wall time of ``python -m pytest -q test_plain.py`` (one trivial test) with the plugin
  installed (as the ``pytest11`` entry point loads it) against the same command with ``-p no:sqleval``
  (the plugin and the feature plugins it registers are not loaded). Printed: best and median of each side,
  the difference of the bests and the median of the per-repetition differences.
* ``import``: in an interpreter that has already imported pytest and xdist (a plain run loads them anyway),
  the time to import the plugin modules a plain run loads: ``pytest_sqleval.plugin`` and every module of its
  ``pytest_plugins`` list. Printed: best and median, and the modules outside the plugin they pull in.

Bytecode is cached (outside the tree, ``PYTHONPYCACHEPREFIX``) as in any installed package; the warm-up runs
fill it. ``--dont-write-bytecode`` measures a CI machine that exports ``PYTHONDONTWRITEBYTECODE=1``: the
package's ordinary bytecode is compiled once beforehand (as ``pip install`` does), nothing is written during the
runs, so whatever a run compiles (pytest's assertion rewriting of a plugin's modules) it compiles every time.

Each side is timed twice: wall clock, and the CPU time (user + system) of the pytest process from ``wait4``, which
the other jobs of a loaded machine disturb much less.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORT_PROBE = r"""
import importlib, json, sys, time
import pytest, xdist.plugin, _pytest.pytester  # noqa: F401 - loaded by any plain run
before = set(sys.modules)
started = time.perf_counter()
plugin = importlib.import_module("pytest_sqleval.plugin")
for name in getattr(plugin, "pytest_plugins", []):
    importlib.import_module(name)
elapsed = time.perf_counter() - started
new = sorted(set(sys.modules) - before)
print(json.dumps({"seconds": elapsed, "others": [m for m in new if not m.startswith("pytest_sqleval")],
                  "ours": [m for m in new if m.startswith("pytest_sqleval")]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--dont-write-bytecode", action="store_true",
                        help="run with PYTHONDONTWRITEBYTECODE=1 (the package's own bytecode compiled beforehand)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqleval-bench-inactive-") as tmp:
        folder = Path(tmp)
        (folder / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n", encoding="utf-8")
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.dont_write_bytecode:
            env.pop("PYTHONPYCACHEPREFIX", None)  # the interpreter's and packages' own __pycache__, as installed
            package = subprocess.run(  # the copy these runs import (PYTHONPATH may name another)
                [sys.executable, "-c", "import os, pytest_sqleval; print(os.path.dirname(pytest_sqleval.__file__))"],
                env=env, check=True, capture_output=True, text=True).stdout.strip()
            subprocess.run([sys.executable, "-m", "compileall", "-q", package], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"]
        sides = {"installed": base, "-p no:sqleval": base + ["-p", "no:sqleval"]}

        def run(command: list[str]) -> tuple[float, float]:
            """(wall seconds, CPU seconds of the pytest process)"""
            started = time.perf_counter()
            process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            output = process.stdout.read() if process.stdout is not None else b""
            _, status, usage = os.wait4(process.pid, 0)
            elapsed = time.perf_counter() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed:\n{output.decode(errors='replace')[-2000:]}")
            return elapsed, usage.ru_utime + usage.ru_stime

        def probe() -> dict:
            done = subprocess.run([sys.executable, "-c", IMPORT_PROBE], cwd=folder, env=env, capture_output=True,
                                  text=True, check=True)
            return json.loads(done.stdout.strip().splitlines()[-1])

        for command in sides.values():  # warm-up: bytecode caches
            run(command)
        probe()
        times: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        imports: list[float] = []
        last: dict = {}
        for _ in range(args.repeats):
            for name, command in sides.items():
                wall, used = run(command)
                times[name].append(wall)
                cpu[name].append(used)
            last = probe()
            imports.append(last["seconds"])

    bytecode = "PYTHONDONTWRITEBYTECODE=1" if args.dont_write_bytecode else "bytecode cached"
    print(f"plain pytest run (1 test), {args.repeats} interleaved repetitions, {bytecode}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| side | wall best (ms) | wall median (ms) | CPU best (ms) | CPU median (ms) |")
    print("|---|---:|---:|---:|---:|")
    for name in sides:
        print(f"| {name} | {1000 * min(times[name]):.1f} | {1000 * statistics.median(times[name]):.1f} "
              f"| {1000 * min(cpu[name]):.1f} | {1000 * statistics.median(cpu[name]):.1f} |")
    for label, values in (("wall", times), ("CPU", cpu)):
        on, off = values["installed"], values["-p no:sqleval"]
        print(f"added by the installed plugin ({label}): {1000 * (min(on) - min(off)):+.1f} ms (difference of the "
              f"bests), {1000 * statistics.median(a - b for a, b in zip(on, off)):+.1f} ms (median of paired "
              f"differences); ratio of the bests {min(on) / min(off):.3f}")
    print(f"import of pytest_sqleval.plugin + its pytest_plugins after pytest: best {1000 * min(imports):.1f} ms, "
          f"median {1000 * statistics.median(imports):.1f} ms; {len(last.get('ours', []))} plugin modules, "
          f"other modules pulled in: {last.get('others') or 'none'}")


if __name__ == "__main__":
    main()
