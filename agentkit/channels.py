"""What the real-model chapter measures: the action channels, and batches against a slow server.

`compare_channels(llm, questions)` runs every question through the text protocol (`ReActAgent`)
and through native tool calls (`NativeReActAgent`) on the same LLM, one row per run, every count
read from the trace and the ledger (`format_failures`). `channel_totals` sums the rows per channel.
`channel_runs(llm, tasks)` runs labelled tasks (agentkit.tasks) through the text protocol, native tool
calls and a grammar in the sampler (`agentkit.grammar`), and `channel_table` reads per channel: tasks,
right answers, format failures, wrong tool choices (a registered tool the task's key path does not use)
and tokens per task, all from the ledgers and the tool logs.
`time_batch()` times the same ReAct runs on one worker and on several (`agentkit.batch.run_batch`)
against a loopback server that adds latency to every call.
`chapter_client()` picks the model by AP_MODE: your real one, SmolLM2 with a tool template, or
(by default) the stand-in behind a loopback HTTP server.

    python -m agentkit.channels --mode local                         # the comparison, on the local model
    python -m agentkit.channels --bench 20 --latency 0.2 --workers 8  # 20 runs, 1 worker against 8
"""
from __future__ import annotations

import time
from typing import Optional

from .native import CHANNELS, NativeReActAgent, format_failures, local_tool_server
from .react import ReActAgent


def compare_channels(llm, questions: list[str], max_steps: int = 4, gold: Optional[dict] = None,
                     tool_choice: Optional[str] = "required") -> list[dict]:
    """Run every question through the text protocol and through native tool calls on the same LLM.

    One row per run, read from the agent's trace and the LLM's ledger. A call that fails for good
    (LLMError) ends that run and is reported in `stop`; the other runs go on.
    """
    from .llm import LLMError
    from .tools import default_executor

    rows = []
    for channel in CHANNELS:
        for question in questions:
            if channel == "text":
                agent = ReActAgent(llm, default_executor(), max_steps=max_steps)
            else:
                agent = NativeReActAgent(llm, default_executor(), max_steps=max_steps, tool_choice=tool_choice)
            try:
                answer, stop = agent.run(question, verbose=False), agent.stop_reason
            except LLMError as e:
                answer, stop = "", f"error: {str(e)[:80]}"
            calls = agent.run_calls
            expected = (gold or {}).get(question)
            rows.append({
                "channel": channel, "question": question, "LLM calls": len(calls),
                "format failures": sum(format_failures(calls, channel, agent.tools)),
                "replies with tool calls": sum(bool(c.tool_calls) for c in calls),
                "tool runs": len(agent.run_tool_calls), "stop": stop, "answer": " ".join(str(answer).split()),
                "correct": None if expected is None else "".join(filter(str.isdigit, str(answer))) == expected,
            })
    return rows


def by_channel(rows: list[dict]) -> dict:
    """The rows grouped by channel, channels in the order they first appear."""
    groups: dict = {}
    for row in rows:
        groups.setdefault(row["channel"], []).append(row)
    return groups


def channel_totals(rows: list[dict]) -> dict:
    """Per channel: runs, LLM calls, format failures, replies with tool calls, runs finished, correct answers."""
    return {channel: {
        "runs": len(mine), "LLM calls": sum(r["LLM calls"] for r in mine),
        "format failures": sum(r["format failures"] for r in mine),
        "replies with tool calls": sum(r["replies with tool calls"] for r in mine),
        "finished": sum(r["stop"] == "finished" for r in mine),
        "correct": sum(bool(r["correct"]) for r in mine),
    } for channel, mine in by_channel(rows).items()}


def channel_runs(llm, tasks: list, channels=CHANNELS + ("grammar",), max_steps: int = 3, *, grammar=None,
                 label: str = "", tools=None) -> list[dict]:
    """Every task through every channel on one LLM; one row per run, read from the ledger and the tool log.

    "grammar" sends `grammar` with every request (a GBNF text, or a function of the messages; default:
    `react_grammar` over the registry, which fixes the format and nothing else). `tools` makes the registry
    (default: `default_executor`). `label` names the rows' channel instead of the channel itself.
    """
    from .grammar import Constrained, react_grammar
    from .llm import LLMError
    from .tools import default_executor

    rows = []
    for channel in channels:
        for task in tasks:
            registry = tools() if tools is not None else default_executor()
            if channel == "native":
                agent = NativeReActAgent(llm, registry, max_steps=max_steps)
            elif channel == "grammar":
                agent = ReActAgent(Constrained(llm, grammar or react_grammar(registry)), registry, max_steps=max_steps)
            else:
                agent = ReActAgent(llm, registry, max_steps=max_steps)
            try:
                answer, stop = agent.run(task.question, verbose=False), agent.stop_reason
            except LLMError as e:
                answer, stop = "", f"error: {str(e)[:80]}"
            calls = agent.run_calls
            needed = {step.split("[", 1)[0].lower() for step in task.key_path}
            asked = [s.action for s in agent.trace if s.action and s.action.lower() in
                     {name.lower() for name in registry.names}]
            rows.append({
                "channel": label or channel, "task": task.id, "question": task.question,
                "correct": stop == "finished" and task.check(answer), "LLM calls": len(calls),
                "format failures": sum(format_failures(calls, "native" if channel == "native" else "text", registry)),
                "wrong tools": sum(name.lower() not in needed for name in asked),
                "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
                "actions": [f"{s.action}[{s.argument}]" if s.action else "(none)" for s in agent.trace],
                "stop": stop, "answer": " ".join(str(answer).split()),
            })
    return rows


