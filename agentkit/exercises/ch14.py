"""The capstone's check: your agent clears the bar (the best baseline within budget, behind the team's gate,
measured over many worlds) by more than the spread of your own worlds asks, on worlds drawn in the world's process
when the check runs, through the model it is given (the rules are agentkit.capstone's)."""
from __future__ import annotations

from .. import capstone
from ..capstone import BUDGET, CHECK_WORLDS, OverBudget, Refused, bar, clears, lead_text, standing
from ..capstone_client import WorldGone, WorldLLM, WorldMemory, WorldProcess, world_tools
from ..capstone_grader import SessionError
from ..capstone_world import CATEGORIES, TEAM_DOMAIN
from ..i18n import tr, tr_later
from . import Fail, call, exercise, learner_code

# Your code's time over the whole check: every build and every run on every task of every world, the model's
# calls included (they happen inside your run, through the pipe). Measured on 2 cores shared with eight other
# jobs, the worked solution's code took 2.1-2.8 s, and an agent that spends the per-task token cap on every task
# 4.9 s (the check stops it once it has spent every task's budget); a loop that never calls the model is stopped
# here, since no token count can see it.
TIME_LIMIT_S = 60.0

TASK = tr_later("Write `build(llm, tools, memory)`: it returns your agent, built on the model `llm` it is given, the "
                "`tools` (one of them, SendMessage, sends messages: only addresses at {domain} may get one) and the "
                "team's long-term `memory`. Over {worlds} worlds drawn when the check runs, within {budget} tokens per "
                "task (prompt plus completion, every call to `llm`), its mean success must clear the bar (the best "
                "baseline within the budget, behind a gate that sends only to the team) by more than the spread of "
                "your worlds asks. Every answer must be one the model gave. You may use any of the course's pieces. "
                "Your code has {limit} s for the whole check, every build and run (the model's calls included).",
                domain=TEAM_DOMAIN, worlds=CHECK_WORLDS, budget=BUDGET, limit=f"{TIME_LIMIT_S:g}")

RULE_HINTS = {
    "outside": tr_later("which of your tools change the world, and who decides whether a call to one of them runs? "
                        "Chapter 12 asked that question of every side effect."),
    "built itself": tr_later("build every agent on the `llm` that build() was given: the budget and the errors are that "
                             "model's, and a model of your own (even a copy) measures something else."),
    "without calling": tr_later("an answer must come from the model: run an agent on `llm`; a table, a copied printout "
                                "or your own code answers nothing here."),
    "no reply": tr_later("return the answer your model gave on this very question. The worlds are drawn when the check "
                         "runs, so answers written down earlier (a table, a printout) belong to other worlds."),
}
OVER_BUDGET = tr_later("the dear paradigms re-send earlier results (chapter 09's cost tables): which of your calls "
                       "could a cheaper structure make, and on which tasks is the dearer one worth its price?")
NOT_BETTER = tr_later("read section 1's table by category beside your own failure table (section 2): which categories "
                      "fail for every design, and did a chapter build a piece for them? Then chapter 09's curves: which "
                      "structure loses least as replies go wrong?")


def _rule_hint(message: str) -> str:
    return next((hint for key, hint in RULE_HINTS.items() if key in message), tr("see the rules in the chapter."))


@exercise("14.capstone", "build", "An agent for worlds it has never seen", TASK, time_limit=TIME_LIMIT_S)
def _capstone(build):
    if not callable(build):
        raise Fail(tr("your answer"), tr("a function build(llm, tools, memory) -> agent"), repr(build), tr("define it with def."))

    def probe(build):  # once, before the world's process starts: a stub or a wrong shape costs no process
        idle = WorldProcess()  # started only if the build calls the model, which then refuses (no task is open)
        try:
            agent = call(build, WorldLLM(idle), world_tools(idle), WorldMemory(idle), case=tr("building one agent"),
                         hint=tr("build(llm, tools, memory) takes the model, the tools and the memory, and returns an "
                                 "agent; the model serves calls only while a task runs, not while build() runs."))
            with learner_code(tr("the agent build(...) returned")):
                runs = callable(getattr(agent, "run", None))
        finally:
            idle.close()
        if not runs:
            raise Fail(tr("the agent build(...) returned"), tr("an object with .run(question)"), type(agent).__name__,
                       tr("return the agent itself (for example ReActAgent(llm, tools)), not its answer."))

    worlds = capstone.check_worlds()
    try:
        mine = standing("your agent", build, worlds["seeds"], strict=True, clock=learner_code, first=probe,
                        per_template=worlds["per_template"])
    except Refused as refused:
        raise Fail(tr("the rules, which no score makes up for"),
                   tr("every call through the model given, every answer the model's, no message outside {domain}",
                      domain=TEAM_DOMAIN),
                   tr("refused: {said}", said=refused), _rule_hint(str(refused))) from None
    except OverBudget as over:
        raise Fail(tr("the token budget"), tr("at most {budget} tokens per task on average", budget=BUDGET),
                   tr("{tokens}, counted by the world's process from every call it served", tokens=over),
                   OVER_BUDGET) from None
    except (WorldGone, SessionError) as gone:
        raise Fail(tr("the world's process"), tr("it serves the check's worlds until the check ends"), str(gone),
                   tr("your code ended the world's process or its standing: leave them to the check.")) from None
    if not mine.within_budget:
        raise Fail(tr("the token budget"), tr("at most {budget} tokens per task on average", budget=BUDGET),
                   tr("{tokens}, counted by the world's process from every call it served", tokens=f"{mine.tokens:.0f}"),
                   OVER_BUDGET)
    the_bar = bar()
    if not clears(mine.per_world, the_bar.success):
        by_category = ", ".join(f"{c} {mine.by_category[c]:.0%}" for c in CATEGORIES)
        raise Fail(tr("the drawn worlds"), tr("your mean above the bar by more than the margin your spread asks"),
                   tr("{lead}. Yours by category: {categories}", lead=lead_text(mine, the_bar),
                      categories=by_category), NOT_BETTER)
    return tr("{lead}; at {tokens} tokens per task. The stand-in knows each task's key path and errs at a fixed rate "
              "per reply, whatever the reply's role: a real model's errors differ, so this standing says how your "
              "design tolerates these errors, not how it does with a given model.", lead=lead_text(mine, the_bar),
              tokens=f"{mine.tokens:.0f}")
