"""The capstone's check: an agent of your own design beats the course's baselines on held-out tasks, within budget."""
from __future__ import annotations

from ..capstone import BUDGET, RATE, best_baseline, standing
from ..instruments import NoisyTaskLLM
from . import Fail, call, exercise

OVER_BUDGET = ("the dear paradigms spend their tokens re-sending earlier results (chapter 09): run a cheap one "
               "first, and a dearer one only on the tasks where the cheap one cannot answer.")
NOT_BETTER = ("read the baselines by category (which paradigm fails where?), and chapter 09's curves (which "
              "structures lose least as errors rise); combine a cheap paradigm with one that checks its answer.")


@exercise("14.capstone", "build", "An agent for tasks it has never seen",
          f"Write `build(llm)`: it returns your agent, built on `llm`; it must beat the best baseline within "
          f"{BUDGET} tokens per task.")
def _capstone(build):
    if not callable(build):
        raise Fail("your answer", "a function build(llm) -> agent", repr(build), "define it with def.")
    agent = call(build, NoisyTaskLLM(RATE), case="building one agent", hint="build(llm) must return an agent.")
    if not callable(getattr(agent, "run", None)):
        raise Fail("the agent build(llm) returned", "an object with .run(question)", type(agent).__name__,
                   "return the agent itself (for example ReActAgent(llm, default_executor())), not its answer.")
    mine, best = standing("your agent", build), best_baseline()
    if not mine.within_budget:
        raise Fail("the token budget", f"at most {BUDGET} tokens per task on average", f"{mine.tokens:.0f}", OVER_BUDGET)
    if mine.success <= best.success:
        raise Fail("the held-out tasks", f"more than {best.name}'s {best.success:.0%} (the best baseline within budget)",
                   f"{mine.success:.0%} [{mine.low:.0%}-{mine.high:.0%}] at {mine.tokens:.0f} tokens per task",
                   NOT_BETTER)
    return (f"{mine.success:.0%} [{mine.low:.0%}-{mine.high:.0%}] at {mine.tokens:.0f} tokens per task: better than "
            f"{best.name}'s {best.success:.0%}, the best baseline within the budget. The stand-in knows these tasks' "
            "key paths and errs at a fixed rate per reply; a real model's errors differ by role, so measure there too.")
