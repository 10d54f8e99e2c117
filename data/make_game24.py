"""Write data/game24.jsonl: every multiset of four numbers from 1..13 that can make 24.

    .venv/bin/python data/make_game24.py          # rewrite the file
    .venv/bin/python data/make_game24.py --check  # compare with the file, write nothing

Exact arithmetic (fractions.Fraction), no floats. One JSON object per line, in ascending
order of the numbers:

- numbers: the four numbers, ascending
- solution: one expression that makes 24 (with whole intermediate results when one exists)
- ways: derivations that end at 24 (three times: pick two values and an operation;
  agentkit.game24.count_ways says exactly what counts)
- needs_fraction: true when every derivation passes through a fraction (1 5 5 5 -> 5 * (5 - 1/5))
- rank: our difficulty order, 1 = hardest: needs_fraction first, then fewest ways, then the numbers
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from agentkit.game24 import DATA_FILE, count_ways, find_solution, verify  # noqa: E402

NUMBERS = range(1, 14)


def all_multisets() -> list[tuple[int, ...]]:
    """The 1,820 multisets of four numbers from 1..13, ascending."""
    return list(itertools.combinations_with_replacement(NUMBERS, 4))


def record(numbers: tuple[int, ...]) -> dict | None:
    """The puzzle's line, or None when it cannot make 24."""
    ways = count_ways(numbers)
    if not ways:
        return None
    whole = count_ways(numbers, integers_only=True)
    solution = find_solution(numbers, integers_only=True) or find_solution(numbers)
    assert verify(solution, numbers).ok, (numbers, solution)
    return {"numbers": list(numbers), "solution": solution, "ways": ways, "needs_fraction": whole == 0}


def build() -> list[dict]:
    records = [r for r in map(record, all_multisets()) if r]
    order = sorted(records, key=lambda r: (not r["needs_fraction"], r["ways"], r["numbers"]))
    for rank, r in enumerate(order, start=1):
        r["rank"] = rank
    return records


def render(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args()
    records = build()
    text = render(records)
    print(f"{len(all_multisets())} multisets, {len(records)} can make 24, "
          f"{sum(r['needs_fraction'] for r in records)} only through a fraction")
    if args.check:
        same = DATA_FILE.exists() and DATA_FILE.read_text(encoding="utf-8") == text
        print(f"{DATA_FILE.name} is {'up to date' if same else 'OUT OF DATE: run without --check'}")
        return 0 if same else 1
    DATA_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {DATA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
