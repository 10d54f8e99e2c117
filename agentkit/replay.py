"""Record any LLM's calls to a cassette, and answer from it later: offline and deterministic.

`Recorder(llm, path)` wraps any LLM (`think`, and `act` when the LLM has it). Each call goes through
to the wrapped LLM and, once it has answered, becomes one JSON line of the cassette:

    {"request": {"messages": [...], "tools": [...] or null, "tool_choice": ... or null, "temperature": 0.0},
     "reply": "...", "tool_calls": [{"id": ..., "name": ..., "arguments": ...}],
     "usage": {"prompt_tokens": ..., "completion_tokens": ..., "cached_tokens": ...},
     "latency_s": 1.234, "model": "..."}

Only what the call sent and got back: never the key, the base URL or any header. A call that
raised writes nothing. A Recorder starts a new cassette, and refuses one that already holds calls
(`append=True` adds to it). Usage comes from the wrapped LLM's own ledger entry for that very call
(found by its reply, so calls of other threads sharing the client cannot swap), else it is counted
locally. When the wrapped LLM sent something else than it was given (a completion-style client
renders the messages as one text), that text is kept as "sent" and is what the ledgers show.
`name=` labels the calls of one of several LLMs on one cassette (it becomes part of the request);
`stamp=` writes a first line {"stamp": {...}}: which model, on which server, when.

`ReplayLLM(path)` answers `think` and `act` from a cassette (or a list of them) by the content of the
request: the same messages, tools, tool_choice, temperature and name, compared as canonical JSON. The
same request always gets the first reply recorded for it, whatever the order or the number of calls.
Lines end at a newline only (a reply may hold U+2028). Every line is checked when the cassette
loads; a bad one is a `CassetteError` naming its line. A request that is not on the cassette raises
`CassetteMiss`, which names the cassette, shows the closest recorded request and the lines where the
two differ (the first DIFF_LINES differing lines of each) and, for a notebook's cassette, the
notebook, the cell and the command that records it again. The replay's ledger carries the recorded
usage and model; its latency is the replay's own, the recorded one is in `note`.

`real_or_replay("03b_real_model", live=...)` is what a notebook's real-model cells call: the live
model under AP_MODE=local or real, the notebook's shipped cassette otherwise; it prints which.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import sys
import threading
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from . import tokens
from .protocol import AssistantTurn, CallRecord, FunctionCall, as_messages, ledger, prompt_text
from .text import json_lines

LIVE_MODES = ("local", "real")
CANDIDATES = 8  # recorded requests compared in full when a request misses (the rest by a cheap measure)
LINE_WIDTH = 240  # longer diff lines are cut, so a miss on a long prompt stays readable
DIFF_LINES = 200  # differing lines of each request a miss compares at most (a diff is quadratic in them)


class CassetteMiss(LookupError):
    """A request the cassette does not hold."""


class CassetteError(ValueError):
    """A cassette line that is not a recorded call; the message names the file and the line."""


def request_of(messages, tools=None, tool_choice=None, temperature: float = 0, name: str = "") -> dict:
    """What identifies a call on a cassette."""
    request = {"messages": as_messages(messages), "tools": tools, "tool_choice": tool_choice,
               "temperature": float(temperature)}
    if name:
        request["llm"] = name
    return request


def _canonical(request: dict) -> str:
    return json.dumps(request, sort_keys=True, ensure_ascii=False)


class Recorder:
    """Any LLM, with every call appended to a JSONL cassette."""

    def __init__(self, llm, path, *, append: bool = False, name: str = "", stamp: dict | None = None) -> None:
        self.llm, self.path, self.name = llm, Path(path), name
        self.model = getattr(llm, "model", "") or type(llm).__name__
        self.calls: list[CallRecord] = []
        self._lock = threading.Lock()
        self._claimed: dict[int, CallRecord] = {}  # the wrapped ledger's entries already matched to a call, by id
        self.path.parent.mkdir(parents=True, exist_ok=True)
        held = self.path.is_file() and self.path.read_text(encoding="utf-8").strip()
        if held and not append:
            raise FileExistsError(
                f"The cassette {self.path} is not empty: a new Recorder would erase what it holds. "
                f"Pass append=True to add to it, or delete the file to record a new one.")
        if not held:
            self.path.write_text(json.dumps({"stamp": stamp}, ensure_ascii=False) + "\n" if stamp else "",
                                 encoding="utf-8")

    def think(self, messages, temperature: float = 0) -> str:
        messages = as_messages(messages)
        seen, start = len(ledger(self.llm)), time.perf_counter()
        reply = self.llm.think(messages, temperature)
        self._keep(request_of(messages, temperature=temperature, name=self.name), AssistantTurn(reply), start, seen)
        return reply

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        if not callable(getattr(self.llm, "act", None)):
            raise TypeError(f"{type(self.llm).__name__} has no act(): it cannot call tools natively")
        messages = as_messages(messages)
        seen, start = len(ledger(self.llm)), time.perf_counter()
        turn = self.llm.act(messages, tools, temperature, tool_choice=tool_choice)
        self._keep(request_of(messages, tools, tool_choice, temperature, self.name), turn, start, seen)
        return turn

    def _own_record(self, seen: int, turn: AssistantTurn):
        """The wrapped LLM's ledger entry for this call: an unclaimed new one with this very reply."""
        inner = ledger(self.llm)
        fresh = inner[seen:] if len(inner) >= seen else inner  # the ledger may have been reset meanwhile
        mine = [r for r in fresh if id(r) not in self._claimed and r.reply == turn.content
                and list(r.tool_calls) == list(turn.tool_calls)]
        # Two calls with equal replies: prefer the entry holding this very reply object.
        record = next((r for r in mine if r.reply is turn.content), mine[0] if mine else None)
        if record is not None:
            self._claimed[id(record)] = record  # held, so its id cannot be reused by a later entry
        return record

    def _keep(self, request: dict, turn: AssistantTurn, start: float, seen: int) -> None:
        latency = time.perf_counter() - start
        with self._lock:
            record = self._own_record(seen, turn)
            if record is not None:
                usage = {"prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens,
                         "cached_tokens": record.cached_tokens}
            else:
                usage = {"prompt_tokens": tokens.count_messages(request["messages"]),
                         "completion_tokens": tokens.count_tokens(turn.as_text()), "cached_tokens": 0}
            line = {"request": request, "reply": turn.content, "tool_calls": [asdict(c) for c in turn.tool_calls],
                    "usage": usage, "latency_s": round(latency, 4), "model": self.model}
            sent = record.messages if record is not None and record.messages != request["messages"] else None
            if sent is not None:
                line["sent"] = sent
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.calls.append(CallRecord(sent or request["messages"], turn.content,
                                         temperature=request["temperature"], latency_s=latency, model=self.model,
                                         tool_calls=list(turn.tool_calls), started_s=start, **usage))

    def reset(self) -> None:
        self.calls.clear()


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
            problem = _problem(entry)
        except ValueError as e:
            problem = f"not JSON ({e})"
        except RecursionError:
            problem = "nested too deeply to read"
        if not problem and "stamp" not in entry:
            try:  # what a hit and a miss will need, made now, so that a line that cannot give it is named here
                key, readable = _canonical(entry["request"]), _readable(entry["request"])
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
            self._readable[id(entry)] = readable

    def think(self, messages, temperature: float = 0) -> str:
        return self._answer(request_of(messages, temperature=temperature, name=self.name)).content

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        return self._answer(request_of(messages, tools, tool_choice, temperature, self.name))

    def _answer(self, request: dict) -> AssistantTurn:
        start = time.perf_counter()
        entry = self._index.get(_canonical(request))
        if entry is None:
            raise CassetteMiss(self._miss_message(request))
        turn = AssistantTurn(entry.get("reply") or "", [FunctionCall(**c) for c in entry.get("tool_calls") or []])
        usage = entry.get("usage") or {}
        self.calls.append(CallRecord(
            messages=entry.get("sent") or request["messages"], reply=turn.content,
            prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0),
            temperature=request["temperature"], latency_s=time.perf_counter() - start,
            model=entry.get("model", ""), cached_tokens=usage.get("cached_tokens", 0),
            tool_calls=list(turn.tool_calls), started_s=start,
            note=f"replayed from {entry['_file']} (recorded in {entry.get('latency_s', 0)} s)"))
        return turn

    def _text(self, entry: dict) -> str:
        return self._readable[id(entry)]

    def _closest(self, wanted: str) -> dict:
        """The recorded request most like `wanted`: a cheap measure ranks them all (shared start, then
        length), and only the best few are compared line by line."""
        def cheap(entry):
            text = self._text(entry)
            return -_common_prefix(text, wanted), abs(len(text) - len(wanted))

        def similarity(entry):  # SequenceMatcher's ratio, over the lines that differ at most DIFF_LINES of each
            recorded, asked = self._text(entry).splitlines(), wanted.splitlines()
            shared, _, a, b, _ = _window(recorded, asked)
            blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
            same = sum(block.size for block in blocks)
            return 2 * (shared + same) / max(1, len(recorded) + len(asked))

        return max(sorted(self.entries, key=cheap)[:CANDIDATES], key=similarity)

    def _miss_message(self, request: dict) -> str:
        names = ", ".join(str(p) for p in self.paths)
        head = (f"The request is not on the cassette{'s' if len(self.paths) > 1 else ''} {names} "
                f"({len(self.entries)} recorded requests).")
        if not self.entries:
            return f"{head} It is empty: record a run first." + self._how_to_record()
        wanted = _readable(request)
        closest = self._closest(wanted)
        recorded, asked = self._text(closest).splitlines(), wanted.splitlines()
        _, skip, a, b, cut = _window(recorded, asked, context=1)
        shown = [_cut(_shift(line, skip)) for line in difflib.unified_diff(
            a, b, "closest recorded request", "this request", n=1, lineterm="")]
        more = f"\n... ({len(shown) - 40} more diff lines)" if len(shown) > 40 else ""
        if cut:
            more += f"\n(the diff compares the first {DIFF_LINES} lines of each where they differ)"
        first = ""
        if any(line.endswith(" more characters)") for line in shown):
            at = _common_prefix(self._text(closest), wanted)
            first = (f"\nThe first difference is at character {at}: recorded {self._text(closest)[at:at + 60]!r}, "
                     f"this request {wanted[at:at + 60]!r}.")
        return (f"{head} Re-record it, or send the recorded request. "
                f"The closest one recorded, and where they differ:\n" + "\n".join(shown[:40]) + more + first
                + self._how_to_record(self._file_stamps.get(closest["_file"], {})))

    def _how_to_record(self, stamp: dict | None = None) -> str:
        """For a notebook's cassette: which notebook and cell asked, and the command that records it again."""
        stamp = self.stamp if stamp is None else stamp
        notebook = stamp.get("notebook")
        if not notebook:
            return ""
        cell = _current_cell(notebook)
        return (f"\nThis request comes from the notebook {notebook}{f', {cell}' if cell else ''}, which replays "
                f"the calls {stamp.get('model', '?')} answered on {stamp.get('recorded', '?')}. To send a "
                f"changed request, run it live (AP_MODE=local or real), or record the notebook again: "
                f"{stamp.get('command', 'python tools/record.py')}")

    def reset(self) -> None:
        self.calls.clear()


