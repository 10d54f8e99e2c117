"""The course's own words in Chinese (agentkit.i18n): chosen as promised, and never silently stale.

Every string the code passes to `tr()` and every label a panel shows must have its translation in
data/strings_zh-CN.json, with the same fields; the catalogue holds nothing the code no longer says.
"""
import ast
import importlib
import json
import pkgutil
import re
import string
import sys
from pathlib import Path

import pytest

from agentkit import i18n
from agentkit.i18n import set_language, tr

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agentkit"
CATALOGUE = ROOT / "data" / "strings_zh-CN.json"
sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(autouse=True)
def english_afterwards(monkeypatch):
    monkeypatch.delenv("AGENTKIT_LANG", raising=False)
    yield
    set_language(None)


def test_english_is_the_default_and_a_template_is_filled_in_either_language():
    assert i18n.language() == "en"
    assert tr("Run") == "Run" and tr("The run failed: {kind}: {error}", kind="E", error="x") == "The run failed: E: x"
    set_language("zh")
    assert i18n.language() == "zh-CN" and tr("Run") == "运行"
    assert tr("The run failed: {kind}: {error}", kind="E", error="x") == "运行失败：E：x"
    assert tr("a string no catalogue has") == "a string no catalogue has"  # stays English, never half-translated


def test_the_language_comes_from_the_setting_the_environment_or_the_chinese_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTKIT_LANG", "zh-CN")
    assert i18n.language() == "zh-CN"
    set_language("en")
    assert i18n.language() == "en"  # the explicit choice wins
    set_language(None)
    monkeypatch.delenv("AGENTKIT_LANG")
    (tmp_path / "zh-CN").mkdir()
    monkeypatch.chdir(tmp_path / "zh-CN")
    assert i18n.language() == "zh-CN"  # a kernel started beside the Chinese notebooks


def test_an_unknown_language_is_a_clear_error_naming_the_ones_there_are(monkeypatch):
    with pytest.raises(ValueError, match="en, zh-CN"):
        set_language("klingon")
    monkeypatch.setenv("AGENTKIT_LANG", "fr")
    with pytest.raises(ValueError, match="'fr'"):
        i18n.language()


# --- what the code says is what the catalogue holds --------------------------------------------------------

TRANSLATORS = ("tr", "tr_later")


def translator_calls():
    """(path, call) of every tr() and tr_later() in agentkit whose text is a literal."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in TRANSLATORS
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                yield path, node


def strings_in_code() -> dict[str, str]:
    """Every literal string passed to tr() or tr_later() in agentkit, with where it is."""
    found = {}
    for path, node in translator_calls():
        found.setdefault(node.args[0].value, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def registered_texts() -> dict[str, str]:
    """Every text of every chapter's exercises and questions, as the checks show it: titles, tasks (a task made by
    tr_later by its template), predictions' hints, explanations and labels, questions, options and explanations."""
    from agentkit import exercises
    from agentkit.exercises.predictions import Prediction

    for chapter in exercises.CHAPTERS:
        exercises._load(chapter)
    found = {}

    def add(text, where):
        if text:
            found.setdefault(getattr(text, "template", text), where)

    for ex in exercises.REGISTRY.exercises.values():
        add(ex.title, f"{ex.id} title")
        add(ex.task, f"{ex.id} task")
        if isinstance(ex.checker, Prediction):
            spec = ex.checker
            add(spec.pointer, f"{ex.id} pointer")
            add(spec.source, f"{ex.id} source")
            for label in spec.labels:
                add(label, f"{ex.id} label")
            for row, why in spec.why.items():
                add(why, f"{ex.id} why ({row})")
    for q in exercises.REGISTRY.questions.values():
        add(q.prompt, f"{q.id} question")
        add(q.hint, f"{q.id} hint")
        for letter, (text, _, why) in q.options.items():
            add(text, f"{q.id} option {letter}")
            add(why, f"{q.id} option {letter}, why")
    return found


def panel_labels() -> dict[str, str]:
    """Every control label and button of every chapter's panel, as run_panel would translate it."""
    pytest.importorskip("ipywidgets")
    from agentkit import widgets

    labels = {}
    for info in pkgutil.iter_modules(widgets.__path__):
        module = importlib.import_module(f"agentkit.widgets.{info.name}")
        for name in dir(module):
            if name.endswith("_panel") and name != "run_panel":
                row = getattr(module, name)().children[0]
                for control in row.children:
                    text = getattr(control, "description", "")
                    if text and not ("_" in text and text.isidentifier()):
                        labels.setdefault(text, f"agentkit/widgets/{info.name}.py ({name})")
    return labels


def catalogue() -> dict[str, str]:
    return json.loads(CATALOGUE.read_text(encoding="utf-8"))


def test_every_string_the_course_translates_has_a_translation_and_no_translation_is_left_over():
    wanted = {**strings_in_code(), **registered_texts(), **panel_labels()}
    have = catalogue()
    missing = {text: where for text, where in wanted.items() if text not in have}
    assert not missing, "no Chinese for these (data/strings_zh-CN.json):\n" + "\n".join(
        f"  {where}: {text!r}" for text, where in missing.items())
    unused = sorted(set(have) - set(wanted))
    assert not unused, f"the code no longer says these: {unused}"


FIELD = re.compile(r"{(\w*)[^{}]*}")


def test_a_translation_has_the_fields_of_its_english_and_the_glossarys_words():
    from test_translations import glossary

    terms = glossary()
    wrong = []
    for english, chinese in sorted(catalogue().items()):
        if sorted(FIELD.findall(chinese)) != sorted(FIELD.findall(english)):
            wrong.append(f"{english!r}: the fields of {chinese!r} are not its English's")
        rest = chinese
        for _, chosen, _ in terms:  # a rejected word inside a chosen term (单元 in 单元格) is the chosen term
            rest = rest.replace(chosen, " ")
        wrong += [f"{chinese!r}: the glossary says {chosen!r} for {term!r}, not {word!r}"
                  for term, chosen, rejected in terms for word in rejected if word in rest]
    assert not wrong, "\n".join(wrong)


def test_every_template_is_given_exactly_its_fields_where_it_is_used():
    """tr("{n} calls", n=3): the fields a literal template names are the keywords the call gives (so a translation,
    which has the same fields, is always filled in whole), and a text given no fields names none."""
    wrong = []
    for path, node in translator_calls():
        if any(k.arg is None for k in node.keywords):  # **fields: not readable here
            continue
        named = {f for _, f, _, _ in string.Formatter().parse(node.args[0].value) if f is not None}
        given = {k.arg for k in node.keywords}
        if given and named != given:
            wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: names {sorted(named)}, given {sorted(given)}")
    assert not wrong, "\n".join(wrong)


def test_a_panel_speaks_the_learners_language():
    pytest.importorskip("ipywidgets")
    import ipywidgets as widgets

    from agentkit.widgets import run_panel

    set_language("zh-CN")
    panel = run_panel({"fuse": widgets.Checkbox(description="repeat fuse"),
                       "max_steps": widgets.IntSlider(description="max_steps")}, lambda **values: None)
    fuse, steps, button = panel.children[0].children
    assert (fuse.description, steps.description, button.description) == ("重复熔断器", "max_steps", "运行")
