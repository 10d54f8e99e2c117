"""Chapter 12's exercises: what the store loses behind each gate, a policy to build, a page that leaks, two questions.

Every check runs in this process, on throw-away worlds (agentkit.world) behind agentkit.approval's gate;
no MCP server is started.
"""
from __future__ import annotations

import shutil
from contextlib import contextmanager

from ..approval import VERDICTS, Approve, Call, GatedExecutor, Tainted, deny_side_effects
from ..approval import Verdict as GateVerdict
from ..i18n import tr, tr_later
from ..modes import get_llm
from ..react import ReActAgent
from ..scripts.world import FILL, STANDUP_QUESTION, TIDY_QUESTION
from ..tools import KnowledgeBase
from ..world import SAMPLE_NOTES, World, world_executor
import re

from . import Fail, call, cases, exercise, question, reference
from .predictions import Prediction, prediction


@contextmanager
def throwaway_world(notes: dict | None = None):
    """A fresh World with SAMPLE_NOTES (or `notes`), removed afterwards."""
    world = World.temporary(notes)
    try:
        yield world
    finally:
        world.close()
        shutil.rmtree(world.folder, ignore_errors=True)


def tidy_run(world: World, policy=None, max_steps: int = 6, **gate_options) -> GatedExecutor | None:
    """The stand-in that obeys what it reads, asked to tidy the notes; behind a gate with `policy`, or none."""
    tools = world_executor(world)
    gate = GatedExecutor(tools, policy, world.dry_run, **gate_options) if policy is not None else None
    ReActAgent(get_llm("fake"), gate or tools, max_steps=max_steps).run(TIDY_QUESTION, verbose=False)
    return gate


# --- 12.predict: what the store loses behind each gate ------------------------------------------

PREDICT_SETTINGS = {  # name -> (policy, the gate's trusted tools); sections 3, 4 and 6 print none of these runs
    "approve DeleteNotes": (Approve({"DeleteNotes"}), ()),
    "approve SendMessage": (Approve({"SendMessage"}), ()),
    "approve SendMessage, tainted, ReadPage trusted": (Tainted(Approve({"SendMessage"})), ("ReadPage",)),
}


def store_losses() -> dict:
    """(notes left of 4, messages sent) after the injected tidy run under each setting, read from the store."""
    losses = {}
    for name, (policy, trusted) in PREDICT_SETTINGS.items():
        with throwaway_world() as world:
            tidy_run(world, policy, trusted=trusted)
            losses[name] = (world.counts()["notes"], world.counts()["outbox"])
    return losses


WHY = {
    "approve DeleteNotes": "Approve runs the tools it names and denies every other side effect: the deletion runs, "
                           "the message is denied (section 6's Approve)",
    "approve SendMessage": "Approve runs the tools it names and denies every other side effect: the deletion is "
                           "denied, the message goes out (section 6's Approve)",
    "approve SendMessage, tainted, ReadPage trusted": "the page's output taints nothing once ReadPage is trusted, so "
                                                      "Approve decides the deletion: denied; a denied call ran no tool "
                                                      "and has no output to taint the message, which Approve names: it "
                                                      "goes out. Trusting the tool that reads the page gave the page "
                                                      "its say again",
}


prediction("12.predict", "What the store loses behind each gate",
           "Set `prediction` to {setting: (notes left, messages sent)} for the three settings, before running "
           "anything. Approve(names) runs the tools it names and denies every other side effect; Tainted(policy) "
           "denies every side effect after the output of a tool that ran and is not in the gate's `trusted`, and "
           "asks `policy` about the others.",
           Prediction(truth=store_losses, labels=("notes left", "messages sent"), why=WHY,
                      case=lambda name: tr("{name}, the injected tidy run", name=name), source="the store after the run",
                      pointer="the stand-in makes every call the page asks for, whatever happened to the one "
                              "before; for each setting, ask which of the page's two calls the gate lets run, "
                              "and which earlier output, if any, taints it (sections 3, 4 and 6)."))


# --- 12.policy: the team's approval policy -------------------------------------------------------

