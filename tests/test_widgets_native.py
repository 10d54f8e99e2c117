"""Notebook 11's panel callback over its whole range: every count it shows comes from the ledgers."""
import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agentkit.native import format_failures  # noqa: E402
from agentkit.scripts.native import DISEASES  # noqa: E402
from agentkit.widgets.native import MAX_STEPS_RANGE, run_native, show_native  # noqa: E402


@pytest.mark.parametrize("disease", list(DISEASES))
@pytest.mark.parametrize("recovers", [True, False])
def test_every_setting_runs_within_its_limits(disease, recovers):
    for max_steps in range(MAX_STEPS_RANGE[0], MAX_STEPS_RANGE[1] + 1):
        agent = run_native(disease, recovers, max_steps)
        calls = agent.run_calls
        assert 1 <= len(calls) == len(agent.trace) <= max_steps
        failures = sum(format_failures(calls, "native"))
        assert failures == sum(1 for s in agent.trace if s.action == "")
        well_formed = disease in ("none", "three calls at once")
        if recovers and max_steps >= (3 if well_formed else 4):  # one extra step to be told off
            assert agent.answer == "25185" and failures == (0 if well_formed else 1)
            # The stand-in reads tool results, never its own calls: the answer is computed, not echoed.
            assert [t.tool for t in agent.run_tool_calls] == ["Search", "Calculate"]
        if not recovers and not well_formed:
            assert agent.stop_reason == "max_steps" and failures == max_steps and agent.run_tool_calls == []
        if not recovers and disease == "three calls at once" and max_steps >= 2:
            assert agent.stop_reason == "repeat_fuse" and len(calls) == 2


def test_the_printed_counts_and_the_chart_match_the_ledger(capsys):
    agent = show_native("missing field", True, 4)
    text = capsys.readouterr().out
    assert "LLM calls: 4, format failures: 1, tool runs: 2  (from the ledgers)" in text
    assert "required field 'input' is missing" in text
    ax = plt.gcf().axes[0]
    assert [p.get_height() for p in ax.patches] == [4, 1, 2]
    assert ax.get_title() == "native channel, missing field"
    plt.close("all")


@pytest.mark.parametrize("values", [{"disease": "telepathy"}, {"max_steps": 0}, {"max_steps": 9}])
def test_a_bad_value_explains_itself(values):
    with pytest.raises(ValueError):
        run_native(**values)
