"""Chapter 09's exercises: predict four paradigms' bills from the ledgers, build a ReWOO plan validator, break ReWOO
with a blind plan, turn the stand-in's errors up until two paradigms swap places, two questions."""
from __future__ import annotations

import re

from ..i18n import tr, tr_later
from ..modes import get_llm
from ..evaluate import evaluate
from ..instruments import KNOBS, NoisyTaskLLM
from ..paradigms import PARADIGMS
from ..rewoo import PLANNER_MARKER, PlanError, ReWOOAgent, parse_rewoo_plan
from ..scripted import ScriptedLLM
from ..scripts import course_script
from ..tasks import load_tasks
from ..tools import default_executor
from . import Fail, call, cases, exercise, question, reference, words
from .predictions import Prediction, prediction

# --- 09.predict: what four paradigms cost on one task, from the ledgers ----------------------

PREDICT_TASK = "pioneers-mean"
PREDICT_PARADIGMS = ["ReAct", "ReWOO", "Plan-and-Execute", "Hybrid"]

WHY = {
    "ReAct": "one LLM call per step; the key path is 5 tool calls (four look-ups, then the mean), and max_steps=5 "
             "ends the run before the turn that would Finish",
    "ReWOO": "a planner call and a solver call, whatever the plan: 2 LLM calls; the plan holds all 5 tool calls",
    "Plan-and-Execute": "a planner call, then a small ReAct of two calls (the action, then Finish) for each of the 5 "
                        "steps: 1 + 5 x 2 = 11",
    "Hybrid": "a planner call; sub-goal 1 is a ReAct of 5 calls (four look-ups, then Finish) plus the runtime's drift "
              "checkpoint after its third tool step; sub-goal 2 is 2 calls (Calculate, then Finish): 1 + 5 + 1 + 2 = 9",
}


def task(task_id: str):
    return next(t for t in load_tasks() if t.id == task_id)


def paradigm_costs() -> dict:
    """(LLM calls, tool calls) of each paradigm on PREDICT_TASK, counted from the ledgers."""
    question_text, costs = task(PREDICT_TASK).question, {}
    for name in PREDICT_PARADIGMS:
        agent = PARADIGMS[name](llm=get_llm("fake"))  # the stand-in, whatever AP_MODE says
        agent.run(question_text, verbose=False)
        costs[name] = (len(agent.llm.calls), len(agent.tools.log))
    return costs


prediction("09.predict", "What four paradigms cost",
           "Set `prediction` to {paradigm: (LLM calls, tool calls)} on 'pioneers-mean', before running anything.",
           Prediction(truth=paradigm_costs, labels=("LLM calls", "tool calls"), why=WHY,
                      case=lambda name: tr("{name} on {task}", name=name, task=repr(PREDICT_TASK)),
                      done=lambda truth: tr("ReWOO is the cheapest and, on this task, wrong: its plan could not read "
                                            "the four years it needed."),
                      pointer="count the key path's tool calls first, then each paradigm's model calls around them: "
                              "section 4 runs ReAct and the hybrid on 'founders-sum', whose key path has the same "
                              "shape, and section 1 says what a ReWOO run costs."))


# --- 09.plan: a ReWOO plan validator --------------------------------------------------------

H_VALID = (tr_later("a plan whose every #E reference points to an EARLIER line is valid: return None. Section 1's plan "
                    "refers to #E1 in #E2's input."))
H_PLAN_LINE = (tr_later("only the inputs of evidence lines (#Ek = Tool[input]) refer to evidence; the words of a Plan: "
                        "line are the planner's notes, not references."))
H_FORWARD = (tr_later("a step can use only results of lines ABOVE it: check each reference against the variables "
                      "defined so far, line by line (section 2, 'A reference to evidence that does not exist yet')."))
H_SELF = tr_later("a line cannot use its own result: its variable is defined only after its tool has run.")
H_TWICE = tr_later("a variable defined twice makes every later reference ambiguous: refuse it (section 2's 'defined "
                   "twice').")
