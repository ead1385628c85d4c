#!/usr/bin/env bash
# Install pdflatex with TikZ (Debian's texlive-latex-base, texlive-pictures) for the test that
# compiles the app's LaTeX export of an alignment matrix (tests/test_export.py, viz/latex.py).
# Idempotent: does nothing when pdflatex and tikz.sty are already there.
# About 60 MB to download, 250 MB installed (no documentation, no recommended packages).
#
#     bash scripts/setup_latex.sh
set -euo pipefail

if command -v pdflatex >/dev/null 2>&1 && kpsewhich tikz.sty >/dev/null 2>&1; then
    echo "pdflatex and TikZ already installed: $(command -v pdflatex)"
    exit 0
fi

source "$(dirname "$0")/apt.sh"
apt_install texlive-latex-base texlive-pictures
pdflatex --version | head -1
