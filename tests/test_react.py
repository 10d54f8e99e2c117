"""The ReAct loop: checkpoint, history re-sent, fuses, fallback, steps-left line, on_step."""
import re

import pytest

from agentkit.llm import Rule, ScriptedLLM
from agentkit.modes import get_llm
from agentkit.parsing import FORMAT_REMINDER, naive_parse, parse_reply
from agentkit.react import FALLBACK_MARKER, FALLBACK_PROMPT, ROLE_PROMPT, ReActAgent, StopRun
from agentkit.scripts.react import CHECKPOINT_QUESTION, REACT_MARKER, SAVINGS_QUESTION, SAVINGS_YEARS
from agentkit.sick import (
    FormatBreakerLLM, InventorLLM, StuckLLM, WandererLLM, incident_executor, invented_tail,
)


def run(llm=None, max_steps=5, question=CHECKPOINT_QUESTION, **kwargs):
    agent = ReActAgent(llm, None, max_steps, **kwargs)
    agent.run(question, verbose=False)
    return agent


def test_prompts_carry_the_markers_the_script_keys_on():
    assert ROLE_PROMPT.startswith(REACT_MARKER)
    assert FALLBACK_MARKER in FALLBACK_PROMPT and REACT_MARKER not in ROLE_PROMPT.replace(REACT_MARKER, "", 1)


def test_checkpoint_search_calculate_finish_in_three_calls():
    agent = run()
    assert [s.action for s in agent.trace] == ["Search", "Calculate", "Finish"]
    assert agent.answer == "25185" and agent.stop_reason == "finished" and not agent.unverified
    assert len(agent.llm.calls) == 3
    assert [(c.tool, c.argument) for c in agent.tools.log] == [
        ("Search", "Steve Jobs"), ("Calculate", "(2024 - 1955) * 365")]
    assert agent.tools.log[1].output == "25185"


def test_run_returns_the_answer_and_prints_the_trace(capsys):
    agent = ReActAgent(max_steps=5)
    assert agent.run(CHECKPOINT_QUESTION) == "25185"
    out = capsys.readouterr().out
    assert out.index("Action: Search[Steve Jobs]") < out.index("Action: Calculate[") < out.index("Answer [finished]: 25185")


def test_every_call_resends_the_whole_history():
    prompts = [c.prompt for c in run().llm.calls]
    assert "Observation:" not in prompts[0]
    assert "Action: Search[Steve Jobs]" in prompts[1] and "Observation: Steve Jobs (February 24, 1955" in prompts[1]
    assert "Action: Search[Steve Jobs]" in prompts[2] and "Observation: 25185" in prompts[2]
    assert all(CHECKPOINT_QUESTION in p and "- Search[input]" in p for p in prompts)


def test_prompt_tokens_strictly_grow_step_to_step():
    agent = run(max_steps=SAVINGS_YEARS + 1, question=SAVINGS_QUESTION)
    tokens = [c.prompt_tokens for c in agent.llm.calls]
    assert agent.stop_reason == "finished" and len(tokens) == SAVINGS_YEARS + 1
    assert all(b > a for a, b in zip(tokens, tokens[1:]))
    # The whole run costs more than N calls of the first prompt: the history is paid again each step.
    assert sum(tokens) > 2 * len(tokens) * tokens[0]
    assert float(agent.answer) == pytest.approx(1000 * 1.07**SAVINGS_YEARS, rel=1e-6)


def test_hints_sit_before_the_question():
    agent = ReActAgent(max_steps=5)
    agent.run(CHECKPOINT_QUESTION, verbose=False, hints="Lesson: always compute with the tool.")
    prompt = agent.llm.calls[0].prompt
    assert prompt.index("Lesson: always compute with the tool.") < prompt.index(CHECKPOINT_QUESTION)
    assert "Hints" not in run().llm.calls[0].prompt


@pytest.mark.parametrize("max_steps, fuse, llm_calls, tool_calls", [
    (5, False, 5, 5), (5, True, 2, 1), (20, False, 20, 20), (20, True, 2, 1)])
