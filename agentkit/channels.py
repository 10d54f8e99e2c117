"""The two action channels side by side, and the client a real-model chapter talks to.

`compare_channels(llm, questions)` runs every question through the text protocol (`ReActAgent`)
and through native tool calls (`NativeReActAgent`) on the same LLM, one row per run, every count
read from the trace and the ledger (`format_failures`). `channel_totals` sums the rows per channel.
`chapter_client()` picks the model by AP_MODE: your real one, SmolLM2 with a tool template, or
(by default) the stand-in behind a loopback HTTP server.

    python -m agentkit.channels --mode local     # the comparison on the local model, printed
"""
from __future__ import annotations

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


def channel_totals(rows: list[dict]) -> dict:
    """Per channel: runs, LLM calls, format failures, replies with tool calls, runs finished, correct answers."""
    totals = {}
    for channel in CHANNELS:
        mine = [r for r in rows if r["channel"] == channel]
        totals[channel] = {
            "runs": len(mine), "LLM calls": sum(r["LLM calls"] for r in mine),
            "format failures": sum(r["format failures"] for r in mine),
            "replies with tool calls": sum(r["replies with tool calls"] for r in mine),
            "finished": sum(r["stop"] == "finished" for r in mine),
            "correct": sum(bool(r["correct"]) for r in mine),
        }
    return totals


def chapter_client(latency_s: float = 0.0):
    """The client a chapter's real-model cells use: (mode, llm, loopback server or None).

    AP_MODE=real: your model, `get_llm("real")`. AP_MODE=local: SmolLM2 on llama.cpp with
    TOOL_CHAT_TEMPLATE. Otherwise (fake, the default): the real client pointed at a loopback server
    that answers with the stand-in, so the cells still go through HTTP and the openai SDK and
    print the same on every machine. Stop the loopback server when done.
    """
    from .llm import _setting, get_llm
    from .loopback import serve

    mode = (_setting("AP_MODE") or "fake").strip().lower()
    if mode == "real":
        return mode, get_llm("real"), None
    if mode == "local":
        return mode, local_tool_server().client(), None
    get_llm(mode)  # an unknown mode fails here, listing the valid ones
    server = serve(latency_s=latency_s)
    return mode, server.client(api_key="loopback-key"), server


def main(argv=None) -> int:
    """Print the channel comparison on the chapter's questions: python -m agentkit.channels --mode local."""
    import argparse

    from .llm import get_llm
    from .scripts.native import TASKS

    parser = argparse.ArgumentParser(prog="python -m agentkit.channels", description=main.__doc__)
    parser.add_argument("--mode", default="local", choices=["fake", "local", "real"])
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--tool-choice", default="required", help='"required", "auto", or "none" to send none')
    args = parser.parse_args(argv)
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
