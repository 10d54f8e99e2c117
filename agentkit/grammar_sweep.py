"""Which constraint lets a small real model complete a look-up: a sweep over settings, shipped as data.

Every setting runs the ten lookup tasks of data/tasks.jsonl (each answered by one Search) on SmolLM2-135M
on llama.cpp, at most 3 steps, through `agentkit.channels.channel_runs`, and keeps every row (answer,
actions, format failures, wrong tools, tokens) with the recording's stamp in data/grammar_sweep.json,
which chapter 11 reads. The settings, from nothing to everything:

* the three channels as they are: text protocol, native tool calls, a grammar that fixes the format;
* `grounded_grammar` (a Search input made of the question's words, an answer made of the Observation's
  words, one look-up then Finish) on the chat prompt, with Search as the only tool;
* two demonstrations (`agentkit.local.few_shot_react_examples`, a completion prompt) without a grammar,
  then with the grounded grammar: the smallest setting in which the model answered any task right;
* that setting with one part taken away at a time, and with Calculate offered as well.

    python -m agentkit.grammar_sweep            # about 250 calls: most of an hour on two busy cores
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .channels import channel_runs, channel_table
from .grammar import grounded_grammar

# name: (client: "chat" or "demonstrations", channel, tools: "Search" or "Search+Calculate", grounded grammar's options)
SETTINGS = {
    "text protocol": ("chat", "text", "Search+Calculate", None),
    "native tool calls": ("chat", "native", "Search+Calculate", None),
    "grammar: the format": ("chat", "grammar", "Search+Calculate", None),
    "grammar: grounded": ("chat", "grammar", "Search", {}),
    "demonstrations, no grammar": ("demonstrations", "text", "Search", None),
    "demonstrations + grammar: grounded": ("demonstrations", "grammar", "Search", {}),
    "... without one look-up then Finish": ("demonstrations", "grammar", "Search", {"one_lookup": False}),
    "... without the answer from the Observation": ("demonstrations", "grammar", "Search",
                                                    {"answer_from_observations": False}),
    "... without the input from the question": ("demonstrations", "grammar", "Search",
                                                {"argument_from_question": False}),
    "... with Calculate offered too": ("demonstrations", "grammar", "Search+Calculate", {}),
}
SWEEP_PATH = "grammar_sweep.json"


def lookup_tasks() -> list:
    from .tasks import load_tasks

    return [task for task in load_tasks() if task.category == "lookup"]


def registry(kind: str):
    """Search alone, or Search and Calculate (the course's default registry)."""
    from .tools import ToolExecutor, default_executor

    if kind == "Search+Calculate":
        return default_executor()
    tools = ToolExecutor()
    full = default_executor().tools["Search"]
    tools.register("Search", full.func, full.description, timeout_s=None)
    return tools


def run_setting(name: str, chat, demonstrations, tasks: list, max_steps: int = 3) -> list[dict]:
    """One setting's rows; `chat` and `demonstrations` are the two clients (a chat and a completion prompt)."""
    client, channel, tools, options = SETTINGS[name]
    llm = demonstrations if client == "demonstrations" else chat
    grammar = None
    if options is not None:
        start = " " if client == "demonstrations" else "Thought: "  # a completion prompt already ends in "Thought:"
        grammar = grounded_grammar(registry(tools), start=start, **options)
    return channel_runs(llm, tasks, channels=(channel,), max_steps=max_steps, grammar=grammar, label=name,
                        tools=lambda: registry(tools))


def main(argv=None) -> int:
    import argparse

    from .data import DATA_DIR
    from .local import MODEL_ID, CompletionLLM, few_shot_react_examples
    from .native import local_tool_server
    from .recorder import stamp_of

    parser = argparse.ArgumentParser(prog="python -m agentkit.grammar_sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / SWEEP_PATH)))
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), help="names of SETTINGS to run")
    parser.add_argument("--tasks", type=int, default=None, help="only the first TASKS lookup tasks (a smoke run)")
    args = parser.parse_args(argv)
    server = local_tool_server()
    chat = server.client()
    demonstrations = CompletionLLM(few_shot_react_examples(), api_key="local", base_url=server.base_url, model=MODEL_ID)
    stamp = {**stamp_of(chat, "11_real_models_and_tool_calling", "local"), "command": "python -m agentkit.grammar_sweep",
             "max_steps": 3}
    stamp["server"] += f", replies capped at {server.max_tokens} tokens"
    rows, tasks = [], lookup_tasks()[:args.tasks]
    for name in args.settings:
        start = time.perf_counter()
        rows += run_setting(name, chat, demonstrations, tasks)
        table = channel_table([r for r in rows if r["channel"] == name])[name]
        print(f"{name}: {table} ({time.perf_counter() - start:.0f} s)", flush=True)
    args.out.write_text(json.dumps({"stamp": stamp, "tasks": [t.id for t in tasks], "rows": rows}, indent=1,
                                   ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
