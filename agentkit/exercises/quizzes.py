"""A concept question as a widget: the options, a Check button, and the explanation of the choice."""
from __future__ import annotations

import html


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
        options = "\n".join(f"  {letter}) {text}" for letter, (text, _, _) in self.q.options.items())
        return f"{self.q.id}: {self.q.prompt}\n{options}\n(choose an option and press Check, or call quiz(\"{self.q.id}\", \"a\"))"

    def __repr__(self) -> str:
        return self.text()


def widget(q) -> QuizPlaceholder:
    """Question `q` with radio buttons and a Check button; plain text where ipywidgets is missing."""
    from . import answer_question

    try:
        import ipywidgets as widgets
    except ImportError:
        return QuizPlaceholder(q, None)
    choice = widgets.RadioButtons(options=[(f"{k}) {t}", k) for k, (t, _, _) in q.options.items()], value=None,
                                  layout=widgets.Layout(width="auto"))
    button = widgets.Button(description="Check", button_style="primary")
    feedback = widgets.HTML()

    def on_click(_):
        if choice.value is None:
            feedback.value = "<i>Choose an option first.</i>"
            return
        verdict = answer_question(q.id, choice.value)
        colour = "#1a7f37" if verdict.ok else "#b35900"
        feedback.value = f"<pre style='white-space: pre-wrap; color: {colour}'>{html.escape(verdict.text)}</pre>"

    button.on_click(on_click)
    box = widgets.VBox([widgets.HTML(f"<b>{q.id}</b> {q.prompt}"), choice, button, feedback])
    box.add_class("agentkit-quiz")  # read by tools/browser_test.py, with the question's id:
    box.add_class("agentkit-quiz-" + q.id.replace(".", "-"))
    return QuizPlaceholder(q, box)
