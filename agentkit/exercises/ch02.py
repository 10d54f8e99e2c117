"""Chapter 02's exercises: predict how often observations travel, build a reply parser, cut runs short on purpose, two questions."""
from __future__ import annotations

import re

from ..i18n import tr, tr_later
from ..llm import Rule, ScriptedLLM
from ..modes import get_llm
from ..react import REACT_MARKER, ROLE_PROMPT, ReActAgent
from ..scripts.react import CHECKPOINT_QUESTION, SAVINGS_QUESTION, checkpoint_reply
from ..tools import default_executor
from . import Fail, NotDone, call, cases, exercise, question, reference, shown
from .predictions import Prediction, prediction

# --- 02.predict: how often the observations travel ------------------------------------------------

OBSERVATION_LINE = re.compile(r"^Observation:", re.MULTILINE)
PREDICT_KEYS = ("times the first observation is sent", "observations sent, whole run")


def savings_run(max_steps: int = 20) -> ReActAgent:
    """Section 4's savings run on a fresh stand-in (its ledger is the agent's llm.calls)."""
    agent = ReActAgent(get_llm("fake"), default_executor(), max_steps=max_steps)
    agent.run(SAVINGS_QUESTION, verbose=False)
    return agent


def observations_per_call(agent) -> list[int]:
    """How many Observation lines each call's prompt carried, read from the ledger."""
    return [len(OBSERVATION_LINE.findall(c.messages[-1]["content"])) for c in agent.llm.calls]


def _truth() -> dict:
    carried = observations_per_call(savings_run())
    return dict(zip(PREDICT_KEYS, (sum(n >= 1 for n in carried), sum(carried))))


def _hint(key: str, guess: tuple, actual: tuple, prediction: dict) -> str:
    calls = len(savings_run().llm.calls)
    guess = int(guess[0])
    if key == PREDICT_KEYS[0]:
        return (tr("the call that ran the first tool did not send its result: the Observation is written after "
                   "that call's reply, so it travels from the second call on, with every call after.")
                if guess == calls else
                tr("the model is stateless: the first result must travel with every later call, or the model "
                   "would not know it (section 3 prints the last prompt: every earlier step is in it)."))
    if guess in (calls, calls - 1):
        return tr("each call re-sends ALL the observations before it, not only the newest: call n carries "
                  "n - 1 of them. Add them up.")
    if guess in (calls * calls, calls * (calls - 1)):
        return tr("call n carries only the n - 1 observations before it, not all of them: the sum "
                  "0 + 1 + 2 + ... is about half of calls x calls.")
    return tr("call n carries the n - 1 observations before it (section 3: the third prompt carries two). Add them "
              "up.")


def _done(truth: dict) -> str:
    carried = observations_per_call(savings_run())
    return tr("The calls carried {first} ... {last} observations: one more each time, so the whole run sent {sent} "
              "of them for {results} tool results. That growing series is the quadratic bill of section 4.",
              first=carried[:4], last=carried[-2:], sent=sum(carried), results=len(carried) - 1)


prediction("02.predict", "How often an observation travels",
           "Set `prediction` to the two counts for the savings run, before running anything.",
           Prediction(truth=_truth, labels=("",), hint=_hint, done=_done, source="the ledger",
                      case=lambda key: tr("{key}, the savings run", key=key),
                      pointer="count the calls of the savings run (section 4), then what each one re-sends.",
                      why={PREDICT_KEYS[0]: "the first result is written after the call that asked for it, and "
                                            "travels with every call after that one",
                           PREDICT_KEYS[1]: "call n carries the n - 1 observations before it: 0 + 1 + 2 + ..."}))


# --- 02.parse: a reply parser ----------------------------------------------------------------------