H_EMPTY = tr_later("a reply with no #E line at all is no plan: refuse it, or ReWOO would run nothing and answer blind.")
H_E10 = (tr_later("compare whole variable names: #E10 is not #E1. A substring test (or str.replace) confuses them; a "
                  "regex such as #E(\\d+) reads the whole number."))
H_NAME = tr_later("say which variable is at fault, so the planner (or you) can fix the plan: put it in the message.")

PLANS = [  # (plan text, what, hint): plan_fault decides, after your answer
    ("Plan: add the two numbers.\n#E1 = Calculate[12 + 30]\nPlan: square the sum.\n#E2 = Calculate[#E1 ** 2]",
     tr_later("a valid plan: #E2 uses #E1"), H_VALID),
    ("#E1 = Search[Ada Lovelace]\n#E2 = Search[Charles Babbage]\n#E3 = Calculate[1815 - 1791]",
     tr_later("a valid plan with no references"), H_VALID),
    ("Plan: the year, which becomes #E2 below.\n#E1 = Search[Grace Hopper]\n#E2 = Calculate[2024 - 1906]",
     tr_later("a valid plan whose Plan line mentions #E2 before it is defined"), H_PLAN_LINE),
    ("#E1 = Calculate[#E2 * 2]\n#E2 = Calculate[3 + 4]", tr_later("a forward reference"), H_FORWARD),
    ("#E1 = Search[Alan Turing]\n#E2 = Search[#E3]", tr_later("a reference to evidence no line defines"), H_FORWARD),
    ("#E1 = Search[#E1]", tr_later("a line that uses its own result"), H_SELF),
    ("#E1 = Search[Ada Lovelace]\n#E1 = Search[Alan Turing]", tr_later("a variable defined twice"), H_TWICE),
    ("I would search for Ada Lovelace first, then compute.", tr_later("a reply with no evidence line"), H_EMPTY),
    ("#E1 = Search[Grace Hopper]\n#E2 = Calculate[#E10 + 1]", tr_later("#E10 where only #E1 exists"), H_E10),
]


_EVIDENCE = re.compile(r"#E(\d+)\s*=\s*\w+\s*\[(.*)\]")


@reference
def plan_fault(text: str):
    """None for a plan that can run; the #E variable at fault; "" when the reply holds no evidence line."""
    defined = []
    for line in text.splitlines():
        match = _EVIDENCE.search(line)
        if match is None:
            continue
        variable, tool_input = f"#E{match.group(1)}", match.group(2)
        if variable in defined:
            return variable
        for number in re.findall(r"#E(\d+)", tool_input):
            if f"#E{number}" not in defined:
                return f"#E{number}"
        defined.append(variable)
    return None if defined else ""


H_UNSEEN = (tr_later("a plan drawn for this check: read each evidence line (#Ek = Tool[input]) in order; every #E "
                     "reference in an input must name a variable defined on an EARLIER line (whole numbers: #E1 is not "
                     "#E10), none defined twice; the message names the variable at fault."))