def _problem(entry) -> str:
    """What makes a parsed cassette line unusable, or "" when it is a stamp or a recorded call."""
    if not isinstance(entry, dict):
        return f"a JSON {type(entry).__name__}, not an object"
    if "stamp" in entry:
        return "" if isinstance(entry["stamp"], dict) else "the stamp is not an object"
    request = entry.get("request")
    if not isinstance(request, dict):
        return "no 'request' object"
    messages = request.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                                                 for m in messages):
        return "request.messages is not a list of messages with a role"
    if not isinstance(request.get("temperature", 0), (int, float)):
        return "request.temperature is not a number"
    if request.get("tools") is not None and not isinstance(request["tools"], list):
        return "request.tools is not a list"
    if not isinstance(entry.get("reply") or "", str):
        return "reply is not text"
    calls = entry.get("tool_calls") or []
    if not isinstance(calls, list) or not all(
            isinstance(c, dict) and set(c) == {"id", "name", "arguments"} and all(isinstance(v, str) for v in c.values())
            for c in calls):
        return "tool_calls is not a list of {id, name, arguments} with text values"
    usage = entry.get("usage") or {}
    if not isinstance(usage, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                              for v in usage.values()):
        return "usage is not an object of token counts (whole numbers, 0 or more)"
    if "sent" in entry and not (isinstance(entry["sent"], list) and all(isinstance(m, dict) for m in entry["sent"])):
        return "sent is not a list of messages"
    if not isinstance(entry.get("model", ""), str) or not isinstance(entry.get("latency_s", 0), (int, float)):
        return "model is not text or latency_s is not a number"
    return ""


