# Sourced by the setup_*.sh scripts: install Debian packages, as root or through sudo.
# The package lists are fetched once an hour at most, so the scripts one after another
# (scripts/test.sh) run one `apt-get update` between them.
#
#     source "$(dirname "$0")/apt.sh"; apt_install haproxy

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "error: '$*' needs root (or sudo)" >&2
        return 1
    fi
}

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    if ! find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -60 2>/dev/null | grep -q .; then
        as_root apt-get update
    fi
    as_root apt-get install -y --no-install-recommends "$@"
}