PARSE_CASES = [  # (reply, what the case is): parse_truth gives the answer, after yours (tests list them)
    ("Thought: I need her birth year.\nAction: Search[Ada Lovelace]", tr_later("the contract's own shape")),
    ("Thought: The calculator says 209.\nAction: Finish[209]", tr_later("a Finish")),
    ("thought: look it up\naction: search[Alan Turing]", tr_later("lower-case labels")),
    ("Thought: check the syntax\nAction: Search[Python lists [1, 2, 3]]", tr_later("brackets inside the input")),
    ("Thought: I need his birth year.\nAction: Search[Alan Turing]\nObservation: Alan Turing was born in 1900.\n"
     "Thought: So 124 years.\nAction: Finish[124]", tr_later("a reply that invents its own Observation and goes on")),
    ("Thought: I need its height.\nAction: Search[Eiffel Tower] for its height [in metres]",
     tr_later("words after the action, with brackets of their own")),
    ("I think the answer is big.", tr_later("no action at all")),
]
_ACTION = re.compile(r"action\s*:\s*(\w+)\s*\[", re.IGNORECASE)


@reference
def parse_truth(reply: str) -> tuple:
    """(tool, input) of the first Action, its input up to the matching ']' on its line; (None, None) without one."""
    match = _ACTION.search(reply)
    if match is None:
        return None, None
    depth, start, end = 1, match.end(), match.end()
    for end in range(start, len(reply)):
        if reply[end] == "\n":
            break
        depth += (reply[end] == "[") - (reply[end] == "]")
        if depth == 0:
            return match.group(1), reply[start:end].strip()
    return match.group(1), reply[start:end].strip()


PARSE_HINTS = {
    0: tr_later("read the first 'Action: Tool[input]': the tool name before '[', the input inside the brackets."),
    1: tr_later("Finish is read like any tool: ('Finish', the answer)."),
    2: tr_later("models vary the case: match the label without regard to case (re.IGNORECASE); section 2's table shows "
                "tiny_parse missing this one."),
    3: tr_later("the input ends at the ']' that matches its '[': count the brackets. A lazy (.*?) stops at the first "
                "']'."),
    4: tr_later("take the FIRST action, from its own line only: everything after it is text the model invented (never "
                "run it; chapter 03 shows what it costs). Under re.DOTALL a greedy group runs into those lines."),
    5: tr_later("the input ends at the ']' that matches its '[': a greedy (.*) runs to the last ']' on the line."),
    6: tr_later("a reply with no action is (None, None), never an exception: the loop sends a format reminder back "
                "(section 2)."),
}


PARSE_WORDS = ("Ada", "Lovelace", "birth", "year", "Grace", "Hopper", "list", "of", "primes", "under", "the", "Eiffel",
               "Tower", "height", "2024", "1955", "365", "+", "*", "-", "city", "Oslo", "rainfall")
H_UNSEEN = (tr_later("a reply drawn for this check: the first 'Action:' label in any case, the tool name before '[', "
                     "the input up to the ']' that matches its '[' on that line; (None, None) when there is no action."))


def _words(rng, low: int, high: int) -> str:
    return " ".join(rng.choice(PARSE_WORDS) for _ in range(rng.randint(low, high)))


def unseen_reply() -> str:
    """A reply drawn for this check: labels in any case, brackets inside the input, words after it, invented
    lines after it, or no action at all."""
    rng = cases()
    thought = f"{rng.choice(['Thought', 'thought', 'THOUGHT'])}: {_words(rng, 2, 8)}."
    if rng.random() < 0.15:
        return f"{thought}\nI will answer {_words(rng, 1, 4)} soon."
    tool = rng.choice(["Search", "Calculate", "Finish", "Lookup", "search", "Translate"])
    parts = [_words(rng, 1, 4)]
    if rng.random() < 0.5:
        parts.append(f"[{_words(rng, 1, 3)}]" if rng.random() < 0.7 else f"[{rng.randint(1, 9)}, [{rng.randint(1, 9)}]]")
        parts.append(_words(rng, 0, 2))
    argument = " ".join(p for p in parts if p)
    label = rng.choice(["Action", "action", "ACTION", "Action "])
    reply = f"{thought}\n{label}: {tool}[{argument}]"
    if rng.random() < 0.4:
        reply += f" {_words(rng, 1, 3)} [{_words(rng, 1, 2)}]"
    if rng.random() < 0.5:
        reply += (f"\nObservation: {_words(rng, 3, 8)}\nThought: {_words(rng, 2, 5)}\n"
                  f"Action: Finish[{rng.randint(10, 99999)}]")
    return reply


