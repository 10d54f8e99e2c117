"""Stand-in rules for the local chapter (empty until the chapter lands)."""
from ..llm import Rule  # noqa: F401

RULES: list = []
