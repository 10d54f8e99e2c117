"""Stand-in rules for the react chapter (empty until the chapter lands)."""
from ..llm import Rule  # noqa: F401

RULES: list = []