def _readable(request: dict) -> str:
    """A request as text for comparing: each message on its own lines, then the tools offered."""
    tools = [t.get("function", {}).get("name", "?") for t in request.get("tools") or []]
    return "\n".join([
        *(f"[{m.get('role')}] {line}" for m in request["messages"] for line in prompt_text([m]).splitlines() or [""]),
        f"[tools] {', '.join(tools) or '(none)'}   [tool_choice] {request.get('tool_choice')}   "
        f"[temperature] {request.get('temperature')}" + (f"   [llm] {request['llm']}" if request.get("llm") else ""),
    ])


def _window(a: list[str], b: list[str], context: int = 0) -> tuple[int, int, list[str], list[str], bool]:
    """Two texts' lines without the lines they share at start and end (bar `context` lines either side),
    the lines between cut to DIFF_LINES: a diff's work grows with the product of the lines it compares.

    Returns the shared lines left out, the lines left out before, what is left of a and of b, and
    whether either was cut.
    """
    start = _common_prefix(a, b)
    end = _common_prefix(a[start:][::-1], b[start:][::-1])
    skip = max(0, start - context)

    def side(lines):
        if len(lines) - start - end > DIFF_LINES:
            return lines[skip:start + DIFF_LINES], True
        return lines[skip:len(lines) - end + min(end, context)], False

    (a, cut_a), (b, cut_b) = side(a), side(b)
    return start + end, skip, a, b, cut_a or cut_b


