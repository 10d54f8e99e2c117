"""Chapter 17's exercises: predict what each strategy sends, build observation masking, break compaction with a
summary that forgets, three questions.

17.mask may not call agentkit's own masking: while the learner's function runs, a profile hook watches for the code
of `ObservationMasking.fit` and `masked_history`, and a run that reached either (or replaced the hook) is refused.
No expected answer is computed before the learner's code runs: the check reads the prompts of the ledger afterwards.
"""
from __future__ import annotations

import sys
from dataclasses import replace

from ..context_runs import RelayRun, make_agent, relay_llm, run_relay
from ..context_strategies import SUMMARY_MARKER, ObservationMasking, masked_history
from ..i18n import tr, tr_later
from ..react import ReActAgent
from ..relay import relay_task, relay_tools
from ..scripted import ScriptedLLM
from ..scripts.relay import RULES, tariff_seen
from ..text import shorten
from . import Fail, call, cases, exercise, question, shown
from .predictions import Prediction, prediction

# --- 17.predict: what each strategy sends --------------------------------------------------------

PREDICT_TASK = "relay-20"
SLIP_MARK = "Keep this slip: the desk prints it once."
ROWS = {"full history": ("full history", {}), "sliding window, k=4": ("sliding window", {"window": 4}),
        "masking, keep=2": ("observation masking", {"keep": 2}),
        "sub-agents, 10 stations each": ("sub-agent", {"segment": 10})}
WHY = {
    "full history": "one call per step, 20; every call after the first re-sends step 1, the slip: 19",
    "sliding window, k=4": "still one call per step, 20 (the end goes Dispatch, refused, Finish 'unknown' instead of "
                           "Calculate, Finish); step 1 is among the last 4 steps for calls 2, 3, 4 and 5: 4",
    "masking, keep=2": "20 calls; the slip's Observation stays raw while it is one of the last 2, at calls 2 and 3, "
                       "and is masked after (its Thought, with the tariff, stays)",
    "sub-agents, 10 stations each": "the lead makes 5 calls (Dispatch, Walk, Walk, Calculate, Finish); the first "
                                    "sub-agent 11 (10 Searches and its Finish), the second 8 (the last 7 stations and "
                                    "its Finish): 24. Only the lead's calls 2 to 5 carry the slip: 4",
}


def strategy_costs() -> dict:
    """(LLM calls, prompts carrying the slip's Observation) of each row's strategy on PREDICT_TASK, from the ledger."""
    out = {}
    for row, (strategy, settings) in ROWS.items():
        run = run_relay(relay_task(PREDICT_TASK), strategy, **settings)
        out[row] = (len(run.calls), sum(SLIP_MARK in c.prompt for c in run.calls))
    return out


def _predict_hint(row, guess, actual, answer):
    calls, carried = guess
    if row == "sub-agents, 10 stations each" and calls < 24:
        return tr("count the sub-agents' calls too: each walks its stations with one Search each and ends with a "
                  "Finish of its own, and they share the lead's ledger (section 2e).")
    if row == "masking, keep=2" and carried > 3:
        return tr("masking keeps only the last two Observations raw: the slip is raw at the first two calls after it.")
    if row == "sliding window, k=4" and carried > 5:
        return tr("a window of 4 sends the last 4 steps: the slip, step 1, is in the prompt of calls 2 to 5 only.")
    return None


prediction("17.predict", "What each strategy sends",
           "Set `prediction` to {strategy: (LLM calls, prompts carrying the slip)} on relay-20, before running "
           "anything.",
           Prediction(truth=strategy_costs, labels=("LLM calls", "prompts with the slip"), why=WHY,
                      case=lambda row: tr("{name} on {task}", name=row, task=PREDICT_TASK),
                      hint=_predict_hint,
                      done=lambda truth: tr("What a strategy leaves out of the prompt is what a later call cannot "
                                            "read."),
                      pointer="count calls as section 2's reports print them (a sub-agent's calls are in the same "
                              "ledger), then ask at which calls step 1 is still part of the history each strategy "
                              "sends."))


# --- 17.mask: observation masking, built ------------------------------------------------------------

MASK_TASKS = ("relay-20", "relay-25", "relay-30")
KEEP = 2
FORBIDDEN = {ObservationMasking.fit.__code__: "ObservationMasking.fit", masked_history.__code__: "masked_history"}
H_SHAPE = tr_later("return what assemble(parts) returns: the list of messages, built from one string per step.")
H_PACKAGE = (tr_later("write the masking yourself: this task does not allow agentkit's ObservationMasking or "
                      "masked_history (section 2b's TinyMask is a dozen lines)."))
