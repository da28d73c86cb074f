"""Where the test suite spends its time: the slowest tests and the seconds per file.

CI runs the whole suite on 2 cores and we keep it under about 25 minutes;
this tool says where those minutes go, so that a slow test is found by a
figure rather than a guess.

    python -m devtools.test_durations                # the whole suite, -n 2
    python -m devtools.test_durations --top 100 -- tests/test_search.py

It runs `python -m pytest -n WORKERS --durations=TOP -q -p no:cacheprovider
[PYTEST_ARGS]` in a subprocess, prints the files that took longest (the
setup, call and teardown phases of their slowest tests summed) and writes
devtools/results/test_durations-<backend>.json (`--no-save`: print only):
its provenance (commit, command), pytest's summary line, the per-file
seconds and the TOP slowest phases. A suite that fails is recorded too
(pytest's summary says so) and the tool exits with pytest's status.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from typing import Dict, List, Tuple

from benchmarks import harness

# A line of pytest's "slowest durations" list: "12.34s call     tests/x.py::test_y[a]".
DURATION_LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s+(setup|call|teardown)\s+(\S.*?)\s*$")
# pytest's last line: "1308 passed, 8 warnings in 1047.49s (0:17:27)".
SUMMARY_LINE = re.compile(r"^=*\s*(\d+ (?:passed|failed|error).*? in [\d.]+s.*?)\s*=*$")


def parse(output: str) -> Tuple[List[Dict], str]:
    """(the phases pytest listed as slowest, [{seconds, phase, test}] in its
    order, longest first; its summary line, "" when there is none) from
    pytest's output."""
    slowest, summary = [], ""
    for line in output.splitlines():
        found = DURATION_LINE.match(line)
        if found:
            slowest.append(dict(seconds=float(found.group(1)), phase=found.group(2),
                                test=found.group(3)))
            continue
        found = SUMMARY_LINE.match(line.strip())
        if found:
            summary = found.group(1)
    return slowest, summary


def seconds_by_file(slowest: List[Dict]) -> List[Dict]:
    """[{file, seconds}], longest first: the listed phases summed per test file."""
    totals: Dict[str, float] = collections.defaultdict(float)
    for phase in slowest:
        totals[phase["test"].split("::")[0]] += phase["seconds"]
    return [dict(file=name, seconds=round(seconds, 1))
            for name, seconds in sorted(totals.items(), key=lambda item: -item[1])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (-n)")
    parser.add_argument("--top", type=int, default=250, help="the slowest phases listed")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.top < 1:
        parser.error("--workers and --top must be >= 1")
    command = [sys.executable, "-m", "pytest", "-n", str(args.workers),
               f"--durations={args.top}", "-q", "-p", "no:cacheprovider", *args.pytest_args]
    run = subprocess.run(command, capture_output=True, text=True)
    slowest, summary = parse(run.stdout)
    by_file = seconds_by_file(slowest)
    print(summary or "pytest printed no summary line; its output ends:\n" + run.stdout[-2000:]
          + run.stderr[-2000:])
    print(harness.markdown_table(["file", "seconds"], by_file[:20]))
    if not args.no_save:
        settings = dict(harness.provenance(), pytest_command=" ".join(command[1:]),
                        returncode=run.returncode)
        path = harness.save("test_durations", slowest, settings, seconds_by_file=by_file,
                            summary=[dict(line=summary)])
        print("saved", path)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
