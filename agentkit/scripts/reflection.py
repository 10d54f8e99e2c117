"""Stand-in rules for the reflection chapter (empty until the chapter lands)."""
from ..llm import Rule  # noqa: F401

RULES: list = []