def unseen_plan() -> str:
    """A plan drawn for this check: up to 10 lines, references up to #E19, with Plan: notes that mention any
    variable, and at most one fault."""
    rng = cases()
    count = rng.randint(2, 10)  # parse_rewoo_plan refuses more than 10 steps: not this exercise's rule
    fault_kind = rng.choice([None, None, "forward", "missing", "self", "twice"])
    fault_line = rng.randint(1, count)
    lines, fault = [], None
    for k in range(1, count + 1):
        if rng.random() < 0.3:
            lines.append(f"Plan: step {k}, which may use #E{rng.randint(1, count + 3)}.")
        refs = [f"#E{j}" for j in rng.sample(range(1, k), min(k - 1, rng.randint(0, 2)))]
        variable = f"#E{k}"
        if k == fault_line and fault_kind == "forward" and k < count:
            refs.append(f"#E{rng.randint(k + 1, count)}")
            fault = refs[-1]
        elif k == fault_line and fault_kind == "missing":
            refs.append(f"#E{rng.randint(max(10, count + 1), 19)}")  # #E1x where #E1 exists
            fault = refs[-1]
        elif k == fault_line and fault_kind == "self":
            refs.append(variable)
            fault = variable
        elif k == fault_line and fault_kind == "twice" and k > 1:
            variable = f"#E{rng.randint(1, k - 1)}"
            fault = variable
        tool, text = rng.choice([("Search", "Ada Lovelace"), ("Calculate", "12 + 30"), ("Search", "Grace Hopper")])
        lines.append(f"{variable} = {tool}[{' '.join(refs) if refs and tool == 'Calculate' else text}"
                     f"{' ' + ' '.join(refs) if refs and tool != 'Calculate' else ''}]".replace("[ ", "["))
        if variable != f"#E{k}":
            break  # a variable defined twice ends the plan: what follows would be ambiguous anyway
    return "\n".join(lines)


@exercise("09.plan", "build", "A ReWOO plan validator",
          "Write `check_plan(text)`: None for a plan that can run, else a message naming the #E variable at fault; "
          "agentkit.rewoo.parse_rewoo_plan is refused.", forbid=("agentkit.rewoo:parse_rewoo_plan",), objects=False)
def _validate(check_plan):
    if not callable(check_plan):
        raise Fail(tr("your answer"), tr("a function check_plan(text) -> None or a message"), repr(check_plan),
                   tr("define it with def."))
    drawn = [(unseen_plan(), tr_later("a plan drawn for this check"), H_UNSEEN) for _ in range(8)]
    for text, what, hint in PLANS + drawn:
        said = call(check_plan, text, case=what, hint=hint)
        fault = plan_fault(text)
        case = tr("{what}: {plan}", what=tr(what), plan=text.replace("\n", " | "))
        if fault is None and said is not None:
            raise Fail(case, tr("None (the plan can run)"), repr(said), hint)
        if fault is not None:
            if not isinstance(said, str) or not said.strip():
                raise Fail(case, tr("a message saying what is wrong"), repr(said), tr(
                    "{hint} (None means 'can run': if your function returned nothing, did it forget `return`?)",
                    hint=tr(hint)) if said is None else hint)
            if fault and not re.search(re.escape(fault) + r"(?!\d)", said):
                raise Fail(case, tr("a message naming {variable}", variable=fault), repr(said), H_NAME)
    # The stand-in's own plans for the chapter's tasks: all valid, so your check must let every one run.
    planner = get_llm("fake")
    tasks = [t for t in load_tasks() if t.category != "impossible"][:12]
    for t in tasks:
        agent = ReWOOAgent(planner, default_executor())
        plan = planner.think(agent.planner_prompt(t.question))
        said = call(check_plan, plan, case=tr("the stand-in's plan for {task}", task=repr(t.id)), hint=H_VALID)
        if said is not None:
            raise Fail(tr("the stand-in's plan for {task}: {plan}", task=repr(t.id), plan=repr(plan)),
                       tr("None (parse_rewoo_plan accepts it)"), repr(said), H_VALID)
    return tr("Your validator agrees with agentkit.rewoo.parse_rewoo_plan on all {plans} plans ({set} of set shapes, "
              "{drawn} drawn for this check) and lets the stand-in's own plans for {tasks} tasks run ({calls} planner "
              "calls in its ledger). A refused plan costs its one planner call and no tool call: the check runs before "
              "any tool.", plans=len(PLANS) + len(drawn), set=len(PLANS), drawn=len(drawn), tasks=len(tasks),
              calls=len(planner.calls))


# --- 09.break: a plan the validator accepts, and that cannot work ------------------------------

BLIND_TASK = "woz-torvalds"


