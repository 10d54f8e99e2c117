"""Chapter 15's exercises: predict what each topology costs on a bridge question, build the cascade's confidence
signal, fool the report check with a number its own Observation holds, two questions."""
from __future__ import annotations

import math
import re

from ..evaluate import evaluate
from ..frontier import cheap, make_system, strong
from ..i18n import tr, tr_later
from ..modes import get_llm
from ..react import ReActAgent
from ..routing import MAX_STEPS, Cascade
from ..scripted import ScriptedLLM
from ..scripts import course_script
from ..scripts.teams import kind_of
from ..tasks import load_tasks
from ..team_guards import TeamGuard
from ..teams import AgentsAsTools, OrchestratorWorkers, Supervisor
from ..tools import default_executor
from . import Fail, call, cases, exercise, question, reference, shown
from .predictions import Prediction, prediction


def task(task_id: str):
    return next(t for t in load_tasks() if t.id == task_id)


# --- 15.predict: what each topology costs on a bridge question ------------------------------------

PREDICT_TASK = "bridge-babbage"
WHY = {
    "single ReAct": "Search[Ada Lovelace], then the Charles Babbage it names, then Finish: 3 calls, one after another",
    "supervisor": "three replies of the supervisor (researcher, researcher again for the name the first result gave, "
                  "FINISH) and two researcher runs of 2 calls each (the search, then Finish): 3 + 4 = 7",
    "agents as tools": "three turns of the manager (Research, Research, Finish) and two researcher runs of 2 calls: "
                       "3 + 4 = 7",
    "orchestrator-workers": "the second look-up needs the first one's result, so each round has one worker: two "
                            "rounds of 2 calls, three plans (the last one []) and the final answer: 4 + 4 = 8, and "
                            "nothing ran at the same time, so all 8 are in sequence",
}


def topology_costs() -> dict:
    """(LLM calls, calls in sequence) of each topology on PREDICT_TASK, read from the ledgers of the stand-in."""
    question_text, costs = task(PREDICT_TASK).question, {}
    react = ReActAgent(get_llm("fake"), default_executor(), max_steps=MAX_STEPS)
    react.run(question_text, verbose=False)
    costs["single ReAct"] = (len(react.llm.calls), len(react.llm.calls))
    for name, make in (("supervisor", Supervisor), ("agents as tools", AgentsAsTools),
                       ("orchestrator-workers", OrchestratorWorkers)):
        team = make(get_llm("fake"))
        team.run(question_text)
        costs[name] = (len(team.llm.calls), team.sequential_calls)
    return costs


prediction("15.predict", "What a bridge costs each topology",
           "Set `prediction` to {topology: (LLM calls, calls in sequence)} on 'bridge-babbage', before running "
           "anything.",
           Prediction(truth=topology_costs, labels=("LLM calls", "calls in sequence"), why=WHY,
                      case=lambda name: tr("{name} on {task}", name=name, task=repr(PREDICT_TASK)),
                      done=lambda truth: tr("A bridge question has nothing to run in parallel: the workers buy no "
                                            "time, and every team pays for its lead."),
                      pointer="count the calls of each lead and each member run as section 2's ledgers print them "
                              "for 'woz-torvalds'; then ask which look-ups of this question can run at the same "
                              "time, and which must wait for an earlier result."))


# --- 15.confidence: the cascade's escalation signal ------------------------------------------------

CONFIDENCE_RATE = 0.2
MAX_TRUSTED_WRONG, MIN_KEPT_RIGHT = 2, 1 / 3
H_RANGE = tr_later("return a number between 0 and 1: the cascade escalates when it is below the threshold, 1.0.")
H_NEVER = (tr_later("your signal trusts the cheap model's wrong answers: read the run, not only whether it finished. "
                    "Section 1's signals: is the answer's number in an Observation? did the run stop early? did every "
                    "reply parse?"))
H_ALWAYS = (tr_later("your signal escalates the cheap model's right answers too, so the cascade pays for both models: "
                     "trust a run that finished with an answer its own Observations hold (section 1)."))


def questions() -> list:
    """The task set's questions, in order: all the cascade gets (no gold answer is in reach while it runs)."""
    return [t.question for t in load_tasks()]


def cascade_with(score, seed: int) -> list:
    """The cascade with `score` run on every question of the task set, cheap model at CONFIDENCE_RATE, `seed`:
    one system per question, in order. Graded afterwards (graded), so no caller of `score` holds a task."""
    made = []
    for question_text in questions():
        system = Cascade([cheap(CONFIDENCE_RATE, seed), strong(seed)], 1.0, score=lambda agent, evidence: score(agent))
        system.run(question_text)
        made.append(system)
    return made


