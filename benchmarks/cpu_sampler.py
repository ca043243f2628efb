"""A sampling CPU profile of one pytest run: which functions the pytest process spends its CPU in.

Run from the folder the run needs (the suite's folder)::

    python /path/to/benchmarks/cpu_sampler.py OUT.txt -- --sqleval SUITE.sqleval.yaml -q -p no:cacheprovider

Why not cProfile: its cost per call is paid by every call, so code that makes millions of cheap calls
(``random.choices``' per-draw ``random()`` and ``floor``) looks many times dearer than it is, and the shares are
wrong. Here ``ITIMER_PROF`` interrupts the process every millisecond of its CPU time (the kernel may merge
ticks: the samples are shares, not milliseconds) and the Python stack at that moment is counted: each function
once per sample for its inclusive share, the innermost for its own. The query processes are not in it.
"""

from __future__ import annotations

import collections
import signal
import sys
import time

INCLUSIVE: collections.Counter[str] = collections.Counter()
OWN: collections.Counter[str] = collections.Counter()


def _name(frame) -> str:
    code = frame.f_code
    path = code.co_filename
    for cut in ("site-packages/", "pytest_sqleval/", "python3.11/", "python3.12/", "python3.13/"):
        if cut in path:
            path = path.split(cut, 1)[1]
            break
    return f"{path}:{code.co_name}"


def _sample(signum, frame) -> None:
    OWN[_name(frame)] += 1
    seen = set()
    while frame is not None:
        name = _name(frame)
        if name not in seen:
            seen.add(name)
            INCLUSIVE[name] += 1
        frame = frame.f_back


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        raise SystemExit(__doc__)
    out, args = sys.argv[1], sys.argv[3:]
    import pytest

    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    try:
        code = pytest.main(args)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
    total = sum(OWN.values()) or 1
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"{total} samples, {time.process_time():.2f} s of CPU in this process\n\n== own\n")
        f.writelines(f"{n:6d} {100 * n / total:5.1f}% {name}\n" for name, n in OWN.most_common(40))
        f.write("\n== inclusive\n")
        f.writelines(f"{n:6d} {100 * n / total:5.1f}% {name}\n" for name, n in INCLUSIVE.most_common(150))
    raise SystemExit(int(code))


if __name__ == "__main__":
    main()
