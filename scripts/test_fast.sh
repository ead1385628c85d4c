#!/usr/bin/env bash
# The suite's fast layer (docs/testing.md): the unit tests and the pages through Streamlit's
# AppTest, in one process; no root, no apt, no browser, server or database of its own.
#   bash scripts/test_fast.sh [pytest args]
# Installs the Python requirements (into the active environment: a virtualenv needs no root),
# lints, and runs the tests marked fast (tests/conftest.py marks every test that needs none of
# the layers browser, server, postgres, latex, slow). The whole suite is scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
ruff check .
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} python -m pytest -q -p no:cacheprovider -m fast --durations=10 "$@"