PRINTED_PLANS = [  # the blind plans sections 2 and 6 print for this very task
    "#E1 = Search[Steve Wozniak]\n#E2 = Search[Linus Torvalds]\n#E3 = Calculate[#E2 - #E1]",
]


def _evidence(plan: str) -> list:
    """The plan's evidence lines as (tool, input) pairs, spaces folded: what a plan does, whatever its notes say."""
    return [(tool, " ".join(text.split())) for _, tool, text in
            re.findall(r"#E(\d+)\s*=\s*(\w+)\s*\[(.*)\]", plan)]


def _steps(plan: str) -> list:
    """What a plan does, whatever its notes, names and order: each evidence line as ("search", its words) or
    ("calculate", the steps it refers to, its operators, its numbers)."""
    lines = re.findall(r"#E(\d+)\s*=\s*(\w+)\s*\[(.*)\]", plan)
    position = {number: index for index, (number, _, _) in enumerate(lines)}
    steps = []
    for number, tool, text in lines:
        rest = re.sub(r"#E\d+", " ", text)
        if tool.lower() == "search":
            steps.append(("search", frozenset(words(rest))))
        else:
            refs = tuple(sorted({position.get(n, -1) for n in re.findall(r"#E(\d+)", text)}))
            steps.append(("calculate", refs, frozenset(re.findall(r"[-+*/]", rest)), frozenset(re.findall(r"\d+", rest))))
    return steps


def _similar(a: frozenset, b: frozenset) -> bool:
    """The same look-up, worded a little otherwise: half of all the words shared."""
    return len(a & b) >= max(1, len(a | b) / 2)


def _same(mine: list, i: int, theirs: list, j: int) -> bool:
    a, b = mine[i], theirs[j]
    if a[0] != b[0]:
        return False
    if a[0] == "search":
        return _similar(a[1], b[1])
    if a[2:] != b[2:] or len(a[1]) != len(b[1]):
        return False  # other operators, numbers, or number of results used
    return all(any(k >= 0 and _same(mine, k, theirs, m) for k in a[1]) for m in b[1])


def copied_plan(plan: str):
    """The printed plan that `plan` copies (its steps are all among this plan's, renamed, reordered, with operands
    swapped or a search worded a little otherwise), or None."""
    mine = _steps(plan)
    for printed in PRINTED_PLANS:
        theirs = _steps(printed)
        free = list(range(len(mine)))
        for j in range(len(theirs)):
            match = next((i for i in free if _same(mine, i, theirs, j)), None)
            if match is None:
                break
            free.remove(match)
        else:
            return printed
    return None


def planner_says(plan: str) -> ScriptedLLM:
    """The course stand-in, except that its ReWOO planner writes `plan`."""
    llm = ScriptedLLM(course_script())
    llm.add(lambda prompt: PLANNER_MARKER in prompt, plan, name="your plan")
    return llm


@exercise("09.break", "break", "A blind plan",
          "Set `plan` to a ReWOO plan for 'woz-torvalds', not the one sections 2 and 6 print, that the validator "
          "accepts and whose run gets it wrong, because a step needs a piece of an earlier result.", objects=False)
