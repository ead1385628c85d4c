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

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: installing haproxy needs root (or sudo)" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends haproxy
/usr/sbin/haproxy -v | head -1
