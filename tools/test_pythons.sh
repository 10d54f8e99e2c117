#!/usr/bin/env bash
# Run the test command under every supported Python installed here, each in its own venv
# (.venv-3.11, .venv-3.12, ...), then print one line per version. Finds pythonX.Y on PATH,
# else pyenv's newest X.Y, else uv's. Versions not installed are listed as skipped, not failed.
set -uo pipefail
cd "$(dirname "$0")/.."
versions=$(python3 -c 'import runpy; print(" ".join("%d.%d" % v for v in runpy.run_path("tools/check_python.py")["SUPPORTED"]))')
mkdir -p build
summary=()
status=0
for v in $versions; do
  python=""
  if command -v "python$v" >/dev/null 2>&1 && "python$v" -c 'pass' >/dev/null 2>&1; then
    python=$(command -v "python$v")
  elif command -v pyenv >/dev/null 2>&1 && latest=$(pyenv latest "$v" 2>/dev/null); then
    python="$(pyenv root)/versions/$latest/bin/python"
  elif command -v uv >/dev/null 2>&1 && found=$(uv python find --no-python-downloads "$v" 2>/dev/null); then
    python=$found
  fi
  if [ -z "$python" ]; then summary+=("$v: skipped (not installed)"); continue; fi
  echo "=== Python $v: $python"
  start=$(date +%s)
  if make --no-print-directory test PYTHON="$python" VENV=".venv-$v" > "build/test-python-$v.log" 2>&1; then
    result="passed"
  else
    result="FAILED"; status=1
  fi
  counts=$(grep -E '[0-9]+ (passed|failed)' "build/test-python-$v.log" | tail -n 1 | tr -d '=' | xargs)
  summary+=("$v ($("$python" -V 2>&1)): $result in $(( $(date +%s) - start )) s: ${counts:-see the log}  [build/test-python-$v.log]")
done
printf '%s\n' "${summary[@]}"
exit $status
