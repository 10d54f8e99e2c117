"""The course in a real browser: JupyterLab with default settings, driven in Debian's chromium.

    make browser          # installs requirements-browser.txt, builds the site, runs this
    python tools/browser_test.py [--notebooks 03 05] [--clicks 4] [--no-site] [--headed]

1. Starts JupyterLab on 127.0.0.1 with a fresh config, settings and workspaces folder (no user
   setting applies: commsOverSubshells and every other option is at its default), serving a
   temporary copy of notebooks/ so autosave never touches the stored outputs. The kernel runs
   the offline stand-in (AP_MODE=fake).
2. For every notebook: opens it, runs all cells from the menu, saves, and fails on any error
   output in the saved file. Then clicks each panel's Run button `--clicks` times, changing its
   controls between clicks, and fails unless every click shows its text and complete charts:
   every chart <img> loaded (naturalWidth > 0), at least 200x120 px, and not blank (a screenshot
   of the element has enough non-white pixels and varies). A click the callback refuses with
   "Cannot run with these values" may show no chart, but every panel must draw on most clicks,
   except a text-only one (run_panel(charts=False)), which must show no chart at all.
   A viewport screenshot per notebook (and one per panel click) goes to build/browser/.
3. Check yourself: in every notebook, each multiple-choice question is answered wrong (the feedback
   must say so) and then right (the feedback must say so and explain the others); in the notebooks
   of EXERCISE_EDITS, a coding exercise's cell is rewritten as a learner would, wrong first, then
   right, run with Shift+Enter, and its printed feedback checked each time.
4. Opens the static site (build/site, `make site`): every page loads and every image loads.

Chromium is /usr/bin/chromium (Debian's `apt-get install chromium`; set CHROMIUM to use another),
never a browser that playwright downloads.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "browser"
CHROMIUM_ARGS = [
    # Without these, chromium waits on network services a closed network never answers.
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
]
MIN_SIZE = (200, 120)          # a complete chart is at least this big (px)
MIN_INK = 0.01                 # fraction of pixels that are not near-white
RUN_TIMEOUT_S = 300            # one notebook's Run All
CLICK_TIMEOUT_S = 120          # one panel click


PlaywrightTimeout = TimeoutError  # replaced by playwright's own in main()


class Failures(list):
    def add(self, where: str, what: str) -> None:
        self.append(f"{where}: {what}")
        print(f"  FAIL {where}: {what}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_root() -> bool:
    """Root on Linux or macOS (Windows has no geteuid, and no root user)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def start_lab(course_dir: Path, scratch: Path) -> tuple[subprocess.Popen, str, str]:
    """JupyterLab on 127.0.0.1 with default settings; returns the process, its base URL and token."""
    port, token = free_port(), os.urandom(12).hex()
    env = dict(os.environ, AP_MODE="fake", LLM_API_KEY="",
               JUPYTER_CONFIG_DIR=str(scratch / "config"), JUPYTERLAB_SETTINGS_DIR=str(scratch / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"), JUPYTER_RUNTIME_DIR=str(scratch / "runtime"))
    command = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={course_dir}"]
    if is_root():
        command.append("--allow-root")
    log = open(scratch / "lab.log", "w", encoding="utf-8")
    lab = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if lab.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {lab.returncode}; see {scratch / 'lab.log'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return lab, base, token
        except OSError:
            time.sleep(0.5)
    lab.kill()
    raise RuntimeError(f"JupyterLab did not start within 120 s; see {scratch / 'lab.log'}")


def comms_setting(base: str, token: str) -> str:
    """The effective "Kernel Comms over subshells" setting, as this JupyterLab reports it."""
    from urllib.request import urlopen

    url = f"{base}/lab/api/settings/@jupyterlab/apputils-extension:kernels-settings?token={token}"
    for _ in range(60):
        try:
            with urlopen(url, timeout=10) as response:
                answer = json.load(response)
            default = answer["schema"]["properties"]["commsOverSubshells"]["default"]
            user = answer.get("settings", {}).get("commsOverSubshells")
            return f"{user or default} (default {default}, user setting {user or 'none'})"
        except OSError:
            time.sleep(1)
    return "unknown (the settings API did not answer)"


def ink(png: bytes) -> tuple[float, float]:
    """Fraction of non-white pixels and the grey-level standard deviation of a screenshot."""
    from PIL import Image, ImageStat

    grey = Image.open(io.BytesIO(png)).convert("L")
    histogram = grey.histogram()
    dark = sum(histogram[:235]) / max(1, sum(histogram))
    return dark, ImageStat.Stat(grey).stddev[0]


def menu(page, top: str, item: str) -> None:
    """Click a menu item (a toast or a slow first load can swallow the first try)."""
    entry = page.locator(".lm-Menu-itemLabel").filter(has_text=re.compile(f"^{re.escape(item)}$")).first
    for attempt in range(3):
        try:
            page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click(timeout=10_000)
            entry.click(timeout=10_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            if attempt == 2:
                raise


def open_notebook(page) -> None:
    """Wait for the notebook and its kernel, answering JupyterLab's questions as a learner would."""
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    # JupyterLab 4 may ask which kernel to start (it proposes the stored python3): say Select.
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    idle = page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\|\s*Idle"))
    deadline = time.time() + 120
    news = page.get_by_role("button", name="No", exact=True)
    while time.time() < deadline:
        try:
            if news.count():  # "Would you like to get notified about official Jupyter news?"
                news.first.click(timeout=2_000)
            if dialog.count():
                dialog.locator("button", has_text=re.compile("^Select$")).click(timeout=2_000)
                continue
        except PlaywrightTimeout:  # it moved or closed meanwhile: look again
            continue
        if idle.count():
            return
        time.sleep(0.3)
    raise PlaywrightTimeout("the kernel did not become idle within 120 s")


def run_all(page, name: str, saved: Path, failures: Failures) -> None:
    """Clear the stored outputs, run every cell from the menu, wait until all ran, save, check."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    menu(page, "Run", "Run All Cells")
    deadline = time.time() + RUN_TIMEOUT_S
    state = {}
    while time.time() < deadline:
        state = page.evaluate("""() => {
            const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
                .map(p => p.textContent.trim());
            return {total: prompts.length, busy: prompts.filter(t => t.includes('*')).length,
                    done: prompts.filter(t => /\\[\\d+\\]/.test(t)).length};
        }""")
        if state["total"] and not state["busy"] and state["done"] == state["total"]:
            break
        time.sleep(0.5)
    else:
        failures.add(name, f"Run All did not finish in {RUN_TIMEOUT_S} s ({state})")
    before = saved.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    deadline = time.time() + 30
    while saved.stat().st_mtime_ns == before and time.time() < deadline:
        time.sleep(0.2)
    if saved.stat().st_mtime_ns == before:
        failures.add(name, "saving did not write the notebook")
        return
    for _ in range(50):  # the server may still be writing it
        try:
            notebook = json.loads(saved.read_text(encoding="utf-8"))
            break
        except ValueError:
            time.sleep(0.2)
    else:
        failures.add(name, "the saved notebook is not valid JSON")
        return
    for index, cell in enumerate(notebook["cells"], 1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                failures.add(name, f"cell {index} has an error output: {output['ename']}: {output['evalue']}")


def change_controls(panel, click: int) -> list[str]:
    """Set the panel's controls to the `click`-th combination; returns what was set."""
    changed = []
    for i, select in enumerate(panel.locator("select").all()):
        options = select.locator("option").all_text_contents()
        if options:
            choice = options[(click * (i + 1) + i) % len(options)]
            select.select_option(label=choice)
            changed.append(f"select={choice!r}")
    for i, handle in enumerate(panel.locator(".noUi-handle").all()):
        handle.focus()
        for _ in range(click + i):
            handle.press("ArrowRight" if click % 2 else "ArrowLeft")
        changed.append(f"slider{'+' if click % 2 else '-'}{click + i}")
    for box in panel.locator("input[type=checkbox]").all():
        box.click()
        changed.append("checkbox toggled")
    for toggle in panel.locator(".widget-toggle-buttons").all():
        buttons = toggle.locator("button").all()
        if buttons:
            buttons[click % len(buttons)].click()
            changed.append("toggle")
    return changed


LANG = "en"  # the language the notebooks' kernels speak (--lang)


def said(text: str, cut: str = "") -> str:
    """`text` as the kernels write it in LANG (their labels go through agentkit.i18n.tr), up to `cut`'s translation."""
    from agentkit import i18n

    i18n.set_language(LANG)
    try:
        found = i18n.tr(text)
    finally:
        i18n.set_language(None)
    return found.split("{")[0].strip() if "{" in found else found.rstrip("….。. ")


def click_run(page, panel, where: str, failures: Failures) -> dict:
    """One Run click; waits for the result and checks every chart. Returns what it saw."""
    # Mark the last result, and record whether the status ever says "Running" (it may be brief).
    running_word, press_word = said("Running…"), said("Press the button to run.")
    panel.evaluate("""(p, word) => {
        p.querySelectorAll('img').forEach(e => e.dataset.old = '1');
        delete p.dataset.sawRunning;
        p._watch?.disconnect();
        p._watch = new MutationObserver(() => {
            if (p.textContent.includes(word)) p.dataset.sawRunning = '1';
        });
        p._watch.observe(p, {subtree: true, childList: true, characterData: true});
    }""", running_word)
    button = panel.locator("button.mod-primary").last
    button.click()
    deadline = time.time() + CLICK_TIMEOUT_S
    seen = {}
    while time.time() < deadline:
        seen = panel.evaluate("""p => {
            const text = [...p.querySelectorAll('.widget-html-content')].map(e => e.textContent);
            const imgs = [...p.querySelectorAll('img')];
            return {status: text[0] || '', printed: text.slice(1).join('\\n'),
                    old: p.querySelectorAll('img[data-old]').length,
                    oldText: p.querySelectorAll('pre[data-old]').length,
                    images: imgs.length,
                    loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
                    sawRunning: p.dataset.sawRunning === '1',
                    disabled: [...p.querySelectorAll('button.mod-primary')].pop()?.disabled ?? true,
                    sizes: imgs.map(i => [i.naturalWidth, i.naturalHeight]),
                    shown: imgs.map(i => [i.clientWidth, i.clientHeight])};
        }""")
        running = running_word in seen["status"] or press_word in seen["status"] or seen["disabled"]
        if seen["sawRunning"] and not running and not seen["old"] and seen["loaded"] == seen["images"]:
            break
        time.sleep(0.2)
    else:
        failures.add(where, f"no complete result within {CLICK_TIMEOUT_S} s: {seen}")
        return seen
    panel.evaluate("p => p._watch?.disconnect()")
    if not seen["printed"].strip():
        failures.add(where, "the panel printed no text")
    if said("The run failed: {kind}: {error}") in seen["printed"]:
        failures.add(where, f"the callback failed: {seen['printed'].strip().splitlines()[0]}")
    refused = said("Cannot run with these values: {error}") in seen["printed"]
    charts = panel.evaluate("p => p.classList.contains('agentkit-panel-charts')")  # run_panel(charts=...)
    if charts and not seen["images"] and not refused:
        failures.add(where, "no chart")
    if not charts and seen["images"]:
        failures.add(where, "a text-only panel (run_panel charts=False) showed a chart")
    for index, img in enumerate(panel.locator("img").all()):
        width, height = seen["sizes"][index]
        dark, spread = ink(img.screenshot())
        seen.setdefault("ink", []).append(round(dark, 3))
        if width < MIN_SIZE[0] or height < MIN_SIZE[1]:
            failures.add(where, f"chart {index + 1} is {width}x{height} px: a fragment, not a chart")
        if dark < MIN_INK or spread < 10:
            failures.add(where, f"chart {index + 1} is blank ({dark:.1%} ink, spread {spread:.1f})")
        shown = seen["shown"][index][0]
        if shown > width * 1.05:
            seen.setdefault("warnings", []).append(f"chart {index + 1} upscaled {shown / width:.1f}x "
                                                   f"({width} px drawn, {shown} px shown)")
    seen["refused"] = refused
    return seen


def check_panels(page, name: str, clicks: int, failures: Failures) -> int:
    # run_panel's button is the panel's one primary button (its label varies: "Run", "Inject and run").
    buttons = page.locator(".jp-OutputArea-output :is(.agentkit-panel-charts, .agentkit-panel-text) "
                           "button.widget-button.mod-primary")
    count = buttons.count()
    for number in range(count):
        panel = buttons.nth(number).locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
        panel.scroll_into_view_if_needed()
        drawn = 0
        for click in range(clicks):
            where = f"{name} panel {number + 1} click {click + 1}"
            changed = change_controls(panel, click) if click else ["defaults"]
            start = time.perf_counter()
            seen = click_run(page, panel, where, failures)
            drawn += bool(seen.get("images"))
            print(f"  panel {number + 1} click {click + 1} ({', '.join(changed)}): {seen.get('images', 0)} charts "
                  f"{seen.get('sizes')} ink {seen.get('ink')}{' (refused)' if seen.get('refused') else ''} "
                  f"in {time.perf_counter() - start:.1f} s", flush=True)
            for warning in seen.get("warnings", []):
                print(f"    WARN {warning}")
            panel.screenshot(path=str(OUT / f"{name}-panel{number + 1}-click{click + 1}.png"))
        text_only = panel.evaluate("p => p.classList.contains('agentkit-panel-text')")
        if not text_only and drawn < (clicks + 1) // 2:
            failures.add(f"{name} panel {number + 1}", f"drew charts on only {drawn} of {clicks} clicks")
    return count


# A coding exercise rewritten in the browser: (the check's id, a wrong answer and the words its feedback must
# hold, a right answer and the words its feedback must hold). Each answer is one line: it is inserted as text.
EXERCISE_EDITS = {
    "03_when_react_loops": [(
        "03.fuse",
        'my_fuse = lambda actions: len(actions) > 1 and actions[-1] == actions[-2]\ncheck("03.fuse", my_fuse)',
        ["not yet", "a stutterer's third step", "hint:"],
        'key = lambda a: (a[0].lower(), " ".join(a[1].split()).casefold())\n'
        'my_fuse = lambda actions: key(actions[-1]) in [key(a) for a in actions[-3:-1]]\ncheck("03.fuse", my_fuse)',
        ["correct", "ledgers"],
    )],
    "01_tools": [(
        "01.predict",
        'prediction = {"entries in tools.log": 8, "ok": 8, "error observations": 0}\ncheck("01.predict", prediction)',
        ["not yet", "hint:"],
        'prediction = {"entries in tools.log": 8, "ok": 3, "error observations": 5}\ncheck("01.predict", prediction)',
        ["correct"],
    )],
}


def wait_for_text(locator, words: list, timeout_s: float = 60) -> str:
    """The locator's text once it holds every word, or what it held at the deadline."""
    deadline, text = time.time() + timeout_s, ""
    while time.time() < deadline:
        text = locator.inner_text() if locator.count() else ""
        if all(word in text for word in words):
            return text
        time.sleep(0.3)
    return text


def expected_feedback(qid: str, letter: str, lang: str) -> list:
    """Words the feedback to `letter` must hold: in English the course's own, in another language its first line
    as this process writes it in that language (the kernel of a notebook in notebooks/zh-CN/ speaks Chinese)."""
    from agentkit import i18n
    from agentkit.exercises import _find
    from agentkit.exercises.quizzes import answer_question

    if lang == "en":
        return ["is right", "The others"] if letter == _find("question", qid).answer else ["is not it", "Try again"]
    os.environ["AGENTKIT_PROGRESS"] = "off"  # the answer key's own answers are recorded nowhere
    before = i18n.set_language(lang)
    try:
        return [answer_question(qid, letter).text.splitlines()[0].strip()]
    finally:
        i18n.set_language(before if before != lang else None)


def check_quizzes(page, name: str, failures: Failures, lang: str = "en") -> int:
    """Answer every question wrong, then right, by clicking, and read the feedback each time."""
    from agentkit import i18n
    from agentkit.exercises import _find  # the answer key: the browser plays a learner who knows it

    i18n.set_language(lang)
    button = i18n.tr("Check")  # the button's label as the kernel writes it
    i18n.set_language(None)
    boxes = page.locator(".jp-OutputArea-output .agentkit-quiz")
    for number in range(boxes.count()):
        box = boxes.nth(number)
        box.scroll_into_view_if_needed()
        qid = box.evaluate("b => [...b.classList].find(c => /^agentkit-quiz-./.test(c))")
        qid = qid.removeprefix("agentkit-quiz-").replace("-", ".", 1)
        right = _find("question", qid).answer
        wrong = next(letter for letter in _find("question", qid).options if letter != right)
        feedback = box.locator(".widget-html").last
        for letter in (wrong, right):
            words = expected_feedback(qid, letter, lang)
            box.locator("label", has_text=f"{letter}) ").first.click()
            box.locator("button", has_text=button).click()
            seen = wait_for_text(feedback, words, 30)
            if not all(word in seen for word in words):
                failures.add(f"{name} {qid}", f"answered {letter}): expected {words}, saw {seen[:200]!r}")
        box.screenshot(path=str(OUT / f"{name}-{qid}.png"))
        print(f"  question {qid}: wrong then right, feedback seen", flush=True)
    return boxes.count()


def check_exercise_edits(page, name: str, failures: Failures) -> int:
    """Rewrite coding exercises as a learner would (wrong, then right), run each, read the feedback."""
    edits = EXERCISE_EDITS.get(name, [])
    for exercise, wrong, wrong_words, right, right_words in edits:
        cell = page.locator(".jp-Notebook .jp-CodeCell", has_text=f'check("{exercise}"').first
        for code, words in ((wrong, wrong_words), (right, right_words)):
            cell.scroll_into_view_if_needed()
            cell.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text(code)  # as text: no auto-indent, no auto-closed brackets
            page.keyboard.press("Shift+Enter")
            seen = wait_for_text(cell.locator(".jp-OutputArea"), words, 90)
            if not all(word in seen for word in words):
                failures.add(f"{name} {exercise}", f"expected {words} in the feedback, saw {seen[:300]!r}")
            cell.screenshot(path=str(OUT / f"{name}-{exercise}-{'right' if code is right else 'wrong'}.png"))
        print(f"  exercise {exercise}: rewritten wrong, then right, feedback seen", flush=True)
    return len(edits)


def check_approvals(page, name: str, failures: Failures) -> int:
    """Chapter 12's approval prompt, as a learner uses it: run its cell again (a fresh paused run), then
    approve the first waiting call and deny the second, reading what the run did after each click."""
    cell = page.locator(".jp-Notebook .jp-CodeCell", has_text="approval_prompt(waiting)").first
    if not cell.count():
        return 0
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    prompt = cell.locator(".agentkit-approval")
    text = prompt.locator(".widget-html").first
    seen = wait_for_text(text, ["WAITING FOR YOU: WriteNote"], 60)
    if "WAITING FOR YOU: WriteNote" not in seen:
        failures.add(f"{name} approval", f"no waiting WriteNote call after running the cell: {seen[:200]!r}")
        return 0
    prompt.locator("button", has_text="Approve").click()
    seen = wait_for_text(text, ["WriteNote[", "WAITING FOR YOU: SendMessage"], 60)
    if "WAITING FOR YOU: SendMessage" not in seen:
        failures.add(f"{name} approval", f"after Approve, expected the note written and SendMessage waiting: {seen[:300]!r}")
    prompt.locator("button", has_text="Deny").click()
    seen = wait_for_text(text, ["run finished", "denied"], 60)
    if "run finished" not in seen or "denied" not in seen:
        failures.add(f"{name} approval", f"after Deny, expected a finished run that says the call was denied: {seen[:300]!r}")
    prompt.screenshot(path=str(OUT / f"{name}-approval.png"))
    print("  approval prompt: approved once, denied once, the run went on each time", flush=True)
    return 1


def check_site(browser, site: Path, failures: Failures) -> int:
    """Every page of the static site loads with all its images; the index links every page."""
    index = site / "index.html"
    if not index.exists():
        failures.add("site", f"{index} is missing: run make site")
        return 0
    page = browser.new_page()
    # The pages' CDN scripts (MathJax, Mermaid) cannot load here; charts are embedded, so refuse the network.
    page.route(re.compile(r"^https?://"), lambda route: route.abort())
    page.goto(index.as_uri())
    links = page.eval_on_selector_all("a[href$='.html']", "as => as.map(a => a.href)")
    expected = {p.stem for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")}
    missing = expected - {Path(link).stem for link in links}
    if missing:
        failures.add("site index", f"no link to {sorted(missing)}")
    images = 0
    for link in links:
        page.goto(link)
        page.wait_for_load_state("load")
        state = page.evaluate("""() => [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0,
                                                                      src: i.src.slice(0, 40)}))""")
        broken = [s["src"] for s in state if not s["ok"]]
        images += len(state)
        if broken:
            failures.add(f"site {Path(link).name}", f"{len(broken)} images did not load: {broken[:3]}")
        print(f"  site {Path(link).name}: {len(state)} images, {len(broken)} broken", flush=True)
    page.close()
    return images


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", help="prefixes, e.g. 03 05 (default: all)")
    parser.add_argument("--clicks", type=int, default=4, help="Run clicks per panel")
    parser.add_argument("--no-site", action="store_true", help="skip the static-site check")
    parser.add_argument("--headed", action="store_true", help="show the browser (needs a display)")
    parser.add_argument("--lang", default="en", choices=("en", "zh-CN"),
                        help="zh-CN: the Chinese edition (notebooks/zh-CN/): every notebook run, its panels clicked, "
                             "its questions answered in Chinese")
    args = parser.parse_args(argv)
    global PlaywrightTimeout
    from playwright.sync_api import TimeoutError as PlaywrightTimeout, sync_playwright

    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        print(f"{chromium} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM.")
        return 2
    global LANG
    LANG = args.lang
    folder = "zh-CN/" if args.lang == "zh-CN" else ""
    notebooks = sorted((ROOT / "notebooks" / folder).glob("[0-9]*.ipynb"))
    if args.notebooks:
        notebooks = [p for p in notebooks if any(p.name.startswith(prefix) for prefix in args.notebooks)]
    OUT.mkdir(parents=True, exist_ok=True)
    failures = Failures()
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="course-browser-"))
    course = scratch / "notebooks"
    shutil.copytree(ROOT / "notebooks", course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    lab, base, token = start_lab(course, scratch)
    url = base + f"/lab/tree/{folder}{{name}}?token={token}&reset"
    panels = images = questions = edits = approvals = 0
    try:
        print(f"JupyterLab at {base}, settings at their defaults: commsOverSubshells = {comms_setting(base, token)}")
        with sync_playwright() as pw:
            launch_args = CHROMIUM_ARGS + (["--no-sandbox"] if is_root() else [])
            browser = pw.chromium.launch(executable_path=chromium, args=launch_args, headless=not args.headed)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            for path in notebooks:
                name = folder.replace("/", "-") + path.stem  # zh-CN-00_...: its screenshots apart
                start = time.perf_counter()
                print(f"== {name}", flush=True)
                page = context.new_page()
                page.goto(url.format(name=path.name))
                try:
                    open_notebook(page)
                    run_all(page, name, course / folder / path.name, failures)
                    found = check_panels(page, name, args.clicks, failures)
                    panels += found
                    questions += check_quizzes(page, name, failures, args.lang)
                    if args.lang == "en":  # their words are the English run's; the Chinese run reads the quizzes'
                        edits += check_exercise_edits(page, name, failures)
                        approvals += check_approvals(page, name, failures)
                    if not found:
                        page.locator(".jp-Notebook .jp-Cell").last.scroll_into_view_if_needed()
                except PlaywrightTimeout as e:
                    found = 0
                    failures.add(name, f"gave up waiting: {' '.join(str(e).split())[:300]} (see {name}.png)")
                page.screenshot(path=str(OUT / f"{name}.png"))
                print(f"  {name}: {found} panels, {time.perf_counter() - start:.1f} s", flush=True)
                page.close()
            images = 0 if args.no_site else check_site(browser, ROOT / "build" / "site", failures)
            browser.close()
    finally:
        lab.terminate()
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            lab.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.perf_counter() - started
    print(f"{len(notebooks)} notebooks, {panels} panels x {args.clicks} clicks, {questions} questions and "
          f"{edits} coding exercises answered wrong then right, {approvals} approval prompts clicked, "
          f"site images checked: {images}; "
          f"{elapsed:.0f} s; screenshots in {OUT}")
    if failures:
        print(f"FAILED ({len(failures)}):\n  " + "\n  ".join(failures))
        return 1
    print("browser test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
