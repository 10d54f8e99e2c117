"""Read a ReAct reply: one Thought, one Action. The parser never raises.

What `parse_reply` accepts, exactly:

* Normalisation first: full-width brackets 【】 and ［］ become [ ], full-width
  parentheses （） become ( ), the full-width colon ： becomes :, and code-fence
  markers (``` plus an optional language tag) are dropped, on their own lines or
  around an action on one line (```Action: Search[x]```).
* Markdown emphasis or backticks around a label or an action are ignored:
  `**Action:** Search[x]`, `Action: `Search[x]``, `**Observation:**`.
* A tool action is `Action: Name[input]`, at the start of a line or after other text
  on it. Case and spacing are free (`action :Name [x]`), the label may carry a
  number (`Action 2:`), and it may be left out when a line starts with `Name[`.
  Name is letters, digits, `_` and `-`.
* `Finish[answer]` (any case) may stand anywhere, with or without `Action:`.
* Whichever comes first wins: the first action, or the first line the model
  starts with `Observation`. Everything from that point on (after the first
  action's line, or from the invented Observation) is dropped: never executed,
  never re-sent as history. `invented_observation` records that it happened.
* Tool input comes from the action's own line only, between the `[` and its
  matching `]` (inner brackets nest: `Calculate[(1+2)*[3][0]]` keeps `(1+2)*[3][0]`).
  Without a closing bracket, the rest of that line is the input.
* A Finish answer may span lines: from `Finish[` to its matching `]` anywhere in
  the reply (or, unclosed, up to the next Thought/Action/Observation line).
* One pair of quotes around an input is removed; surrounding spaces are stripped.
* Anything else (no action at all) yields `action=""` and a `problem` message;
  the agent feeds that back as an Observation and the run goes on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

FINISH = "Finish"

_FULL_WIDTH = str.maketrans({"【": "[", "】": "]", "［": "[", "］": "]", "（": "(", "）": ")", "：": ":"})
# Repetitions are bounded or follow fixed text, so no reply (say 20,000 '*') makes a search quadratic.
_FENCE = re.compile(r"```+(?:[ \t]*[\w+#.-]+)?[ \t]*$|```+", re.MULTILINE)
_DECOR = r"[*`]{0,3}"  # markdown bold or inline code around a label or an action
_LABEL_END = r"[ \t\d*`]{0,12}:[*` \t]*"  # an optional step number, the colon, decoration
_NAME = r"([A-Za-z_][\w-]*)[ \t]*\["
_LABELLED = re.compile(_DECOR + r"\baction" + _LABEL_END + _NAME, re.IGNORECASE)
_BARE = re.compile(r"^[ \t]*" + _DECOR + _NAME, re.MULTILINE)
_FINISH = re.compile(_DECOR + r"\bfinish[ \t]*\[", re.IGNORECASE)
_OBSERVATION_LINE = re.compile(r"^[ \t]*" + _DECOR + r"observation\b", re.IGNORECASE | re.MULTILINE)
_LABEL_LINE = re.compile(r"^[ \t]*" + _DECOR + r"(?:thought|action|observation)\b", re.IGNORECASE | re.MULTILINE)
_ACTION_LABEL_AT_END = re.compile(_DECOR + r"action" + _LABEL_END + "$", re.IGNORECASE)
_THOUGHT_LABEL = re.compile(r"^\s*" + _DECOR + r"thought" + _LABEL_END, re.IGNORECASE)

FORMAT_REMINDER = (
    "Your reply had no action I could run. Reply with one Thought line and one Action line, "
    "like\nThought: what to do next\nAction: ToolName[input]\n"
    "or, when you know the answer, Action: Finish[the answer]."
)


@dataclass
class Parsed:
    """What one reply asks for. `action` is a tool name, "Finish", or "" (nothing usable)."""

    thought: str
    action: str
    argument: str
    invented_observation: bool = False
    problem: str = ""

    @property
    def is_finish(self) -> bool:
        return self.action == FINISH

    def as_history(self) -> str:
        """The cleaned reply, as it is re-sent to the model: never the dropped text."""
        thought = f"Thought: {self.thought}\n" if self.thought else ""
        if not self.action:
            return thought.rstrip()
        return f"{thought}Action: {self.action}[{self.argument}]"


def normalise(text: str) -> str:
    """Full-width punctuation to ASCII, code-fence markers removed."""
    if not text.isascii():  # full-width punctuation is never ASCII: most replies skip the table
        text = text.translate(_FULL_WIDTH)
    return _FENCE.sub("", text) if "```" in text else text


def _balanced(text: str, start: int) -> tuple[str, bool]:
    """The text after the '[' at `start` up to its matching ']', and whether it closed."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], True
    return text[start + 1 :], False


