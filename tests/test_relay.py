"""Chapter 17's long tasks: the shipped world is what its generator writes, the tasks are 20 to 60 steps long, the
desk prints a slip once per run, and the stand-in's rules read the run's state from whatever the prompt holds."""
import importlib.util
import json
from pathlib import Path

import pytest

from agentkit.context_runs import relay_llm
from agentkit.react import ReActAgent
from agentkit.relay import (SLIP_GONE, STATION, TARIFF, DispatchDesk, load_relay, relay_task, relay_tools,
                            station_search, task_of)
from agentkit.scripts import course_script
from agentkit.scripts.relay import furthest_station, lead_reply, summary_reply, tariff_seen, walker_reply

ROOT = Path(__file__).resolve().parent.parent


def test_the_shipped_world_is_what_data_make_relay_writes():
    spec = importlib.util.spec_from_file_location("make_relay", ROOT / "data" / "make_relay.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    assert json.loads((ROOT / "data" / "relay_world.json").read_text(encoding="utf-8")) == make.build()


def test_nine_tasks_of_20_to_60_steps_whose_gold_is_the_tariff_times_the_last_distance():
    tasks = load_relay()
    assert [t.steps for t in tasks] == list(range(20, 61, 5))
    names = [name for t in tasks for name in t.stations]
    assert len(names) == len(set(names)), "a station name is unique across every line"
    for task in tasks:
        assert len(task.stations) == task.steps - 3 and task.max_steps > task.steps
        assert task.gold == str(task.tariff * task.distance_km)
        last = STATION.search(task.pages[task.stations[-1]])
        assert last.group(7) == str(task.distance_km) and last.group(6) is None
        assert task.check(f"{task.gold} credits") and not task.check("unknown: no tariff")
        assert task_of(task.question) is task
    with pytest.raises(KeyError, match="relay-20"):
        relay_task("relay-99")


def test_every_page_names_the_next_station_and_states_no_other_number():
    task = relay_task("relay-25")
    for number, name in enumerate(task.stations, 1):
        page = station_search(name)
        match = STATION.search(page)
        assert int(match.group(1)) == number and match.group(4) == name
        if number < len(task.stations):
            assert match.group(6) == task.stations[number]
        digits = {d for d in __import__("re").findall(r"\d+", page)}
        assert digits <= {str(number), str(len(task.stations)), match.group(5) or match.group(7)}


def test_the_desk_prints_a_slip_once_per_run_and_a_new_run_gets_a_new_desk():
    task = relay_task("relay-20")
    tools = relay_tools()
    first = tools.run("Dispatch", task.parcel)
    assert TARIFF.search(first).group(1) == str(task.tariff)
    assert tools.run("Dispatch", f" {task.parcel.lower()} ") == SLIP_GONE.format(parcel=task.parcel)
    assert TARIFF.search(relay_tools().run("Dispatch", task.parcel))
    assert "The parcels are" in DispatchDesk()("P-0")


def test_a_search_for_no_station_says_so_and_names_how_to_search():
    assert "No station called" in station_search("Atlantis")
    assert station_search(" thorn field ") == station_search("Thorn Field")
    assert relay_tools(search=False).names == ["Dispatch", "Calculate"]


def test_the_stand_in_walks_the_line_with_full_history_and_answers_right():
    for task_id in ("relay-20", "relay-35"):
        task = relay_task(task_id)
        agent = ReActAgent(relay_llm(), relay_tools(), max_steps=task.max_steps)
        assert task.check(agent.run(task.question, verbose=False))
        assert len(agent.trace) == task.steps and [s.action for s in agent.trace[:2]] == ["Dispatch", "Search"]
        assert tariff_seen(agent.trace[1].thought) == task.tariff  # the Thought after the slip restates it
        assert all(tariff_seen(s.thought) is None for s in agent.trace[2:])  # and no other Thought does


def test_the_course_script_answers_a_relay_prompt_as_the_chapter_rules_do():
    task = relay_task("relay-20")
    agent = ReActAgent(__import__("agentkit").ScriptedLLM(course_script()), relay_tools(), max_steps=task.max_steps)
    assert task.check(agent.run(task.question, verbose=False))


def prompt(task, *observations, tools="- Search[input]: x"):
    return "\n\n".join([f"You are a ReAct agent\nTools:\n{tools}", f"Question: {task.question}", *observations])


def test_the_lead_reads_the_state_from_any_form_the_prompt_holds():
    task = relay_task("relay-20")
    end = task.pages[task.stations[-1]]
    assert "Dispatch[P-11]" in lead_reply(prompt(task))
    # the end of the line and a tariff in a summary line: Calculate
    assert f"Calculate[{task.tariff} * {task.distance_km}]" in lead_reply(prompt(
        task, f"- tariff: {task.tariff} credits per km", f"Action: Search[x]\nObservation: {end}"))
    # the end without a tariff: the desk again; refused: "unknown"; with a Notes tool: read the notes first
    assert "Action: Dispatch[" in lead_reply(prompt(task, f"Action: Search[x]\nObservation: {end}"))
    refused = SLIP_GONE.format(parcel=task.parcel)
    assert "Finish[unknown" in lead_reply(prompt(task, f"Observation: {end}", f"Observation: {refused}"))
    assert "Action: Notes[]" in lead_reply(prompt(task, f"Observation: {end}", tools="- Notes[input]: read"))
    # a Walk tool: the lead delegates the next station instead of searching it
    middle = task.pages[task.stations[3]]
    assert f"Action: Walk[{task.stations[4]}]" in lead_reply(prompt(task, f"Observation: {middle}",
                                                                     tools="- Walk[input]: walk"))


def test_the_summariser_copies_position_and_tariff_and_the_walker_reports_after_its_quota():
    task = relay_task("relay-20")
    pages = [task.pages[name] for name in task.stations[:3]]
    text = "\n".join([f"Question: {task.question}", f"tariff: {task.tariff} credits per km", *pages])
    summary = summary_reply(text)
    assert furthest_station(summary).group(1) == "3" and tariff_seen(summary) == task.tariff
    assert summary.splitlines()[-1].startswith(f"- tariff: {task.tariff}")  # the fact last: the knob's target
    walk = (f"Question: Walk a relay line from the station {task.stations[0]}: Search its page, then each next "
            "station the pages name, for at most 3 stations or to the end of the line.")
    assert f"Search[{task.stations[0]}]" in walker_reply(walk)
    assert f"Finish[{STATION.search(pages[2]).group(0)}]" in walker_reply("\n".join([walk, *pages]))
