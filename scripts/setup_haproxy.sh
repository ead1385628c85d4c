#!/usr/bin/env bash
# Install HAProxy (Debian's `haproxy` package) for the lecture setup (scripts/serve.py) and its
# tests (tests/test_lecture.py). Idempotent: does nothing when haproxy is already there.
#
#     bash scripts/setup_haproxy.sh
set -euo pipefail

if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
    echo "haproxy already installed: $( (command -v haproxy || echo /usr/sbin/haproxy) | head -1)"
    exit 0
fi

source "$(dirname "$0")/apt.sh"
apt_install haproxy
/usr/sbin/haproxy -v | head -1
