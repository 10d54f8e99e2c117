"""Chapter 00's exercises: a chat's growing bill predicted and rebuilt from the ledger, the name rule broken, two questions."""
from __future__ import annotations

import copy
import re

from .. import tokens
from ..i18n import tr, tr_later
from ..llm import Rule, ScriptedLLM, ledger_totals
from ..modes import get_llm
from . import Fail, NotDone, call, cases, exercise, question, reference
from .predictions import Prediction, prediction

# --- 00.predict: the note taker's bill, twelve turns long ---------------------------------------

PREDICT_TURNS = 12
NOTE_TAKER = "You are a note taker. Acknowledge each turn briefly."
TOKEN_TOLERANCE = 0.01  # a token estimate within 1% is right: the point is the growth, not the last token


def note_taker(turns: int = PREDICT_TURNS) -> ScriptedLLM:
    """Section 3's note-taker chat, `turns` long; returns the stand-in with its ledger."""
    chat = ScriptedLLM([Rule("Turn", lambda p: f"Noted, that was turn {p.count('Turn')}.")])
    history = [{"role": "system", "content": NOTE_TAKER}]
    for turn in range(1, turns + 1):
        history.append({"role": "user", "content": f"Turn {turn}: here is one more fact to remember."})
        history.append({"role": "assistant", "content": chat.think(history)})
    return chat


PREDICT_KEYS = ("messages in the last call", "prompt tokens of the last call", "prompt tokens, all calls")


def chat_bill(turns: int = PREDICT_TURNS) -> dict:
    """What the note taker's ledger says after `turns` turns, under the prediction's keys."""
    calls = note_taker(turns).calls
    return dict(zip(PREDICT_KEYS, (len(calls[-1].messages), calls[-1].prompt_tokens,
                                   ledger_totals(calls)["prompt_tokens"])))


def _predict_hint(key: str, guess: int, truth: dict, first: int, step: int) -> str:
    if key == PREDICT_KEYS[0]:
        if guess in (PREDICT_TURNS, PREDICT_TURNS + 1):
            return tr("each turn leaves two messages in the history, the user's and the reply it got, and every "
                      "call re-sends all of them: the system message, the user messages, and the replies before.")
        if guess in (1, 2):
            return tr("the model is stateless: a call that sent only the new turn would leave it knowing nothing "
                      "(section 1).")
        return tr("count what the loop appends: one user message and one reply per turn, after one system message.")
    if key == PREDICT_KEYS[1]:
        if guess == first:
            return tr("you assumed each call costs what the first one did: every call re-sends the whole history, "
                      "so section 3's list grows by {step} tokens a call.", step=step)
        return tr("section 3 prints the first calls: {first}, {second}, {third}, ... Extend the line.", first=first,
                  second=first + step, third=first + 2 * step)
    if guess == PREDICT_TURNS * first:
        return tr("that is twelve first calls: the calls are not alike, each re-sends more than the one before.")
    if guess == PREDICT_TURNS * truth[PREDICT_KEYS[1]]:
        return tr("that is twelve last calls: only the last call is that long; add up a growing series.")
    if guess == truth[PREDICT_KEYS[1]]:
        return tr("that is the last call alone: the bill is every call's prompt, added up.")
    return tr("add up the growing series: the first call's tokens plus the last call's, times half the number of "
              "calls (the calls grow by the same step, section 3).")


def _first_and_step() -> tuple:
    calls = note_taker(2).calls
    return calls[0].prompt_tokens, calls[1].prompt_tokens - calls[0].prompt_tokens


def _hint(key: str, guess: tuple, actual: tuple, prediction: dict) -> str:
    first, step = _first_and_step()
    return _predict_hint(key, int(guess[0]), chat_bill(), first, step)


