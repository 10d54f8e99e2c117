"""Chapter 17's strategies keep what their docstrings say: a window the last k steps, masking every Thought and Action
with the last Observations, compaction a model-written summary counted in the same ledger; the note book and the
sub-agent keep things out of the prompt and never raise into the loop."""
import pytest

from agentkit import tokens
from agentkit.context_runs import relay_llm, run_relay
from agentkit.context_strategies import SUMMARY_MARKER, Compaction, ObservationMasking, SlidingWindow, masked_history
from agentkit.context_tools import NoteBook, SubAgentTool
from agentkit.react import ReActAgent, Step
from agentkit.relay import WALK_ASSIGNMENT, relay_task, relay_tools


def steps(n):
    return [Step(f"thought {i}", "Search", f"query {i}", f"observation number {i} " * 5, True) for i in range(1, n + 1)]


def assemble(parts):
    return [{"role": "system", "content": "role"}, {"role": "user", "content": "\n\n".join(["Question: q", *parts])}]


def user(messages):
    return messages[1]["content"]


def test_a_window_sends_the_last_k_steps_and_says_how_many_it_left_out():
    trace = steps(7)
    text = user(SlidingWindow(3).fit(assemble, trace, "q"))
    assert "(steps 1-4 are not shown)" in text
    assert all(s.as_history() in text for s in trace[4:]) and not any(s.thought in text for s in trace[:4])
    assert "not shown" not in user(SlidingWindow(7).fit(assemble, trace, "q"))


def test_masking_keeps_every_thought_and_action_and_only_the_last_observations():
    trace = steps(6)
    text = user(ObservationMasking(2).fit(assemble, trace, "q"))
    for number, step in enumerate(trace, 1):
        assert f"Thought: {step.thought}\nAction: Search[{step.argument}]" in text
        assert (step.observation in text) == (number > 4)
    size = tokens.count_tokens(trace[0].observation)
    assert masked_history(trace[0], 1).endswith(f"Observation: [observation of step 1 masked: {size} tokens]")
    assert masked_history(trace[0], 1) in text
    assert all(step.observation not in user(ObservationMasking(0).fit(assemble, trace, "q")) for step in trace)


@pytest.mark.parametrize("make, message", [
    (lambda: SlidingWindow(0), "k must be a whole number of at least 1"),
    (lambda: SlidingWindow(2.5), "k must be"), (lambda: ObservationMasking(-1), "keep must be"),
    (lambda: Compaction(None), "needs an llm"), (lambda: Compaction(relay_llm(), 50), "threshold_tokens must be"),
    (lambda: Compaction(relay_llm(), 500, keep_raw=True), "keep_raw must be"),
])
def test_bad_settings_fail_at_construction_naming_the_setting(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_compaction_summarises_when_the_prompt_passes_the_threshold_in_the_agents_own_ledger():
    llm = relay_llm()
    task = relay_task("relay-25")
    context = Compaction(llm, 1500)
    agent = ReActAgent(llm, relay_tools(), max_steps=task.max_steps, context=context)
    assert task.check(agent.run(task.question, verbose=False))
    summaries = [c for c in agent.run_calls if c.messages[0]["content"].startswith(SUMMARY_MARKER)]
    assert len(summaries) == len(context.summaries) >= 2
    assert [s for _, s in context.summaries] == [c.reply for c in summaries]
    lead = [c for c in agent.run_calls if c not in summaries]
    assert len(lead) == len(agent.trace)  # the summariser's calls are extra calls, not steps
    # every lead prompt after the first summary: under the threshold plus one step, and holding a summary
    first = agent.run_calls.index(summaries[0])
    after = [c for c in agent.run_calls[first + 1:] if c not in summaries]
    assert all("Summary of steps 1-" in c.prompt for c in after)
    assert max(c.prompt_tokens for c in after) < 1500 + max(tokens.count_tokens(p) for p in task.pages.values()) + 100
    # the summariser saw the previous summary: the second summary's prompt holds the first summary's text
    assert context.summaries[0][1] in summaries[1].prompt
    # a new run starts without a summary
    agent.run(task.question, verbose=False)
    assert "Summary of steps" not in agent.run_calls[0].prompt and context.summaries[0][0] < context.summaries[-1][0]


def test_the_note_book_keeps_notes_out_of_the_prompt_and_says_when_it_is_full():
    book = NoteBook(max_notes=2, note_chars=10)
    assert book.read() == "No notes yet."
    assert "write the fact inside the brackets" in book.write("   ")
    assert book.write("tariff: 6 credits per km") == "Noted (cut to 10 characters). 1 note kept."
    assert book.write("two") == "Noted. 2 notes kept."
    assert "the note book is full (2 notes)" in book.write("three")
    assert book.read("ignored") == "Your notes:\n1. tariff: 6\n2. two"
    tools = relay_tools()
    book.register(tools)
    assert {"Note", "Notes"} <= set(tools.names) and tools.run("Notes", "") == book.read()


def test_a_sub_agents_steps_never_enter_the_leads_prompt_but_its_calls_are_in_the_ledger():
    run = run_relay(relay_task("relay-30"), "sub-agent", segment=8)
    walkers = run.agent.walker.runs
    assert run.correct and len(walkers) == 4  # 27 stations, 8 at a time
    lead = [c for c, k in zip(run.calls, run.kinds) if k == "lead"]
    assert len(lead) == len(run.agent.trace) and len(run.calls) == len(lead) + sum(len(w.trace) for w in walkers)
    pages = [s.observation for w in walkers for s in w.trace if s.action == "Search"]
    assert len(pages) == 27 and not any(page in c.prompt for page in pages for c in lead)


def test_the_sub_agent_tool_reports_a_stop_and_refuses_an_empty_input():
    def stuck():
        return ReActAgent(relay_llm(), relay_tools(), max_steps=1)

    tool = SubAgentTool(stuck, WALK_ASSIGNMENT.replace("{segment}", "5"), "Walk")
    assert "Nothing to hand over" in tool("  ")
    assert tool("Thorn Field").startswith("The sub-agent stopped without an answer (max_steps)")
    with pytest.raises(ValueError, match="assignment must hold"):
        SubAgentTool(stuck, "no slot")
