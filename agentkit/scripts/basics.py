"""Chapter 0: a few plain questions the stand-in can answer by content."""
from ..llm import Rule

RULES = [
    Rule("capital of France", "The capital of France is Paris.", name="capital-france"),
    Rule("What is my name", lambda p: "Your name is Ada." if "my name is Ada" in p
         else "I don't know your name: nothing in this prompt says it.", name="whats-my-name"),
]
