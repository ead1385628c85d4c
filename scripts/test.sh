#!/usr/bin/env bash
# The README's test command: install everything the tests need, then run them.
#   bash scripts/test.sh [pytest args]
# Installs the Python requirements (torch pinned to the CPU build), Debian's chromium for
# the real-browser test, haproxy for the lecture setup's test and Debian's postgresql for the
# class store's tests (tests/conftest.py starts a throwaway cluster and stops it afterwards;
# ATTN_EXPLORER_REQUIRE_PG=1 makes a missing PostgreSQL a failure, not a skip) and pdflatex with
# TikZ for the LaTeX export's test (ATTN_EXPLORER_REQUIRE_LATEX=1 likewise) and stress-ng (the
# background load the suite is also run beside, docs/testing.md), then lints
# (ruff, pyproject.toml) and runs the whole suite on pytest-xdist's workers. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
bash scripts/setup_browser.sh
bash scripts/setup_haproxy.sh
bash scripts/setup_postgres.sh
bash scripts/setup_latex.sh
bash scripts/setup_stress.sh
export ATTN_EXPLORER_REQUIRE_PG=1
export ATTN_EXPLORER_REQUIRE_LATEX=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
ruff check .
# on every core and then some: a browser test waits on its server and its browser as much as it
# computes, so three workers keep two cores busy (docs/testing.md); a file's tests share a worker
mkdir -p test-output
python -m pytest -q -p no:cacheprovider -n "${ATTN_EXPLORER_TEST_WORKERS:-3}" --dist loadgroup \
  --junitxml=test-output/junit.xml --durations=10 "$@"
