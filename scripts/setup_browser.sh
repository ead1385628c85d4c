#!/usr/bin/env bash
# Install Debian's Chromium and its fonts: `chromium` (the app's SVG/PDF/PNG export through
# Kaleido) and `chromium-headless-shell` (the same source package's headless build), which the
# browser tests (tests/test_browser.py and the others driving a real browser) drive with
# Playwright (requirements-dev.txt), launched on /usr/bin/chromium-headless-shell:
# no `playwright install`, no browser downloaded by Playwright.
# Idempotent: does nothing when both and a colour-emoji font are already there.
#
#     bash scripts/setup_browser.sh
set -euo pipefail

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromium-headless-shell ] && fc-list 2>/dev/null | grep -qi "color emoji"; then
    echo "chromium already installed: /usr/bin/chromium, /usr/bin/chromium-headless-shell"
    exit 0
fi

source "$(dirname "$0")/apt.sh"
apt_install chromium chromium-headless-shell fonts-dejavu-core fonts-noto-color-emoji
/usr/bin/chromium --version
/usr/bin/chromium-headless-shell --version
