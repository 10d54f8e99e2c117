"""Can a pinned closure do without some of its distributions? Import every module of some packages with and without.

    python tools/closure_check.py --without pyasn1 pyasn1_modules types-requests \
        --packages agentdojo anthropic cohere google.genai google.auth google.oauth2 fastavro tokenizers \
                   email_validator deepdiff docstring_parser tenacity

It makes a venv that borrows this one's packages, all but the named distributions (as tests/test_packaging.py
borrows them), and in each of the two imports every module of the named packages, then AgentDojo's pipeline whole
and chapter 18's run of one pair. It prints every module that imports in one and not in the other, and exits 1 if
there is one: a distribution that nothing imports can leave the closure.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import importlib, json, pkgutil, sys, warnings
warnings.simplefilter("ignore")
found = {}
for top in sys.argv[1:]:
    try:
        package = importlib.import_module(top)
    except Exception as e:
        found[top] = type(e).__name__
        continue
    found[top] = "ok"
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), top + ".", onerror=lambda name: None):
        try:
            importlib.import_module(info.name)
            found[info.name] = "ok"
        except BaseException as e:  # a module that exits or fails on import: its kind is what is compared
            found[info.name] = type(e).__name__
from agentkit import agentdojo_run as dojo
bank = dojo.suite("banking")
found["chapter 18's pair"] = str(dojo.run_pair("banking", bank.user_tasks["user_task_0"],
                                               bank.injection_tasks["injection_task_0"], "none")["attack"])
from agentdojo.agent_pipeline import AgentPipeline, GoogleLLM, AnthropicLLM, CohereLLM
found["agentdojo.agent_pipeline, whole"] = "ok"
print(json.dumps(found))
"""


def borrowing_venv(where: Path, leave_out: set[str]) -> Path:
    """A venv whose site-packages are links to this one's, but for the files of the `leave_out` distributions."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True)
    purelib = Path(sysconfig.get_paths()["purelib"])
    skip = set()
    for name in leave_out:
        for file in metadata.distribution(name).files or []:
            skip.add(file.parts[0])
    borrowed = where / "borrowed"
    borrowed.mkdir()
    for entry in purelib.iterdir():
        if entry.name not in skip and entry.suffix != ".pth":
            (borrowed / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    new = sysconfig.get_paths(vars={"base": str(where / "venv"), "platbase": str(where / "venv")})["purelib"]
    Path(new, "borrowed.pth").write_text(f"{borrowed}\n")
    # agentkit's editable install (agentkit.data is the checkout's data/), after the borrowed folder is on the path
    editable = "".join(p.read_text() for p in purelib.glob("__editable__*.pth"))
    Path(new, "zz_agentkit_editable.pth").write_text(editable)
    return where / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def probe(python: str, packages: list[str]) -> dict:
    out = subprocess.run([python, "-c", PROBE, *packages], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{python}: the probe failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--without", nargs="+", required=True, help="distributions to leave out")
    parser.add_argument("--packages", nargs="+", required=True, help="import packages whose modules are imported")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        without = probe(str(borrowing_venv(Path(tmp), set(args.without))), args.packages)
    whole = probe(sys.executable, args.packages)
    differ = sorted(name for name in whole.keys() | without.keys() if whole.get(name) != without.get(name))
    for name in differ:
        print(f"{name}: {whole.get(name, 'absent')} with them, {without.get(name, 'absent')} without")
    print(f"{len(whole)} modules imported with {', '.join(args.without)}; {len(differ)} differ without them")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
