#!/usr/bin/env bash
# A private `rclone serve webdav` on 127.0.0.1 for tidesync's tests.
#
#   bash packaging/rclone-dav.sh start DIR   # start; writes DIR/env
#   bash packaging/rclone-dav.sh stop DIR    # stop; idempotent
#
# Everything the instance uses lives in DIR: rclone.pid, rclone.log, rclone.conf
# (empty: no remotes are configured, the served directory is a plain path),
# cache/ and the served directory root/, reachable at http://127.0.0.1:PORT/dav/.
# Basic auth, user "tidesync", random password. The password is handed to rclone
# in its environment (RCLONE_PASS), never on the command line where ps shows it.
#
# The flags are the ones README.md recommends for tidesync:
#   --vfs-cache-mode off   PUTs go straight to the disk (the "writes" mode queues
#                          them and uploads a file seconds after the PUT answered)
#   --dir-cache-time 2s    changes made on the disk by others show up quickly
# rclone picks the port itself (--addr 127.0.0.1:0) and prints it; this script
# reads it from the log, so there is no window in which another process can
# take a port found free beforehand.
#
# Exit status 3 means rclone is not installed (callers may skip the tests).
set -euo pipefail

RCLONE_BIN=${RCLONE_BIN:-rclone}
DAV_USER=tidesync
START_TIMEOUT=15 # seconds
STOP_TIMEOUT=10  # seconds

me=rclone-dav
what="a private rclone serve webdav"
server=rclone
pid_file=rclone.pid
is_ours() { [[ "$1" == *"serve webdav $2/root "* ]]; }
instance_pids() { printf '%s\n' "$1"; }
# shellcheck source=packaging/lib/instance.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/instance.sh"

start() {
    local dir=$1 password pid port url code i env_tmp
    if ! command -v "$RCLONE_BIN" >/dev/null 2>&1; then
        say "$RCLONE_BIN not found: install the Debian package rclone (packaging/install-deps.sh does)"
        exit 3
    fi
    command -v curl >/dev/null 2>&1 || die "curl not found (package curl)"

    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    case "$dir" in
    *[!A-Za-z0-9._/+@=,~-]*)
        die "DIR '$dir' contains characters (space, quote, ...) this script does not quote safely; use a plain path such as /tmp/tidesync-rclone.XXXXXX"
        ;;
    esac
    if [[ -n "$(live_pid "$dir")" ]]; then
        die "an instance is already running in $dir (pid $(live_pid "$dir")); run: $0 stop $dir"
    fi

    mkdir -p "$dir/root" "$dir/cache"
    : >"$dir/rclone.conf"
    : >"$dir/rclone.log"
    rm -f "$dir/rclone.pid" "$dir/env"

    password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
    [[ ${#password} -eq 36 ]] || die "could not generate a password from /dev/urandom"

    # setsid: the server is not in the caller's process group, so a ^C in the
    # terminal reaches the test script, whose cleanup stops it.
    RCLONE_USER=$DAV_USER RCLONE_PASS=$password setsid "$RCLONE_BIN" serve webdav "$dir/root" \
        --addr 127.0.0.1:0 --baseurl /dav \
        --vfs-cache-mode off --dir-cache-time 2s \
        --config "$dir/rclone.conf" --cache-dir "$dir/cache" \
        --log-file "$dir/rclone.log" --log-level INFO \
        </dev/null >/dev/null 2>>"$dir/rclone.log" &
    pid=$!
    printf '%s\n' "$pid" >"$dir/rclone.pid"

    url=""
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        url=$(sed -n 's#.*WebDav Server started on \(http://127\.0\.0\.1:[0-9][0-9]*/dav/\).*#\1#p' "$dir/rclone.log" | tail -n 1)
        [[ -n "$url" ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z "$url" ]]; then
        stop_instance "$dir" || true
        say "rclone did not report its address within ${START_TIMEOUT}s; tail of $dir/rclone.log:"
        tail -n 30 "$dir/rclone.log" >&2
        exit 1
    fi
    port=${url#http://127.0.0.1:}
    port=${port%%/*}

    code=000
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
            -u "$DAV_USER:$password" -X PROPFIND -H 'Depth: 0' "$url" 2>/dev/null || true)
        [[ "$code" == 207 ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [[ "$code" != 207 ]]; then
        stop_instance "$dir" || true
        say "rclone did not answer PROPFIND $url with 207 within ${START_TIMEOUT}s (last HTTP code: $code); tail of $dir/rclone.log:"
        tail -n 30 "$dir/rclone.log" >&2
        exit 1
    fi

    env_tmp="$dir/env.tmp"
    (
        umask 077
        {
            printf '# Source this file: environment for tidesync tests (packaging/rclone-dav.sh).\n'
            printf 'export TIDESYNC_TEST_RCLONE_URL=%q\n' "$url"
            printf 'export TIDESYNC_TEST_RCLONE_USER=%q\n' "$DAV_USER"
            printf 'export TIDESYNC_TEST_RCLONE_PASSWORD=%q\n' "$password"
            printf 'export TIDESYNC_TEST_RCLONE_ROOT=%q\n' "$dir/root"
        } >"$env_tmp"
    )
    mv -f "$env_tmp" "$dir/env"
    say "$("$RCLONE_BIN" version 2>/dev/null | head -n 1) serve webdav (pid $pid) on $url; env in $dir/env"
}

stop() {
    local dir=$1
    if [[ ! -d "$dir" ]]; then
        return 0
    fi
    dir=$(cd "$dir" && pwd -P)
    stop_instance "$dir" || die "could not stop the rclone instance in $dir"
}

[[ $# -eq 2 ]] || usage
case "$1" in
start) start "$2" ;;
stop) stop "$2" ;;
*) usage ;;
esac
