"""Chapter 04's exercises: a prediction read from the ledgers, a plan validator to build, failures to inject,
two questions."""
from __future__ import annotations

from ..i18n import tr, tr_later
from ..modes import get_llm
from ..plan import (MAX_PLAN_STEPS, PLANNER_PROMPT, PLANNER_ROLE, REPLAN_HEADER, Executor,
                    PlanAndExecuteAgent, StepResult, inject_failure, parse_plan)
from ..scripts.plan import APPLES_QUESTION, YEARS_QUESTION, YEARS_TOOL_CALLS
from ..tools import default_executor
from . import Fail, NotDone, call, cases, exercise, question, reference, shown
from .predictions import Prediction, prediction

# --- 04.predict: what an injected failure costs, from the ledgers ------------------------------

PREDICT_SETTINGS = {  # name -> (failing step, failures (None: always), agent options)
    "step 2 fails once, max_attempts=1": (2, 1, dict(max_attempts=1)),
    "step 2 always fails, max_attempts=3": (2, None, dict(max_attempts=3)),
    "step 3 always fails, max_replans=0": (3, None, dict(max_replans=0)),
}


def injected(failing_step: int, failures, **options) -> PlanAndExecuteAgent:
    """Chapter 04's years task on the stand-in, with the tool of `failing_step` failing `failures` times."""
    tools = default_executor()
    if failing_step:
        tool, text = YEARS_TOOL_CALLS[failing_step - 1]
        inject_failure(tools, tool, text, failures)
    agent = PlanAndExecuteAgent(get_llm("fake"), tools, **options)
    agent.run(YEARS_QUESTION, verbose=False)
    return agent


def failure_costs() -> dict:
    """(LLM calls, tool calls) of each setting, counted from the ledgers."""
    costs = {}
    for name, (step, failures, options) in PREDICT_SETTINGS.items():
        agent = injected(step, failures, **options)
        costs[name] = (len(agent.llm.calls), len(agent.tools.log))
    return costs


WHY = {
    "step 2 fails once, max_attempts=1":
        "one try in total means no retry: the single failure goes straight to the planner. "
        "1 plan + 2 per step try (an action, then a finish) x 4 tries + 1 replan = 10 LLM calls, one tool call per try",
    "step 2 always fails, max_attempts=3":
        "every try of step 2 fails, three tries in total, then one replan routes around the broken search: "
        "1 + 2 + 3 x 2 + 1 + 2 + 2 = 14 LLM calls; 1 + 3 + 1 + 1 = 6 tool calls",
    "step 3 always fails, max_replans=0":
        "two tries of step 3 fail and the replan budget is 0, so no planner call follows and the run stops: "
        "1 + 2 + 2 + 2 x 2 = 9 LLM calls; 1 + 1 + 2 = 4 tool calls",
}


prediction("04.predict", "What an injected failure costs",
           "Set `prediction` to {setting: (LLM calls, tool calls)} for the three settings, before running anything.",
           Prediction(truth=failure_costs, labels=("LLM calls", "tool calls"), why=WHY,
                      pointer="count per step try, not per step: what one try costs is in section 6's run without "
                              "failures; then count the tries, the replans, and what happens when no replan is left."))


# --- 04.validate: a plan validator ---------------------------------------------------------------

