"""Widget panels, one module per chapter. Each panel's callback is a plain function pytest drives.

`run_panel` is the only place a panel is built. A click runs the callback and puts what it
printed into an HTML widget and every figure it drew into an Image widget as PNG bytes. All
of it travels as widget state, so it does not depend on when the front end processes output
messages (JupyterLab's commsOverSubshells, VS Code, Colab): an Output widget plus
`plt.show()` left blank or clipped charts in a real browser.
"""
from __future__ import annotations

import contextlib
import html
import io

from ..i18n import tr

PLACEHOLDER = "Panel: run this cell to open it (controls, a Run button, then text and charts)."


def _panel_class():
    import ipywidgets as widgets

    class Panel(widgets.VBox):
        """A VBox whose plain-text form is a placeholder, not a dump of its children.

        A saved notebook shows the text form until the cell runs; nbval compares it too.
        """

        def __repr__(self) -> str:
            return PLACEHOLDER

    return Panel


def figure_png(fig, dpi: int = 100) -> bytes:
    """A figure as PNG bytes (the whole figure: nothing clipped)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def capture(show, values: dict) -> tuple[str, list[bytes]]:
    """Call show(**values); return what it printed and the PNG of every figure it drew.

    A ValueError (a value out of range) becomes a message; any other exception is reported
    in the text too, so a click never fails silently.
    """
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    text = io.StringIO()
    # The inline backend's show() would display and close the figures before we can read them.
    real_show, plt.show = plt.show, lambda *args, **kwargs: None
    try:
        with contextlib.redirect_stdout(text):
            try:
                show(**values)
            except ValueError as e:
                print(tr("Cannot run with these values: {error}", error=e))
            except Exception as e:  # noqa: BLE001 - the learner must see it in the panel
                print(tr("The run failed: {kind}: {error}", kind=type(e).__name__, error=e))
    finally:
        plt.show = real_show
    images = []
    for number in sorted(set(plt.get_fignums()) - before):
        fig = plt.figure(number)
        images.append(figure_png(fig))
        plt.close(fig)
    return text.getvalue(), images


def label_text(description: str) -> str:
    """A control's label in the learner's language; a label that is a parameter's name (max_steps) is code."""
    return description if "_" in description and description.isidentifier() else tr(description)


def run_panel(controls: dict, show, label: str = "Run", charts: bool = True):
    """Controls, a Run button, then the text and charts of the last run.

    A click calls show(**values). Nothing runs at display time: the notebook runs the
    default configuration through the same callback in the next cell. `charts=False` says
    the callback only prints (the tests and the browser check then expect no chart).
    """
    import ipywidgets as widgets

    for control in controls.values():
        if hasattr(control, "style") and hasattr(control.style, "description_width"):
            control.style.description_width = "initial"  # long labels are not cut
        if getattr(control, "description", ""):  # a label in words is translated; a parameter's name stays code
            control.description = label_text(control.description)
    button = widgets.Button(description=tr(label), button_style="primary")
    status = widgets.HTML(value=f"<i>{html.escape(tr('Press the button to run.'))}</i>")
    text = widgets.HTML()
    figures = widgets.VBox()

    def on_click(_):
        button.disabled = True
        status.value = f"<i>{html.escape(tr('Running…'))}</i>"
        try:
            printed, images = capture(show, {name: control.value for name, control in controls.items()})
            text.value = f"<pre style='white-space: pre-wrap; margin: 0'>{html.escape(printed)}</pre>"
            # flex-start: shown at its own size (never stretched to the panel's width, which blurs it)
            figures.children = [widgets.Image(value=png, format="png",
                                              layout=widgets.Layout(max_width="100%", align_self="flex-start"))
                                for png in images]
            status.value = ""
        finally:
            button.disabled = False

    button.on_click(on_click)
    row = widgets.HBox([*controls.values(), button], layout=widgets.Layout(flex_flow="row wrap"))
    panel = _panel_class()([row, status, text, figures])
    panel.draws_charts = charts
    panel.add_class("agentkit-panel-charts" if charts else "agentkit-panel-text")  # read by tools/browser_test.py
    return panel
