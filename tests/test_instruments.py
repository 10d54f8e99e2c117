"""The task-set stand-in as an instrument: at rate 0 the perfect reader, each knob a reproducible rate,
and the shipped sweep in step with the code."""
from __future__ import annotations

import json

import pytest

from agentkit.data import read_text
from agentkit.instruments import (
    KNOBS, NoisyTaskLLM, break_format, curves, draw, forget, invent, misread, noisy_factory, sweep,
)
from agentkit.modes import get_llm
from agentkit.parsing import parse_reply
from agentkit.paradigms import PARADIGMS
from agentkit.tasks import load_tasks

TASKS = load_tasks()


def replies(llm) -> list[str]:
    return [call.reply for call in llm.calls]


def test_at_rate_zero_it_is_the_course_stand_in_reply_for_reply():
    for task in TASKS[:12]:
        clean, noisy = get_llm("fake"), NoisyTaskLLM(0.0, seed=3)
        PARADIGMS["ReAct"](llm=clean).run(task.question, verbose=False)
        PARADIGMS["ReAct"](llm=noisy).run(task.question, verbose=False)
        assert replies(clean) == replies(noisy)


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    task = TASKS[0]
    runs = {}
    for seed in (0, 0, 1, 2, 3):
        llm = NoisyTaskLLM(0.5, seed=seed)
        try:
            PARADIGMS["Plan-and-Execute"](llm=llm).run(task.question, verbose=False)
        except ValueError:
            pass  # a plan whose JSON the format knob cut short: the harness records it as an error row
        runs.setdefault(seed, []).append(replies(llm))
    assert runs[0][0] == runs[0][1]
    assert len({tuple(r[0]) for r in runs.values()}) > 1


def test_each_knob_fires_at_its_rate():
    prompts = [f"prompt number {i}" for i in range(4000)]
    for rate in (0.05, 0.2):
        share = sum(draw(7, "misread", p) < rate for p in prompts) / len(prompts)
        assert abs(share - rate) < 0.02


def test_what_each_disease_does_to_a_reply():
    assert misread("Thought: t\nAction: Calculate[(2024 - 1955) * 365]", "") == "Thought: t\nAction: Calculate[(2024 - 1955) * 356]"
    assert misread("Action: Finish[7]", "") == "Action: Finish[8]"
    assert forget('["Look up A.", "Look up B."]', "") == '["Look up A."]'
    assert invent("Thought: t\nAction: Finish[25185]", "") == "Thought: t\nAction: Finish[25202]"
    assert invent("Thought: t\nAction: Finish[Alan Turing]", "") == "Thought: t\nAction: Finish[Jane Doe]"
    broken = break_format("Thought: t\nAction: Search[Alan Turing]", "")
    assert parse_reply(broken).problem and not parse_reply(broken).action
    assert break_format("text\nVERDICT: PASS", "") == "text"


def test_forget_turns_a_pending_call_into_a_finish_with_what_is_known():
    task = TASKS[0]
    prompt = get_llm("fake")  # any prompt of this task's ReAct run will do: take the first one
    agent = PARADIGMS["ReAct"](llm=prompt)
    agent.run(task.question, verbose=False)
    first = agent.llm.calls[0]
    changed = forget(first.reply, first.prompt)
    assert parse_reply(changed).action == "Finish"


@pytest.mark.parametrize("bad", [dict(rate=1.5), dict(rate=-0.1), dict(misread=2.0)])
def test_bad_rates_explain_themselves(bad):
    with pytest.raises(ValueError, match="between 0 and 1"):
        NoisyTaskLLM(**bad)
    with pytest.raises(ValueError, match="knobs are"):
        NoisyTaskLLM(0.1, misreading=0.1)


def test_only_the_knob_turned_up_fires():
    llm = NoisyTaskLLM(0.0, invent=1.0)
    PARADIGMS["ReAct"](llm=llm).run(TASKS[0].question, verbose=False)
    notes = [call.note for call in llm.calls]
    assert any("invent" in n for n in notes) and not any(k in n for n in notes for k in KNOBS if k != "invent")


def test_the_shipped_sweep_matches_the_code_and_errors_cost_success():
    shipped = json.loads(read_text("instrument_sweep.json"))
    assert shipped["rates"][:1] == [0.0] and len(shipped["seeds"]) >= 5 and len(shipped["rates"]) >= 5
    recomputed = sweep(["ReAct", "Hybrid"], rates=(0.1,), seeds=(2,))
    for row in recomputed:
        match = [r for r in shipped["rows"] if (r["paradigm"], r["rate"], r["seed"]) == (row["paradigm"], 0.1, 2)]
        assert match == [row]
    table = curves(shipped["rows"])
    assert set(table) == set(PARADIGMS)
    for paradigm, metrics in table.items():
        success = metrics["success"]
        assert success[-1][1] < success[0][1], paradigm  # 30% errors cost every paradigm success
        assert all(low <= mean <= high for _, mean, low, high in success)


def test_a_factory_gives_each_task_a_fresh_client():
    make = noisy_factory("ReAct", 0.1, 0)
    assert make().llm is not make().llm and make(extra_steps=2).max_steps == make().max_steps + 2