def _shift(line: str, skip: int) -> str:
    """A unified diff's hunk header, renumbered for the `skip` lines left out before it."""
    if not skip or not line.startswith("@@ "):
        return line
    return re.sub(r"([-+])(\d+)", lambda m: f"{m[1]}{int(m[2]) + skip}", line, count=2)


def _common_prefix(a, b) -> int:
    """Length of the common start of two texts or lists (binary search on slices: fast on long prompts)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _cut(line: str) -> str:
    return line if len(line) <= LINE_WIDTH else f"{line[:LINE_WIDTH]}... ({len(line) - LINE_WIDTH} more characters)"


def _current_cell(notebook: str) -> str:
    """The running notebook cell, as "cell N" (counting Markdown cells, from 1), or "" outside a kernel."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            return ""
        cell_id = ((shell.get_parent() or {}).get("metadata") or {}).get("cellId") if hasattr(shell, "get_parent") else None
        source = shell.history_manager.input_hist_raw[-1].strip()
        cells = json.loads(Path(f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells, 1):
            text = "".join(cell.get("source", [])).strip()
            if (cell_id and cell.get("id") == cell_id) or (not cell_id and text == source):
                return f"cell {number}"
        return f"the cell run as In [{shell.execution_count}]"
    except Exception:  # noqa: BLE001 - naming the cell is a courtesy; the miss itself must still be raised
        return ""


# --- a notebook's real-model cells ----------------------------------------------------------


def cassette_path(notebook: str) -> Path:
    """Where the course ships the cassette of one notebook (by its file name without .ipynb)."""
    from .data import DATA_DIR

    return Path(str(DATA_DIR / "cassettes" / f"{notebook}.jsonl"))


def shipped_cassettes() -> list[Path]:
    """Every cassette the course ships, in name order."""
    return sorted(cassette_path("x").parent.glob("*.jsonl"))


def record_command(notebook: str) -> str:
    return f"make record NB=notebooks/{notebook}.ipynb"


def stamp_of(llm, notebook: str, mode: str) -> dict:
    """Which model, served by what, recorded when: the first line of a notebook's cassette."""
    from importlib import metadata
    from urllib.parse import urlparse

    model = getattr(llm, "model", "") or type(llm).__name__
    base_url = getattr(llm, "base_url", None) or ""
    local = getattr(sys.modules.get("agentkit.local"), "_shared", None)  # the process's llama.cpp server, if any
    if mode == "local" or (local is not None and local.running and base_url == local.base_url):
        try:
            version = metadata.version("xllamacpp")
        except metadata.PackageNotFoundError:
            version = "?"
        cap = f", replies capped at {local.max_tokens} tokens" if local is not None else ""
        server = f"llama.cpp (xllamacpp {version}){cap}"
    else:  # the host only: never the full URL, never the key
        server = urlparse(base_url).hostname or ("api.openai.com" if mode == "real" else type(llm).__name__)
    return {"notebook": notebook, "model": model, "server": server,
            "recorded": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "command": record_command(notebook)}


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