PLAN_CASES = [  # (planner reply; what the case is; the hint): plan_truth decides each, after your answer
    ('Sure! Here is the plan:\n```json\n["count the apples", "subtract 20", "add 6"]\n```\nGood luck.',
     tr_later("a list in a code fence, with prose around it"),
     tr_later("look inside a ```json fence first, then for the first '[' that starts a JSON list (section 1's "
              "tiny_parse_plan).")),
    ('[{"step": 1, "task": "look up the year"}, {"step": 2, "task": "subtract"}]',
     tr_later("a list of {\"step\", \"task\"} objects"),
     tr_later("an object step counts by its \"task\": return the task texts, not the dicts (section 3's table).")),
    ('Plan [draft 2]:\n["find the start", "add the rest"]', tr_later("a bracket in the prose before the list"),
     tr_later("not every '[' starts the list: try each '[' until one decodes as a JSON list "
              "(json.JSONDecoder().raw_decode(text, index)); section 1's parser tries the first one only.")),
    (str(["one step"] * MAX_PLAN_STEPS).replace("'", '"'),
     tr_later("exactly {most} steps, the most a plan may have", most=MAX_PLAN_STEPS),
     tr_later("{most} steps is still a valid plan: the limit is 1 to {most}, both included.", most=MAX_PLAN_STEPS)),
    ('["answer from what you know"]', tr_later("one step, the smallest plan there is"),
     tr_later("one step is a plan: the limit is 1 to {most}, both included.", most=MAX_PLAN_STEPS)),
    ("[]", tr_later("an empty plan"),
     tr_later("a plan of 0 steps is no plan: raise ValueError (section 3, 'Validate the plan').")),
    (str([f"step {i}" for i in range(1, 3 * MAX_PLAN_STEPS + 1)]).replace("'", '"'), tr_later("a plan of 30 steps"),
     tr_later("a plan needs 1 to {most} steps; a longer one is a runaway bill (section 3, 'Validate the plan').",
              most=MAX_PLAN_STEPS)),
    (str([f"step {i}" for i in range(1, MAX_PLAN_STEPS + 2)]).replace("'", '"'),
     tr_later("{over} steps, one over", over=MAX_PLAN_STEPS + 1),
     tr_later("'1 to {most} steps' includes {most} and nothing above it: {over} steps are refused.",
              most=MAX_PLAN_STEPS, over=MAX_PLAN_STEPS + 1)),
    ("I would first look up both years and then subtract them.", tr_later("prose with no list at all"),
     tr_later("no list in the reply means no plan: raise ValueError, not another exception (section 3).")),
    ('["look up the year", 42, "subtract"]', tr_later("a step that is a number, not a task"),
     tr_later("every step must be a non-empty string or a {\"step\", \"task\"} object; anything else is no plan "
              "(section 3).")),
    ('["look up the year", "   ", "subtract"]', tr_later("a step that is only spaces"),
     tr_later("every step must be a non-empty string: strip it, and reject what is left empty (section 3).")),
]


@reference
def plan_truth(raw: str):
    """The steps of a planner reply, or None when it holds no valid plan (the package's parse_plan decides)."""
    try:
        return parse_plan(raw)
    except ValueError:
        return None


H_UNSEEN = tr_later("a reply drawn for this check: find the JSON list (a fence first, then each '[' in turn), accept 1 "
                    "to {most} steps, each a non-empty string or a {{\"step\", \"task\"}} object, stripped; anything "
                    "else is a ValueError that quotes the reply.", most=MAX_PLAN_STEPS)
TASKS = ("look up the year", "subtract the two years", "count the apples", "add 6", "find the start date",
         "multiply by 365", "search for Ada Lovelace", "write the answer", "compare the two results")


def unseen_plan() -> str:
    """A planner reply drawn for this check: valid or not, in one of four shapes."""
    import json

    rng = cases()
    count = rng.choice([1, 2, 3, 5, MAX_PLAN_STEPS, MAX_PLAN_STEPS + 1, 0])
    steps = [rng.choice(TASKS) for _ in range(count)]
    items = ([{"step": n, "task": t} for n, t in enumerate(steps, 1)] if rng.random() < 0.3 else
             [rng.choice(["", " "]) + t + rng.choice(["", "  "]) for t in steps])
    valid = 1 <= count <= MAX_PLAN_STEPS
    if valid and rng.random() < 0.25:
        items[rng.randrange(count)] = rng.choice([42, "   ", None, ["nested"]])
        valid = False
    body = json.dumps(items)
    shape = rng.choice(["bare", "fence", "prose", "bracket"])
    raw = {"bare": body, "fence": f"Here is the plan:\n```json\n{body}\n```\nGood luck.",
           "prose": f"My plan, in {count} steps:\n{body}", "bracket": f"Plan [v{rng.randint(2, 9)}]:\n{body}"}[shape]
    return raw


def _judged(parse, raw: str, what: str, hint: str) -> None:
    """Run the learner's parser on one reply, then compare with plan_truth: the steps, or a ValueError that
    quotes the reply."""
    try:
        got = call(parse, raw, case=what, hint=hint)
        raised = None
    except Fail as f:
        if f.got.startswith("ValueError"):
            got, raised = None, f.got
        elif plan_truth(raw) is None:
            raise Fail(f.case, tr("ValueError (no valid plan)"), f.got, hint) from None
        else:
            raise
    steps = plan_truth(raw)
    if steps is not None and (raised or got != steps):
        raise Fail(tr("{what}: {reply}", what=tr(what), reply=repr(raw)), repr(steps), raised or shown(got), hint)
    if steps is None and raised is None:
        raise Fail(tr("{what}: {reply}", what=tr(what), reply=repr(raw[:60])), tr("ValueError (no valid plan)"),
                   tr("returned {value}", value=shown(got, 100)), hint)
    if steps is None and raw[:20] not in raised and repr(raw[:20])[1:-1] not in raised:
        raise Fail(tr("{what}: {reply}", what=tr(what), reply=repr(raw[:60])), tr("a ValueError that quotes the start of the reply"), raised[:120],
                   tr("quote the raw reply in the message, so whoever reads the error sees what the model actually "
                      "wrote (section 3)."))


