"""The course's own words in Chinese (agentkit.i18n): chosen as promised, and never silently stale.

Every string the code passes to `tr()` and every label a panel shows must have its translation in
data/strings_zh-CN.json, with the same fields; the catalogue holds nothing the code no longer says.
"""
import ast
import functools
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


@functools.lru_cache(maxsize=None)
def trees() -> tuple:
    """(path, syntax tree) of every module of agentkit, parsed once for all the tests that read them."""
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(PACKAGE.rglob("*.py")))


def all_translator_calls():
    """(path, call) of every tr() and tr_later() in agentkit."""
    for path, tree in trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in TRANSLATORS:
                yield path, node


def translator_calls():
    """(path, call) of every tr() and tr_later() in agentkit whose text is a literal."""
    for path, node in all_translator_calls():
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
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


# --- the checks' own words: looked up as written, filled in afterwards, and shown in the learner's language ---

def exercise_trees():
    """(path, tree) of each chapter's exercise module."""
    return [(path, tree) for path, tree in trees() if path.parent.name == "exercises" and path.name.startswith("ch")]
REGISTERING = {"exercise", "prediction", "question", "Prediction"}


def _name(call) -> str:
    return getattr(call.func, "id", getattr(call.func, "attr", ""))


def _formatted(node) -> bool:
    """An f-string, a str.format() or % on a text, or a concatenation of texts: text built before any lookup."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(side, "value", ""), str)
                   for side in (node.left, node.right))
    return isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "format"


def _texts(node, module_values: dict):
    """The string nodes a registered text is made of: literals, f-strings, inside tuples, lists and dicts (values),
    through module-level names; not inside a call (tr_later's own arguments are a template and its fields)."""
    if isinstance(node, ast.Name) and node.id in module_values:
        yield from _texts(module_values[node.id], {})
    elif isinstance(node, (ast.Tuple, ast.List)):
        for item in node.elts:
            yield from _texts(item, module_values)
    elif isinstance(node, ast.Dict):
        for item in node.values:
            yield from _texts(item, module_values)
    elif isinstance(node, (ast.JoinedStr, ast.Constant, ast.BinOp)):
        yield node


def test_no_text_is_formatted_before_it_is_looked_up():
    """tr(f"{n} calls") would look up a text no catalogue can hold: every tr() and tr_later() gets its template as
    written, and every exercise's and question's registered text is a literal or tr_later(template, fields)."""
    wrong = [f"{path.relative_to(ROOT)}:{node.lineno}: tr() of a text built before the lookup"
             for path, node in all_translator_calls() if node.args and _formatted(node.args[0])]
    for path, tree in exercise_trees():
        module_values = {n.targets[0].id: n.value for n in tree.body
                         if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node) in REGISTERING:
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    wrong += [f"{path.relative_to(ROOT)}:{text.lineno}: a registered text formatted before the lookup "
                              "(write tr_later(template, fields))" for text in _texts(argument, module_values)
                              if _formatted(text)]
    assert not wrong, "\n".join(wrong)


def _untranslated(node, module_values: dict, seen=()) -> bool:
    """Is this hint, or a text it is looked up from, a bare literal in words or an f-string (not tr(), not
    tr_later())? Names are followed to their module-level values; tables (dicts, lists) to their items."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and " " in node.value.strip()
    if isinstance(node, (ast.JoinedStr, ast.BinOp)):
        return True
    if isinstance(node, ast.IfExp):
        return any(_untranslated(n, module_values, seen) for n in (node.body, node.orelse))
    if isinstance(node, ast.BoolOp):
        return any(_untranslated(n, module_values, seen) for n in node.values)
    if isinstance(node, ast.Name) and node.id in module_values and node.id not in seen:
        return _untranslated(module_values[node.id], module_values, (*seen, node.id))
    if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
        return any(_untranslated(n, module_values, seen) for n in (node.values if isinstance(node, ast.Dict)
                                                                    else node.elts))
    if isinstance(node, ast.Subscript):
        table = node.value
        if isinstance(table, ast.Subscript) or (isinstance(table, ast.Name) and table.id in module_values):
            table = _element(table, module_values)
        key = getattr(node.slice, "value", None)
        if isinstance(table, (ast.List, ast.Tuple)) and isinstance(key, int):
            return _untranslated(table.elts[key], module_values, seen)
        if isinstance(table, ast.Dict) and isinstance(key, (int, str)):
            return any(_untranslated(v, module_values, seen) for k, v in zip(table.keys, table.values)
                       if getattr(k, "value", None) == key)
        return _untranslated(table, module_values, seen)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get":  # TABLE.get(key, default)
        return any(_untranslated(n, module_values, seen) for n in (node.func.value, *node.args))
    return False  # tr(...), tr_later(...), a function's result, a local: read where it is made


def _element(node, module_values: dict):
    """The literal a module-level name, or a constant index into one (TABLE[0][2]), stands for."""
    if isinstance(node, ast.Name):
        return module_values.get(node.id, node)
    if isinstance(node, ast.Subscript):
        table, key = _element(node.value, module_values), getattr(node.slice, "value", None)
        if isinstance(table, (ast.List, ast.Tuple)) and isinstance(key, int):
            return table.elts[key]
    return node


def test_every_hint_and_success_message_of_a_check_goes_through_the_catalogue():
    """A hint given to Fail or call(), and what a checker returns when the answer is right, is tr(...) or
    tr_later(...) (or a table of those): never a bare sentence, which a Chinese learner would get in English."""
    wrong = []
    for path, tree in exercise_trees():
        module_values = {n.targets[0].id: n.value for n in tree.body
                         if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
        where = lambda node: f"{path.relative_to(ROOT)}:{node.lineno}"  # noqa: E731
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node) in ("Fail", "call", "learner_code"):
                hints = [k.value for k in node.keywords if k.arg == "hint"]
                hints += node.args[3:4] if _name(node) == "Fail" else []
                wrong += [f"{where(h)}: a hint in words, not through tr()" for h in hints
                          if _untranslated(h, module_values)]
            if isinstance(node, ast.FunctionDef) and any(isinstance(d, ast.Call) and _name(d) == "exercise"
                                                         for d in node.decorator_list):
                wrong += [f"{where(r)}: {node.name} returns its message without tr()" for r in ast.walk(node)
                          if isinstance(r, ast.Return) and r.value is not None and _untranslated(r.value, {})]
    assert not wrong, "\n".join(wrong)


@pytest.fixture
def chinese():
    set_language("zh-CN")
    yield
    set_language(None)


def test_a_question_comes_out_in_chinese_under_set_language_and_in_english_by_default():
    from agentkit.exercises import quiz

    english_wrong, english_shown = quiz("03.q1", "a").text, repr(quiz("03.q1"))
    assert "is not it" in english_wrong and "Try again" in english_wrong and "Why does the stuck model" in english_shown
    set_language("zh-CN")
    try:
        wrong, shown = quiz("03.q1", "a"), repr(quiz("03.q1"))  # a question is worded when it is shown
        right = quiz("03.q1", "d")
    finally:
        set_language(None)
    assert wrong.status == "wrong" and "03.q1：a) 不对。max_steps 没有被动过" in wrong.text
    assert "再试一次。提示：第 2 节打印了熔断器关闭和打开时的调用。" in wrong.text
    assert "为什么一旦打开熔断器，卡住的模型" in shown and "a) 熔断器把 max_steps 降到了 2。" in shown
    assert right.ok and "03.q1：d) 正确。" in right.text and "  其他选项：" in right.text
    assert quiz("03.q1", "a").text == english_wrong and repr(quiz("03.q1")) == english_shown  # English again


def test_a_check_speaks_chinese_in_its_forked_child_and_in_process_alike(monkeypatch):
    """The child of a forked check is a copy of the kernel: it sees the language the kernel chose, so the verdict it
    sends back is in Chinese, word for word what the in-process path says."""
    from agentkit.exercises import check, forked
    from test_exercises import last_only, solutions

    english = check("03.fuse", last_only, seed=3)
    set_language("zh-CN")
    try:
        stub = check("03.fuse", None)
        forked_verdict = check("03.fuse", last_only, seed=3)
        right = check("03.fuse", solutions("03")["03.fuse"], seed=3)
        monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")
        here = check("03.fuse", last_only, seed=3)
    finally:
        set_language(None)
    assert english.status == "wrong" and "03.fuse A fuse that catches a stutterer: not yet." in english.text
    assert stub.text.startswith("03.fuse 能抓住结巴者的熔断器：尚未完成。写出 `my_fuse(actions)`：")
    assert forked_verdict.path == ("fork" if forked.AVAILABLE else "in-process") and here.path == "in-process"
    assert (forked_verdict.status, forked_verdict.text) == (here.status, here.text) == ("wrong", here.text)
    lines = forked_verdict.text.splitlines()
    assert lines[0] == "03.fuse 能抓住结巴者的熔断器：还不对。"
    assert [line[:5] for line in lines[1:5]] == ["  用例：", "  应为：", "  你的：", "  提示："]
    assert "第 03 章的熔断器只和上一个行动比较" in lines[4]
    assert right.ok and right.text.startswith("03.fuse 能抓住结巴者的熔断器：正确。在结巴者替身模型上，你的熔断器在 ")
    assert check("03.fuse", last_only, seed=3).text == english.text  # and English again, by default


def test_a_wrong_prediction_keeps_its_numbers_hidden_in_chinese_too():
    from agentkit import exercises
    from agentkit.exercises import check
    from test_exercises import PREDICT_03

    wrong = {**PREDICT_03, "wanderer, fuse on, max_steps=8": (2, 1)}
    exercises.REGISTRY.tries.pop("03.predict", None)
    set_language("zh-CN")
    try:
        verdict = check("03.predict", wrong)
    finally:
        set_language(None)
        exercises.REGISTRY.tries.pop("03.predict", None)
    assert "wanderer, fuse on, max_steps=8 (2, 1)：LLM 调用偏低，工具调用偏低；stuck, fuse off, max_steps=8, fallback：正确" in verdict.text  # row keys stay English
    assert "先不显示，等你要求，或再答错 2 次后显示" in verdict.text and "(8, 8)" not in verdict.text


def test_a_wrong_verdict_translates_the_checks_words_never_the_learners_data(chinese):
    """A case or an expectation can hold a learner's text or a prediction's row ("none" is a defence of chapter 18):
    only a tr_later() text among them is translated; the hint, the check's own, is."""
    from agentkit.exercises.core import Fail, _wrong
    from agentkit.i18n import tr_later

    said = _wrong("x.y", "x.y head", Fail("none", "break", "none", "define it with def.")).text.splitlines()
    assert said == ["x.y head：还不对。", "  用例：none", "  应为：break", "  你的：none", "  提示：用 def 定义它。"]
    assert "  用例：你的答案" in _wrong("x.y", "h", Fail(tr_later("your answer"), "", "", "")).text


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_progress_table_lines_up_in_either_language(lang, monkeypatch):
    """Chinese characters take two columns: every row's mark starts in the same column, as in English."""
    from agentkit.exercises import progress, reset_progress
    from agentkit.text import display_width

    monkeypatch.setenv("AGENTKIT_PROGRESS", "off")
    reset_progress()
    set_language(lang)
    try:
        mark = tr("not done yet")
        rows = [line for line in str(progress("03")).splitlines() if line.startswith("  03.")]
        starts = {display_width(line[:line.rindex(mark)]) for line in rows}
    finally:
        set_language(None)
    assert len(rows) >= 5 and starts == {2 + 10 + 1 + 48 + 1}