def inventor() -> ScriptedLLM:
    """A stand-in that, on its first call, writes a Search, an invented Observation and a Finish with a wrong answer."""
    def reply(prompt: str) -> str:
        if "Observation:" not in prompt.split("Question:", 1)[-1]:
            return ("Thought: I need the year Steve Jobs was born.\nAction: Search[Steve Jobs]\nObservation: Steve Jobs "
                    "was born in 1950.\nThought: So (2024 - 1950) * 365.\nAction: Finish[27010]")
        return checkpoint_reply(prompt)
    return ScriptedLLM([Rule(REACT_MARKER, reply, name="inventor")])


def run_with_parser(llm, parse, max_steps: int = 5) -> str:
    """Section 2's tiny_react with `parse` in place of tiny_parse; the history keeps only what was parsed."""
    tools, history = default_executor(), []
    for _ in range(max_steps):
        prompt = [{"role": "system", "content": ROLE_PROMPT.format(tools=tools.describe())},
                  {"role": "user", "content": "\n\n".join([f"Question: {CHECKPOINT_QUESTION}", *history])}]
        tool, argument = call(parse, llm.think(prompt), case=tr("the live run"), hint=PARSE_HINTS[6])
        if tool and str(tool).lower() == "finish":
            return str(argument).strip()
        observation = tools.run(tool, argument) if tool else "No Action found; follow the format."
        history.append(f"Action: {tool}[{argument}]\nObservation: {observation}")
    return "no answer within max_steps"


def _as_pair(said):
    if isinstance(said, (tuple, list)) and len(said) == 2:
        tool, argument = said
        return (None if tool is None else str(tool), None if argument is None else str(argument).strip())
    return said


DRAWN_REPLIES = 8


@exercise("02.parse", "build", "A reply parser",
          "Write `my_parse(reply)`: (tool, input) of the first Action, or (None, None) when there is none; "
          "agentkit's parse_reply and naive_parse are refused.",
          forbid=("agentkit.parsing:parse_reply", "agentkit.parsing:naive_parse"), objects=False)
def _parse(my_parse):
    if not callable(my_parse):
        raise Fail(tr("your answer"), tr("a function my_parse(reply) -> (tool, input)"), repr(my_parse),
                   tr("define it with def."))
    drawn = [(unseen_reply(), tr_later("a reply drawn for this check")) for _ in range(DRAWN_REPLIES)]
    for number, (reply, what) in enumerate(PARSE_CASES + drawn):
        hint = PARSE_HINTS.get(number, H_UNSEEN)
        case = tr("{what}: {reply}", what=tr(what), reply=repr(reply))
        said = _as_pair(call(my_parse, reply, case=case, hint=hint))
        expected = parse_truth(reply)
        if said is None:
            raise Fail(case, repr(expected), "None",
                       tr("your function returned nothing: return a pair, (tool, input) or (None, None)."))
        same = (isinstance(said, tuple) and said[1] == expected[1]
                and (said[0] == expected[0] or (said[0] or "").lower() == (expected[0] or "").lower()))
        if not same:
            raise Fail(case, repr(expected), shown(said), hint)
    answers = {}
    for name, llm in (("checkpoint", get_llm("fake")), ("inventor", inventor())):
        answers[name] = (run_with_parser(llm, my_parse), len(llm.calls))
    if answers["checkpoint"][0] != "25185" or answers["inventor"][0] != "25185":
        raise Fail(tr("the live runs"), tr("25185 from both stand-ins"),
                   f"checkpoint: {answers['checkpoint'][0]!r}; inventor: {answers['inventor'][0]!r}", PARSE_HINTS[4])
    return tr("Your parser read all {replies} replies as meant ({set} of set shapes, {drawn} drawn for this check), "
              "and drove the loop to 25185 in {checkpoint} calls on the checkpoint stand-in, and in {inventor} on one "
              "whose first reply invents an Observation and a wrong Finish (27010): the invented lines were never run.",
              replies=len(PARSE_CASES) + len(drawn), set=len(PARSE_CASES), drawn=len(drawn),
              checkpoint=answers["checkpoint"][1], inventor=answers["inventor"][1])


# --- 02.break: the largest budget that still cuts a run short ---------------------------------------

BREAK_RUNS = {"checkpoint": CHECKPOINT_QUESTION, "savings": SAVINGS_QUESTION}


