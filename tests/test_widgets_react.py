"""Notebook 03's failure panel: the plain callback over its whole range, and the widget."""
import matplotlib

matplotlib.use("Agg")

import pytest

from agentkit.sick import DISEASES
from agentkit.widgets.react import MAX_STEPS_RANGE, failure_panel, plot_calls, run_failure

LOW, HIGH = MAX_STEPS_RANGE


@pytest.mark.parametrize("disease", list(DISEASES))
def test_callback_over_every_max_steps(disease):
    for max_steps in range(LOW, HIGH + 1):
        fuse = max_steps % 2 == 0  # each call runs both settings; alternate which one is shown
        report = run_failure(disease, max_steps, fuse)
        shown = report.calls_by_fuse["fuse on" if fuse else "fuse off"]
        assert shown == (report.llm_calls, report.tool_calls)
        assert report.llm_calls <= max_steps and report.tool_calls <= report.llm_calls
        assert len(report.trace) == report.llm_calls
        assert report.stop_reason in ("finished", "repeat_fuse", "max_steps")
        assert report.text.count("\n") >= len(report.trace) + 3


def test_stuck_figures_in_the_panel():
    assert run_failure("stuck", 5, True).calls_by_fuse == {"fuse off": (5, 5), "fuse on": (2, 1)}
    assert run_failure("stuck", HIGH, False).calls_by_fuse == {"fuse off": (20, 20), "fuse on": (2, 1)}


def test_unknown_disease_is_a_clear_error():
    with pytest.raises(ValueError, match="choose one of"):
        run_failure("hiccups")


def test_plot_and_panel_build():
    ax = plot_calls(run_failure("stuck", 5, True).calls_by_fuse)
    assert [round(p.get_height()) for p in ax.patches] == [5, 5, 2, 1]
    panel = failure_panel()
    assert panel.children[0].children[0].options == tuple(DISEASES)
