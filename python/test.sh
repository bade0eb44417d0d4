#!/usr/bin/env bash
# Builds the `kithdb` Python package from this checkout into a private
# virtualenv (.venv) and runs its pytest suite. Part of the README's test
# command; needs python3 (3.9+) and network access to PyPI on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null 2>&1; then
    echo "python/test.sh: python3 not found; skipping the Python tests" >&2
    exit 0
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet maturin pytest pandas pyarrow polars networkx
.venv/bin/python -m pip install --quiet .
.venv/bin/python -m pytest -q python/tests
