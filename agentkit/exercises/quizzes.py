"""Concept questions: answered in code, or as a widget with the options, a Check button and the explanation, in the
learner's language (agentkit.i18n) when the question is shown or answered."""
from __future__ import annotations

import html
from typing import Optional

from ..i18n import language, tr
from .core import NOT_DONE, SHOWN, Verdict, _find, shown
from .saved import record, was_shown


class QuizPlaceholder:
    """What a quiz cell shows as plain text (a saved notebook, or a front end without widgets)."""

    def __init__(self, q, widget) -> None:
        self.q, self.widget = q, widget

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs) if self.widget is not None else {}
        bundle = dict(bundle or {})
        bundle["text/plain"] = self.text()
        return bundle

    def text(self) -> str:
        options = "\n".join(f"  {letter}) {tr(text)}" for letter, (text, _, _) in self.q.options.items())
        return (f"{self.q.id}: {tr(self.q.prompt)}\n{options}\n"
                + tr("(choose an option and press Check, or call quiz(\"{id}\", \"a\"))", id=self.q.id))

    def __repr__(self) -> str:
        return self.text()


def widget(q) -> QuizPlaceholder:
    """Question `q` with radio buttons and a Check button; plain text where ipywidgets is missing."""
    try:
        import ipywidgets as widgets
    except ImportError:
        return QuizPlaceholder(q, None)
    choice = widgets.RadioButtons(options=[(f"{k}) {tr(t)}", k) for k, (t, _, _) in q.options.items()], value=None,
                                  layout=widgets.Layout(width="auto"))
    button = widgets.Button(description=tr("Check"), button_style="primary")
    feedback = widgets.HTML()

    def on_click(_):
        if choice.value is None:
            feedback.value = f"<i>{html.escape(tr('Choose an option first.'))}</i>"
            return
        verdict = answer_question(q.id, choice.value)
        colour = "#1a7f37" if verdict.ok else "#b35900"
        feedback.value = f"<pre style='white-space: pre-wrap; color: {colour}'>{html.escape(verdict.text)}</pre>"

    button.on_click(on_click)
    box = widgets.VBox([widgets.HTML(f"<b>{q.id}</b> {tr(q.prompt)}"), choice, button, feedback])
    box.add_class("agentkit-quiz")  # read by tools/browser_test.py, with the question's id:
    box.add_class("agentkit-quiz-" + q.id.replace(".", "-"))
    return QuizPlaceholder(q, box)


def answer_question(id: str, letter: str) -> Verdict:
    """Answer question `id` with an option letter; the verdict explains the choice (and, when right, every option)."""
    q = _find("question", id)
    if isinstance(q, Verdict):
        return q
    letter = str(letter).strip().lower().rstrip(")")
    if letter not in q.options:
        return Verdict(id, NOT_DONE, tr("{id}: choose one of {letters} (you gave {given}).", id=id,
                                        letters=", ".join(q.options), given=shown(letter, 40)))
    text, correct, why = q.options[letter]
    if not correct:
        lines = [tr("{id}: {letter}) is not it. {why}", id=id, letter=letter, why=_sentence(tr(why))),
                 tr("  Try again. Hint: {hint}", hint=tr(q.hint)) if q.hint else tr("  Try again.")]
        verdict = Verdict(id, "wrong", "\n".join(lines))
    else:
        shown_before, why = was_shown(id), _sentence(tr(why))
        lines = [tr("{id}: {letter}) matches the answer shown before (show_solution): progress keeps it as shown, not "
                    "solved. {why}", id=id, letter=letter, why=why) if shown_before else
                 tr("{id}: {letter}) is right. {why}", id=id, letter=letter, why=why), tr("  The others:")]
        lines += [f"  {other}) {_sentence(tr(w))}" for other, (_, c, w) in q.options.items() if other != letter]
        verdict = Verdict(id, SHOWN if shown_before else "correct", "\n".join(lines))
    record(id, verdict.status)
    return verdict


def _sentence(text: str) -> str:
    """Start with a capital, unless the first word is code (max_steps, parse_reply, `x`); English only."""
    if language() != "en":
        return text
    first = text.split(" ", 1)[0]
    return text if not first.isalpha() else text[:1].upper() + text[1:]


def quiz(id: str, letter: Optional[str] = None):
    """Show question `id` as a widget (options, a Check button, the explanation); with `letter`, answer in code."""
    q = _find("question", id)
    if isinstance(q, Verdict) or letter is not None:
        return q if isinstance(q, Verdict) else answer_question(id, letter)
    return widget(q)