def _break(plan):
    if not isinstance(plan, str):
        raise Fail(tr("your answer"), tr("a str: the planner's reply"), type(plan).__name__,
                   tr("write the plan as a string."))
    try:
        parse_rewoo_plan(plan)
    except PlanError as error:
        raise Fail("parse_rewoo_plan(plan)", tr("a valid plan"), f"PlanError: {error}",
                   tr("a blind plan is a VALID plan: every reference points to an earlier line, and the validator has "
                      "nothing to refuse (section 2, 'Planning blind').")) from None
    if copied_plan(plan):
        raise Fail(tr("your plan"), tr("a blind plan of your own"),
                   tr("{plan}: the steps of the plan sections 2 and 6 print ({printed}), renamed, reordered or reworded",
                      plan=plan.replace(chr(10), " | ")[:200], printed=copied_plan(plan).replace(chr(10), " | ")),
                   tr("sections 2 and 6 print that plan and its run already: write another one that goes wrong for the "
                      "same reason, with a step of your own that needs a piece of an earlier result."))
    the_task = task(BLIND_TASK)
    needed = [step[len("Search["):-1] for step in the_task.key_path if step.startswith("Search[")]
    searched = " ".join(text for tool, text in _evidence(plan) if tool.lower() == "search").casefold()
    missing = [name for name in needed if name.casefold() not in searched]
    if missing:
        raise Fail(tr("your plan for {task}: {question}", task=repr(BLIND_TASK), question=the_task.question),
                   tr("searches for {names}", names=", ".join(needed)),
                   tr("no search for {names}", names=", ".join(missing)),
                   tr("a plan for this question looks up what this question needs, and goes wrong only because it "
                      "cannot read what it found: a plan for another question proves nothing about this one."))
    llm, tools = planner_says(plan), default_executor()
    agent = ReWOOAgent(llm, tools)
    answer = agent.run(the_task.question, verbose=False)
    flooded = [(v, agent.inputs[v]) for v in agent.inputs
               if any(len(e) > 40 and e in agent.inputs[v] for k, e in agent.evidence.items() if k != v)]
    if not flooded:
        raise Fail(tr("the run of your plan"), tr("a step whose tool received a whole earlier result"),
                   tr("inputs {inputs}, answer {answer}", inputs=list(agent.inputs.values()), answer=repr(answer)),
                   tr("blind means a step's input is a result the planner could not see: write #E1 (or #E2) in an "
                      "input, as the blind Calculate of section 2 does."))
    if the_task.check(answer):
        raise Fail(tr("the run of your plan"), tr("a wrong answer"), repr(answer),
                   tr("your plan handed a paragraph to a tool and still got it right: make the step that needs a number "
                      "from a result (the subtraction) take that result."))
    variable, received = flooded[0]
    return tr("The validator accepted your plan; the run cost {calls} LLM calls and {tools} tool calls (ledgers). "
              "{variable}'s tool received {chars} characters, {received}..., and the answer was {answer}, wrong (gold "
              "{gold}). ReAct reads each result before its next step, which is what this question needs.",
              calls=len(llm.calls), tools=len(tools.log), variable=variable, chars=len(received),
              received=repr(received[:60]), answer=repr(answer), gold=the_task.gold)


# --- 09.noise: turn the errors up until the ranking flips -------------------------------------

NOISE_PARADIGMS = ("ReAct", "Plan-and-Execute")
PRINTED_RATES = (0.05, 0.1, 0.2, 0.3)  # the rates of section 5's shipped sweep


def noisy_run(paradigm: str, rate: float, seed: int = 0) -> tuple:
    """The harness's report of `paradigm` on the task set with NoisyTaskLLM(rate, seed), and the stand-ins it made."""
    made = []

    def make_agent(extra_steps: int = 0):
        made.append(NoisyTaskLLM(rate, seed=seed))
        return PARADIGMS[paradigm](extra_steps, llm=made[-1])

    return evaluate(make_agent, load_tasks(), review=False, progress=False, name=paradigm), made


def corrupted(llms: list) -> int:
    """Replies a knob changed, read from the ledgers' notes."""
    return sum(any(f"; {knob}" in call.note for knob in KNOBS) for llm in llms for call in llm.calls)


@exercise("09.noise", "break", "Errors that flip the ranking",
          "Set `rate` to an error rate per reply, not one of section 5's sweep, at which Plan-and-Execute, perfect "
          "at rate 0, scores below ReAct on the task set (seed 0).", objects=False)
