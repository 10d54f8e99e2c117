"""Chapter 10's exercises: predict a version's flips from the reports, build the P95 and a task-by-task comparison,
fool a checker, two questions."""
from __future__ import annotations

import re

from types import SimpleNamespace

import numpy as np

from ..evaluate import compare, evaluate
from ..i18n import tr, tr_later
from ..modes import get_llm
from ..paradigms import make_act_only, make_react
from ..react import REACT_MARKER, ReActAgent
from ..scripted import Rule, ScriptedLLM
from ..tasks import load_tasks, numbers_in
from ..tools import default_executor
from . import Fail, call, cases, exercise, question, reference
from .predictions import Prediction, prediction


def multi_hop() -> list:
    return [t for t in load_tasks() if t.category == "multi-hop"]


def make_v1(extra_steps: int = 0):  # the stand-in, whatever AP_MODE says: the checks read its ledgers
    return make_react(extra_steps, llm=get_llm("fake"))


def make_v2(extra_steps: int = 0):  # section 5's version 2: Act-only with two more steps
    return make_act_only(extra_steps + 2, llm=get_llm("fake"))


def make_v3(extra_steps: int = 0):  # version 1 with two more steps, and nothing else
    return make_react(extra_steps + 2, llm=get_llm("fake"))


def reports() -> tuple:
    """Versions 1 and 3 on the multi-hop tasks (no early-stop review: the check needs the rows only)."""
    tasks = multi_hop()
    return (evaluate(make_v1, tasks, name="ReAct", review=False, progress=False),
            evaluate(make_v3, tasks, name="ReAct +2 steps", review=False, progress=False))


# --- 10.predict: what two more steps change, task by task ----------------------------------

WHY = {
    "broken": "two more steps change nothing for a run that finished within five: the stand-in takes the same "
              "actions, so no task that was right goes wrong",
    "fixed": "the only multi-hop failures of version 1 are the three tasks whose key path has five tool calls: "
             "max_steps=5 ended them before the turn that would Finish, and seven steps leave room for it",
    "P95 steps, version 3": "the three long runs now take six steps (five tool calls and the Finish); with 15 values, "
                            "numpy's P95 sits at position 0.95 x 14 = 13.3 of the sorted steps, between two sixes",
}


def flips() -> dict:
    before, after = reports()
    comparison = compare(before, after)
    return {"broken": len(comparison.broken), "fixed": len(comparison.fixed),
            "P95 steps, version 3": after.summary.p95_steps}


prediction("10.predict", "What two more steps change",
           "Set `prediction` to {'broken': n, 'fixed': n, 'P95 steps, version 3': x} for version 3 against version 1 "
           "on the multi-hop tasks, before running anything.",
           Prediction(truth=flips, labels=("",), why=WHY, source="the reports",
                      tolerance=lambda row, label, actual: 0.05,
                      case=lambda row: tr("{row}, version 3 (ReAct, max_steps 7) against version 1 (max_steps 5), "
                                          "the multi-hop tasks", row=row),
                      done=lambda truth: tr("One change per version, and every flip has one cause."),
                      pointer="reason task by task: which version-1 runs ended for want of steps? Section 6's "
                              "early-stop review of version 1 names them; then place the P95 as section 2 does."))


# --- 10.p95: the 95th percentile of the steps ------------------------------------------------

H_INTERPOLATE = (tr_later("numpy's default does not pick a value, it interpolates: sort, take position 0.95 * (n - "
                          "1), and go "
                          "that fraction of the way from the value below it to the value above (section 2)."))
H_SORT = tr_later("sort the values first: the 95th percentile is a position in the SORTED list.")
H_ONE = tr_later("one value: position 0.95 * 0 = 0, so the P95 is that value.")
H_POSITION = tr_later("the position is 0.95 * (n - 1), counted from 0, not 0.95 * n.")

