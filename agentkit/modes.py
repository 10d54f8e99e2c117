"""The mode switch: which LLM the course's cells get, from AP_MODE (environment or .env).

`fake` (the default) is the stand-in with every chapter's rules, `real` your OpenAI-compatible
server, `local` SmolLM2 served by llama.cpp on 127.0.0.1, `replay` the real-model calls the
course recorded (data/cassettes), answered offline.
"""
from __future__ import annotations

from .local import local_llm
from .protocol import use_as_default
from .cassette import shipped_cassettes
from .replay import ReplayLLM
from .openai_client import OpenAIChatLLM
from .scripted import Rule, ScriptedLLM
from .scripts import course_script
from .settings import setting

VALID_MODES = ("fake", "real", "local", "replay")


def get_llm(mode: str | None = None, script: list[Rule] | None = None):
    """The course's LLM: AP_MODE=fake (default) stand-in, real, local SmolLM2, or replay of recorded calls.

    `script` replaces the stand-in's default rules (ignored by real models).
    """
    mode = (mode or setting("AP_MODE") or "fake").strip().lower()
    if mode == "fake":
        if script is None:
            script = course_script()
        return ScriptedLLM(script)
    if mode == "real":
        return OpenAIChatLLM()
    if mode == "local":
        return local_llm()
    if mode == "replay":
        return ReplayLLM(shipped_cassettes())
    raise ValueError(f"AP_MODE={mode!r} is not a mode. Valid values: {', '.join(VALID_MODES)}.")


use_as_default(get_llm)  # an agent given no LLM gets AP_MODE's choice