def test_stuck_model_and_the_repeat_fuse(max_steps, fuse, llm_calls, tool_calls):
    agent = run(StuckLLM(), max_steps, repeat_fuse=fuse)
    assert (len(agent.llm.calls), len(agent.tools.log)) == (llm_calls, tool_calls)
    assert agent.stop_reason == ("repeat_fuse" if fuse else "max_steps")
    assert ("repeat fuse" if fuse else "max_steps") in agent.answer


def test_repeat_fuse_stops_before_the_tool_runs_again():
    agent = run(StuckLLM(), 5)
    first, second = agent.trace
    assert first.executed and not second.executed
    assert (second.action, second.argument) == (first.action, first.argument)


def test_repeat_fuse_needs_the_repeat_in_a_row():
    def count(prompt, value):
        return len(re.findall(rf"^Observation: {value}$", prompt, re.MULTILINE))

    llm = ScriptedLLM([
        Rule(lambda p: count(p, 2) == 2, "Action: Finish[done]"),
        Rule(lambda p: count(p, 3) == 1, "Action: Calculate[1+1]"),
        Rule(lambda p: count(p, 2) == 1, "Action: Calculate[1+2]"),
        Rule(REACT_MARKER, "Action: Calculate[1+1]"),
    ])
    agent = run(llm, 5, question="count")
    assert [c.argument for c in agent.tools.log] == ["1+1", "1+2", "1+1"]
    assert agent.stop_reason == "finished"


@pytest.mark.parametrize("max_steps", [1, 5, 20])
def test_wanderer_stops_at_max_steps_with_exactly_max_steps_calls(max_steps):
    agent = run(WandererLLM(), max_steps)
    assert agent.stop_reason == "max_steps" and f"after {max_steps} steps" in agent.answer
    assert len(agent.llm.calls) == len(agent.tools.log) == max_steps
    assert len({c.argument for c in agent.tools.log}) == max_steps


def test_format_breaker_gets_the_format_back_and_recovers():
    agent = run(FormatBreakerLLM(), 5)
    assert agent.answer == "25185" and agent.stop_reason == "finished"
    assert [s.action for s in agent.trace] == ["", "Search", "Calculate", "Finish"]
    assert FORMAT_REMINDER in agent.llm.calls[1].prompt
    assert len(agent.tools.log) == 2


def test_invented_observations_never_run_and_never_reach_the_next_prompt():
    agent = run(InventorLLM(), 5)
    assert agent.answer == "25185"
    assert [s.invented_observation for s in agent.trace] == [True, True, False]
    assert agent.invented_observations == agent.trace[:2]
    assert [c.argument for c in agent.tools.log] == ["Steve Jobs", "(2024 - 1955) * 365"]
    assert all("source 1" not in c.prompt and "1956" not in c.prompt for c in agent.llm.calls)


def test_incident_bad_day_every_search_rejected_budget_spent_answer_forced():
    agent = ReActAgent(InventorLLM(), incident_executor(), 5, parse=naive_parse, finish_fallback=True)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    assert [c.tool for c in agent.tools.log] == ["Search"] * 5
    assert all(len(c.argument) > 1500 and "Observation:" in c.argument for c in agent.tools.log)
    assert all(c.output == "error: Query is too long. Max query length is 1500 characters." for c in agent.tools.log)
    assert agent.stop_reason == "max_steps" and agent.unverified
    assert len(agent.llm.calls) == 6 and FALLBACK_MARKER in agent.llm.calls[-1].prompt
    # The forced answer is a guess resting on the invented sources, which the history carried.
    assert agent.answer == "24820"
    assert "according to source 1" in agent.llm.calls[1].prompt
    assert len(invented_tail()) > 1500


def test_incident_good_day_same_parser_clean_two_steps():
    agent = ReActAgent(InventorLLM(rambles=False), incident_executor(), 5, parse=naive_parse, finish_fallback=True)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    assert [s.action for s in agent.trace] == ["Search", "Finish"]
    assert agent.answer == "25185" and agent.stop_reason == "finished" and not agent.unverified
    assert [c.argument for c in agent.tools.log] == ["Steve Jobs"]


