"""The real client: any OpenAI-compatible chat endpoint, through the openai SDK.

Every failure becomes one `LLMError` that says what to check. Its text goes into notebook
output and evaluation rows, so it never carries a secret: credentials in a URL
(http://user:pass@host) are dropped, and the key, a bearer token or an sk-... key echoed
back in a server's error body is replaced by [redacted]. The SDK's own exception is not
chained to it (its text would show them again in a traceback).

Usage from the server is used only when its token counts are whole numbers >= 0; otherwise
the call is counted locally, as when the server sends none.
"""
from __future__ import annotations

import json
import re
from urllib.parse import urlsplit, urlunsplit

from . import tokens
from .protocol import AssistantTurn, FunctionCall, LedgerLLM, LLMError, MissingSettingError
from .settings import setting as _setting

# What a learner should look at first, by HTTP status.
STATUS_HINTS = {
    401: "The server refused the key: LLM_API_KEY is probably wrong or expired. ",
    403: "The server refused the key: LLM_API_KEY is probably wrong or lacks access to this model. ",
    404: "Nothing there: most OpenAI-compatible servers want LLM_BASE_URL to end in /v1, "
    "and LLM_MODEL_ID must be a model that server serves. ",
    429: "Still rate-limited after the retries: wait a minute, or use AP_MODE=local or fake meanwhile. ",
}


REDACTED = "[redacted]"
MIN_SECRET_CHARS = 10  # real API keys are 20 characters or more
_SECRET_PATTERNS = [
    (re.compile(r"(?i)\b(bearer)\s+[^\s,;'\"]+"), rf"\1 {REDACTED}"),
    (re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|token|password|secret)(\s*[:=]\s*)[^\s,;'\"]{4,}"),
     rf"\1\2{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"), REDACTED),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]*@"), r"\1"),  # credentials inside any URL in the text
]


def without_credentials(url: str | None) -> str | None:
    """The URL without its user:password part."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def redact(text: str, secrets=()) -> str:
    """`text` without the given secrets, URL credentials, bearer tokens or sk-... keys."""
    # A placeholder such as "loopback" or "EMPTY" is no secret (and replacing it would garble the text).
    for secret in sorted((str(x) for x in secrets if x and len(str(x)) >= MIN_SECRET_CHARS), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _token_count(value):
    """A usage count the ledger can take (a whole number >= 0), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class OpenAIChatLLM(LedgerLLM):
    """Any OpenAI-compatible chat endpoint, through the openai SDK.

    Settings come from arguments, else LLM_API_KEY / LLM_BASE_URL / LLM_MODEL_ID in
    the environment, else a .env file. Token counts come from the server's usage.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        super().__init__()
        api_key = api_key or _setting("LLM_API_KEY")
        if not api_key:
            raise MissingSettingError(
                "LLM_API_KEY is not set. Export it (or put LLM_API_KEY=... in a .env file), "
                "or use AP_MODE=fake for the offline stand-in."
            )
        model = model or _setting("LLM_MODEL_ID")
        if not model:
            raise MissingSettingError(
                "LLM_MODEL_ID is not set. Export the model name your server serves, "
                "e.g. LLM_MODEL_ID=deepseek-chat."
            )
        import openai

        self.model = model
        self.base_url = base_url or _setting("LLM_BASE_URL")
        parts = urlsplit(self.base_url or "")
        self._secrets = (api_key, parts.password, parts.username and parts.password and parts.username)
        self.max_retries, self.timeout = max_retries, timeout
        self.client = openai.OpenAI(
            api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=max_retries
        )

    def _fail(self, what: str, hint: str = "", retried: bool = True) -> LLMError:
        where = without_credentials(self.base_url) or "the default OpenAI endpoint"
        tries = f"after {self.max_retries} retries" if retried else "not retried: trying again would not help"
        return LLMError(
            f"{redact(what, self._secrets)} (model {self.model!r} at {where}, {tries}). {hint}"
            "Check LLM_BASE_URL, LLM_MODEL_ID and LLM_API_KEY, and that the server is up.")

    def _request(self, create, **kwargs):
        """Call an SDK endpoint; every failure becomes one LLMError that says what to check."""
        import openai

        # `from None`: the SDK's exception text may hold the key a server echoed back; ours is redacted.
        try:
            return create(model=self.model, **kwargs)
        except openai.APIStatusError as e:
            # The SDK retries only these statuses; a refused key or a wrong URL fails at once.
            retried = e.status_code in (408, 409, 429) or e.status_code >= 500
            hint = STATUS_HINTS.get(e.status_code, "")
            raise self._fail(f"The server answered HTTP {e.status_code}: {str(e)[:200]}", hint, retried) from None
        except openai.APITimeoutError:
            raise self._fail(f"The request timed out (no reply within {self.timeout:g} s)") from None
        except openai.APIConnectionError as e:
            raise self._fail(f"Could not connect: {e}") from None
        except openai.OpenAIError as e:
            raise self._fail(f"The response could not be read: {e}") from None
        except json.JSONDecodeError as e:  # the SDK lets a non-JSON body escape as this
            raise self._fail(f"The response could not be read, it is not JSON: {e}") from None
        except RecursionError:  # a reply nested deeper than the JSON parser goes
            raise self._fail("The response could not be read, its JSON nests too deeply") from None

    def _complete(self, messages, temperature, **extra):
        response = self._request(self.client.chat.completions.create, messages=messages, temperature=temperature,
                                 **extra)
        try:
            reply = response.choices[0].message.content
            if not isinstance(reply, str):
                raise TypeError(f"message content is {type(reply).__name__}")
        except (AttributeError, IndexError, TypeError) as e:
            raise self._fail(f"Malformed response, no message text ({e}): {str(response)[:200]}") from e
        return reply, self._usage(messages, reply, getattr(response, "usage", None))

    def _complete_constrained(self, messages, temperature, grammar):
        # Not an SDK parameter: extra_body adds it to the request's JSON, where llama.cpp's server reads it.
        return self._complete(messages, temperature, extra_body={"grammar": grammar})

    def _complete_with_tools(self, messages, tools, temperature, tool_choice):
        extra = {"tool_choice": tool_choice} if tool_choice else {}
        response = self._request(self.client.chat.completions.create, messages=messages, tools=tools,
                                 temperature=temperature, **extra)
        try:
            message = response.choices[0].message
            if message.content is not None and not isinstance(message.content, str):
                raise TypeError(f"message content is {type(message.content).__name__}")
            calls = [FunctionCall(c.id or "", c.function.name, c.function.arguments) for c in message.tool_calls or []]
            turn = AssistantTurn(message.content or "", calls)
        except (AttributeError, IndexError, TypeError) as e:
            raise self._fail(f"Malformed response, no message or tool calls ({e}): {str(response)[:200]}") from e
        return turn, self._usage(messages, turn.as_text(), getattr(response, "usage", None))

    @staticmethod
    def _usage(messages, reply, usage) -> dict:
        prompt = _token_count(getattr(usage, "prompt_tokens", None))
        completion = _token_count(getattr(usage, "completion_tokens", None) or 0)
        if prompt is None or completion is None:
            problem = "sent no usage" if usage is None or getattr(usage, "prompt_tokens", None) is None else \
                "sent usage that is not whole numbers >= 0"
            return {
                "prompt_tokens": tokens.count_messages(messages),
                "completion_tokens": tokens.count_tokens(reply),
                "note": f"server {problem}; counted locally with o200k_base",
            }
        details = getattr(usage, "prompt_tokens_details", None)
        cached = _token_count(getattr(details, "cached_tokens", None) or 0) if details else 0
        return {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached or 0}