H_PROFILER = tr_later("leave sys.setprofile alone: the check uses it to see which functions your code calls.")
H_OLD = (tr_later("an Observation older than the last two steps is still in the prompt: replace it by a placeholder "
                  "(section 2b)."))
H_RECENT = (tr_later("the last two steps' Observations must reach the model as they are: the stand-in reads the last "
                     "page to find the next station."))
H_KEPT = (tr_later("masking keeps every step's Thought and Action (section 2b): the tariff survives in the Thought "
                   "after the slip."))


def guarded(function, *args, case: str, hint: str):
    """call(), with a profile hook that refuses agentkit's own masking and notices a replaced hook."""
    reached = []

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in FORBIDDEN:
            reached.append(FORBIDDEN[frame.f_code])

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        result = call(function, *args, case=case, hint=hint)
    finally:
        kept = sys.getprofile() is watch
        sys.setprofile(previous)
    if not kept:
        raise Fail(case, tr("your code leaves the check's profile hook in place"), tr("your code replaced it"),
                   H_PROFILER)
    if reached:
        raise Fail(case, tr("masking you wrote"), tr("your code called agentkit's {name}", name=reached[0]), H_PACKAGE)
    return result


class _Yours:
    """A context whose fit is the learner's function, given copies of the steps (the agent's trace stays whole)."""

    def __init__(self, fit) -> None:
        self.fit_function = fit

    def fit(self, assemble, trace, question):
        case = tr("the prompt of call {number}", number=len(trace) + 1)
        messages = guarded(self.fit_function, assemble, [replace(step) for step in trace], question,
                           case=case, hint=H_SHAPE)
        reference = assemble([])
        if not (isinstance(messages, list) and len(messages) == len(reference)
                and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
                and messages[0] == reference[0] and messages[1]["content"].startswith(reference[1]["content"])):
            raise Fail(case, tr("the messages assemble(parts) returns"), shown(messages), H_SHAPE)
        return messages


def _prompt_problems(call_number: int, prompt: str, trace) -> tuple:
    """The first thing wrong with one prompt, as (what was expected, what it held, hint), or None."""
    for number, step in enumerate(trace[: call_number - 1], 1):
        if f"Thought: {step.thought}" not in prompt or f"Action: {step.action}[{step.argument}]" not in prompt:
            return (tr("step {number}'s Thought and Action", number=number), tr("one of them missing"), H_KEPT)
        recent = number > call_number - 1 - KEEP
        if recent and step.observation not in prompt:
            return (tr("step {number}'s Observation, as it was", number=number), tr("it was changed or left out"),
                    H_RECENT)
        if not recent and step.observation in prompt:
            return (tr("step {number}'s Observation masked", number=number),
                    tr("it was sent whole: {text}", text=repr(shorten(step.observation, 60))), H_OLD)
    return None


@exercise("17.mask", "build", "Observation masking",
          "Write `my_masking(assemble, trace, question)`: every Thought and Action kept, the last two Observations as "
          "they are, every older one replaced by a placeholder; agentkit's own masking is not allowed.")
def _mask(my_masking):
    if not callable(my_masking):
        raise Fail(tr("your answer"), tr("a function my_masking(assemble, trace, question)"), shown(my_masking),
                   tr("define it with def."))
    task = relay_task(cases().choice(MASK_TASKS))
    agent = ReActAgent(relay_llm(), relay_tools(), max_steps=task.max_steps, repeat_fuse=False,
                       context=_Yours(my_masking))
    agent.run(task.question, verbose=False)
    for number, record in enumerate(agent.run_calls, 1):
        problem = _prompt_problems(number, record.messages[1]["content"], agent.trace)
        if problem:
            expected, got, hint = problem
            raise Fail(tr("{task}, the prompt of call {number}", task=task.id, number=number), expected, got, hint)
    if not (agent.stop_reason == "finished" and task.check(agent.answer)):
        raise Fail(tr("{task}, the run", task=task.id), tr("the fee, {gold} credits", gold=task.gold),
                   shorten(agent.answer, 80), H_KEPT)
    used = sum(c.prompt_tokens for c in agent.run_calls)
    full = sum(run_relay(task, "full history").prompt_tokens)
    return tr("From the ledger of {task}: {calls} calls, every prompt with each Thought and Action, the last two "
              "Observations whole and the older ones masked; {used} prompt tokens against {full} with full history "
              "({share}), and the right fee, {answer}.", task=task.id, calls=len(agent.run_calls), used=used, full=full,
              share=f"{used / full:.0%}", answer=agent.answer)