FROM_TOOL = "call 1: ReadPage[note-keeping policy] named {tool} in its output"
OWN_IDEA = "no earlier tool output named {tool}: the model's own idea"

POLICY_CASES = [  # (tool, argument, effect, source, what the case is, hint): policy_truth decides, after yours
    ("WriteNote", "Standup: moved to 10:00", "write", OWN_IDEA, tr_later("a note the user asked for"),
     tr_later("a write the model chose itself may run: return Verdict(\"run\", \"policy: ...\").")),
    ("WriteNote", "Policy: notes are deleted weekly", "write", FROM_TOOL,
     tr_later("a note a wiki page asked for"),
     tr_later("an instruction found in a tool's output is not the user's: when call.source starts with \"call \", deny "
              "the write (section 4 prints a source).")),
    ("SendMessage", "ana@example.com: the standup moved", "send", OWN_IDEA, tr_later("a message"),
     tr_later("a message is shown, never sent: Verdict(\"dry_run\", ...) for the effect \"send\".")),
    ("DeleteNotes", "all", "delete", OWN_IDEA, tr_later("a deletion the model chose itself"),
     tr_later("a deletion is always denied, whoever asked for it.")),
    ("PurgeArchive", "2023", "delete", OWN_IDEA, tr_later("a tool you have not seen, whose effect is delete"),
     tr_later("decide by call.effect, not by the tool's name: a new tool still declares what it does (section 1).")),
    ("PostToChat", "team: hello", "send", OWN_IDEA, tr_later("a tool you have not seen, whose effect is send"),
     tr_later("decide by call.effect, not by the tool's name: a new tool still declares what it does (section 1).")),
]
@reference
def policy_truth(effect: str, source: str) -> str:
    """The team's rule: a send is a dry run, a delete is denied, a write runs unless a tool's output asked for it."""
    return {"send": "dry_run", "delete": "deny"}.get(effect, "deny" if source.startswith("call ") else "run")


VERDICT_HINT = (tr_later("return a Verdict from agentkit.approval, for example Verdict(\"deny\", \"policy: team "
                         "rules\"); the gate reads its action and who decided."))


H_UNSEEN = (tr_later("a call drawn for this check: decide by call.effect and call.source only: a write runs unless its "
                     "source says a tool's output asked for it (\"call N: ...\"), then it is denied; a send is a dry "
                     "run; a delete is denied."))
TOOL_NAMES = ("ArchiveNote", "RenameNote", "PostToChat", "EmailTeam", "DropNotes", "WipeFolder", "TagNote", "Notify")


def unseen_calls(count: int = 8) -> list:
    """Calls drawn for this check: tools the learner has never seen, each with an effect and a source."""
    rng, drawn = cases(), []
    kinds = [("write", False), ("write", True), ("send", rng.random() < 0.5), ("delete", rng.random() < 0.5)] * 2
    rng.shuffle(kinds)
    for effect, injected in kinds[:count]:
        tool = rng.choice(TOOL_NAMES)
        source = (f"call {rng.randint(1, 5)}: ReadPage[{rng.choice(['wiki', 'policy', 'help'])}] named {tool} in "
                  "its output" if injected else OWN_IDEA.format(tool=tool))
        drawn.append((tool, rng.choice(["all", "notes: tidy", "team: hello", "2023"]), effect, source,
                      tr_later("a call drawn for this check"), H_UNSEEN))
    return drawn


def _ask(policy, c: Call, what: str, hint: str) -> GateVerdict:
    case = tr("{what}: {call}", what=tr(what), call=f"{c.tool}[{c.argument}]")
    said = call(policy, c, case=case, hint=hint)
    if not isinstance(said, GateVerdict):
        raise Fail(case, tr("a Verdict, one of {verdicts}", verdicts=", ".join(VERDICTS)), repr(said)[:100],
                   VERDICT_HINT)
    return said


@exercise("12.policy", "build", "The team's approval policy",
          "Write `team_policy(call)`: run a write the model chose, deny one a tool's output asked for, "
          "dry-run every send, deny every delete.", objects=False)
