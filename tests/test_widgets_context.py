"""Chapter 17's panel: its default run goes through the callback, every figure comes from the runs' ledgers, and a bad
value explains itself."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from agentkit.context_runs import STRATEGIES  # noqa: E402
from agentkit.widgets import capture  # noqa: E402
from agentkit.widgets import context as panel_module  # noqa: E402
from agentkit.widgets.context import PANEL_TASKS, compare, settings_for, show_strategy, strategy_panel  # noqa: E402


def test_the_default_run_prints_both_strategies_and_draws_two_charts(capsys, monkeypatch):
    assert PANEL_TASKS == ("relay-20", "relay-40", "relay-60") and panel_module.CURVE_TASK in PANEL_TASKS
    monkeypatch.setattr(panel_module, "PANEL_TASKS", ("relay-20", "relay-40"))  # the notebook runs all three
    runs = show_strategy()
    printed = capsys.readouterr().out
    assert set(runs) == {"full history", "observation masking"}
    assert all([run.task.id for run in mine] == ["relay-20", "relay-40"] for mine in runs.values())
    for name, mine in runs.items():
        assert f"{name:20} right on {sum(r.correct for r in mine)} of 2 tasks" in printed
    assert len(plt.get_fignums()) == 1 and len(plt.gcf().axes) == 2
    plt.close("all")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_sliders_reach_each_strategys_own_setting(strategy, monkeypatch):
    monkeypatch.setattr(panel_module, "PANEL_TASKS", ("relay-20",))  # one short task: the settings are what is tested
    settings = settings_for(strategy, 3, 1200)
    runs = compare(strategy, 3, 1200)
    if strategy != "full history":
        assert all(run.settings[key] == value for run in runs[strategy] for key, value in settings.items())
    assert settings == {"sliding window": {"window": 3}, "note tool": {"window": 3}, "observation masking": {"keep": 3},
                        "sub-agent": {"segment": 3}, "compaction": {"threshold": 1200},
                        "layered (08)": {"budget": 1200}}.get(strategy, {})


@pytest.mark.parametrize("values, message", [
    ({"strategy": "magic"}, "strategy must be one of"), ({"window": 0}, "window must be from 1 to 20"),
    ({"threshold": 50}, "threshold must be from 300"), ({"knob": 0.5}, "the long-context knob must be from 0.0 to 0.1"),
])
def test_a_bad_value_explains_itself_in_the_panel(values, message):
    printed, images = capture(show_strategy, values)
    assert printed.startswith("Cannot run with these values:") and message in printed and images == []


def test_the_panel_has_the_five_controls_the_chapter_names():
    panel = strategy_panel()
    controls = panel.children[0].children[:-1]
    assert [c.description.split(" ")[0] for c in controls] == ["strategy", "window", "compaction", "long-context",
                                                               "prompt"]