def channel_table(rows: list[dict]) -> dict:
    """Per channel: tasks, right answers, format failures (replies), wrong tool choices, tokens per task."""
    return {channel: {
        "tasks": len(mine), "right": sum(r["correct"] for r in mine),
        "format failures": sum(r["format failures"] for r in mine), "replies": sum(r["LLM calls"] for r in mine),
        "wrong tools": sum(r["wrong tools"] for r in mine),
        "tokens per task": round(sum(r["tokens"] for r in mine) / len(mine)),
    } for channel, mine in by_channel(rows).items()}


def time_batch(tasks: int = 20, latency_s: float = 0.2, workers: int = 8, progress: bool = False) -> dict:
    """Wall time of `tasks` ReAct checkpoint runs (3 calls each) on a latency server: one worker, then `workers`."""
    from .batch import run_batch
    from .loopback import serve
    from .scripts.react import CHECKPOINT_QUESTION

    timings = {}
    with serve(latency_s=latency_s) as server:
        llm = server.client()
        llm.think("warm up")  # the SDK's first request imports and builds a lot: keep it out of the timing
        for n in (1, workers):
            start = time.perf_counter()
            results = run_batch(lambda _: ReActAgent(llm, max_steps=4).run(CHECKPOINT_QUESTION, verbose=False),
                                range(tasks), workers=n, progress=progress, desc=f"{n} worker(s)")
            timings[n] = time.perf_counter() - start
            if not all(r.ok and r.value == "25185" for r in results):
                raise RuntimeError(f"a task failed: {[r.error for r in results if not r.ok][:1]}")
    return {"tasks": tasks, "latency_s": latency_s, "calls": len(llm.calls) - 1, "wall_s": timings}


def chapter_client(latency_s: float = 0.0):
    """The client a chapter's real-model cells use: (mode, llm, loopback server or None).

    AP_MODE=real: your model, `get_llm("real")`. AP_MODE=local: SmolLM2 on llama.cpp with
    TOOL_CHAT_TEMPLATE. Otherwise (fake, the default): the real client pointed at a loopback server
    that answers with the stand-in, so the cells still go through HTTP and the openai SDK and
    print the same on every machine. Stop the loopback server when done.
    """
    from .loopback import serve
    from .modes import get_llm
    from .settings import setting

    mode = (setting("AP_MODE") or "fake").strip().lower()
    if mode == "real":
        return mode, get_llm("real"), None
    if mode == "local":
        return mode, local_tool_server().client(), None
    get_llm(mode)  # an unknown mode fails here, listing the valid ones
    server = serve(latency_s=latency_s)
    return mode, server.client(api_key="loopback-key"), server


def main(argv=None) -> int:
    """Print the channel comparison on the chapter's questions, or time a batch (--bench)."""
    import argparse

    from .modes import get_llm
    from .scripts.native import TASKS

    parser = argparse.ArgumentParser(prog="python -m agentkit.channels", description=main.__doc__)
    parser.add_argument("--mode", default="local", choices=["fake", "local", "real"])
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--tool-choice", default="required", help='"required", "auto", or "none" to send none')
    parser.add_argument("--bench", type=int, metavar="TASKS", help="instead, time TASKS checkpoint runs on the "
                        "stand-in behind a loopback server with --latency per call, 1 worker against --workers")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call for --bench")
    parser.add_argument("--workers", type=int, default=8, help="workers for --bench")
    args = parser.parse_args(argv)
    if args.bench:
        result = time_batch(args.bench, args.latency, args.workers, progress=True)
        for n, wall in result["wall_s"].items():
            print(f"{result['tasks']} tasks, 3 calls each, {args.latency:g} s per call, {n} worker(s): {wall:.2f} s")
        return 0
    llm = local_tool_server().client() if args.mode == "local" else get_llm(args.mode)
    rows = compare_channels(llm, [t.question for t in TASKS], args.max_steps, {t.question: t.answer for t in TASKS},
                            None if args.tool_choice == "none" else args.tool_choice)
    for row in rows:
        print(f"{row['channel']:6} calls={row['LLM calls']} format_failures={row['format failures']} "
              f"tools={row['tool runs']} stop={row['stop']} correct={row['correct']} | {row['question'][:40]} "
              f"-> {row['answer'][:60]!r}")
    for channel, total in channel_totals(rows).items():
        print(channel, total)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
