"""Two tools that keep things out of the prompt: a note book, and a sub-agent (chapter 17).

* `NoteBook`: `Note[text]` appends one note (at most `max_notes`, each cut to `note_chars`, with a
  message saying so), `Notes[...]` reads every note back (its input is ignored). The notes live in
  this object, not in the prompt: they enter it only as the Observation of a `Notes` call, so a
  strategy that drops old steps can still get a fact back. `register(tools)` adds both tools.
* `SubAgentTool(make_agent, assignment, name)`: a tool whose call runs a fresh sub-agent,
  `make_agent()`, on `assignment.format(input=...)` and returns only its answer (or why it stopped).
  The sub-agent's steps never enter the caller's prompt: the caller sees one Observation. Its calls
  go to its own LLM's ledger (the caller's, when `make_agent` gives it the same object); `runs` keeps
  every sub-agent of the current caller run, so the steps stay inspectable.

Neither raises into the loop: bad input becomes an Observation that says what was wrong.
"""
from __future__ import annotations

from typing import Callable

from .text import shorten


class NoteBook:
    """Notes the agent writes (`Note[text]`) and reads back (`Notes[]`), kept outside the prompt."""

    def __init__(self, max_notes: int = 30, note_chars: int = 300) -> None:
        self.max_notes, self.note_chars = max_notes, note_chars
        self.notes: list[str] = []

    def write(self, text: str) -> str:
        text = " ".join(str(text).split())
        if not text:
            return "Nothing noted: write the fact inside the brackets, Note[the fact]."
        if len(self.notes) >= self.max_notes:
            return f"Nothing noted: the note book is full ({self.max_notes} notes). Read them with Notes[]."
        cut = f" (cut to {self.note_chars} characters)" if len(text) > self.note_chars else ""
        self.notes.append(text[: self.note_chars].rstrip())
        return f"Noted{cut}. {len(self.notes)} note{'s' if len(self.notes) > 1 else ''} kept."

    def read(self, _: str = "") -> str:
        if not self.notes:
            return "No notes yet."
        return "Your notes:\n" + "\n".join(f"{n}. {note}" for n, note in enumerate(self.notes, 1))

    def register(self, tools) -> None:
        tools.register("Note", self.write, "keep one fact outside the prompt, to read back later with Notes",
                       timeout_s=None)
        tools.register("Notes", self.read, "read back every note you kept (the input is ignored)", timeout_s=None)


class SubAgentTool:
    """A tool that runs a fresh sub-agent and returns only its answer."""

    def __init__(self, make_agent: Callable, assignment: str, name: str = "Delegate",
                 description: str = "hand a self-contained job to a sub-agent; you get its answer back") -> None:
        if "{input}" not in assignment:
            raise ValueError("assignment must hold {input}: where the tool's input goes")
        self.make_agent, self.assignment, self.name, self.description = make_agent, assignment, name, description
        self.runs: list = []

    def __call__(self, argument: str) -> str:
        argument = " ".join(str(argument).split())
        if not argument:
            return f"Nothing to hand over: write the job's input inside the brackets, {self.name}[input]."
        agent = self.make_agent()
        self.runs.append(agent)
        answer = agent.run(self.assignment.format(input=argument), verbose=False)
        if agent.stop_reason != "finished":
            return f"The sub-agent stopped without an answer ({agent.stop_reason}): {shorten(answer, 200)}"
        return str(answer)

    def register(self, tools) -> None:
        # Inline (no timeout thread): a whole sub-agent run takes as long as its model does.
        tools.register(self.name, self, self.description, timeout_s=None)
