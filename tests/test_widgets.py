"""The shared panel wiring: a click passes every control's value to the callback."""
import ipywidgets as widgets

from agentkit.widgets import run_panel


def click(panel):
    controls_row, _ = panel.children
    controls_row.children[-1].click()  # the Run button is last in the row


def test_a_click_passes_the_current_values(capsys):
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


def test_a_bad_value_explains_itself_instead_of_raising(capsys):
    def show(x):
        raise ValueError(f"x must be even, got {x}")

    click(run_panel({"x": widgets.IntSlider(value=3)}, show))

    assert "Cannot run with these values: x must be even, got 3" in capsys.readouterr().out