def _clean_argument(argument: str) -> str:
    argument = argument.strip()
    if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "\"'`":
        argument = argument[1:-1].strip()
    return argument


def _thought(text: str) -> str:
    return " ".join(_THOUGHT_LABEL.sub("", text.strip()).split())


def _parse(reply: str) -> Parsed:
    text = normalise(reply)
    tool = min((m for m in (_LABELLED.search(text), _BARE.search(text)) if m), key=lambda m: m.start(), default=None)
    finish = _FINISH.search(text)
    invented = _OBSERVATION_LINE.search(text)
    # The earliest of the three decides; a Finish inside a line of thought still counts.
    candidates = [m for m in (tool, finish) if m]
    action = min(candidates, key=lambda m: m.start()) if candidates else None
    if action is not None and action is tool and finish and finish.start() < tool.end():
        action = finish  # "Action: Finish[...]" is matched by both; it is a Finish
    if invented and (action is None or invented.start() < action.start()):
        # The model wrote its own Observation before acting: whatever follows rests on it.
        return Parsed(_thought(text[: invented.start()]), "", "", True, FORMAT_REMINDER)
    if action is None:
        return Parsed(_thought(text), "", "", False, FORMAT_REMINDER)

    thought = _thought(_ACTION_LABEL_AT_END.sub("", text[: action.start()]))
    bracket = action.end() - 1
    if action is finish:
        answer, closed = _balanced(text, bracket)
        if not closed:
            label = _LABEL_LINE.search(answer)
            answer = answer[: label.start()] if label else answer
        end = bracket + 1 + len(answer) + (1 if closed else 0)
        return Parsed(thought, FINISH, _clean_argument(answer), bool(_OBSERVATION_LINE.search(text, end)))
    line_end = text.find("\n", bracket)
    line = text[: line_end if line_end != -1 else len(text)]
    argument, _ = _balanced(line, bracket)
    rest = text[len(line) :]
    name = action.group(1)
    if name.lower() == FINISH.lower():
        name = FINISH
    return Parsed(thought, name, _clean_argument(argument), bool(_OBSERVATION_LINE.search(rest)))


# The well-formed reply, read in one step. Without backticks, colons or asterisks in the thought, or brackets
# other than the action's, none of the rules above can find anything else in it.
_WELL_FORMED = re.compile(r"(?:Thought: ([^\n\[\]`*:]*)\n)?Action: ([A-Za-z_][\w-]*)\[([^\n\[\]`]*)\]")


def _parse_well_formed(reply: str):
    """The Parsed of a reply in exactly the form the role prompt asks for, or None for any other reply."""
    form = _WELL_FORMED.fullmatch(reply) if reply.isascii() else None  # ASCII: nothing to normalise
    if form is None:
        return None
    thought, name, argument = form.groups()
    name = FINISH if name.lower() == FINISH.lower() else name
    return Parsed(" ".join((thought or "").split()), name, _clean_argument(argument))


def parse_reply(reply) -> Parsed:
    """Parse a model reply into a Parsed. Never raises, whatever `reply` is."""
    try:
        reply = "" if reply is None else str(reply)
        return _parse_well_formed(reply) or _parse(reply)
    except Exception as e:  # a parser bug must not end the run; say so instead
        return Parsed("", "", "", False, f"{FORMAT_REMINDER} (parser error: {type(e).__name__})")


# --- the parser from the incident, kept to show what goes wrong -----------------

# The incident's regex, verbatim: under DOTALL, `$` matches only at the very end of the
# reply, so the lazy group cannot stop early: it runs from the first "Action:" to the end.
INCIDENT_ACTION = re.compile(r"Action:\s*(.*?)$", re.DOTALL)


def naive_parse(reply) -> Parsed:
    """The parser of the documented incident. Do not use it.

    Everything after the first "Action:" is the action: the tool name up to the first
    '[', and as input the rest of the reply (one trailing ']' removed). Every line the
    model invented after its Action becomes part of the tool input.
    """
    text = "" if reply is None else str(reply)
    match = INCIDENT_ACTION.search(text)
    if match is None:
        return Parsed(_thought(text), "", "", False, FORMAT_REMINDER)
    name, _, argument = match.group(1).partition("[")
    argument = argument.rstrip()
    argument = argument[:-1] if argument.endswith("]") else argument
    return Parsed(_thought(text[: match.start()]), name.strip(), argument.strip())
