"""The runtime chapter's labelled suites, the web pages they search, and how runs are measured.

Each task is an `agentkit.tasks.Task` (a `SuiteTask`: with its suite, its step budget and its
stand-in's script, `spec`) whose `category` is its label, checked by the "leading" checker: the
answer starts with the gold ("2021 (1,234 mm)"). The suites:

* `data/runtime_sick.jsonl`: sick runs, each labelled with the instability it shows (repeated
  parameters, useless results, drift, or mixed). A stand-in plays each one (agentkit.scripts.runtime):
  it loops over the task's `loop` of actions and never finishes on its own; one task's model
  follows the runtime's redirect (`"heeds": "redirect"`).
* `data/runtime_legit.jsonl`: legitimate hard tasks that genuinely need several similar searches
  (year-by-year comparisons, cross-checking two sources, a search refined twice). Their stand-in
  works through `needs` (the figures the answer needs) and ignores the runtime's notes.
* `data/runtime_long.jsonl`: one 30-step task, for the cost of the history.
* `data/runtime_web.json`: the pages of a made-up town, Lakeford (so no figure is mistaken for a
  real one). `web_search` finds a page when the query holds every word of one of its `keys`.

Each run is a row of chapter 10's harness (`Outcome` is an `agentkit.evaluate.Run`, read by
`agentkit.evaluate.read_run` from `agent.run_calls`, checkpoint and fallback calls included, and
`agent.run_tool_calls`) with what this chapter measures besides: checkpoint calls, the runtime's
interventions, whether the runtime stopped it (`killed`), and the agent itself. What is this
chapter's own: the kill accounting (`totals`), the review of kills (`runtime_early_stop_review`:
lift the stop, allow two more steps), the threshold sweep, and the Lakeford web tool.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Optional

from .evaluate import EXTRA_STEPS, Run, read_run
from .lakeford import (  # noqa: F401 (the chapter imports the suites and the web from here)
    MAX_STEPS, SCRAPED_PAGE, SUITE_FILES, SuiteTask, load_suite, task_by_id, web_search, web_tools,
)
from .llm import ScriptedLLM
from .react import ReActAgent
from .runtime import CHECKPOINT_MARKER
from .scripts.runtime import RULES

# --- running and measuring --------------------------------------------------------------


class SuiteLLM(ScriptedLLM):
    """The chapter's stand-in (rules in agentkit.scripts.runtime), with a ledger like any client.

    It answers by the content of the prompt only, so a prompt it has seen before is answered and
    counted from a memo: a sweep over settings replays many identical prompts. Every call still
    gets its own CallRecord.
    """

    def __init__(self) -> None:
        super().__init__(RULES)

    def _complete(self, messages, temperature):
        return _memo(tuple((m.get("role", ""), m.get("content", "")) for m in messages))


@lru_cache(maxsize=4096)
def _memo(key: tuple) -> tuple:
    return ScriptedLLM._complete(ScriptedLLM(RULES), [{"role": r, "content": c} for r, c in key], 0)


def suite_llm() -> SuiteLLM:
    return SuiteLLM()


def run_task(task: SuiteTask, runtime=None, context=None, max_steps: Optional[int] = None, llm=None,
             scraped: bool = False, verbose: bool = False, **options) -> ReActAgent:
    """Run one task on a fresh agent (repeat fuse off: the runtime is what is measured)."""
    options.setdefault("repeat_fuse", False)
    agent = ReActAgent(llm if llm is not None else suite_llm(), web_tools(scraped), max_steps or task.max_steps,
                       runtime=runtime, context=context, **options)
    agent.run(task.question, verbose=verbose)
    return agent


@dataclass
class Outcome(Run):
    """One run of one suite task: the harness's row, and what the runtime chapter measures besides."""

    task: SuiteTask = field(kw_only=True)
    checkpoint_calls: int = field(kw_only=True)
    interventions: list = field(kw_only=True)
    agent: ReActAgent = field(kw_only=True, repr=False, compare=False)

    @property
    def killed(self) -> bool:
        """Stopped by the runtime (on a legitimate task: a false kill)."""
        return self.stop_reason.startswith("runtime")

    @property
    def verified(self) -> bool:
        """Finished on its own, not by the fallback after a stop."""
        return self.stop_reason == "finished"


def outcome(task: SuiteTask, agent: ReActAgent) -> Outcome:
    calls = agent.run_calls
    row = read_run(task, agent, agent.answer, agent.stop_reason, calls, agent.run_tool_calls)
    return Outcome(**vars(row), task=task, checkpoint_calls=sum(CHECKPOINT_MARKER in c.prompt for c in calls),
                   interventions=list(agent.interventions), agent=agent)


def run_suite(tasks, runtime=None, context=None, max_steps: Optional[int] = None, **options) -> list[Outcome]:
    """Run every task; `runtime` is copied per task, so runs never share a watch."""
    results = []
    for task in tasks:
        watch = replace(runtime) if runtime is not None else None
        results.append(outcome(task, run_task(task, watch, context, max_steps, **options)))
    return results


def runtime_early_stop_review(results: list[Outcome], extra_steps: int = EXTRA_STEPS) -> list[Outcome]:
    """The runs the runtime stopped, each with `solved_with_two_more_steps`: would `extra_steps` more
    steps, with the same hints but no stop, have finished with the right answer?"""
    reviewed = []
    for result in results:
        if not result.killed:
            continue
        agent = result.agent
        patient = replace(agent.runtime, stop=False)
        again = run_task(result.task, patient, agent.context, len(agent.trace) + extra_steps)
        solved = again.stop_reason == "finished" and result.task.check(again.answer)
        reviewed.append(replace(result, solved_with_two_more_steps=solved))
    return reviewed


def sweep(thresholds, windows, **settings) -> list[dict]:
    """For every (window, Jaccard threshold): false kills on the legitimate suite, LLM calls on the sick suite."""
    from .runtime import Runtime

    sick, legit = load_suite("sick"), load_suite("legit")
    rows = []
    for window in windows:
        for threshold in thresholds:
            runtime = Runtime(jaccard=threshold, window=window, **settings)
            killed = [r.task.id for r in run_suite(legit, runtime) if r.killed]
            rows.append({"window": window, "jaccard": threshold, "false_kills": len(killed), "killed": killed,
                         "sick_calls": totals(run_suite(sick, runtime))["llm_calls"]})
    return rows


def totals(results: list[Outcome]) -> dict:
    """Calls, tokens, successes and kills over a list of outcomes."""
    return {
        "runs": len(results),
        "llm_calls": sum(r.calls for r in results),
        "checkpoint_calls": sum(r.checkpoint_calls for r in results),
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "correct": sum(r.correct for r in results),
        "verified": sum(r.correct and r.verified for r in results),
        "stopped_by_runtime": sum(r.killed for r in results),
    }