def _done(truth: dict) -> str:
    first, step = _first_and_step()
    total = truth[PREDICT_KEYS[2]][0]
    return tr("Each call re-sends everything before it, so each prompt is {step} tokens longer than the last and the "
              "bill grows with the square of the length: {turns} turns cost {total} prompt tokens, where {turns} "
              "calls of {first} tokens would cost {flat}.", step=step, turns=PREDICT_TURNS, total=total, first=first,
              flat=PREDICT_TURNS * first)


prediction("00.predict", "The note taker's bill",
           "Set `prediction` to the three numbers for a twelve-turn chat, before running anything.",
           Prediction(truth=chat_bill, labels=("",), hint=_hint, done=_done, source="the ledger",
                      tolerance=lambda row, label, actual: TOKEN_TOLERANCE * actual if "tokens" in row else 0,
                      case=lambda row: tr("{row}, {turns} turns", row=row, turns=PREDICT_TURNS),
                      pointer="count what the loop appends per turn, then extend section 3's list of prompt sizes.",
                      why={PREDICT_KEYS[0]: "one system message, then two per turn (the user's and the reply), and "
                                            "the last call is sent before its own reply",
                           PREDICT_KEYS[1]: "every call re-sends the whole history: the prompts grow by the same "
                                            "step each call",
                           PREDICT_KEYS[2]: "the sum of a growing series: (first + last) / 2 per call, times the "
                                            "number of calls"}))


# --- 00.bill: the tokens a conversation re-sends --------------------------------------------------

BILL_CHATS = [  # (system message or None, the user's turns, what the case is)
    ("You answer in one short sentence.", ["Hello!", "What is a token?", "And a prompt?"],
     tr_later("a three-turn chat with a system message")),
    (None, ["Hi, my name is Grace. What is my name?"], tr_later("a single call, no system message")),
    ("You are a note taker.", [f"Fact {n}: the meeting moved to room {n}0{n}." for n in range(1, 6)],
     tr_later("a five-turn chat")),
    ("Réponds en une phrase.", ["史蒂夫·乔布斯出生于哪一年？", "🍎🍎🍎 ?"], tr_later("a chat in other scripts")),
]


WORDS = ("meeting", "budget", "room", "Friday", "printer", "coffee", "deadline", "report", "Ana", "Oslo", "blue",
         "seven", "notes", "train", "lunch", "quarter", "draft", "window")
SYSTEMS = ("You keep answers short.", "You are a helpful assistant who answers in French.", "Reply with one word.")


def unseen_chat():
    """A chat drawn for this check: a system message or none, one to six turns of random words."""
    rng = cases()
    system = rng.choice(SYSTEMS + (None,))
    turns = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) + rng.choice(".?!")
             for _ in range(rng.randint(1, 6))]
    what = (tr("a chat drawn for this check ({turns} turns, a system message)", turns=len(turns)) if system else
            tr("a chat drawn for this check ({turns} turns, no system message)", turns=len(turns)))
    return system, turns, what


def _reply(prompt: str) -> str:
    return f"Noted ({len(prompt.split())} words so far)."


def run_chat(system, turns) -> tuple[list[dict], ScriptedLLM]:
    """Run a chat the way section 3's loop does: each call sends every message so far."""
    llm = ScriptedLLM([Rule(lambda p: True, _reply, name="any")])
    history = [{"role": "system", "content": system}] if system else []
    for text in turns:
        history.append({"role": "user", "content": text})
        history.append({"role": "assistant", "content": llm.think(history)})
    return history, llm


@reference
def ledger_bill(system, turns) -> tuple:
    """(prompt tokens the ledger sums to, calls): the chat run again, after the learner's answer is in."""
    _, llm = run_chat(system, turns)
    return ledger_totals(llm.calls)["prompt_tokens"], len(llm.calls)


def _calls_of(history):
    """The prompts the loop sent: every prefix that ends just before an assistant reply."""
    return [history[:i] for i, m in enumerate(history) if m["role"] == "assistant"]


