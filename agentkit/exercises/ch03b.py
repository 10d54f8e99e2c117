"""Chapter 03b's exercises, checked offline on the shipped recording of SmolLM2: a prediction, a rule to build,
a parser to break, two questions."""
from __future__ import annotations

import functools
import re

from ..i18n import tr, tr_later
from ..llm import Rule, ScriptedLLM
from ..parsing import naive_parse, parse_reply
from ..react import REACT_MARKER, ReActAgent
from ..cassette import cassette_path
from ..replay import ReplayLLM
from ..scripts.react import CHECKPOINT_QUESTION
from ..tools import default_executor
from . import Fail, call, cases, exercise, question, reference, shown
from .predictions import Prediction, prediction

NOTEBOOK = "03b_real_model"
RUNS = {"chat + role prompt": ("", 3), "few-shot completion": ("few-shot", 4)}  # name on the cassette, max_steps


def recorded_runs() -> dict:
    """The notebook's two runs, replayed from the shipped cassette: {run: the model's raw replies, in order}."""
    return {run: list(replies) for run, replies in _replayed().items()}


@functools.lru_cache(maxsize=1)
def _replayed() -> dict:
    replies = {}
    for run, (name, max_steps) in RUNS.items():
        agent = ReActAgent(ReplayLLM(cassette_path(NOTEBOOK), name=name), default_executor(), max_steps)
        agent.run(CHECKPOINT_QUESTION, verbose=False)
        replies[run] = [step.reply for step in agent.trace]
    return replies


# --- 03b.count: which recorded replies each parser reads as an action -------------------------


def actions_read() -> dict:
    """{run: (replies parse_reply reads as an action, replies naive_parse reads as one)}, from the recording."""
    return {run: (sum(bool(parse_reply(r).action) for r in replies), sum(bool(naive_parse(r).action) for r in replies))
            for run, replies in recorded_runs().items()}


WHY = {
    "chat + role prompt": "no chat reply has an Action line of its own; the third copies the loop's format reminder, "
    "'Observation: ...' and 'Action: ToolName[input]' included. naive_parse reads that as a call of a tool named "
    "ToolName; parse_reply sees the invented Observation first and keeps nothing",
    "few-shot completion": "every few-shot reply holds a readable action (Search, Calculate, Finish), for both "
    "parsers; they differ in what they take from the Finish reply, not in whether it is one",
}


prediction("03b.count", "Which recorded replies are actions",
           "Set `prediction` to {run: (read by parse_reply, read by naive_parse)}: how many replies each parser "
           "reads as an action.",
           Prediction(truth=actions_read, labels=("parse_reply actions", "naive_parse actions"), why=WHY,
                      source="the recorded replies",
                      pointer="read each raw reply of sections 2 and 3 line by line, as each parser does: where "
                              "does it look for 'Action:', and what does it do with an Observation before it?"))


# --- 03b.flag: a rule that flags an Observation the model wrote itself ---------------------------

FLAG_CASES = [  # (reply, what the case is): flag_truth decides, after your answer; the recorded replies are added
    ("Thought: I need his birth year.\nAction: Search[Steve Jobs]\nObservation: He was born in 1950.",
     tr_later("an Observation line after the Action")),
    ("Thought: let me look.\nAction: Search[Observation deck of the Eiffel Tower]", tr_later("the word inside a tool input")),
    ("Thought: the next Observation will tell me.\nAction: Search[Steve Jobs]", tr_later("the word inside a thought")),
    ("Thought: I know it.\nAction: Finish[25185]\n  observation: 25185 is right.",
     tr_later("an indented, lower-case Observation line")),
    ("**Observation:** the answer is 1955.\nAction: Finish[25185]", tr_later("an Observation line in Markdown bold")),
    ("", tr_later("an empty reply")),
]
_OBSERVATION_LINE = re.compile(r"^[\s>*`_]*observation", re.IGNORECASE | re.MULTILINE)


@reference
def flag_truth(reply: str) -> bool:
    """Does a line of the reply start (after spaces, '>', '*', '`' or '_') with the word Observation?"""
    return bool(_OBSERVATION_LINE.search(reply))