def strong_alone(seed: int) -> tuple:
    made = []

    def make_agent():
        made.append(make_system("strong alone", CONFIDENCE_RATE, seed=seed))
        return made[-1]

    report = evaluate(make_agent, load_tasks(), review=False, progress=False)
    return report.summary.success_rate, sum(system.cost for system in made)


@reference
def graded(made) -> tuple:
    """([(task id, answer) of each wrong cheap answer the cascade kept], right cheap answers kept, right ones in all,
    the cascade's success rate), graded by each task's checker after the runs: the check knows the gold, the
    signal does not."""
    trusted_wrong, kept_right, right, solved = [], 0, 0, 0
    for task_, system in zip(load_tasks(), made):
        first, kept = system.attempts[0], len(system.attempts) == 1
        solved += bool(task_.check(system.answer))
        if task_.check(first.answer):
            right += 1
            kept_right += kept
        elif kept:
            trusted_wrong.append((task_.id, first.answer))
    return trusted_wrong, kept_right, right, solved / len(made)


@exercise("15.confidence", "build", "The cascade's confidence",
          tr_later("Write `confidence(agent)`: a number from 0 to 1 read from a finished ReAct run (agent.trace, "
                   "agent.answer, agent.stop_reason) without the gold answer. In a cascade that escalates below 1, "
                   "with the cheap model at {rate} errors per reply on a seed drawn for each check, it may keep at "
                   "most {most} of the cheap model's wrong answers, and must keep at least a third of its right ones. "
                   "agentkit.routing's confidence, signals and grounded, a model call, and the task set (load_tasks) "
                   "are refused.", rate=f"{CONFIDENCE_RATE:.0%}", most=MAX_TRUSTED_WRONG),
          forbid=("agentkit.routing:confidence", "agentkit.routing:signals", "agentkit.routing:grounded",
                  "agentkit.tasks:load_tasks", "agentkit.protocol:LedgerLLM.think"), objects=False)
def _confidence(confidence):
    if not callable(confidence):
        raise Fail(tr("your answer"), tr("a function confidence(agent) -> a number from 0 to 1"), repr(confidence),
                   tr("define it with def."))
    probe = ReActAgent(get_llm("fake"), default_executor(), max_steps=MAX_STEPS)
    probe.run(task("woz-torvalds").question, verbose=False)
    value = call(confidence, probe, case=tr("a right run of 'woz-torvalds'"), hint=H_RANGE)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 or math.isnan(value):
        raise Fail(tr("a right run of 'woz-torvalds'"), tr("a number from 0 to 1"), repr(value), H_RANGE)
    seed = cases().randrange(2**31)
    made = cascade_with(lambda agent: call(confidence, agent, case=tr("a run of the cheap model"), hint=H_RANGE), seed)
    trusted_wrong, kept_right, right, success = graded(made)
    wrong = len(made) - right
    case = tr("the cascade over {tasks} tasks, the cheap model at {rate} errors per reply, seed {seed}: {right} of its "
              "answers right, {wrong} wrong", tasks=len(made), rate=f"{CONFIDENCE_RATE:.0%}", seed=seed, right=right,
              wrong=wrong)
    seen = tr("kept {wrong} wrong answers and {kept} of the {right} right ones", wrong=len(trusted_wrong),
              kept=kept_right, right=right)
    if len(trusted_wrong) > MAX_TRUSTED_WRONG:
        examples = "; ".join(f"{task_id}: {shown(answer, 40)}" for task_id, answer in trusted_wrong[:3])
        raise Fail(case, tr("at most {most} wrong answers kept", most=MAX_TRUSTED_WRONG),
                   tr("{seen} (e.g. {examples})", seen=seen, examples=examples), H_NEVER)
    if kept_right < MIN_KEPT_RIGHT * right:
        raise Fail(case, tr("at least a third of the right answers kept"), seen, H_ALWAYS)
    dollars = sum(system.cost for system in made)
    strong_success, strong_dollars = strong_alone(seed)
    return tr("From the ledgers, seed {seed}: your signal {seen}; the cascade got {success} right for {share} of the "
              "strong model's cost, which alone got {strong}. Your signal never saw a gold answer: it judged each run "
              "by what the run itself shows.", seed=seed, seen=seen, success=f"{success:.0%}",
              share=f"{dollars / strong_dollars:.0%}", strong=f"{strong_success:.0%}")


# --- 15.break: a wrong report the check accepts ---------------------------------------------------

BREAK_TASK = "woz-torvalds"
WOZNIAK = "Search for Steve Wozniak."


def reporting(report: str) -> ScriptedLLM:
    """The course's stand-in, except that a worker assigned WOZNIAK finishes with `report` after its search."""
    llm = ScriptedLLM(course_script())

    def worker(prompt: str) -> bool:
        return kind_of(prompt) == "member" and f"Your assignment: {WOZNIAK}" in prompt and "Observation:" in prompt

    llm.add(worker, f"Thought: I report.\nAction: Finish[{report}]", name="your report")
    return llm