def test_incident_bad_day_defended_parser_runs_only_real_actions():
    agent = ReActAgent(InventorLLM(), incident_executor(), 5, parse=parse_reply)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    assert agent.answer == "25185" and agent.stop_reason == "finished"
    assert "\n" in agent.trace[-1].reply.split("Finish[")[1]  # the Finish spanned lines
    assert [c.argument for c in agent.tools.log] == ["Steve Jobs", "(2024 - 1955) * 365"]


def test_finish_fallback_is_one_more_call_without_tools_and_marked_unverified():
    agent = run(StuckLLM(), 5, finish_fallback=True)
    assert agent.stop_reason == "repeat_fuse" and agent.unverified
    assert (len(agent.llm.calls), len(agent.tools.log)) == (3, 1)
    last = agent.llm.calls[-1].prompt
    assert FALLBACK_MARKER in last and "- Search[input]" not in last
    assert "25185" in agent.answer


def test_finish_fallback_unused_when_the_run_finishes():
    agent = run(None, 5, finish_fallback=True)
    assert agent.answer == "25185" and not agent.unverified and len(agent.llm.calls) == 3


def test_steps_left_line_only_when_asked():
    prompts = [c.prompt for c in run(WandererLLM(), 3, show_steps_left=True).llm.calls]
    assert [re.search(r"Steps left \(including this one\): (\d)", p).group(1) for p in prompts] == ["3", "2", "1"]
    assert "last step" in prompts[-1] and "last step" not in prompts[0]
    assert all("Steps left" not in c.prompt for c in run(WandererLLM(), 3).llm.calls)


def test_on_step_note_reaches_the_next_prompt_and_stoprun_ends_the_run():
    notes = ReActAgent(WandererLLM(), None, 2, on_step=lambda step: "Guard: stay on the question.")
    notes.run(CHECKPOINT_QUESTION, verbose=False)
    assert "Guard: stay on the question." in notes.llm.calls[1].prompt

    def stop_after_first(step):
        raise StopRun("guard stopped the run")

    agent = ReActAgent(WandererLLM(), None, 5, on_step=stop_after_first)
    assert agent.run(CHECKPOINT_QUESTION, verbose=False) == "guard stopped the run"
    assert agent.stop_reason == "stopped" and len(agent.llm.calls) == 1


def test_unknown_tool_is_an_observation_and_the_run_goes_on():
    llm = ScriptedLLM([
        Rule("unknown tool", "Action: Finish[gave up on Browse]"),
        Rule(REACT_MARKER, "Action: Browse[apple.com]"),
    ])
    agent = run(llm, 5, question="q")
    assert agent.trace[0].observation.startswith("error: unknown tool 'Browse'")
    assert agent.stop_reason == "finished" and len(agent.llm.calls) == 2


def test_run_ledger_views_cover_the_last_run_only():
    agent = ReActAgent(get_llm(), None, 5)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    assert len(agent.llm.calls) == 6 and len(agent.run_calls) == 3 and len(agent.run_tool_calls) == 2
    assert [s.action for s in agent.trace] == ["Search", "Calculate", "Finish"]


def test_max_steps_must_be_positive():
    with pytest.raises(ValueError, match="max_steps"):
        ReActAgent(max_steps=0)


def test_an_earlier_step_edited_after_it_was_sent_is_sent_edited():
    # Each step's history text is remembered between calls; an edit must still reach the next prompt.
    def edit_first_step(step):
        if len(agent.trace) == 2:
            agent.trace[0].observation = "EDITED OBSERVATION"
            agent.trace[0].intervention = "Runtime hint: edited."

    agent = ReActAgent(WandererLLM(), None, 3, on_step=edit_first_step)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    prompts = [c.prompt for c in agent.llm.calls]
    assert "EDITED OBSERVATION" not in prompts[1] and "EDITED OBSERVATION\nRuntime hint: edited." in prompts[2]


def test_a_tool_registered_between_runs_reaches_the_role_prompt():
    agent = ReActAgent(WandererLLM(), None, 1)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    agent.tools.register("Echo", lambda s: s, "repeat the input")
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    systems = [c.messages[0]["content"] for c in agent.llm.calls]
    assert "- Echo[input]" not in systems[0] and "- Echo[input]: repeat the input" in systems[1]