FLAG_HINTS = {
    0: tr_later("a line that starts with 'Observation' is one the model wrote itself: the loop adds its Observations "
                "later."),
    1: tr_later("look at the start of each line only (re.MULTILINE and ^), never for the word anywhere."),
    2: tr_later("look at the start of each line only (re.MULTILINE and ^), never for the word anywhere."),
    3: tr_later("allow spaces before it, and any case: the small model is not careful about either."),
    4: tr_later("Markdown emphasis around the label still makes it an Observation line: allow ** and backticks before "
                "it."),
    5: tr_later("an empty reply has no lines, and nothing invented."),
}


H_UNSEEN = (tr_later("a reply drawn for this check: True exactly when one of its lines starts (after spaces, '>', '*', "
                     "'`' or '_') with the word Observation, in any case."))
LINES = ("Thought: I need his birth year.", "Action: Search[Steve Jobs]", "Thought: the Observation may help.",
         "Action: Search[Observation deck height]", "Action: Calculate[(2024 - 1955) * 365]", "Action: Finish[25185]",
         "The next observation will tell.", "I think the answer is 1955.")


def unseen_reply(invented: bool) -> str:
    """A reply drawn for this check, with an Observation line or without."""
    rng = cases()
    lines = [rng.choice(LINES) for _ in range(rng.randint(1, 4))]
    if invented:
        label = rng.choice(["Observation", "observation", "OBSERVATION"])
        lead = rng.choice(["", "  ", "\t", "**", "> ", "`"])
        lines.insert(rng.randint(0, len(lines)), f"{lead}{label}: {rng.choice(['it was 1955.', '25185', 'none'])}")
    return "\n".join(lines)


@exercise("03b.flag", "build", "Flag an invented Observation",
          "Write `invents_observation(reply)`: True when a line of the reply starts with an Observation label; "
          "parse_reply's own flag is refused.", forbid=("agentkit.parsing:parse_reply",),
          warm=lambda: recorded_runs(), objects=False)
def _flag(rule):
    if not callable(rule):
        raise Fail(tr("your answer"), tr("a function invents_observation(reply) -> bool"), repr(rule),
                   tr("define it with def."))
    recorded = [(run, number, reply) for run, replies in recorded_runs().items()
                for number, reply in enumerate(replies, 1)]
    flagged = []
    for run, number, reply in recorded:
        said = call(rule, reply, case=tr("{run}, recorded step {number}", run=run, number=number), hint=FLAG_HINTS[0])
        expected = flag_truth(reply)
        if bool(said) != expected:
            raise Fail(tr("{run}, recorded step {number}: {reply}", run=run, number=number, reply=repr(reply[:90])),
                       str(expected), repr(said), FLAG_HINTS[0] if expected else FLAG_HINTS[1])
        if said:
            flagged.append(tr("{run} step {number}", run=run, number=number))
    drawn = [(unseen_reply(number % 2 == 0), tr_later("a reply drawn for this check")) for number in range(10)]
    cases().shuffle(drawn)
    for number, (reply, what) in enumerate(FLAG_CASES + drawn):
        hint = FLAG_HINTS.get(number, H_UNSEEN)
        case = tr("{what}: {reply}", what=tr(what), reply=repr(reply))
        said = call(rule, reply, case=case, hint=hint)
        expected = flag_truth(reply)
        if bool(said) != expected:
            raise Fail(case, str(expected), shown(said), hint)
    return tr("Of the {recorded} recorded replies your rule flags {flagged}: {which}, the chat reply that copied the "
              "loop's format reminder. The few-shot run stops generating where an Observation would start, so none "
              "of its replies can carry one.", recorded=len(recorded), flagged=len(flagged),
              which=", ".join(flagged) or tr("none"))


# --- 03b.break: a recorded reply, continued the way the small model does, poisons the naive parser ------


def _tool_calls(reply: str, parse) -> list:
    tools = default_executor()
    ReActAgent(ScriptedLLM([Rule(REACT_MARKER, reply)]), tools, 1, parse=parse).run(CHECKPOINT_QUESTION, verbose=False)
    return [(entry.tool, entry.argument, str(entry.output)) for entry in tools.log]


