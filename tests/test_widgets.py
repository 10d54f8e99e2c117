"""The shared panel wiring: a click passes every control's value to the callback, and the
text and charts land in widget state (HTML and PNG Image widgets), not in an output area."""
import importlib
import pkgutil

import ipywidgets as widgets
import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import agentkit.widgets as panels  # noqa: E402
from agentkit.widgets import PLACEHOLDER, run_panel  # noqa: E402


def click(panel):
    controls_row = panel.children[0]
    controls_row.children[-1].click()  # the Run button is last in the row


def shown(panel):
    _, _, text, charts = panel.children
    return text.value, [bytes(image.value) for image in charts.children]


def test_a_click_passes_the_current_values():
    seen = []
    steps = widgets.IntSlider(value=3, min=1, max=9)
    fuse = widgets.Checkbox(value=True)
    panel = run_panel({"steps": steps, "fuse": fuse}, lambda **values: seen.append(values))

    click(panel)
    steps.value, fuse.value = 7, False
    click(panel)

    assert seen == [{"steps": 3, "fuse": True}, {"steps": 7, "fuse": False}]


def test_nothing_runs_until_the_button_is_clicked():
    seen = []
    run_panel({"x": widgets.IntSlider(value=1)}, lambda **values: seen.append(values))
    assert seen == []


def test_text_and_every_figure_go_into_widget_state_on_every_click():
    def show(n):
        print(f"drawing {n} <charts>")
        for k in range(n):
            plt.subplots()[1].plot([0, k])
        plt.show()  # a callback that shows must not lose its figures

    count = widgets.IntSlider(value=2)
    panel = run_panel({"n": count}, show)
    open_before = plt.get_fignums()
    for n in (2, 1, 3):
        count.value = n
        click(panel)
        text, images = shown(panel)
        assert "drawing" in text and f"{n} &lt;charts&gt;" in text  # printed text, HTML-escaped
        assert len(images) == n and all(png.startswith(b"\x89PNG") and len(png) > 2000 for png in images)
    assert plt.get_fignums() == open_before  # the panel closes what it rendered
    assert not panel.children[0].children[-1].disabled


def test_a_bad_value_explains_itself_instead_of_raising():
    def show(x):
        raise ValueError(f"x must be even, got {x}")

    panel = run_panel({"x": widgets.IntSlider(value=3)}, show)
    click(panel)
    assert "Cannot run with these values: x must be even, got 3" in shown(panel)[0]


def test_an_unexpected_error_is_shown_in_the_panel():
    def show(x):
        raise KeyError("boom")

    panel = run_panel({"x": widgets.IntSlider(value=3)}, show)
    click(panel)
    assert "The run failed: KeyError" in shown(panel)[0]


def test_a_saved_panel_shows_a_placeholder_not_its_children():
    panel = run_panel({"x": widgets.IntSlider(value=1, description="a long description")}, print)
    bundle = panel._repr_mimebundle_()
    assert bundle["text/plain"] == PLACEHOLDER
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert panel.children[0].children[0].style.description_width == "initial"  # labels are not cut


def _chapter_panels():
    for info in pkgutil.iter_modules(panels.__path__):
        module = importlib.import_module(f"agentkit.widgets.{info.name}")
        for name in dir(module):
            if name.endswith("_panel") and name != "run_panel":
                yield f"{info.name}.{name}", getattr(module, name)


@pytest.mark.parametrize("name,make", list(_chapter_panels()))
def test_every_chapter_panel_draws_on_its_default_click(name, make, monkeypatch):
    monkeypatch.setenv("AP_MODE", "fake")
    panel = make()
    click(panel)
    text, images = shown(panel)
    assert text and "The run failed" not in text and "Cannot run" not in text
    assert all(png.startswith(b"\x89PNG") for png in images)
    # A panel says whether it draws: the browser check fails a charting panel that shows none.
    assert bool(images) is panel.draws_charts, f"{name}: {len(images)} charts, draws_charts={panel.draws_charts}"
