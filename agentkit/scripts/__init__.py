"""The stand-in's script: one module of rules per chapter, joined in course order.

Rules key on text only that chapter's prompts contain, so chapters never collide.
"""
from __future__ import annotations

import importlib

from ..scripted import Rule

# Each module exposes RULES: list[Rule]. Order matters only within a module.
CHAPTER_SCRIPTS = ["basics", "react", "plan", "reflection", "reflexion", "tot", "runtime", "native", "tasks", "world",
                   "memory", "teams", "bridge", "relay"]


def course_script() -> list[Rule]:
    """Every chapter's rules, in course order (a fresh list each call)."""
    rules: list[Rule] = []
    for name in CHAPTER_SCRIPTS:
        rules.extend(importlib.import_module(f"{__name__}.{name}").RULES)
    return rules