@exercise("03b.break", "break", "A recorded reply, poisoned",
          "Set `reply` to a recorded few-shot reply with a tool Action, plus text after it: naive_parse must send "
          "that text to the tool.", objects=False)
def _break(reply):
    if not isinstance(reply, str):
        raise Fail(tr("your answer"), tr("a str: one model reply"), type(reply).__name__,
                   tr("write the reply as a string."))
    recorded = [r for replies in recorded_runs().values() for r in replies if parse_reply(r).action]
    tool_replies = [r for r in recorded if not parse_reply(r).is_finish]
    start = next((r for r in recorded if reply.startswith(r.rstrip())), None)
    if start is None or start not in tool_replies:
        endings = " or ".join(repr(r.strip().splitlines()[-1]) for r in tool_replies)
        raise Fail(tr("the start of your reply"),
                   tr("a recorded reply that calls a tool, unchanged (ending {endings})", endings=endings),
                   repr(reply[:90]), tr("a Finish calls no tool: start from one of the other two.") if start else
                   tr("copy a reply from few_shot_agent.trace (section 3) and add to its end."))
    naive, defended = naive_parse(reply), parse_reply(reply)
    if naive.argument == defended.argument or naive.is_finish:
        raise Fail("naive_parse(reply)", tr("a tool input longer than the Action line's brackets"),
                   repr(naive.argument[:120]), tr("the recorded reply stops at its ']'; add what the small model writes "
                                                  "after an Action (its Finish reply in section 3 goes on: '\\n\\nNow "
                                                  "the real question.')."))
    naive_calls, defended_calls = _tool_calls(reply, naive_parse), _tool_calls(reply, parse_reply)
    if not naive_calls or not defended_calls or naive_calls[0][1] == defended_calls[0][1]:
        raise Fail(tr("one step of the agent"), tr("the tool gets different inputs through the two parsers"),
                   f"naive: {naive_calls}; defended: {defended_calls}", tr("keep the recorded Action line unchanged."))
    tool, poisoned, result = naive_calls[0]
    return tr("Through naive_parse the {tool} tool received {poisoned} and answered {result}; through parse_reply it "
              "received {defended} and answered {answer} (the tools' logs). The model wrote the same Action either "
              "way: only the parser decided what ran.", tool=tool, poisoned=f"{poisoned!r:.60}",
              result=repr(result[:60]), defended=repr(defended_calls[0][1]), answer=repr(defended_calls[0][2][:60]))


# --- concept questions ------------------------------------------------------------------------

question("03b.q1", "Why did the chat run end at max_steps, not at the repeat fuse?", {
    "a": ("The fuse is switched off for a real model.", False,
          "the agent is the same as in chapters 02 and 03, fuse included; only the model changed."),
    "b": ("The model's replies were all different: each one answered from memory in other words, so no two actions "
          "matched and the fuse had nothing to compare.", False,
          "two chat replies ended on the same answer from memory; the fuse compares actions, and there were none."),
    "c": ("The fuse watches repeated actions, and no chat reply held an action the parser could run.", True,
          "a reply without an action is answered with the format reminder; only max_steps stops a model that never "
          "acts."),
    "d": ("The replay stops after three recorded replies.", False,
          "the recording holds what the run asked for; max_steps=3 decided there would be three."),
}, hint="section 2, 'Which limit ended the run?'.")

question("03b.q2", "Why does no few-shot reply carry an Observation the model wrote itself?", {
    "a": ("At temperature 0 the model never invents anything.", False,
          "temperature 0 makes the choice greedy, not honest; the chat run at temperature 0 did invent one."),
    "b": ("The two examples tell the model never to write one, and a model that follows its prompt's examples "
          "closely obeys that rule.", False,
          "the examples show the format, and hold real Observations; a small model copies patterns, it does not obey "
          "rules."),
    "c": ("parse_reply deletes it from the reply.", False,
          "parse_reply drops invented text from what it runs and re-sends, and flags it; the raw reply keeps it. "
          "Section 3 checks the raw replies."),
    "d": ("Generation stops where the model would start an Observation of its own.", True,
          "the stop sequence ends the reply before the line is written, so there is nothing to drop or flag."),
}, hint="section 3, what CompletionLLM sends with the prompt.")
