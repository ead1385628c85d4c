#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) and its fonts for the browser tests
# (tests/test_browser.py, and the others driving a real browser).
# Idempotent: does nothing when /usr/bin/chromium and a colour-emoji font are already there.
# The tests drive it with Playwright (requirements-dev.txt), launched on /usr/bin/chromium:
# no `playwright install`, no browser downloaded by Playwright.
#
#     bash scripts/setup_browser.sh
set -euo pipefail

if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -qi "color emoji"; then
    echo "chromium already installed: /usr/bin/chromium"
    exit 0
fi

source "$(dirname "$0")/apt.sh"
apt_install chromium fonts-dejavu-core fonts-noto-color-emoji
/usr/bin/chromium --version
