#!/usr/bin/env bash
# no PyTorch counterpart: runs python/tests (the remat_plan package) against PyTorch in a cached venv.
#
# The venv lives under ~/.cache/remat/venv (override with REMAT_VENV) and is reused between runs: the
# first run installs torch and pytest from PyPI (about a minute and 5 GB), later runs only reinstall
# ./python. Exits non-zero when a test fails, when pytest collects no test (its exit 5), or when the
# venv cannot be made.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${REMAT_VENV:-$HOME/.cache/remat/venv}"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import torch, pytest" 2>/dev/null; then
  echo "python_tests: making the venv $venv (torch + pytest from PyPI; the first time takes a while)" >&2
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
  "$venv/bin/python" -m pip install --quiet torch pytest
fi
"$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation --force-reinstall "$root/python"

set +e
(cd "$root" && "$venv/bin/python" -m pytest -q python/tests "$@")
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
  echo "python_tests: pytest collected no test (exit 5): counted as a failure" >&2
  exit 1
fi
exit $rc