# --- 17.break: a summary that forgets -------------------------------------------------------------

BREAK_TASKS = ("relay-30", "relay-35", "relay-40", "relay-45", "relay-50", "relay-55", "relay-60")
THRESHOLDS = range(1200, 2401, 200)  # drawn per check, a step apart or more: the summariser's inputs differ
H_TEXT = tr_later("return the summary as a str: the text compaction sends instead of the steps it covers.")
H_RIGHT = (tr_later("the run was right: your summary kept the tariff (or the run never compacted). Leave the tariff out "
                    "of the summary, and keep the rest (section 2c's summary has two lines)."))
H_WALK = (tr_later("the run never read its own line's last page: your summary lost where the run stood too. Here the "
                   "summary is all the agent sees of the steps it covers: keep the furthest station's sentence "
                   "('Station ... Next station: ...') from the text you are given, so the walk goes on."))
H_MISCOPY = (tr_later("a prompt states a wrong tariff: that is a miscopied fact (section 5c), not a lost one. Leave the "
                      "tariff out instead of changing it."))


class _SummariserIsYours(ScriptedLLM):
    """The relay stand-in, except that a compaction's summary is written by the learner's `summarise(text)`."""

    def __init__(self, summarise) -> None:
        super().__init__(RULES)
        self.summarise = summarise

    def _answer(self, messages):
        if not str(messages[0].get("content", "")).startswith(SUMMARY_MARKER):
            return super()._answer(messages)
        text = call(self.summarise, messages[1]["content"], case=tr("a compaction's summary"), hint=H_TEXT)
        if not isinstance(text, str):
            raise Fail(tr("a compaction's summary"), tr("a str"), shown(text), H_TEXT)
        return text, "your summariser"


@exercise("17.break", "break", "A summary that forgets",
          "Write `summarise(text)`, the summariser of a compaction that keeps no raw step, so that relay runs walk "
          "their whole line to the last page and end wrong because the tariff was lost. Anything may be used, "
          "agentkit's own summariser included.")
def _break(summarise):
    if not callable(summarise):
        raise Fail(tr("your answer"), tr("a function summarise(text) -> str"), shown(summarise),
                   tr("define it with def."))
    draws = []
    while len(draws) < 2:  # two runs, on two (task, threshold) pairs drawn for this check
        draw = (cases().choice(BREAK_TASKS), cases().choice(THRESHOLDS))
        if draw not in draws:
            draws.append(draw)
    runs = [_forgetful_run(summarise, relay_task(task_id), threshold) for task_id, threshold in draws]
    first = runs[0]
    return tr("From the ledgers of {tasks}: on {task} your first summary replaced steps 1-{last}, the slip among them, "
              "without the tariff. The lead walked on to the last station, asked the desk again, was refused, and "
              "answered {answer} (gold {gold}). A summary replaces the steps it covers: what it leaves out, no later "
              "prompt holds.", tasks=tr(" and ").join(r.task.id for r in runs), task=first.task.id,
              last=first.agent.context.summaries[0][0], answer=repr(first.answer), gold=first.task.gold)


