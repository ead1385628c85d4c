#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) for tests/test_browser.py.
# Idempotent: does nothing when /usr/bin/chromium is already there.
#
#     bash scripts/setup_browser.sh
set -euo pipefail

if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -qi "color emoji"; then
    echo "chromium already installed: /usr/bin/chromium"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: installing chromium needs root (or sudo)" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core fonts-noto-color-emoji
/usr/bin/chromium --version
