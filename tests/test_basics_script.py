"""Chapter 0's stand-in rules answer from what the prompt says, never from an earlier call."""
from agentkit.llm import ScriptedLLM
from agentkit.scripts.basics import RULES


def test_the_name_comes_from_the_prompt_and_only_from_it():
    llm = ScriptedLLM(RULES)
    assert llm.think("What is my name?").startswith("I don't know your name")
    assert llm.think("Hi, my name is Grace. What is my name?") == "Your name is Grace."
    assert llm.think("What is my name?").startswith("I don't know")  # the call before left nothing behind
    chat = [{"role": "user", "content": "Hi, my name is Ada."}, {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Sorry, my name is Alan. What is my name?"}]
    assert llm.think(chat) == "Your name is Alan."
