#!/usr/bin/env bash
# Install HAProxy (Debian's `haproxy` package) for the lecture setup (scripts/serve.py) and its
# tests (tests/test_lecture.py), and `openssl`, with which a teacher (and tests/test_lecture_tls.py)
# makes a self-signed certificate for HTTPS. Idempotent: does nothing when both are there.
#
#     bash scripts/setup_haproxy.sh
set -euo pipefail

missing=()
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
    missing+=(haproxy)
fi
if ! command -v openssl >/dev/null 2>&1; then
    missing+=(openssl)
fi
if [ ${#missing[@]} -eq 0 ]; then
    echo "haproxy already installed: $( (command -v haproxy || echo /usr/sbin/haproxy) | head -1); openssl: $(command -v openssl)"
    exit 0
fi

source "$(dirname "$0")/apt.sh"
apt_install "${missing[@]}"
/usr/sbin/haproxy -v | head -1
