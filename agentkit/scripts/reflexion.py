"""Stand-in rules for chapter 6 (Reflexion).

The task: "How old was <person> when they died?" from the knowledge base's full dates.
The stand-in plays a model that subtracts the years (off by one when the person died
before their birthday that year) unless a lesson in its prompt says otherwise. It obeys
the FIRST lesson it recognises, in prompt order, and names it in its Thought; the
phrases it recognises are in LESSON_EFFECTS. Rules key on the age question, which only
this chapter asks, and read the state (observations, lessons) from the prompt.
"""
from __future__ import annotations

import json
import re
from datetime import datetime

from ..llm import Rule
from ..react import REACT_MARKER
from ..reflexion import REFLECTION_MARKER

TURING_QUESTION = "How old was Alan Turing when he died?"
ADA_QUESTION = "How old was Ada Lovelace when she died?"

_QUESTION = re.compile(r"Question: How old was (?P<name>[^?\n]+?) when (?:he|she|they) died\?")
_LIFE = re.compile(r"\((?P<born>[A-Z][a-z]+ \d{1,2}, \d{4}) - (?P<died>[A-Z][a-z]+ \d{1,2}, \d{4})\)")
_LESSON_LINE = re.compile(r"^\[L(?P<id>\d+)\] (?P<text>.*)$", re.MULTILINE)
_CALCULATED = re.compile(r"Action: Calculate\[[^\]\n]*\]\nObservation: (?P<value>-?\d+)\s*(?:\n|$)")

# The lesson the stand-in writes after a failed age question (it has the word "birthday").
BIRTHDAY_LESSON = {
    "trigger": "asked how old a person was when they died, or at another dated event",
    "error_type": "off-by-one age: subtracted the years and ignored the month and day",
    "fix": "subtract the birth year from the event year, then take 1 off if the event came "
           "before the birthday in that year",
    "applies_to": "age questions with a birth date and an event date",
}

# Which phrase in a lesson makes the stand-in compute which way.
LESSON_EFFECTS = [
    ("birthday", "birthday"),  # exact age: one less if the birthday had not come yet
    ("+ 1", "plus_one"),  # death year - birth year + 1
    ("only the years", "years_only"),  # death year - birth year
]


def _date(text: str) -> datetime:
    return datetime.strptime(text, "%B %d, %Y")


def _followed_lesson(lessons_text: str) -> tuple[str, str]:
    """(lesson id, effect) of the first lesson the stand-in recognises, or ("", "none")."""
    for line in _LESSON_LINE.finditer(lessons_text):
        for phrase, effect in LESSON_EFFECTS:
            if phrase in line.group("text"):
                return line.group("id"), effect
    return "", "none"


def _age_step(prompt: str) -> str:
    question = list(_QUESTION.finditer(prompt))[-1]
    name, scratch, before = question.group("name"), prompt[question.end():], prompt[:question.start()]
    done = _CALCULATED.search(scratch)
    if done:
        return f"Thought: The calculation gives {done.group('value')}.\nAction: Finish[{done.group('value')}]"
    life = _LIFE.search(scratch)
    if life is None:
        return f"Thought: I need {name}'s dates of birth and death.\nAction: Search[{name}]"
    born, died = _date(life.group("born")), _date(life.group("died"))
    lesson_id, effect = _followed_lesson(before)
    years = f"{died.year} - {born.year}"
    if effect == "birthday":
        before_birthday = (died.month, died.day) < (born.month, born.day)
        why = (f"{name} died on {life.group('died').rsplit(',', 1)[0]}, "
               f"{'before' if before_birthday else 'after'} the birthday ({life.group('born').rsplit(',', 1)[0]}) "
               f"that year, so {'take 1 off' if before_birthday else 'the years are the age'}.")
        expression = f"{years} - 1" if before_birthday else years
    elif effect == "plus_one":
        why, expression = "the year of birth counts too, so add 1.", f"{years} + 1"
    elif effect == "years_only":
        why, expression = "only the years matter.", years
    else:
        why, expression = (f"{name} was born in {born.year} and died in {died.year}; "
                           "the age is the difference of the years."), years
    applying = f"Applying L{lesson_id}: " if lesson_id else ""
    return f"Thought: {applying}{why}\nAction: Calculate[{expression}]"


def _is_age_step(prompt: str) -> bool:
    return REACT_MARKER in prompt and _QUESTION.search(prompt) is not None


def _is_age_reflection(prompt: str) -> bool:
    return (REFLECTION_MARKER in prompt and _QUESTION.search(prompt) is not None
            and "Action: Calculate[" in prompt)


RULES = [
    Rule(_is_age_reflection, json.dumps(BIRTHDAY_LESSON), name="reflexion-write-lesson"),
    Rule(_is_age_step, _age_step, name="reflexion-age-step"),
]
