"""What one run in the WebAssembly engine costs (agentkit.wasm_sandbox.run_code), measured from outside.

- first run in a fresh process (loads the compiled module; a worker process, if the design has one);
- median wall time of trivial runs (`x = 1`, value `x`), warm;
- median wall time of runs that hit a 0.2 s limit: a busy loop, and a sleep;
- the trivial run right after a sleeper (what ending that sleeper leaves to the next run);
- memory and threads left after SLEEPERS runs that each hold 100 MB and sleep past their limit (and one
  trivial run, so an engine is loaded as before them): resident memory of this process and its children
  (Linux /proc), and live threads here.

Run: .venv/bin/python bench/wasm_engine.py [--runs 40]   (Linux: reads /proc for memory)
"""
from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path

from agentkit.wasm_sandbox import run_code

SLEEPERS = 3
HOARD_AND_SLEEP = ("hoard = bytearray(100 * 2**20)\nhoard[::4096] = b'x' * len(hoard[::4096])  # touched: resident\n"
                   "import time\ntime.sleep(60)")


def timed(code: str, expression: str | None = None, **limits) -> float:
    start = time.perf_counter()
    run_code(code, expression, **limits)
    return time.perf_counter() - start


def tree_rss_mb() -> float:
    """Resident memory of this process and every descendant, in MB (Linux)."""
    by_parent: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            by_parent.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        todo += by_parent.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    runs = parser.parse_args().runs
    print(f"first run in this process: {timed('x = 1', 'x', timeout_s=60) * 1000:.0f} ms")
    trivial = [timed("x = 1", "x", timeout_s=20) for _ in range(runs)]
    print(f"trivial run, median of {runs}: {statistics.median(trivial) * 1000:.1f} ms "
          f"(min {min(trivial) * 1000:.1f}, max {max(trivial) * 1000:.1f})")
    loops = [timed("while True:\n    pass", timeout_s=0.2) for _ in range(max(3, runs // 8))]
    print(f"busy loop, 0.2 s limit, median of {len(loops)}: {statistics.median(loops) * 1000:.0f} ms")
    sleeps, after = [], []
    for _ in range(max(3, runs // 8)):
        sleeps.append(timed("import time\ntime.sleep(60)", timeout_s=0.2))
        after.append(timed("x = 1", "x", timeout_s=20))
    print(f"sleep, 0.2 s limit, median of {len(sleeps)}: {statistics.median(sleeps) * 1000:.0f} ms; "
          f"the trivial run after it: {statistics.median(after) * 1000:.1f} ms")
    time.sleep(0.5)
    before, threads = tree_rss_mb(), threading.active_count()
    for _ in range(SLEEPERS):
        timed(HOARD_AND_SLEEP, timeout_s=1)
    timed("x = 1", "x", timeout_s=20)  # measured with an engine loaded, as before the sleepers
    time.sleep(0.5)
    print(f"{SLEEPERS} runs that hold 100 MB and sleep past a 1 s limit, then a trivial one: resident memory here "
          f"and in children {before:.0f} -> {tree_rss_mb():.0f} MB, threads here {threads} -> {threading.active_count()}")


if __name__ == "__main__":
    main()
