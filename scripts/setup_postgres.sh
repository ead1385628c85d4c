#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the class store's tests (tests/conftest.py starts a
# throwaway cluster of its own on a free loopback port and stops it afterwards).
# Idempotent: does nothing when an initdb is already installed. No cluster is created or
# started by the package (create_main_cluster = false), so nothing keeps running.
#
#     bash scripts/setup_postgres.sh
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "postgresql already installed: $(ls -d /usr/lib/postgresql/*/bin | tail -1)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: installing postgresql needs root (or sudo)" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# postgresql-common first, told not to create (and start) a "main" cluster when the server installs
$SUDO apt-get install -y --no-install-recommends postgresql-common
$SUDO sed -i 's/^#\?\s*create_main_cluster.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf
$SUDO apt-get install -y --no-install-recommends postgresql
ls -d /usr/lib/postgresql/*/bin
