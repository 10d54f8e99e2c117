"""Answer an LLM's calls from a cassette (`agentkit.cassette`): offline and deterministic.

`ReplayLLM(path)` answers `think` and `act` from a cassette (or a list of them) by the content of the
request: the same messages, tools, tool_choice, temperature, name and grammar, compared as canonical
JSON. The same request always gets the first reply recorded for it, whatever the order or the number of
calls. Every line is checked when the cassette loads; a bad one is a `CassetteError` naming its line.
A request that is not on the cassette raises `CassetteMiss`, which names the cassette, shows the closest
recorded request and the lines where the two differ (`agentkit.cassette_miss`) and, for a notebook's
cassette, the notebook, the cell and the command that records it again. The replay's ledger carries the
recorded usage and model; its latency is the replay's own, the recorded one is in `note`.

`real_or_replay("03b_real_model", live=...)` is what a notebook's real-model cells call: the live
model under AP_MODE=local or real (wrapped in a `Recorder` while tools/record.py runs the notebook),
the notebook's shipped cassette otherwise; it prints which.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .cassette import (CassetteError, CassetteMiss, canonical, cassette_path, line_problem, record_command,
                       request_of)
from .cassette_miss import closest, current_cell, diff_lines, readable
from .protocol import AssistantTurn, CallRecord, FunctionCall
from .recorder import Recorder, stamp_of
from .text import json_lines

LIVE_MODES = ("local", "real")


class ReplayLLM:
    """Answers from a cassette by the content of the request; never touches the network."""

    def __init__(self, path, *, name: str = "") -> None:
        self.paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]
        if not self.paths:
            raise FileNotFoundError("No cassette to replay: record one with Recorder(llm, path).")
        self.path, self.name = self.paths[0], name
        self.entries: list[dict] = []
        self.stamps: list[dict] = []
        self._file_stamps: dict[str, dict] = {}
        self._index: dict[str, dict] = {}
        self._readable: dict[int, str] = {}
        for one in self.paths:
            if not one.is_file():
                raise FileNotFoundError(f"No cassette at {one}: record one with Recorder(llm, {str(one)!r}).")
            try:
                lines = json_lines(one)
            except ValueError as e:
                raise CassetteError(f"{e}. Record the cassette again rather than editing it by hand.") from None
            for number, line in lines:
                self._load(one, number, line)
        self.stamp = self.stamps[0] if self.stamps else {}
        self.model = self.stamp.get("model") or (self.entries[0].get("model", "") if self.entries else "")
        self.calls: list[CallRecord] = []

    def _load(self, path: Path, number: int, line: str) -> None:
        try:
            entry = json.loads(line)
            problem = line_problem(entry)
        except ValueError as e:
            problem = f"not JSON ({e})"
        except RecursionError:
            problem = "nested too deeply to read"
        if not problem and "stamp" not in entry:
            try:  # what a hit and a miss will need, made now, so that a line that cannot give it is named here
                key, text = canonical(entry["request"]), readable(entry["request"])
            except (RecursionError, KeyError, TypeError, AttributeError) as e:
                problem = f"its request cannot be read back ({type(e).__name__}: {e})"[:300]
        if problem:
            raise CassetteError(f"{path}, line {number}: not a recorded call: {problem}. "
                                f"Record the cassette again rather than editing it by hand.") from None
        if "stamp" in entry:
            self.stamps.append(entry["stamp"])
            self._file_stamps.setdefault(path.name, entry["stamp"])
        else:
            entry["_file"] = path.name
            self.entries.append(entry)
            self._index.setdefault(key, entry)  # the first recording wins
            self._readable[id(entry)] = text

    def think(self, messages, temperature: float = 0, grammar: str = "") -> str:
        return self._answer(request_of(messages, temperature=temperature, name=self.name, grammar=grammar)).content

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        return self._answer(request_of(messages, tools, tool_choice, temperature, self.name))

    def _answer(self, request: dict) -> AssistantTurn:
        start = time.perf_counter()
        entry = self._index.get(canonical(request))
        if entry is None:
            raise CassetteMiss(self._miss_message(request))
        turn = AssistantTurn(entry.get("reply") or "", [FunctionCall(**c) for c in entry.get("tool_calls") or []])
        usage = entry.get("usage") or {}
        self.calls.append(CallRecord(
            messages=entry.get("sent") or request["messages"], reply=turn.content,
            prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0),
            temperature=request["temperature"], latency_s=time.perf_counter() - start,
            model=entry.get("model", ""), cached_tokens=usage.get("cached_tokens", 0),
            tool_calls=list(turn.tool_calls), started_s=start, grammar=request.get("grammar", ""),
            note=f"replayed from {entry['_file']} (recorded in {entry.get('latency_s', 0)} s)"))
        return turn

    def _miss_message(self, request: dict) -> str:
        names = ", ".join(str(p) for p in self.paths)
        head = (f"The request is not on the cassette{'s' if len(self.paths) > 1 else ''} {names} "
                f"({len(self.entries)} recorded requests).")
        if not self.entries:
            return f"{head} It is empty: record a run first." + self._how_to_record()
        wanted = readable(request)
        near = closest(self.entries, self._readable, wanted)
        return (f"{head} Re-record it, or send the recorded request. "
                f"The closest one recorded, and where they differ:\n" + diff_lines(self._readable[id(near)], wanted)
                + self._how_to_record(self._file_stamps.get(near["_file"], {})))

    def _how_to_record(self, stamp: dict | None = None) -> str:
        """For a notebook's cassette: which notebook and cell asked, and the command that records it again."""
        stamp = self.stamp if stamp is None else stamp
        notebook = stamp.get("notebook")
        if not notebook:
            return ""
        cell = current_cell(notebook)
        return (f"\nThis request comes from the notebook {notebook}{f', {cell}' if cell else ''}, which replays "
                f"the calls {stamp.get('model', '?')} answered on {stamp.get('recorded', '?')}. To send a "
                f"changed request, run it live (AP_MODE=local or real), or record the notebook again: "
                f"{stamp.get('command', 'python tools/record.py')}")

    def reset(self) -> None:
        self.calls.clear()


def real_or_replay(notebook: str, live, *, name: str = "", mode: str | None = None):
    """The live model (`live()`) under AP_MODE=local or real, else this notebook's recording of it.

    Prints which one it is, with the recording's stamp. `name` tells several LLMs of one notebook
    apart on its cassette. While tools/record.py runs the notebook (AP_RECORD names the cassette),
    the live model is wrapped in a Recorder.
    """
    from .settings import setting

    mode = (mode or setting("AP_MODE") or "fake").strip().lower()
    recording = os.environ.get("AP_RECORD", "")
    label = f" ({name})" if name else ""
    if recording:
        llm = live()
        print(f"recording the live model{label}: {getattr(llm, 'model', '') or type(llm).__name__}")
        return Recorder(llm, recording, append=True, name=name, stamp=stamp_of(llm, notebook, mode))
    if mode in LIVE_MODES:
        llm = live()
        print(f"live model{label}: {getattr(llm, 'model', '') or type(llm).__name__} (AP_MODE={mode})")
        return llm
    path = cassette_path(notebook)
    if not path.is_file():
        raise FileNotFoundError(f"The course has no recording for {notebook} ({path}). Run it live with "
                                f"AP_MODE=local, or record it: {record_command(notebook)}")
    replay = ReplayLLM(path, name=name)
    stamp = replay.stamp
    print(f"replaying{label} {stamp.get('model', replay.model)} as recorded on {stamp.get('recorded', '?')} "
          f"from {stamp.get('server', '?')}; AP_MODE=local runs it live")
    return replay