def _known_mistakes(history) -> dict:
    """{a wrong total: the hint it earns}, for the mistakes learners make."""
    prompts = _calls_of(history)
    stateless = tr("the model is stateless: every call re-sent all the messages before it, so the early messages "
                   "are paid again with every call (section 3's list grows call by call).")
    return {
        tokens.count_messages(history): stateless,
        tokens.count_messages(history[:-1]): stateless,
        tokens.count_messages(prompts[-1] if prompts else []): stateless,
        sum(tokens.count_messages([m]) for m in history): stateless,
        sum(tokens.count_tokens(m["content"]) for p in prompts for m in p):
            tr("a chat request costs more than its text: each message adds 3 wrapper tokens and its role, and "
               "3 more prime the reply (section 4's 'as a chat request' line); tokens.count_messages does all that."),
        sum(tokens.count_messages(history[: i + 1]) for i, m in enumerate(history) if m["role"] == "assistant"):
            tr("a call sends what came before its reply: the reply itself is billed as completion tokens, and is "
               "re-sent only from the next call on."),
        sum(tokens.count_messages(p[-1:]) for p in prompts): stateless,
        sum(tokens.count_messages(history[:i]) for i in range(1, len(history) + 1)):
            tr("one call per user turn, not one per message: this chat made {calls} calls, each sending "
               "everything before the reply it got back.", calls=len(prompts)),
    }


DRAWN_CHATS = 2


@exercise("00.bill", "build", "What a conversation re-sends",
          "Write `resent_tokens(history)`: the prompt tokens of every call the chat made, added up. You may call "
          "tokens.count_messages; the ledger's own sum (llm.ledger_totals) is refused.",
          forbid=("agentkit.llm:ledger_totals",), objects=False)
def _bill(resent_tokens):
    if not callable(resent_tokens):
        raise Fail(tr("your answer"), tr("a function resent_tokens(history) -> int"), repr(resent_tokens),
                   tr("define it with def."))
    bills = []
    chats = [*BILL_CHATS, ("You are a note taker.", [], tr_later("a chat that never called the model")),
             *(unseen_chat() for _ in range(DRAWN_CHATS))]
    for system, turns, what in chats:
        history = run_chat(system, turns)[0]  # the chat's messages only: its ledger is read after your answer
        said = call(resent_tokens, copy.deepcopy(history), case=what, hint="")
        truth, calls = ledger_bill(system, turns)
        if isinstance(said, bool) or not isinstance(said, (int, float)):
            raise Fail(what, tr("a number of tokens"), repr(said), tr("return the total as an int."))
        if said != truth:
            hint = _known_mistakes(history).get(said, tr("sum tokens.count_messages(...) over the prompts the loop "
                                                         "sent: every prefix of the history that ends just before a "
                                                         "reply."))
            raise Fail(tr("{what} ({calls} calls)", what=tr(what), calls=calls),
                       tr("{truth} prompt tokens (the ledger)", truth=truth),
                       tr("{said} (off by {off})", said=said, off=f"{said - truth:+}"), hint)
        bills.append((what, calls, truth, tokens.count_messages(history)))
    _, calls, truth, once = bills[2]
    return tr("Your count matches the ledger on all {chats} chats: {set} of set shapes (one of them never called the "
              "model) and {drawn} drawn for this check. The five-turn one made {calls} calls that sent {truth} prompt "
              "tokens, where its final history counted once is {once}: re-sending is what the bill is made of.",
              chats=len(bills), set=len(bills) - DRAWN_CHATS, drawn=DRAWN_CHATS, calls=calls, truth=truth, once=once)


# --- 00.break: a prompt that tells the name and still gets "I don't know" --------------------------


@exercise("00.break", "break", "Fool the name rule",
          "Set `attempt` to a name and a prompt that tells that name and asks for it, which the stand-in still misses.", objects=False)
