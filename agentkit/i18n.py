"""The course's own words in the learner's language: English in the code, a catalogue per other language.

    set_language("zh-CN")      # or AGENTKIT_LANG=zh-CN; a kernel started in notebooks/zh-CN/ picks zh-CN itself
    tr("Run")                  # "运行" in zh-CN, "Run" in English
    tr("{n} calls", n=3)       # a template: looked up as written, then filled in, in either language
    HINT = tr_later("...")     # English now (a str), translated by tr() where it is shown: for module-level text

A string the course shows is either the literal first argument of tr() or tr_later() (where it is shown, or where a
module defines it), or the text of a registered exercise or question (agentkit.exercises, translated when shown).

A catalogue (data/strings_zh-CN.json) maps each English string, exactly as the code writes it, to its
translation. A string the catalogue lacks stays English, so a changed English string is never shown with a stale
translation; tests/test_i18n.py fails, naming it, until a translator gives it one. English is the default, and
what every stored output shows. The notebooks' prose is translated apart (tools/translate.py).
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

LANGUAGES = ("en", "zh-CN")
ALIASES = {"en": "en", "en-us": "en", "en-gb": "en", "zh": "zh-CN", "zh-cn": "zh-CN", "zh_cn": "zh-CN",
           "zh-hans": "zh-CN", "cn": "zh-CN"}
_chosen: str | None = None


def normalise(lang: str) -> str:
    """A language's name as the course spells it; a name it has no catalogue for is a ValueError naming them."""
    found = ALIASES.get(str(lang).strip().lower())
    if found is None:
        raise ValueError(f"no language {lang!r} here: choose one of {', '.join(LANGUAGES)}")
    return found


def set_language(lang: str | None) -> str | None:
    """Choose the language of the course's messages for this kernel (None: back to the automatic choice)."""
    global _chosen
    _chosen = None if lang is None else normalise(lang)
    return _chosen


def language() -> str:
    """set_language's choice, else AGENTKIT_LANG, else zh-CN in a kernel started in notebooks/zh-CN/, else English."""
    if _chosen:
        return _chosen
    env = os.environ.get("AGENTKIT_LANG", "").strip()
    if env:
        return normalise(env)
    return "zh-CN" if Path.cwd().name == "zh-CN" else "en"


@functools.lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    if lang == "en":
        return {}
    from .data import read_text

    return json.loads(read_text(f"strings_{lang}.json"))


class Later(str):
    """English text, as a str, that remembers its template and fields so that tr() can translate it when shown."""

    template: str
    fields: dict


def tr_later(template: str, /, **fields) -> Later:
    """`template` filled in English now; tr() of it, where it is shown, gives it in the language of that moment."""
    text = Later(template.format(**fields) if fields else template)
    text.template, text.fields = template, fields
    return text


def tr(text: str, /, **fields) -> str:
    """`text` in the current language (English where the catalogue has no entry), with `fields` filled in. A text
    made by tr_later() is looked up by its template; anything else by itself, so an English text given twice (or a
    learner's own words) comes back as it is."""
    if isinstance(text, Later):
        text, fields = text.template, {**text.fields, **fields}
    elif not isinstance(text, str):  # a value shown where text usually is: as it is
        return str(text)
    lang = language()
    if lang != "en":
        text = catalogue(lang).get(text, text)
    return text.format(**fields) if fields else str(text)
