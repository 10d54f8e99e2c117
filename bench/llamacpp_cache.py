"""Measure llama.cpp's prompt cache on SmolLM2: prompt-processing time per call, cache on and off (chapter 17).

    .venv/bin/python bench/llamacpp_cache.py            # about 15 minutes on a busy 2-core machine
    .venv/bin/python bench/llamacpp_cache.py --reps 1   # one repetition, to try it

The requests are real agent prompts: the first calls of chapter 17's relay-20 task as each strategy
sends them on the stand-in (agentkit.context_runs), sent to SmolLM2-135M-Instruct on llama.cpp
(xllamacpp, one slot, the course's thread count) with max_tokens=1, so the time measured is prompt
processing. llama.cpp reports, per request, how many prompt tokens it took from its cache (`cache_n`),
how many it processed (`prompt_n`) and how long that took (`prompt_ms`). Scenarios:

* "cache off": the full-history prompts with `cache_prompt: false`: every token processed every call;
* "cache on": the same prompts with the cache on (llama.cpp's default): only the new step is processed;
* "timestamp in the system prompt": cache on, the system prompt starting with the time of the call;
* "tool list reordered at call 4": cache on, from call 4 the tool list in another order;
* "compaction": cache on, a Compaction run's calls in order, its summariser call included;
* "sliding window (3 steps)", "observation masking (keep 2)": cache on, those strategies' prompts.

Every (scenario, repetition) gets a fresh server (no cache carried between them); repetitions run the
scenarios in turn, so a busy machine slows them all alike. Writes data/llamacpp_cache.json: the machine,
the server's settings, and every request's figures; chapter 17 replays it (timings are this machine's).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import urllib.request
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from agentkit.context_runs import run_relay  # noqa: E402
from agentkit.local import LocalServer, MODEL_ID  # noqa: E402
from agentkit.relay import relay_task  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "data" / "llamacpp_cache.json"
CALLS = 7  # calls per scenario (the compaction scenario adds its summariser call)
TASK = "relay-20"


def _messages(strategy: str, **settings) -> list[list[dict]]:
    run = run_relay(relay_task(TASK), strategy, **settings)
    return [call.messages for call in run.calls]


def scenarios() -> dict[str, tuple[list, bool]]:
    """{name: (the prompts in order, cache_prompt)}."""
    full = _messages("full history")[:CALLS]

    def stamped(number, messages):
        system = f"Current time: 2026-12-06 10:{number:02d}:00 UTC.\n" + messages[0]["content"]
        return [{"role": "system", "content": system}, *messages[1:]]

    def reordered(number, messages):
        if number < 4:
            return messages
        lines = messages[0]["content"].split("\n")
        tools = [i for i, line in enumerate(lines) if line.startswith("- ")]
        moved = [lines[i] for i in tools][::-1]
        for i, line in zip(tools, moved):
            lines[i] = line
        return [{"role": "system", "content": "\n".join(lines)}, *messages[1:]]

    compaction = _messages("compaction", threshold=600)
    return {
        "cache off": (full, False),
        "cache on": (full, True),
        "timestamp in the system prompt": ([stamped(n, m) for n, m in enumerate(full, 1)], True),
        "tool list reordered at call 4": ([reordered(n, m) for n, m in enumerate(full, 1)], True),
        "compaction": (compaction[: CALLS + 1], True),
        "sliding window (3 steps)": (_messages("sliding window", window=3)[:CALLS], True),
        "observation masking (keep 2)": (_messages("observation masking", keep=2)[:CALLS], True),
    }


def request(base_url: str, messages: list[dict], cache: bool) -> dict:
    body = json.dumps({"model": MODEL_ID, "messages": messages, "max_tokens": 1, "temperature": 0,
                       "cache_prompt": cache}).encode()
    post = urllib.request.Request(f"{base_url}/chat/completions", body, {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(post, timeout=600) as response:
        reply = json.load(response)
    wall = time.perf_counter() - start
    timings, usage = reply.get("timings", {}), reply.get("usage", {})
    return {"prompt_tokens": usage.get("prompt_tokens"), "cache_n": timings.get("cache_n"),
            "prompt_n": timings.get("prompt_n"), "prompt_ms": round(timings.get("prompt_ms", 0.0), 2),
            "wall_s": round(wall, 4)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    plan = scenarios()
    rows = []
    threads = None

    def write(reps_done: int) -> None:  # after every repetition: a stopped run keeps what it measured
        result = {
            "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "command": "python bench/llamacpp_cache.py",
            "model": MODEL_ID, "server": f"llama.cpp (xllamacpp {metadata.version('xllamacpp')})", "threads": threads,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                        "load_average_1min": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None},
            "task": TASK, "reps": reps_done, "scenarios": list(plan), "rows": rows,
        }
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

    for rep in range(1, args.reps + 1):
        for name, (prompts, cache) in plan.items():
            with LocalServer(max_tokens=1) as server:
                threads = server.threads
                for number, messages in enumerate(prompts, 1):
                    figures = request(server.base_url, messages, cache)
                    rows.append({"scenario": name, "rep": rep, "call": number,
                                 "kind": "summary" if "You compact" in messages[0]["content"] else "agent", **figures})
                    print(f"rep {rep} {name:32} call {number}: {figures}", flush=True)
        write(rep)
    print(f"wrote {len(rows)} requests to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