@exercise("04.validate", "build", "A plan validator",
          "Write `my_parse_plan(raw)`: the list of step texts, or a ValueError that quotes the reply; agentkit's "
          "parse_plan is refused.", forbid=("agentkit.plan:parse_plan",), objects=False)
def _validate(parse):
    if not callable(parse):
        raise Fail(tr("your answer"), tr("a function my_parse_plan(raw) -> list of str"), repr(parse),
                   tr("define it with def."))
    for raw, what, hint in PLAN_CASES:
        _judged(parse, raw, what, hint)
    for raw in [unseen_plan() for _ in range(8)]:
        _judged(parse, raw, tr("a reply drawn for this check"), H_UNSEEN)
    # The live run: Plan-and-Solve on the apples question, with your parser between planner and executor.
    llm = get_llm("fake")
    raw = llm.think(PLANNER_PROMPT.format(role=PLANNER_ROLE, max_steps=MAX_PLAN_STEPS, tools="",
                                          question=APPLES_QUESTION))
    plan = call(parse, raw, case=tr("the stand-in planner's reply to the apples question"), hint=PLAN_CASES[0][2])
    if plan != plan_truth(raw):
        raise Fail(tr("the stand-in planner's reply to the apples question"), repr(plan_truth(raw)), f"{plan!r:.120}",
                   PLAN_CASES[0][2])
    executor, done = Executor(llm), []
    for index, step in enumerate(plan):
        done.append(StepResult(step, executor.execute(APPLES_QUESTION, plan, done, index)))
    return tr("With your parser, the stand-in's plan has {steps} steps, so Plan-and-Solve costs 1 + {steps} = {calls} "
              "calls, and the ledger holds {ledger}; the answer: {answer}. Every bad plan was refused before a single "
              "executor call was spent on it.", steps=len(plan), calls=1 + len(plan), ledger=len(llm.calls),
              answer=repr(done[-1].result))


# --- 04.replan: inject a failure that forces two replans, and still get the answer ------------------

REPLAN_HINTS = {
    "tool": tr_later("the injection wraps a registered tool: the years task uses Search and Calculate (section 5)."),
    "failures": tr_later("failures is a whole number of failing calls, or None for every call."),
    "never": tr_later("the failure never fired: the text must appear in a tool's INPUT (what the Action sent, e.g. "
                      "Search[Alan Turing]), not in the step's wording. Section 6 prints every tool call with its "
                      "input."),
    "retried": tr_later("a retry absorbed the failure: with max_attempts=2 a step gets two tries in total, so a tool "
                        "that fails only once is a transient failure, and no replan follows (section 6)."),
    "routed": tr_later("the new plan routed around your failure: its step sent a tool input your text does not catch. "
                       "Compare the plans in section 6, and choose a text that is in the old query and in the new one."),
    "ran out": tr_later("your failures ran out during the second plan: each plan gives the failing step max_attempts=2 "
                        "tries, so count the tries the first two plans take."),
    "budget": tr_later("the failure outlasted the replan budget (max_replans=2) and the run stopped without an answer: "
                       "let the tool fail a limited number of times, so that the third plan gets through."),
}


@exercise("04.replan", "break", "Two replans, then the answer",
          "Set `injection` to {\"tool\": ..., \"text\": ..., \"failures\": ...}: two replans, and the answer still 97.", objects=False)
