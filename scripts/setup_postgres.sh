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

source "$(dirname "$0")/apt.sh"
# postgresql-common first, told not to create (and start) a "main" cluster when the server installs
apt_install postgresql-common
as_root sed -i 's/^#\?\s*create_main_cluster.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf
apt_install postgresql
ls -d /usr/lib/postgresql/*/bin
