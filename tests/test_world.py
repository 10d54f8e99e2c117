"""Chapter 12: effects in the registry, the world's tools, the approval gate, injection, replay."""
import json

import pytest

from agentkit.approval import (Approve, ApprovalNeeded, Call, GatedExecutor, Replayed, Verdict,
                               ask_human, deny_side_effects, dry_run_side_effects)
from agentkit.llm import ScriptedLLM
from agentkit.pausable import PausableAgent
from agentkit.react import ReActAgent
from agentkit.recorder import Recorder
from agentkit.replay import ReplayLLM
from agentkit.scripts.world import LEAK_QUESTION, RULES, STANDUP_QUESTION, TIDY_QUESTION
from agentkit.tools import ToolExecutor, default_executor
from agentkit.widgets.approval import PLACEHOLDER, approval_prompt
from agentkit.world import SAMPLE_NOTES, World, world_executor


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path, SAMPLE_NOTES)
    yield w
    w.close()


def stand_in():
    return ScriptedLLM(RULES)


def gated(world, policy):
    return GatedExecutor(world_executor(world), policy, world.dry_run)


# --- effects in the registry -------------------------------------------------------


def test_effect_defaults_to_read_and_is_checked():
    tools = default_executor()
    assert {t.effect for t in tools.tools.values()} == {"read"}
    tools.register("Wipe", lambda s: "ok", "wipes", effect="delete")
    assert tools.tools["Wipe"].effect == "delete"
    with pytest.raises(ValueError, match="effect must be one of"):
        tools.register("Odd", lambda s: "ok", "odd", effect="launch")


def test_world_tools_change_the_store_and_dry_run_does_not(world):
    tools = world_executor(world)
    assert [tools.tools[n].effect for n in ("ReadNote", "WriteNote", "DeleteNotes", "SendMessage")] == \
        ["read", "write", "delete", "send"]
    before = world.notes()
    assert world.dry_run("DeleteNotes", "all").startswith("would delete 4 note(s)")
    assert world.notes() == before
    assert tools.run("DeleteNotes", "Reading list").startswith("done: delete 1 note(s)")
    assert tools.run("SendMessage", "ana@example.com: hi").startswith("done: send")
    assert world.counts() == {"notes": 3, "outbox": 1, "web queries": 0}
    assert tools.run("WriteNote", "no colon").startswith("error:")  # bad input: a clear error, nothing lost
    assert tools.run("DeleteNotes", "Nope").startswith("error: no note titled")
    assert world.counts()["notes"] == 3


# --- the gate --------------------------------------------------------------------------


def test_gate_denies_side_effects_by_default_and_reads_run(world):
    gate = gated(world, deny_side_effects)
    assert gate.run("ReadNote", "Printer budget") == SAMPLE_NOTES["Printer budget"]
    observation = gate.run("DeleteNotes", "all")
    assert observation.startswith("error:") and "was not run" in observation and "Nothing changed" in observation
    assert world.notes() == SAMPLE_NOTES
    assert [(d.tool, d.verdict, d.by) for d in gate.ledger] == [
        ("ReadNote", "ran", "no approval needed: read-only"),
        ("DeleteNotes", "denied", "policy: side effects are denied by default")]
    assert [c.tool for c in gate.log] == ["ReadNote"]  # the denied tool never ran


def test_dry_run_changes_nothing_and_says_what_would(world):
    gate = gated(world, dry_run_side_effects)
    observation = gate.run("DeleteNotes", "all")
    assert "nothing changed" in observation and "would delete 4 note(s)" in observation
    assert world.notes() == SAMPLE_NOTES and gate.ledger[-1].verdict == "dry run"


def test_approval_runs_the_call_exactly_once(world):
    calls = []
    tools = world_executor(world)
    real = tools.tools["WriteNote"].func
    tools.tools["WriteNote"].func = lambda text: calls.append(text) or real(text)
    gate = GatedExecutor(tools, ask_human, world.dry_run)
    with pytest.raises(ApprovalNeeded) as waiting:
        gate.run("WriteNote", "Standup: 10:00")
    assert calls == [] and gate.ledger[-1].verdict == "pending"
    gate.decide(waiting.value.call.number, True, "human: tester")
    assert gate.run("WriteNote", "Standup: 10:00").startswith("done:")
    assert calls == ["Standup: 10:00"] and len(gate.ledger) == 1
    assert (gate.ledger[0].verdict, gate.ledger[0].by) == ("ran", "human: tester")
    with pytest.raises(ApprovalNeeded):  # the approval was for that call only
        gate.run("WriteNote", "Standup: 10:00")
    assert calls == ["Standup: 10:00"]


def test_approve_policy_names_tools(world):
    gate = gated(world, Approve({"SendMessage"}))
    assert gate.run("SendMessage", "ana@example.com: hi").startswith("done:")
    assert "was not run" in gate.run("DeleteNotes", "all")
    assert [d.verdict for d in gate.ledger] == ["ran", "denied"]
    with pytest.raises(ValueError):
        Verdict("maybe", "nobody")


# --- the injection -----------------------------------------------------------------------


def test_injection_without_gate_loses_every_note(world):
    agent = ReActAgent(stand_in(), world_executor(world), max_steps=6)
    agent.run(TIDY_QUESTION, verbose=False)
    assert [s.action for s in agent.trace] == ["ReadPage", "DeleteNotes", "SendMessage", "Finish"]
    assert world.counts() == {"notes": 0, "outbox": 1, "web queries": 0}


