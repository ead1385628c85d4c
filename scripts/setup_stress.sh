#!/usr/bin/env bash
# Install Debian's `stress-ng`, the background CPU load the suite is also run beside, to show it
# passes on a busy 2-core host (docs/testing.md):
#
#     bash scripts/setup_stress.sh
#     stress-ng --cpu 1 & bash scripts/test.sh; kill %1
#
# Idempotent: does nothing when it is there.
set -euo pipefail

if command -v stress-ng >/dev/null 2>&1; then
    echo "stress-ng already installed: $(command -v stress-ng)"
    exit 0
fi

source "$(dirname "$0")/apt.sh"
apt_install stress-ng
stress-ng --version