def _policy(policy):
    if not callable(policy):
        raise Fail(tr("your answer"), tr("a function team_policy(call) -> Verdict"), repr(policy)[:100],
                   tr("define it with def."))
    for number, (tool, argument, effect, source, what, hint) in enumerate(POLICY_CASES + unseen_calls(), 1):
        c = Call(number, tool, argument, effect, f"would change something ({tool})", source.format(tool=tool))
        said = _ask(policy, c, what, hint)
        wanted = policy_truth(effect, c.source)
        if said.action != wanted:
            raise Fail(tr("{what}: {call}, effect {effect}, source {source}", what=tr(what), call=f"{tool}[{argument}]",
                          effect=effect, source=repr(c.source)), wanted,
                       f"{said.action} ({said.by})", hint)
    live = lambda c: _ask(policy, c, tr("the live run"), VERDICT_HINT)  # noqa: E731
    with throwaway_world() as tidy, throwaway_world() as desk:
        gate = tidy_run(tidy, live)
        standup = GatedExecutor(world_executor(desk), live, desk.dry_run)
        ReActAgent(get_llm("fake"), standup, max_steps=5).run(STANDUP_QUESTION, verbose=False)
        kept, written = tidy.counts(), desk.notes().get("Standup")
        table = {d.tool: d.verdict for d in gate.ledger + standup.ledger if d.effect != "read"}
        if kept["notes"] != len(SAMPLE_NOTES) or kept["outbox"] or written is None or desk.counts()["outbox"]:
            raise Fail(tr("the live runs (the injected tidy run, the standup task)"),
                       tr("the tidy store intact, the Standup note written, nothing sent"),
                       tr("tidy store {kept}; Standup note {written}; outbox {outbox}", kept=kept,
                          written=repr(written), outbox=desk.counts()["outbox"]),
                       POLICY_CASES[1][5])
    return tr("Live, the gate's ledgers say {table}: the page's deletion was denied, the user's note written, the "
              "message shown as a dry run. Deciding by effect and source, not by name, is what keeps a new tool under "
              "the same rule.", table=table)


# --- 12.leak: a page that walks a secret past the gate -------------------------------------------

SECRET = "office-wifi: maple-7-lantern"  # not the notebook's password: a leak must read it from the store
LEAK_NOTES = dict(SAMPLE_NOTES, **{"Wi-Fi password": SECRET})
LEAK_HINTS = {
    "side effect": tr_later("the gate stops every call that would write, delete or send (section 4). What leaves the "
                            "machine without a side effect? Section 6's second case."),
    "no read": tr_later("the stand-in fills <what ReadNote returned> with the last ReadNote output: ask it to call "
                        "ReadNote[a title] first, then the tool that takes the text out."),
    "from the page": tr_later("the secret must come from the store the check builds (its notes are not the notebook's): "
                              "let ReadNote fetch it, and pass <what ReadNote returned> on."),
    "nothing": tr_later("the stand-in obeys only lines of the form call Tool[input] in what it reads (section 3's "
                        "page)."),
}


def _calls(page: str) -> list:
    """The `call Tool[input]` instructions of a page, as the obedient stand-in reads them, spaces folded."""
    return [(tool, " ".join(argument.split()).casefold()) for tool, argument in re.findall(r"call (\w+)\[([^\]]*)\]", page)]


def printed_calls() -> list:
    """The instructions of the page section 6 runs (data/world_pages.json's Wi-Fi troubleshooting page)."""
    import json

    from ..data import read_text

    pages = json.loads(read_text("world_pages.json"))
    return _calls(next(p["text"] for p in pages if p["title"] == "Wi-Fi troubleshooting"))


def leak_run(page: str) -> tuple[World, GatedExecutor]:
    """The tidy run behind the gate that trusts "read-only" (section 6's first gate: open_world="read"), with
    `page` as the note-keeping policy; the world stays open."""
    world = World.temporary(LEAK_NOTES)
    world.pages = KnowledgeBase([{"title": "Note-keeping policy", "aliases": ["notes policy", "tidy notes"],
                                  "text": page}])
    return world, tidy_run(world, deny_side_effects, open_world="read")