def _noise(rate):
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise Fail(tr("your answer"), tr("a number: the error rate per reply"), type(rate).__name__,
                   tr("write rate = 0.something."))
    if not 0 < rate <= 1:
        raise Fail(tr("your rate"), tr("a rate above 0 and at most 1"), repr(rate),
                   tr("at rate 0 the stand-in is a perfect reader: Plan-and-Execute gets every task right there. Turn "
                      "the errors up."))
    runs = {name: noisy_run(name, float(rate)) for name in NOISE_PARADIGMS}
    success = {name: report.summary.success_rate for name, (report, _) in runs.items()}
    if success["Plan-and-Execute"] >= success["ReAct"]:
        high = success["ReAct"] < 0.2
        raise Fail(tr("the task set at error rate {rate}, seed 0", rate=rate),
                   tr("Plan-and-Execute below ReAct"), f"Plan-and-Execute {success['Plan-and-Execute']:.0%}, "
                   f"ReAct {success['ReAct']:.0%}",
                   tr("at such a rate both paradigms are near the floor, where little separates them: come down.")
                   if high else tr("Plan-and-Execute is still not below ReAct. It makes more model calls per task, so "
                                   "at a per-reply rate it meets more errors: go up a little (section 5's curves)."))
    if rate in PRINTED_RATES:
        raise Fail(tr("your rate"), tr("a rate section 5 does not print"), repr(rate),
                   tr("right, and section 5's sweep prints that rate already, for both paradigms: choose a rate it "
                      "does not show, and predict from its curves what happens there."))
    lines = []
    for name, (report, llms) in runs.items():
        calls = sum(len(llm.calls) for llm in llms)
        lines.append(tr("{name} {share} right, {calls} LLM calls, {corrupted} of them corrupted", name=name,
                        share=f"{success[name]:.0%}", calls=calls, corrupted=corrupted(llms)))
    return tr("At rate {rate}, seed 0, from the ledgers: {lines}. The same rate per reply, more replies per task: the "
              "perfect planner of rate 0 is the first to fall. That is a property of the structure under this "
              "instrument; a real model's errors need a real model's runs.", rate=rate, lines="; ".join(lines))


# --- concept questions ------------------------------------------------------------------------

question("09.q1", "Why does a ReWOO run cost exactly 2 LLM calls, whether its plan has 2 tool calls or 8?", {
    "a": ("ReWOO caches tool results, so repeated calls are free.", False,
          "there is no cache: every planned tool call runs once and is in the tool log; the tools are simply not LLM "
          "calls."),
    "b": ("The planner writes every tool call before any runs; the tools run without the model, and the solver reads "
          "all the evidence at once.", True,
          "the model is asked twice, to plan and to solve; in between, only tools and the substitution of #E "
          "references run."),
    "c": ("The validator merges the plan's steps into one call.", False,
          "the validator only reads and checks the plan; it refuses a bad plan and never calls the model."),
    "d": ("The solver is not an LLM call: it only substitutes the evidence into the plan's last line, so the one "
          "model call is the planner's, and the second is the validator's.", False,
          "it is: section 1 prints 2 calls in the ledger, the planner's and the solver's."),
}, hint="section 1, the two calls printed after the tiny executor.")

question("09.q2", "At a per-reply error rate of 0.1, Plan-and-Execute and the hybrid fall below ReAct (section 5). "
         "What does the instrument say is the reason?", {
    "a": ("Their planners are worse readers than ReAct.", False,
          "the same stand-in plays every role, with the same rate for each knob; no role is a worse reader."),
    "b": ("The instrument sets a higher error rate for planner prompts, because a plan is longer than a step and the "
          "knobs fire once per number read.", False,
          "each knob fires at the given rate on every reply, drawn from a hash of the seed and the prompt, whatever "
          "the role."),
    "c": ("They make more model calls per task, so at a rate per reply they meet more errors, and an error in one "
          "step is carried into the next.", True,
          "the rate is per reply and the same for every role; more replies per task means more chances to go wrong."),
    "d": ("A real model makes more errors when it plans, and the curves measure that.", False,
          "the curves measure structure under an assumption; the text says only a real model's runs can tell how a "
          "planner's errors differ from a reader's."),
}, hint="section 5, 'The same batch, with the model's errors turned up', and the paragraph after the curves.")
