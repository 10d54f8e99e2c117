"""The capstone's check: your agent beats the best baseline within budget, by more than the spread over seeds,
on worlds drawn when the check runs, through the model it is given (the rules are agentkit.capstone's)."""
from __future__ import annotations

from .. import capstone
from ..capstone import BUDGET, CHECK_SEEDS, Refused, baselines, beats, best_of, lead_text, standing
from ..capstone_world import CATEGORIES, TEAM_DOMAIN, draw_world
from . import Fail, call, exercise, learner_code

# Your code's time over the whole check: every build and every run on every task of every world, the model's
# calls included (they happen inside your run). Measured on 2 shared cores, the worked solution took about 1 s
# and an agent that spends the per-task token cap on every task about 2 s; a loop that never calls the model
# is stopped here, since the token cap cannot see it.
TIME_LIMIT_S = 60.0

TASK = (f"Write `build(llm, tools, memory)`: it returns your agent, built on the model `llm` it is given, the "
        f"`tools` (one of them, SendMessage, sends messages: only addresses at {TEAM_DOMAIN} may get one) and the "
        f"team's long-term `memory`. Over {CHECK_SEEDS} worlds drawn when the check runs, it must beat the best "
        f"baseline within {BUDGET} tokens per task (prompt plus completion, every call to `llm`) by more than "
        f"the spread over those worlds. Every answer must be one the model gave. Your code has {TIME_LIMIT_S:g} s "
        "for the whole check, every build and run (the model's calls included).")

RULE_HINTS = {
    "built itself": "build every agent on the `llm` that build() was given: the budget and the errors are that "
                    "model's, and a model of your own (even a copy) measures something else.",
    "without calling": "an answer must come from the model: run an agent on `llm`; a table, a copied printout or "
                       "your own code answers nothing here.",
    "somewhere other than .llm": "keep the model you were given as agent.llm (as every course agent does): the "
                                 "budget is read from the model the agent holds.",
    "ledger": "leave the model's ledger (llm.calls) as it is: it is the measurement.",
    "error rates": "leave the model's error rates and seed as they are: they are the rules.",
    "no reply": "return the answer your model gave on this very question. The worlds are drawn when the check "
                "runs, so answers written down earlier (a table, a printout) belong to other worlds.",
}
LEAK = (f"chapter 12's gate: wrap the tools in GatedExecutor with a policy that runs SendMessage only for an address "
        f"at {TEAM_DOMAIN}, and denies every other side effect.")
OVER_BUDGET = ("the dear paradigms re-send earlier results (chapter 09): run a cheap one first, and a dearer one only "
               "on the tasks the cheap one cannot answer; a question the memory answers needs no tool at all.")
NOT_BETTER = ("read the baselines by category (which design fails where, and why?): every baseline scores 0% on "
              "memory questions and sends what it must not. Chapter 13's memory answers the first; chapter 12's "
              "gate stops the second; chapter 09's curves say which structure loses least as replies go wrong.")


def _rule_hint(message: str) -> str:
    return next((hint for key, hint in RULE_HINTS.items() if key in message), "see the rules in the chapter.")


@exercise("14.capstone", "build", "An agent for worlds it has never seen", TASK, time_limit=TIME_LIMIT_S)
def _capstone(build):
    if not callable(build):
        raise Fail("your answer", "a function build(llm, tools, memory) -> agent", repr(build), "define it with def.")
    seeds = capstone.draw_seeds()
    world = draw_world(seeds[0])
    llm = capstone.CapstoneLLM(world)
    agent = call(build, llm, world.tools()[0], world.memory(), case="building one agent",
                 hint="build(llm, tools, memory) takes the model, the tools and the memory, and returns an agent.")
    with learner_code("the agent build(...) returned"):
        runs = callable(getattr(agent, "run", None))
    if not runs:
        raise Fail("the agent build(...) returned", "an object with .run(question)", type(agent).__name__,
                   "return the agent itself (for example ReActAgent(llm, tools)), not its answer.")
    try:
        mine = standing("your agent", build, seeds, strict=True, clock=learner_code)
    except Refused as refused:
        raise Fail("the rules", "every call through the model given, every answer the model's", str(refused),
                   _rule_hint(str(refused))) from None
    leaks = [r for r in mine.rows if r.failure == "sent a message it must not"]
    if leaks:
        raise Fail(f"the side effects, e.g. {leaks[0].question!r}", "no message to anyone outside the team",
                   f"{len(leaks)} message(s) sent that must not be, over {len(seeds)} worlds", LEAK)
    if not mine.within_budget:
        raise Fail("the token budget", f"at most {BUDGET} tokens per task on average",
                   f"{mine.tokens:.0f}, read from the ledger of the model you were given", OVER_BUDGET)
    others = baselines(seeds)
    best = best_of(others)
    if not beats(mine, best):
        by_category = ", ".join(f"{c} {mine.by_category[c]:.0%} (its {best.by_category[c]:.0%})" for c in CATEGORIES)
        raise Fail("the drawn worlds", f"a lead over {best.name}, the best baseline within budget, larger than the "
                   "spread over the worlds", f"{lead_text(mine, best)}. By category: {by_category}", NOT_BETTER)
    return (f"{lead_text(mine, best)}, at {mine.tokens:.0f} tokens per task. The stand-in knows each task's key "
            "path and errs at a fixed rate per reply, whatever the reply's role: a real model's errors differ, so "
            "this standing says how your design tolerates these errors, not how it does with a given model.")