def test_injection_with_gate_loses_nothing_and_ledger_names_the_page(world):
    gate = gated(world, deny_side_effects)
    agent = ReActAgent(stand_in(), gate, max_steps=6)
    answer = agent.run(TIDY_QUESTION, verbose=False)
    assert world.notes() == SAMPLE_NOTES and world.outbox() == []
    assert agent.stop_reason == "finished" and "denied" in answer  # the loop went on and finished
    delete = next(d for d in gate.ledger if d.tool == "DeleteNotes")
    assert delete.verdict == "denied" and delete.source.startswith("call 1: ReadPage[note-keeping policy]")
    assert "was not run" in agent.trace[1].observation  # what the model saw


def test_approved_wrong_call_and_read_only_leak_get_through(world):
    gate = gated(world, Approve({"DeleteNotes"}, by="human: approves everything"))
    ReActAgent(stand_in(), gate, max_steps=6).run(TIDY_QUESTION, verbose=False)
    assert world.notes() == {}  # the gate only moved the decision to a person
    leak = GatedExecutor(world_executor(world), deny_side_effects, world.dry_run, open_world="read")  # trusts "read"
    world.db.executemany("INSERT INTO notes VALUES (?, ?)", SAMPLE_NOTES.items())
    ReActAgent(stand_in(), leak, max_steps=6).run(LEAK_QUESTION, verbose=False)
    assert world.web_log() == [SAMPLE_NOTES["Wi-Fi password"]]
    assert {d.verdict for d in leak.ledger} == {"ran"}


# --- pausing for a human, the prompt, replay -------------------------------------------------


def test_pausable_agent_waits_then_resumes_without_asking_the_model_again(world):
    llm = stand_in()
    agent = PausableAgent(llm, gated(world, ask_human), max_steps=5)
    assert agent.start(STANDUP_QUESTION) == "pending" and agent.pending.tool == "WriteNote"
    calls_before = len(llm.calls)
    assert agent.decide(True, "human: a") == "pending" and agent.pending.tool == "SendMessage"
    assert len(llm.calls) == calls_before + 1  # one new model call: the step after the note
    assert agent.decide(False, "human: b") == "finished"
    assert "SendMessage was denied" in agent.answer
    assert [(d.tool, d.verdict, d.by) for d in agent.tools.ledger] == [
        ("WriteNote", "ran", "human: a"), ("SendMessage", "denied", "human: b")]
    assert "Standup" in world.notes() and world.outbox() == []
    with pytest.raises(RuntimeError):
        agent.decide(True, "nobody")
    with pytest.raises(TypeError):
        PausableAgent(llm, world_executor(world))


def test_prompt_buttons_resume_the_run(world):
    agent = PausableAgent(stand_in(), gated(world, ask_human), max_steps=5)
    agent.start(STANDUP_QUESTION)
    prompt = approval_prompt(agent)
    assert repr(prompt) == PLACEHOLDER and "WAITING FOR YOU: WriteNote" in prompt.text.value
    prompt.approve.click()
    assert "WAITING FOR YOU: SendMessage" in prompt.text.value
    prompt.deny.click()
    assert agent.status == "finished" and prompt.approve.disabled and prompt.deny.disabled
    assert [d.by for d in agent.tools.ledger] == ["human: Approve button", "human: Deny button"]


def test_prompt_shows_a_failure_after_a_click(world):
    llm = stand_in()
    agent = PausableAgent(llm, gated(world, ask_human), max_steps=5)
    agent.start(STANDUP_QUESTION)
    prompt = approval_prompt(agent)

    def down(*args, **kwargs):
        raise ConnectionError("the model server is down")

    llm.think = down
    prompt.approve.click()
    assert "The run failed after your decision: ConnectionError: the model server is down" in prompt.text.value


def test_run_with_approvals_replays_offline(world, tmp_path):
    cassette, decisions = tmp_path / "run.jsonl", tmp_path / "decisions.jsonl"
    live = PausableAgent(Recorder(stand_in(), cassette), gated(world, ask_human), max_steps=5)
    live.start(STANDUP_QUESTION)
    live.decide(True, "human: Ana")
    live.decide(False, "human: Ana")
    live.tools.save(decisions)

    again = World(tmp_path / "again", SAMPLE_NOTES)
    replay = ReActAgent(ReplayLLM(cassette), GatedExecutor(world_executor(again), Replayed(decisions), again.dry_run),
                        max_steps=5)
    replay.run(STANDUP_QUESTION, verbose=False)
    assert replay.answer == live.answer and again.notes() == world.notes() and again.outbox() == world.outbox()
    assert [(d.by, d.note) for d in replay.tools.ledger] == [("human: Ana", "replayed from decisions.jsonl")] * 2
    assert [json.loads(line)["verdict"] for line in decisions.read_text().splitlines()] == ["ran", "denied"]
    # A call that is not on the recorded trace is denied, never run.
    assert Replayed(decisions)(Call(1, "DeleteNotes", "all", "delete")).action == "deny"


def test_gate_is_a_drop_in_executor():
    inner = ToolExecutor()
    inner.register("Echo", lambda s: s, "echo")
    gate = GatedExecutor(inner)
    assert gate.describe() == inner.describe() and gate.names == ["Echo"]
    assert gate.run("Echo", "hi") == "hi" and gate.log is inner.log
    assert gate.run("Nope", "x").startswith("error: unknown tool")


def test_gate_cannot_be_walked_past_by_the_case_of_a_name(world):
    gate = gated(world, deny_side_effects)
    assert "was not run" in gate.run("deletenotes", "all")
    assert "was not run" in gate.run(" DELETENOTES ", "all")
    assert world.notes() == SAMPLE_NOTES and [d.verdict for d in gate.ledger] == ["denied", "denied"]
