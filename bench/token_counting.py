"""How fast agentkit counts tokens in long pre-tokens, where BPE's rescanning merge is quadratic.

A learner's agent may count a 100 KB observation with no space in it (a base64 blob, a line of
digits). tiktoken's merge rescans every pair after each merge: 40 KB of "A" took 51 s.
agentkit.tokens merges with a heap instead. tests/test_tokens.py checks the counts exactly and the
number of rank lookups; this measures the time, which a test should not: run it with
`.venv/bin/python bench/token_counting.py` (no other venv needed). It prints a table and exits 1 if
any text took a second or more of CPU.
"""
from __future__ import annotations

import random
import time

from agentkit import tokens

LIMIT_S = 1.0
SIZE = 100_000  # bytes


def texts() -> dict[str, str]:
    units = {"spaces": " ", "upper": "A", "lower": "a", "digits": "7", "newlines": "\n", "punctuation": "!",
             "space-tab": " \t", "accented": "é", "cjk": "的", "emoji": "🚀"}
    runs = {name: unit * (SIZE // len(unit.encode())) for name, unit in units.items()}
    rng = random.Random(7)
    runs["random letters"] = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(SIZE))
    return runs


def main() -> int:
    tokens.get_encoding()  # the ranks are read once, before any clock starts
    print(f"count_tokens on {SIZE // 1000} KB, CPU seconds (limit {LIMIT_S} s)")
    slow = []
    for name, text in texts().items():
        started = time.process_time()
        count = tokens.count_tokens(text)
        took = time.process_time() - started
        print(f"  {name:<15} {count:>7} tokens  {took:6.3f} s")
        if took >= LIMIT_S:
            slow.append(name)
    if slow:
        print("over the limit:", ", ".join(slow))
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