P95_CASES = [  # (steps, hint for a mismatch that diagnose() cannot name)
    ([3, 3, 3, 3], H_POSITION),
    ([2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 7], H_POSITION),
    ([1, 1, 2, 2, 2, 3, 3, 4, 9, 10], H_POSITION),
    ([10, 1, 4, 2, 9, 3, 2, 3, 1, 2], H_SORT),
    ([6], H_ONE),
    ([2, 5], H_POSITION),
    ([4, 4, 3, 4, 4, 4, 4, 3, 3, 3, 3, 3, 5, 5, 5], H_POSITION),
    (list(range(1, 41)), H_POSITION),
]


def unseen_lists(count: int = 4) -> list:
    """Step counts drawn for this check: unsorted, with repeats, of lengths 1 to 40."""
    rng = cases()
    return [([rng.randint(1, 12) for _ in range(rng.choice([1, 2, 3, 7, 15, 20, 21, 40]))], H_INTERPOLATE)
            for _ in range(count)]


def _linear(values) -> float:
    position = 0.95 * (len(values) - 1)
    below = int(position)
    above = min(below + 1, len(values) - 1)
    return values[below] + (position - below) * (values[above] - values[below])


def diagnose(values, said, hint: str) -> str:
    """The hint for the mistake that gives `said`: picking a value instead of interpolating, or not sorting."""
    try:
        said = float(said)
    except (TypeError, ValueError):
        return hint
    nearest = sorted(values)[max(0, -(-95 * len(values) // 100) - 1)]
    if abs(said - _linear(list(values))) < 1e-9 and values != sorted(values):
        return H_SORT
    if abs(said - nearest) < 1e-9:
        return H_INTERPOLATE
    return hint


@exercise("10.p95", "build", "The P95 of the steps",
          "Write `p95(values)`: the 95th percentile of a list of numbers, as numpy.percentile(values, 95) computes it, "
          "without numpy: numpy's percentile and quantile are refused.",
          forbid=("numpy:percentile", "numpy:quantile", "numpy:nanpercentile", "numpy:nanquantile"), objects=False)
def _p95(p95):
    if not callable(p95):
        raise Fail(tr("your answer"), tr("a function p95(values) -> float"), repr(p95), tr("define it with def."))
    for values, hint in P95_CASES + unseen_lists():
        said = call(p95, list(values), case=f"p95({values})", hint=hint)
        truth = float(np.percentile(values, 95))
        if said is None:
            raise Fail(f"p95({values})", f"{truth:g}", "None",
                       tr("your function returned nothing: did it forget `return`?"))
        try:
            ok = abs(float(said) - truth) < 1e-9
        except (TypeError, ValueError):
            raise Fail(f"p95({values})", tr("a number"), repr(said), tr("return the percentile as a number.")) from None
        if not ok:
            raise Fail(f"p95({values})", tr("{p95} (numpy.percentile)", p95=f"{truth:g}"), f"{said!r}",
                       diagnose(values, said, hint))
    before, after = reports()
    for report in (before, after):
        steps = [run.steps for run in report.runs]
        said = call(p95, steps, case=tr("the steps of {name} on the multi-hop tasks", name=report.name),
                    hint=H_INTERPOLATE)
        if abs(float(said) - report.summary.p95_steps) > 1e-9:
            raise Fail(tr("the steps of {name} on the multi-hop tasks: {steps}", name=report.name, steps=steps),
                       tr("{p95} (the harness's summary)", p95=f"{report.summary.p95_steps:g}"), f"{said!r}",
                       H_INTERPOLATE)
    return tr("Your P95 agrees with numpy on {lists} lists and 4 drawn for this check, and with the harness on two "
              "real "
              "reports: {before} steps for ReAct, {after} with two more steps, while the means are {mean_before} and "
              "{mean_after}. The mean hides the long runs; the P95 is what a step budget must cover.",
              lists=len(P95_CASES), before=f"{before.summary.p95_steps:g}", after=f"{after.summary.p95_steps:g}",
              mean_before=f"{before.summary.mean_steps:.2f}", mean_after=f"{after.summary.mean_steps:.2f}")


# --- 10.compare: broken and fixed, task by task ----------------------------------------------

H_PAIR = (tr_later("pair each task with ITSELF, by task_id, not run i with run i: two reports may list the same tasks "
                   "in "
                   "another order (section 5, 'What breaks it')."))
H_DIRECTION = tr_later("broken means right before and wrong after; fixed means wrong before and right after (section "
                       "5).")
H_NEITHER = tr_later("a task right in both, or wrong in both, did not flip: it is in neither list.")


def rows(*pairs) -> SimpleNamespace:
    return SimpleNamespace(runs=[SimpleNamespace(task_id=task_id, correct=correct) for task_id, correct in pairs])


COMPARE_CASES = [  # (before, after, what, hint): flips decides, after your answer
    (rows(("a", True), ("b", False)), rows(("a", False), ("b", True)), tr_later("one task broken, one fixed, in the "
                                                                                "same order"),
     H_DIRECTION),
    (rows(("a", True), ("b", True), ("c", False)), rows(("a", True), ("b", True), ("c", False)), tr_later("nothing flips"),
     H_NEITHER),
    (rows(("a", True), ("b", False), ("c", True)), rows(("c", True), ("b", False), ("a", False)),
     tr_later("the same tasks, listed in another order"), H_PAIR),
    (rows(("x", False), ("y", True), ("z", False), ("w", True)),
     rows(("w", False), ("z", True), ("y", True), ("x", False)), tr_later("four tasks, the second report reversed"), H_PAIR),
]


@reference
def flips(before: list, after: list) -> tuple:
    """(broken task ids, fixed task ids), sorted, each task paired with itself by task_id."""
    now = {run.task_id: run.correct for run in after}
    broken = sorted(run.task_id for run in before if run.task_id in now and run.correct and not now[run.task_id])
    fixed = sorted(run.task_id for run in before if run.task_id in now and now[run.task_id] and not run.correct)
    return broken, fixed


def unseen_reports() -> tuple:
    """(before, after) drawn for this check: 3 to 9 tasks, the second report in another order."""
    rng = cases()
    ids = rng.sample(["hopper-born", "woz-jobs", "multiply", "founders-sum", "ada-age", "git-author", "x1", "y2",
                      "bridge-babbage", "pioneers-mean"], rng.randint(3, 9))
    before = {i: rng.random() < 0.6 for i in ids}
    after = {i: rng.random() < 0.6 for i in ids}
    order = list(ids)
    rng.shuffle(order)
    return rows(*before.items()), rows(*((i, after[i]) for i in order))


def _ids(value) -> list:
    return sorted(str(v) for v in value)


@exercise("10.compare", "build", "Broken and fixed, task by task",
          "Write `compare_runs(before, after)`: (broken task ids, fixed task ids) between two reports' runs, "
          "pairing each task with itself; agentkit.evaluate.compare is refused.",
          forbid=("agentkit.evaluate:compare",), objects=False)
def _compare(compare_runs):
    if not callable(compare_runs):
        raise Fail(tr("your answer"), tr("a function compare_runs(before, after) -> (broken, fixed)"),
                   repr(compare_runs), tr("define it with def."))
    drawn = [(*unseen_reports(), tr_later("two reports drawn for this check"), H_PAIR) for _ in range(3)]
    for before, after, what, hint in COMPARE_CASES + drawn:
        case = tr("{what}: before {before}, after {after}", what=tr(what),
                  before=[(r.task_id, r.correct) for r in before.runs],
                  after=[(r.task_id, r.correct) for r in after.runs])
        said = call(compare_runs, before.runs, after.runs, case=case, hint=hint)
        broken, fixed = flips(before.runs, after.runs)
        expected = tr("broken {broken}, fixed {fixed}", broken=broken, fixed=fixed)
        if said is None:
            raise Fail(case, expected, "None", tr("your function returned nothing: return a pair, (broken, fixed)."))
        try:
            got_broken, got_fixed = said
            got = (_ids(got_broken), _ids(got_fixed))
        except (TypeError, ValueError):
            raise Fail(case, tr("a pair (broken task ids, fixed task ids)"), repr(said),
                       tr("return two lists of task ids, e.g. (['a'], ['b']).")) from None
        if got != (broken, fixed):
            raise Fail(case, expected, tr("broken {broken}, fixed {fixed}", broken=got[0], fixed=got[1]), hint)
    tasks = load_tasks()[::3]
    v1 = evaluate(make_v1, tasks, review=False, progress=False)
    v2 = evaluate(make_v2, tasks, review=False, progress=False)
    said = call(compare_runs, v1.runs, v2.runs[::-1], case=tr("version 1 against version 2, the second listed "
                                                              "backwards"),
                hint=H_PAIR)
    truth = compare(v1, v2)
    want = (_ids(r.task_id for _, r in truth.broken), _ids(r.task_id for _, r in truth.fixed))
    try:
        got = (_ids(said[0]), _ids(said[1]))
    except (TypeError, ValueError, IndexError):
        got = None
    if got != want:
        raise Fail(tr("ReAct against Act-only +2 steps on {n} tasks, the second report listed backwards", n=len(tasks)),
                   tr("broken {broken}, fixed {fixed} (agentkit.evaluate.compare)", broken=want[0], fixed=want[1]),
                   repr(said), H_PAIR)
    return tr("On {n} tasks run for real, version 2 listed backwards, your comparison finds the same flips as "
              "agentkit.evaluate.compare: broken {broken}, fixed {fixed}. The package refuses two reports whose task "
              "lists differ instead; either way, a task is only ever compared with itself.", n=len(tasks),
              broken=want[0], fixed=want[1])


# --- 10.break: an answer the checker accepts and a person would not --------------------------

BREAK_TASK = "hopper-born"


def answers_with(answer: str) -> ScriptedLLM:
    """A stand-in that finishes at once with `answer`, on any ReAct prompt."""
    return ScriptedLLM([Rule(REACT_MARKER, f"Thought: I know this.\nAction: Finish[{answer}]", name="your answer")])


YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
DENIAL = re.compile(r"\b(not|never|isn'?t|wasn'?t|nor|wrongly|incorrectly|falsely|mistakenly|rumou?red|myth)\b",
                    re.IGNORECASE)
CORRECTION = re.compile(r"\b(no(?=\W)|actually|wait|sorry|correction|i mean|rather|in fact|make that|instead|"
                        r"correctly|really)\b", re.IGNORECASE)


def claimed_year(answer: str):
    """The year a person reads as the answer: the first one, unless a later one comes with a correction ("no,
    wait", "actually", "I mean") and no denial ("not", "wrongly"). None when the answer names no year."""
    years = list(YEAR.finditer(answer))
    if not years:
        return None
    claim = years[0]
    for before, year in zip(years, years[1:]):
        between = answer[before.end():year.start()]
        if CORRECTION.search(between) and not DENIAL.search(between):
            claim = year
    return claim.group()


@exercise("10.break", "break", "Fool the numeric checker",
          "Set `answer` to a reply to 'In what year was Grace Hopper born?' whose claim, as a person reads it, is a "
          "wrong year, yet the numeric checker counts right.", objects=False)
def _break(answer):
    if not isinstance(answer, str):
        raise Fail(tr("your answer"), tr("a str: the agent's final answer"), type(answer).__name__,
                   tr("write the answer as a string."))
    task = next(t for t in load_tasks() if t.id == BREAK_TASK)
    numbers = numbers_in(answer)
    if not task.check(answer):
        raise Fail(tr("task {task} (gold {gold}, numeric checker)", task=repr(task.id), gold=task.gold),
                   tr("counted right by the checker"), tr("{answer}: wrong", answer=repr(answer)),
                   tr("the numeric checker reads only the LAST number of the answer, and a refusal is never right "
                      "(section 1): end with the gold, and do not say you cannot."))
    claim = claimed_year(answer)
    if claim is None or float(claim) == float(task.gold):
        raise Fail(tr("task {task} (gold {gold})", task=repr(task.id), gold=task.gold),
                   tr("an answer that claims a wrong year, as a person reads it"),
                   tr("{answer}: a person reads {claim} as the answer", answer=repr(answer),
                      claim=claim or tr("no year")),
                   tr("that is simply the right answer (a year you correct to the gold with 'no, wait' or 'actually' "
                      "is "
                      "your final claim). A person reads the year you give first as your answer, unless you correct "
                      "it: make your claim wrong, and let the gold come later in a role that is not the claim (a "
                      "figure you dismiss, say)."))
    report = evaluate(lambda extra_steps=0: ReActAgent(answers_with(answer), default_executor(), 5), [task],
                      review=False, progress=False)
    run = report.runs[0]
    if not run.correct:
        raise Fail(tr("the harness's run of an agent that finishes with your answer"), tr("a row marked correct"),
                   tr("answer {answer}, correct {correct}", answer=repr(run.answer), correct=run.correct),
                   tr("keep the answer on one line, without square brackets, so Finish[...] carries all of it."))
    return tr("A person reads {claim} as the answer; the harness read the last number, {last}, and counted {answer} "
              "right: success {success} on {task}, in {calls} LLM call. A checker a program can apply is a contract, "
              "not an understanding: read the answers, the right ones too, before believing a success rate.",
              claim=claim, last=numbers[-1], answer=repr(run.answer), success=f"{report.summary.success_rate:.0%}",
              task=repr(task.id), calls=run.calls)


# --- concept questions ------------------------------------------------------------------------

question("10.q1", "Version 2 of an agent has the same success rate as version 1, on the same tasks. What can you "
         "conclude?", {
    "a": ("Nothing changed: the same tasks are right.", False,
          "the same rate can hide tasks broken and tasks fixed in equal numbers; only the task-by-task lists show "
          "it."),
    "b": ("Version 2 is at least as good, so keep whichever is cheaper.", False,
          "which tasks it lost matters: a cheaper version that breaks the tasks your users care about is not as "
          "good."),
    "c": ("With a real model at temperature 0 the two would be identical run for run, so an equal rate means equal "
          "behaviour on every task.", False,
          "section 4 says a temperature of 0 does not promise the same reply twice; repeat runs before believing a "
          "flip."),
    "d": ("Only that the broken and the fixed lists have the same length: read both before deciding.", True,
          "the net change is fixed minus broken, and zero can hide many flips, each with its own reason."),
}, hint="section 5, 'How to read it', point 1.")

question("10.q2", "The early-stop review says a run stopped by max_steps would have been solved with two more steps. "
         "What does that tell you?", {
    "a": ("The model was stuck in a loop.", False,
          "a stuck run is not rescued by two more steps: the Act-only runs stopped by the repeat fuse were not."),
    "b": ("Its step budget was too tight for that task: raise it for that kind of task, or split the work.", True,
          "the run was cut short, not stuck; section 6 reads ReAct's three rescues that way."),
    "c": ("Every budget should be raised by two steps, since a budget that cut one run short will cut others of "
          "every kind as well.", False,
          "two more steps is a cheap test for one run, not a verdict for all: the stuck runs would only cost more."),
    "d": ("The run's answer should be counted right.", False,
          "the run as it happened gave no answer; the review is a second run, which tells you about the budget, not "
          "a new score."),
}, hint="section 6, the paragraph after the review.")