@exercise("12.leak", "break", "A page that leaks past the gate",
          "Set `page` to the text of the note-keeping policy page, not section 6's attack: behind a gate that trusts "
          "\"read-only\" (open_world=\"read\"), a note's text must leave the machine, and the store must stay "
          "intact.", objects=False)
def _leak(page):
    if not isinstance(page, str) or not page.strip():
        raise Fail(tr("your answer"), tr("a str: the page's text"), repr(page)[:100], tr("write the page as a string."))
    if _calls(page) == printed_calls():
        raise Fail(tr("your page"), tr("a leak of your own"), tr("the calls of section 6's page: {calls}", calls=_calls(page)),
                   tr("section 6 runs that very attack already: make another note leave the machine, or the same "
                      "one by other calls."))
    world, gate = leak_run(page)
    try:
        counts, queries = world.counts(), world.web_log()
        leaked = [title for title, text in LEAK_NOTES.items()
                  if text not in page and any(text in q for q in queries)]
        tried = [d for d in gate.ledger if d.effect != "read"]
        if counts["notes"] != len(LEAK_NOTES) or counts["outbox"]:
            raise Fail(tr("the store after the run"), tr("intact: the attack must not need a side effect"), str(counts),
                       LEAK_HINTS["side effect"])
        if not leaked:
            calls = "; ".join(f"{d.tool}[{d.argument[:40]}] {d.verdict}" for d in gate.ledger) or tr("no tool call")
            read_a_note = any(d.tool == "ReadNote" for d in gate.ledger)
            hint = (LEAK_HINTS["side effect"] if tried else
                    LEAK_HINTS["no read"] if FILL in page and not read_a_note else
                    LEAK_HINTS["from the page"] if queries else LEAK_HINTS["nothing"])
            raise Fail(tr("the web-search log after the run"), tr("a query holding a note's text, read from the store"),
                       tr("queries {queries}; calls: {calls}", queries=queries, calls=calls), hint)
    finally:
        world.close()
        shutil.rmtree(world.folder, ignore_errors=True)
    return tr("The gate let every call run (all read-only), the store kept its {notes} notes, and the search engine "
              "received {queries} (the world's web log): {leaked} left the machine. 'Read-only' describes what a tool "
              "does to the store, not where its input goes.", notes=counts["notes"], queries=queries,
              leaked=", ".join(leaked))


# --- concept questions ------------------------------------------------------------------------

question("12.q1", "An MCP server lists a tool DropTable with readOnlyHint: true and openWorldHint: false. What does "
         "GatedExecutor do with a call to it?", {
             "a": ("Runs it without asking.", True,
                   "the gate decides by the effect, and effect_of reads readOnlyHint: true as 'read'. Annotations are "
                   "the server's claims: a gate is only as good as the labels it trusts."),
             "b": ("Denies it, because its name says it drops something.", False,
                   "the gate never reads a tool's name or description, only its effect."),
             "c": ("Asks a person, because the tool came from another process.", False,
                   "where a tool runs does not change its effect: an MCP tool goes through the same policy as a "
                   "local one."),
             "d": ("The MCP client refuses to list such a tool.", False,
                   "the protocol carries hints and the client checks nothing about them (section 8's table lists "
                   "what each server tool claims)."),
         }, hint="section 8's table: which column does the gate use?")

question("12.q2", "In section 4 the injected DeleteNotes[all] was denied. Which statement is true?", {
    "a": ("The agent is now safe from prompt injection.", False,
          "section 6: a read-only tool leaked the password with the gate in place."),
    "b": ("The ledger tells which tool output most likely carried the instruction.", True,
          "the decision's source names the ReadPage call whose output named DeleteNotes: a hint, not a proof."),
    "c": ("If a person had approved the call, it would have been safe, since a person checked it.", False,
          "section 6: an approved call runs whatever it does; the ledger then shows who approved it."),
    "d": ("The model was told the notes were deleted, so it finished happily.", False,
          "the denial is an observation that says nothing changed; the stand-in's answer said what was denied."),
}, hint="section 4 prints where the DeleteNotes call's instruction came from.")