def budget_run(question: str, max_steps: int) -> ReActAgent:
    agent = ReActAgent(get_llm("fake"), default_executor(), max_steps=max_steps)
    agent.run(question, verbose=False)
    return agent


@exercise("02.break", "break", "Cut the runs short",
          "Set `budgets` to the largest max_steps at which each run still stops without an answer.", objects=False)
def _break(budgets):
    if not isinstance(budgets, dict):
        raise Fail(tr("your answer"), tr('a dict {"checkpoint": ..., "savings": ...}'), type(budgets).__name__,
                   tr("copy the dict from the exercise cell."))
    report = []
    for name, question_text in BREAK_RUNS.items():
        budget = budgets.get(name)
        if budget is None or budget is Ellipsis:
            raise NotDone()
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise Fail(f"{name}, max_steps={budget!r}", tr("a whole number, at least 1"), repr(budget),
                       tr("a run gets at least one step: ReActAgent refuses max_steps below 1."))
        cut, more = budget_run(question_text, budget), budget_run(question_text, budget + 1)
        if cut.stop_reason == "finished":
            raise Fail(f"{name}, max_steps={budget}", tr("stopped by max_steps, no answer"),
                       tr("finished with {answer} in {calls} LLM calls", answer=repr(cut.answer),
                          calls=len(cut.llm.calls)),
                       tr("the Finish reply is a step too: it takes one LLM call, and no tool call. Count the calls "
                          "the run needs, Finish included, and stop one short (section 2's ledger, section 4's run)."))
        if more.stop_reason != "finished":
            raise Fail(f"{name}, max_steps={budget}", tr("the largest budget that cuts the run short"),
                       tr("cut short, and with max_steps={more} still cut short", more=budget + 1),
                       tr("you cut it short, but with one more step it would still be cut: find the largest budget. "
                          "Every tool call the run needs is a step, and the Finish is one more."))
        spent = sum(c.prompt_tokens for c in cut.llm.calls)
        report.append(tr("{name}, max_steps={budget}: {calls} LLM calls, {tools} tool calls, {spent} prompt tokens, "
                         "last observation {last}, answer: none", name=name, budget=budget, calls=len(cut.llm.calls),
                         tools=len(cut.tools.log), spent=spent, last=repr(cut.trace[-1].observation)))
    return tr("{report}. Each run paid for every step and holds its result in the last observation, but the budget "
              "ran out on the step that would have said it: max_steps counts the Finish too.", report="; ".join(report))


# --- concept questions ------------------------------------------------------------------------------

question("02.q1", "Why does a ReAct run's total of prompt tokens grow about quadratically with its number of steps?", {
    "a": ("The model writes longer replies at every step.", False,
          "replies are billed as completion tokens, and the stand-in's are about the same length each step; the "
          "growth is in what we send."),
    "b": ("The role prompt and the tool list are re-sent with every call, and with more steps there are more calls, "
          "each paying for that fixed block again.", False,
          "that part is the same every time: re-sending it alone makes a straight line, the independent calls of "
          "section 4."),
    "c": ("Every call re-sends the whole history, one step longer each time: the prompts grow linearly, so their sum "
          "grows with the square.", True,
          "section 4's left plot is the line, the right plot its sum, next to the straight line of independent "
          "calls."),
    "d": ("The tokenizer needs more tokens for later steps.", False,
          "the same text always counts the same; there is simply more text in each later prompt."),
}, hint="section 4, the paragraph before the savings run.")

question("02.q2", "The parser finds no action in a reply. What does the loop do?", {
    "a": ("Raise an exception: the model broke the contract.", False,
          "an exception would end the run over one bad reply; the parser never raises (section 2)."),
    "b": ("Send a format reminder back as the Observation and go on; the step counts against max_steps.", True,
          "the model reads the problem in its next prompt and can fix the format; the budget still bounds the run."),
    "c": ("Return the reply as the answer: a reply without an action is the model saying it is done, and the loop "
          "trusts it.", False,
          "a reply without Finish is not an answer; only Finish ends a run with one."),
    "d": ("Ask again with the same prompt until a reply parses.", False,
          "the stand-in gives the same prompt the same reply, and a real model may too: the loop would spin without "
          "a bound. The reminder changes the prompt, and max_steps bounds it."),
}, hint="section 2, the diagram's 'no action' branch.")
