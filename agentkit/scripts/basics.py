"""Chapter 0: a few plain questions the stand-in answers by reading the prompt."""
import re

from ..llm import Rule

INTRODUCTION = re.compile(r"\bmy name is ([A-Z][\w-]*)")


def whats_my_name(prompt: str) -> str:
    """The name the prompt's text gives (the latest, if several), as a model would read it."""
    names = INTRODUCTION.findall(prompt)
    return f"Your name is {names[-1]}." if names else "I don't know your name: nothing in this prompt says it."


RULES = [
    Rule("capital of France", "The capital of France is Paris.", name="capital-france"),
    Rule("What is my name", whats_my_name, name="whats-my-name"),
]