def _replan(injection):
    if not isinstance(injection, dict):
        raise Fail(tr("your answer"), tr('a dict {"tool": ..., "text": ..., "failures": ...}'),
                   type(injection).__name__,
                   tr("copy the dict from the exercise cell and fill it in."))
    if any(injection.get(key, ...) is ... for key in ("tool", "text", "failures")):
        raise NotDone()
    tool, text, failures = injection["tool"], injection["text"], injection["failures"]
    if tool not in ("Search", "Calculate"):
        raise Fail(tr("the tool"), tr("Search or Calculate"), repr(tool), REPLAN_HINTS["tool"])
    if not isinstance(text, str) or not text:
        raise Fail(tr("the text"), tr("a non-empty str"), repr(text),
                   tr("the text that a tool input must contain to fail."))
    if failures is not None and (not isinstance(failures, int) or isinstance(failures, bool) or failures < 1):
        raise Fail("failures", tr("a whole number of at least 1, or None"), repr(failures), REPLAN_HINTS["failures"])
    tools = default_executor()
    inject_failure(tools, tool, text, failures)
    agent = PlanAndExecuteAgent(get_llm("fake"), tools)
    agent.run(YEARS_QUESTION, verbose=False)
    failed = [c for c in agent.tools.log if not c.ok]
    case = (tr("{tool} inputs containing {text}, failing always", tool=tool, text=repr(text)) if failures is None else
            tr("{tool} inputs containing {text}, failing {failures} time(s)", tool=tool, text=repr(text),
               failures=failures))
    shown = tr("{replans} replan(s), {failed} failed tool call(s), stop: {stop}; tool calls: {calls}",
               replans=agent.replans, failed=len(failed), stop=agent.stop_reason,
               calls=", ".join(f"{c.tool}[{c.argument}]" + ("" if c.ok else tr(" (failed)")) for c in agent.tools.log))
    expected = tr("two replans, then the answer 97")
    if not failed:
        raise Fail(case, expected, shown, REPLAN_HINTS["never"])
    if agent.replans == 0:
        raise Fail(case, expected, shown, REPLAN_HINTS["retried"])
    if agent.stop_reason != "finished":
        raise Fail(case, expected, shown, REPLAN_HINTS["budget"])
    if agent.replans == 1:
        ran_out = failures is not None and len(failed) >= failures
        raise Fail(case, expected, shown, REPLAN_HINTS["ran out" if ran_out else "routed"])
    if "97" not in agent.answer:  # no setting found gives a wrong answer; said plainly if one ever does
        raise Fail(case, expected, tr("{shown}; answer {answer}", shown=shown, answer=repr(agent.answer[:80])),
                   REPLAN_HINTS["routed"])
    reasons = [c.prompt.split("Why it failed: ", 1)[-1].strip() for c in agent.llm.calls if REPLAN_HEADER in c.prompt]
    healthy = len(injected(0, None).llm.calls)
    always = default_executor()
    inject_failure(always, tool, text, None)
    endless = PlanAndExecuteAgent(get_llm("fake"), always)
    endless.run(YEARS_QUESTION, verbose=False)
    return tr("The tool log shows {failed} failed calls, and the ledger {calls} LLM calls against {healthy} without a "
              "failure: {replans} replan calls, each told why ({why}), and the run still finished: {answer}. With the "
              "same text failing every time, the run stops [{stop}] after {endless} calls: {last}...",
              failed=len(failed), calls=len(agent.llm.calls), healthy=healthy, replans=len(reasons),
              why=repr(reasons[-1][:90]), answer=repr(agent.answer), stop=endless.stop_reason,
              endless=len(endless.llm.calls), last=repr(endless.answer[:70]))


# --- concept questions ----------------------------------------------------------------------------

question("04.q1", "Delete the line that carries earlier results into the executor's prompt. What happens?", {
    "a": ("The executor raises a KeyError: the prompt template needs the results.", False,
          "the template only needs a context string, and it still gets one; nothing in the code notices the loss."),
    "b": ("The same number of calls, no error, and a wrong answer.", True,
          "each step is still one call and every reply is a fluent sentence; only the numbers are wrong, so a "
          "test has to read the prompts in the ledger to notice (section 2)."),
    "c": ("The planner notices the missing results and replans.", False,
          "Plan-and-Solve never calls the planner again; and no step fails, it only answers without the running count."),
    "d": ("More calls: the executor asks again for the results it did not get.", False,
          "the executor is one call per step whatever its prompt holds: the ledger shows 4 calls both ways."),
}, hint="section 2, 'Delete the carry-over line: nothing crashes'.")

question("04.q2", "On the years task, Plan-and-Execute spends more tokens than ReAct (section 7). Why?", {
    "a": ("JSON plans cost more tokens than plain text.", False,
          "the plan is written once, in one call; what adds up is what every step prompt re-sends."),
    "b": ("The plan re-sends every earlier Observation in full, so the executor's prompts grow the way ReAct's do, "
          "and the plan itself is added on top of them.", False,
          "it re-sends the earlier results, one short sentence each; ReAct is the one that re-sends every "
          "Observation."),
    "c": ("A replan happened in that run.", False,
          "section 7 compares the run without failures: replans=0."),
    "d": ("Every step starts its own ReAct, re-sending the role prompt, the tools, the question and the plan, and a "
          "step takes two calls.", True,
          "that fixed price per step is larger than the history it saves on a three-step task; long Observations and "
          "many steps would turn it around."),
}, hint="section 7, the last column of the table and the chart after it.")