def _forgetful_run(summarise, task, threshold: int) -> RelayRun:
    """One compaction run with the learner's summariser; a Fail unless it walked the whole line and lost the tariff."""
    llm = _SummariserIsYours(summarise)
    agent = make_agent(task, "compaction", llm, threshold=threshold)
    agent.context.keep_raw = 0  # the summary is all the agent sees of the steps it covers
    start = len(llm.calls)
    agent.run(task.question, verbose=False)
    run = RelayRun(task, "compaction", {"threshold": threshold}, agent, llm.calls[start:])
    case = tr("compaction at {threshold} tokens, no raw step kept, on {task}, your summariser", threshold=threshold,
              task=task.id)
    if not run.agent.context.summaries:
        raise Fail(case, tr("at least one summary"), tr("the run never compacted"), H_RIGHT)
    if run.correct:
        raise Fail(case, tr("a wrong answer"), tr("the right fee, {answer}", answer=run.answer), H_RIGHT)
    walked = [step.argument for step in run.agent.trace if step.action == "Search"]
    if walked != list(task.stations) or run.agent.stop_reason != "finished":
        fields = dict(searches=len(walked), stations=len(task.stations), stop=run.agent.stop_reason)
        raise Fail(case, tr("a run that reads every station of its line once, in order, and then answers"),
                   tr("{searches} Searches, in the line's order, for {stations} stations; stop: {stop}", **fields)
                   if walked == list(task.stations)[: len(walked)] else
                   tr("{searches} Searches, out of the line's order, for {stations} stations; stop: {stop}", **fields),
                   H_WALK)
    lead = [c for c, kind in zip(run.calls, run.kinds) if kind == "lead"]
    wrong = [tariff_seen(c.prompt) for c in lead if tariff_seen(c.prompt) not in (None, task.tariff)]
    if wrong:
        raise Fail(case, tr("the tariff left out"),
                   tr("a prompt says tariff {said} (the slip said {tariff})", said=wrong[0], tariff=task.tariff),
                   H_MISCOPY)
    if tariff_seen(lead[-1].prompt) is not None:
        raise Fail(case, tr("no tariff in the lead's last prompt"), tr("the tariff was still there"), H_RIGHT)
    return run


# --- concept questions --------------------------------------------------------------------------

question("17.q1", "On the relay, observation masking kept the right answer where the sliding window lost it. Why?", {
    "a": ("Masking keeps every Thought, and the Thought written after the slip states the tariff; the window drops "
          "whole steps, that Thought with them.", True,
          "the window kept what the walk needed (the last page) and lost what the end needed; masking dropped only "
          "the old pages, and the fact had been written down where masking keeps it."),
    "b": ("Masking's prompts are shorter than the window's, so the model reads them better.", False,
          "they are longer: masking keeps a Thought and an Action for every step, the window only the last k steps; "
          "and the stand-in reads every prompt perfectly at knob 0."),
    "c": ("Masking asks the desk for the slip again when it is needed.", False,
          "the desk prints a slip once; the window's run asked again and was refused. Masking never needed to ask."),
    "d": ("Masking keeps the first Observation of a run whole, as a system prompt would.", False,
          "it keeps only the last `keep` Observations whole; the slip's Observation was masked from call 4 on."),
}, hint="sections 2a and 2b, and what the stand-in does in the step after the slip.")

question("17.q2", "With the cache discount of section 4a, the sliding window saves much less than its token count "
                  "suggests, while full history costs a fraction of its tokens. Why?", {
    "a": ("The provider does not cache prompts shorter than a threshold, and a window's prompts are short.", False,
          "our pricing has no such rule, and the window's prompts are hundreds of tokens long; what differs is where "
          "each prompt first changes."),
    "b": ("Cached tokens are billed at the miss price once a run passes a number of calls.", False,
          "no such rule in the prices we quote; every cached-prefix token is billed at the hit price."),
    "c": ("The window writes longer replies, and output tokens cost the most.", False,
          "the stand-in's replies are the same length under every strategy; the difference is in the input."),
    "d": ("A window drops its oldest step right after the question on every call, so of its question and history "
          "only the question is a prefix seen before; full history only appends, so nearly all of each prompt is.",
          True,
          "a cache prices the shared start of a prompt; any change near the front (a dropped step, a timestamp, a "
          "reordered tool list) leaves only what comes before it cached."),
}, hint="section 4a: the characters two consecutive prompts share from their start.")

question("17.q3", "What does the long-context knob of section 5 tell you about real models?", {
    "a": ("Nothing by itself: it is an assumption we chose, and the frontier shows what would follow if errors rose "
          "that way; whether a model's do is a question for a measurement on that model.", True,
          "the knob is an instrument: it asks which strategies lose answers if errors rise with length. A real "
          "model's recorded runs, or a benchmark like Liu et al.'s, are what can answer it for that model."),
    "b": ("That a model's errors grow linearly with the prompt's length, as Liu et al. measured.", False,
          "Liu et al. measured two tasks, on the models they tested, and report above all an effect of where the "
          "relevant information stands; the linear shape, blind to position, is our assumption."),
    "c": ("That long prompts never hurt a model that supports long contexts.", False,
          "the knob says nothing either way; and Liu et al. report degradation 'even for explicitly long-context "
          "models'."),
    "d": ("That full history is always the least accurate strategy.", False,
          "only under the knob's assumption; at knob 0 full history was right on every task, and another error "
          "shape could order the strategies differently."),
}, hint="section 5a: what the quotes say was measured, and what the knob assumes.")
