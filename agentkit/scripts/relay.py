"""Stand-in rules for chapter 17: the relay runs, the sub-agents that walk part of a line, the summariser.

What the stand-in knows: the relay's protocol (read the slip, follow each page's "Next station", multiply
at the end) and nothing about any line: every tariff, station and distance it uses is read from the
prompt, in whatever form the context left it (a page, a Thought, a note read back, a summary, a
sub-agent's report). It reads every number it sees perfectly (chapter 17's `LongContextLLM` adds
misreading) and never invents one.

* The lead: Dispatch first; in the step after reading the slip its Thought restates the tariff (only
  then); then it Searches (or, with a `Walk` tool, delegates) the next station of the furthest page it
  sees. At the end of the line it Calculates tariff * distance if it sees a tariff; if not, it reads its
  notes (when it has a `Notes` tool), else asks the desk again, and once the desk has refused it
  Finishes with "unknown" rather than guess. With a `Note` tool it notes the tariff right after the slip.
* A sub-agent (`WALK_ASSIGNMENT`): Searches from its station, follows the pages, and Finishes with the
  last page's station sentence after its quota of stations or at the end of the line.
* The summariser (`SUMMARY_PROMPT`): one line for the furthest station it sees, one for a refused slip,
  and the tariff last, each copied from the text it was given.
"""
from __future__ import annotations

import re

from ..context_strategies import SUMMARY_MARKER
from ..react import FALLBACK_MARKER, REACT_MARKER
from ..relay import SLIP_GONE, STATION, TARIFF, task_of
from ..scripted import Rule

REFUSED = SLIP_GONE.split("; ")[1]  # "it cannot print it again."
WALK_QUESTION = re.compile(r"^Question: Walk a relay line from the station (.+?): .*?at most (\d+) stations",
                           re.MULTILINE)
CALCULATED = re.compile(r"Action: Calculate\[(\d+) \* (\d+)\]\nObservation: (\d+(?:\.\d+)?)")
LAST_ACTION = re.compile(r"Action: (\w+)\[")


def tariff_seen(text: str):
    """The tariff the text states last (a page, a Thought, a note, a summary), or None."""
    found = TARIFF.findall(text)
    return int(found[-1]) if found else None


def furthest_station(text: str):
    """The station sentence with the highest number in the text: (match, number, next name or None)."""
    best = None
    for match in STATION.finditer(text):
        if best is None or int(match.group(1)) > int(best.group(1)):
            best = match
    return best


def _tools_offer(prompt: str, name: str) -> bool:
    return f"\n- {name}[input]:" in prompt


def _thought_action(thought: str, action: str, argument) -> str:
    return f"Thought: {thought}\nAction: {action}[{argument}]"


def lead_reply(prompt: str) -> str:
    task = task_of(prompt)
    done = CALCULATED.findall(prompt)
    if done:
        return _thought_action(f"The fee is {done[-1][2]} credits.", "Finish", f"{done[-1][2]} credits")
    tariff, station = tariff_seen(prompt), furthest_station(prompt)
    at = prompt.rfind("\nAction: ")
    last = LAST_ACTION.match(prompt, at + 1) if at >= 0 else None
    last_action = last.group(1) if last else ""
    walk = "Walk" if _tools_offer(prompt, "Walk") else "Search"
    if station is not None and station.group(7):  # the end of the line
        km = int(station.group(7))
        if tariff is not None:
            return _thought_action(f"The line ends at {station.group(4)}, {km} km from the depot; the fee is the "
                                   f"tariff times the distance.", "Calculate", f"{tariff} * {km}")
        if REFUSED in prompt or "Your notes:" in prompt:
            return _thought_action("I cannot see the tariff, and the slip cannot be printed again.", "Finish",
                                   "unknown: the tariff is not in what I can see")
        if _tools_offer(prompt, "Notes"):
            return _thought_action("I cannot see the tariff any more; I noted it.", "Notes", "")
        return _thought_action("I cannot see the tariff; I ask the desk for the slip.", "Dispatch", task.parcel)
    if tariff is None and station is None and "Action: Dispatch[" not in prompt:
        return _thought_action("First the dispatch slip, for the tariff.", "Dispatch", task.parcel)
    if last_action == "Dispatch" and tariff is not None:
        if _tools_offer(prompt, "Note"):
            return _thought_action(f"The slip says tariff: {tariff} credits per km. The desk prints it once, so I "
                                   "note it.", "Note", f"tariff: {tariff} credits per km")
        return _thought_action(f"The slip says tariff: {tariff} credits per km. Now I follow the line from "
                               f"{task.stations[0]}.", walk, task.stations[0])
    if station is None:
        return _thought_action(f"I follow the line from its first station, {task.stations[0]}.", walk,
                               task.stations[0])
    following = station.group(6)
    return _thought_action(f"Station {station.group(1)}, {station.group(4)}, is {station.group(5)} km from the "
                           f"depot; next is {following}.", walk, following)


def walker_reply(prompt: str) -> str:
    start, quota = WALK_QUESTION.search(prompt).groups()
    seen = {m.group(1) for m in STATION.finditer(prompt)}  # the pages read so far
    station = furthest_station(prompt)
    if station is None:
        return _thought_action(f"I start at {start}.", "Search", start)
    if station.group(7) or len(seen) >= int(quota):
        return _thought_action("That is as far as I go; I report the last page's station sentence.", "Finish",
                               station.group(0))
    return _thought_action(f"Next is {station.group(6)}.", "Search", station.group(6))


def summary_reply(prompt: str) -> str:
    lines = []
    station = furthest_station(prompt)
    if station is not None:
        lines.append(f"- {station.group(0)}")
    if REFUSED in prompt:
        lines.append("- The dispatch desk will not print the slip again.")
    tariff = tariff_seen(prompt)
    if tariff is not None:
        lines.append(f"- tariff: {tariff} credits per km (from the dispatch slip, which the desk prints once)")
    return "\n".join(lines) or "- Nothing found yet."


def fallback_reply(prompt: str) -> str:
    done = CALCULATED.findall(prompt)
    answer = f"{done[-1][2]} credits" if done else "unknown: the run stopped before the fee was calculated"
    return f"Action: Finish[{answer}]"


def _is(marker: str, walker: bool = False):
    def matches(prompt: str) -> bool:
        if marker not in prompt:
            return False
        return (WALK_QUESTION.search(prompt) is not None) if walker else task_of(prompt) is not None
    return matches


RULES = [
    Rule(_is(SUMMARY_MARKER), summary_reply, name="relay-summary"),
    Rule(_is(FALLBACK_MARKER), fallback_reply, name="relay-fallback"),
    Rule(_is(REACT_MARKER, walker=True), walker_reply, name="relay-walker"),
    Rule(_is(REACT_MARKER), lead_reply, name="relay-lead"),
]