@exercise("15.break", "break", "A wrong report the check accepts",
          "Set `report` to what the worker looking up Steve Wozniak reports, with a number of its Observation in the "
          "birth year's place, so that the unverified-report check accepts it and the team computes a wrong answer to "
          "'woz-torvalds'.", objects=False)
def _break(report):
    if not isinstance(report, str) or not report.strip():
        raise Fail(tr("your answer"), tr("a str: the worker's report"), repr(report),
                   tr("write the report as a string."))
    if not re.search(r"\d", report):
        raise Fail(tr("your report"), tr("a report with a number in it, one its Observation holds"), repr(report[:120]),
                   tr("a report without a number gives the calculation nothing, so the answer is 'Unknown': wrong, but "
                      "no check was fooled. The point is a number the check accepts because the worker saw it: put a "
                      "number of the same Observation where the birth year belongs."))
    guard = TeamGuard()
    team = OrchestratorWorkers(reporting(report), guard=guard)
    answer = team.run(task(BREAK_TASK).question)
    if guard.alarms:
        alarm = guard.alarms[0]
        raise Fail(tr("the team, with the guard"), tr("no alarm"), f"{alarm.check}: {alarm.detail}",
                   tr("the check compares the report's numbers with the worker's own Observations (section 3): a number "
                      "of the Observation that is not the birth year passes it."))
    if not re.search(r"\d", str(answer)):
        raise Fail(tr("the team's answer"), tr("a wrong number, computed from your report"), repr(answer),
                   tr("the calculation found no birth year in your report: put the number where the year stands "
                      "('born August 11, ...'), so that the team computes with it."))
    if task(BREAK_TASK).check(answer):
        raise Fail(tr("the team's answer"), tr("a wrong answer"), repr(answer),
                   tr("the calculation reads the number standing where the birth year stands ('born August 11, ...'): "
                      "put another number of the same Observation there."))
    return tr("No alarm, and the team answered {answer} (gold {gold}) in {calls} calls. The check proves that a number "
              "was seen, not that it is the right one: grounding is not correctness. A check that passes a wrong "
              "result is what MAST calls FM-3.3 Incorrect verification.", answer=repr(answer),
              gold=task(BREAK_TASK).gold, calls=len(team.llm.calls))


# --- concept questions --------------------------------------------------------------------------

question("15.q1", "In the shipped sweep, at 30% errors per reply, the cascade (threshold 1) gets about 94% right and "
                  "the router about 65%. Why?", {
    "a": ("The cascade sends every task on to the strong model, which errs at only 2% per reply.", False,
          "it does not: some tasks end on the cheap model with every signal holding; section 1's table prints the "
          "share that reached the strong model."),
    "b": ("The router's classifier labels many multi-step questions as simple, so the strong model never sees them.",
          False,
          "the stand-in's classifier is perfect here: it knows each key path. The loss is the cheap model's errors on "
          "the questions labelled simple."),
    "c": ("The cascade judges each cheap answer and sends the doubtful ones up; the router decides from the question "
          "alone.", True,
          "the router's label is right (the stand-in knows every key path), but a simple question does not make a "
          "noisy model right; only the cascade sees the answer it would pass on."),
    "d": ("The cascade runs its cheap model at a lower error rate than the router's, so fewer of its answers need a "
          "second look.", False,
          "both systems use the same cheap model at the same rate and seed; they differ only in when they trust it."),
}, hint="section 1, the frontier table and the paragraph after it.")

question("15.q2", "The ReAct retrospective this course follows ends by predicting that a large model will plan and "
                  "judge while small models classify, summarise and execute. What does this chapter's frontier add?", {
    "a": ("Nothing that settles it: the claim is a prediction, and our figures measure structures on a stand-in whose "
          "error rates we chose.", True,
          "the frontier shows how a cascade and a router trade cost for success under an instrument; a real pair of "
          "models, with its own errors and prices, is what would test the prediction."),
    "b": ("It proves the prediction: the cascade, with the small model doing most of the work, beats the strong model "
          "alone on success and on cost.", False,
          "on the stand-in, with made-up prices and error rates; that is a property of the structure under our "
          "assumptions, not evidence about real models."),
    "c": ("It refutes it: every team of section 2 cost more per solved task than the strong model alone, so small "
          "models should not execute.", False,
          "the teams here have a strong lead re-reading every report; other designs, tasks and models may differ, "
          "and the prediction was about more than these topologies."),
    "d": ("Nothing new: the author measured the split on a batch of tasks.", False,
          "the retrospective states it as what the author expects, with no measurement behind it."),
}, hint="the introduction, where the retrospective's last section is retold.")
