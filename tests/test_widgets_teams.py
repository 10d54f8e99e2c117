"""Chapter 15's panel: every system runs through the callback, its figures come from the ledgers, and a bad value
explains itself."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from agentkit.frontier import SYSTEMS, dollars  # noqa: E402
from agentkit.widgets.teams import run_system, show_system, shipped_frontier  # noqa: E402


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_system_runs_and_its_calls_per_model_add_up_to_the_ledgers(system):
    result = run_system(system, 0.1, 1.0)
    report = result["report"]
    assert result["tasks"] == len(report.runs) == 37
    assert sum(result["calls"].values()) == sum(run.calls for run in report.runs)
    assert result["dollars"] == pytest.approx(sum(dollars(s) for s in result["systems"]))
    if system == "cheap alone":
        assert set(result["calls"]) == {"cheap"} and result["strong_share"] == 0
    if system == "strong alone":
        assert set(result["calls"]) == {"strong"} and result["strong_share"] == 1


def test_the_threshold_moves_the_cascade_and_the_error_rate_moves_the_cheap_model():
    never, always = run_system("cascade", 0.3, 0.0), run_system("cascade", 0.3, 1.0)
    assert never["strong_share"] == 0 and always["strong_share"] > 0.5
    assert always["report"].summary.success_rate > never["report"].summary.success_rate
    clean = run_system("cheap alone", 0.0, 1.0)
    assert clean["report"].summary.success_rate > never["report"].summary.success_rate


def test_the_callback_prints_the_figures_and_draws_two_charts(capsys):
    show_system("supervisor", 0.1, 1.0)
    printed = capsys.readouterr().out
    assert "supervisor, the cheap model at 10% errors per reply, escalation threshold 1, 37 tasks" in printed
    assert "LLM calls per task" in printed and "per 1,000 solved tasks" in printed
    assert len(plt.get_fignums()) == 1 and len(plt.gcf().axes) == 2
    plt.close("all")


def test_the_shipped_frontier_has_a_point_per_system_at_every_rate():
    for rate in (0.0, 0.1, 0.3):
        assert set(shipped_frontier(rate)) == {"cheap alone", "strong alone", "router", "cascade 0.5",
                                               "cascade 0.75", "cascade 1"}


@pytest.mark.parametrize("values, message", [
    (("committee", 0.1, 1.0), "system must be one of"),
    (("cascade", 0.15, 1.0), "error_rate must be one of"),
    (("cascade", 0.1, 0.9), "threshold must be one of"),
])
def test_a_bad_value_explains_itself(values, message):
    with pytest.raises(ValueError, match=message):
        run_system(*values)
