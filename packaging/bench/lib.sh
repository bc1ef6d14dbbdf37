# What the benchmarks that run the daemon beside a private Apache share. Sourced after the
# caller set `me` (its name, for messages):
#   say/die          messages on stderr, prefixed with `me`
#   repo             the repository's root
#   release_binary   sets TIDESYNC_BIN to the release build unless it is set already
#   apache_work P    makes the work folder /tmp/tidesync-P.XXXXXX as `work`, starts Apache in
#                    `$work/dav` and reads its environment; on exit stops the daemon whose
#                    pid is in `daemon` (when set), stops Apache and removes `work` (kept
#                    with BENCH_KEEP=1)
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() { say "$*"; exit 1; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)

release_binary() {
    [[ -n "${TIDESYNC_BIN:-}" ]] && return
    say "building the release binary (swift build -c release)"
    (cd "$repo" && swift build -c release --product tidesync >/dev/null)
    TIDESYNC_BIN=$(cd "$repo" && swift build -c release --show-bin-path)/tidesync
}

bench_cleanup() {
    [[ -n "${daemon:-}" ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    bash "$repo/packaging/dav-server.sh" stop "$work/dav" >/dev/null 2>&1 || true
    [[ "${BENCH_KEEP:-0}" == 1 ]] && say "kept $work" || rm -rf "$work"
}

apache_work() {
    work=$(mktemp -d "/tmp/tidesync-$1.XXXXXX")
    daemon=
    trap bench_cleanup EXIT
    bash "$repo/packaging/dav-server.sh" start "$work/dav" >/dev/null 2>&1 || die "cannot start Apache (see $work/dav/error.log)"
    # shellcheck disable=SC1091
    source "$work/dav/env"
}