def _break(attempt):
    if not isinstance(attempt, dict):
        raise Fail(tr("your answer"), tr('a dict {"name": ..., "prompt": ...}'), type(attempt).__name__,
                   tr("copy the dict from the exercise cell."))
    name, prompt = attempt.get("name"), attempt.get("prompt")
    if name is None or name is Ellipsis or prompt is None or prompt is Ellipsis:
        raise NotDone()
    if not isinstance(name, str) or not isinstance(prompt, str) or not name.strip():
        raise Fail(tr("your answer"), tr("a name and a prompt, both strings"), f"{name!r}, {prompt!r}",
                   tr("write both as text."))
    if not re.search(r"\b" + re.escape(name.strip()) + r"\b", prompt, re.IGNORECASE):
        raise Fail(tr("the prompt"), tr("a prompt that tells the name {name}", name=repr(name.strip())),
                   repr(prompt[:120]),
                   tr("the stand-in can only miss a name the prompt gives: put the name in it, in your own words."))
    llm = get_llm("fake")
    reply = llm.think(prompt)
    record = llm.calls[-1]
    if record.note != "rule: whats-my-name":
        raise Fail(tr("the stand-in's ledger"), tr("the name rule answering (note 'rule: whats-my-name')"),
                   f"note {record.note!r}, reply {reply[:70]!r}",
                   tr("ask 'What is my name?' in the prompt: that question is what the name rule answers (section 1); "
                      "with no rule the ledger says 'no script'."))
    if name.strip().casefold() in reply.casefold():
        raise Fail(tr("the stand-in's reply"), tr("a reply that misses the name"), repr(reply),
                   tr("it found the name: section 1 says what it reads, the last 'my name is ...' in the prompt. "
                      "People tell their names in other words too."))
    return tr("The stand-in replied {reply} (ledger: {note}, {tokens} prompt tokens). Any reader of English would "
              "have found the name; the stand-in knows one phrase. It is an instrument for the loop, not a model: "
              "every figure it makes measures the code around it, never understanding.", reply=repr(reply),
              note=record.note, tokens=record.prompt_tokens)


# --- concept questions ------------------------------------------------------------------------------

question("00.q1", 'You call llm.think("What is my name?") right after a call that said "Hi, my name is Ada." Why '
         "can't the model answer?", {
    "a": ("get_llm() made a new stand-in, and a new one has an empty memory.", False,
          "the same `llm` answered both calls; no client, stand-in or hosted, keeps the text of earlier calls."),
    "b": ("Temperature 0 makes the model forget: it only keeps what it is sure of, and a name said once in another "
          "call is not sure enough.", False,
          "temperature only changes how a reply is picked from what the prompt makes likely; there is nothing to "
          "forget."),
    "c": ("The stand-in only remembers the last three calls.", False,
          "it remembers no call at all: it answers from the prompt's text, and the ledger is a record for us, never "
          "read by the model."),
    "d": ("A model keeps nothing between calls: the second call did not contain the first, and the prompt is all it "
          "sees.", True,
          "memory is the history we choose to re-send; section 1 re-sends it and the name comes back."),
}, hint="section 1, the cells after 'The model \"forgot\"'.")

question("00.q2", "Why does the course's stand-in answer by the content of the prompt, never by counting calls?", {
    "a": ("Counting is slower than matching text.", False,
          "both take microseconds; the difference is which answer you get, not how fast."),
    "b": ("A real model also matches phrases in the prompt, so rules keyed on the prompt's text make the stand-in "
          "behave like a real model, and its figures like a real model's.", False,
          "a real model does not follow rules; the stand-in is an instrument for testing the loop, not a model."),
    "c": ("A counter hands the n-th reply to whichever call comes n-th: one debug call, or two agents sharing it, "
          "shifts every later answer, silently.", True,
          "a content-based stand-in gives the same reply to the same text, whatever came before (section 2)."),
    "d": ("A counter would make the ledger's token counts wrong.", False,
          "the ledger counts what was sent and received either way; the wrong part is the reply itself."),
}, hint="section 2, the cells with CounterStandIn.")
