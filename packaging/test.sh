#!/usr/bin/env bash
# tidesync's test command: installs what is missing, starts a private Apache
# mod_dav and a private `rclone serve webdav` on 127.0.0.1, builds, runs the
# Swift Testing suite against them, and ends with one line "N passed, N failed".
# Without rclone installed the rclone store kind is left out (with a message).
#
#   bash packaging/test.sh                 # everything
#   bash packaging/test.sh --filter WebDAV # extra args go to `swift test`
#
# The full output of `swift test` is kept in $TIDESYNC_TEST_LOG
# (default: .build/tidesync-test.log).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"

say() { printf 'test.sh: %s\n' "$*" >&2; }

# A closing line even when we never got as far as running the tests.
fail_early() {
    say "$1"
    echo "0 passed, 1 failed"
    exit "${2:-1}"
}

if ! bash packaging/install-deps.sh; then
    fail_early "packaging/install-deps.sh failed"
fi

dav_dir=""
rclone_dir=""
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [[ -n "$dav_dir" && -d "$dav_dir" ]]; then
        bash "$repo/packaging/dav-server.sh" stop "$dav_dir" || say "could not stop the Apache in $dav_dir"
        rm -rf -- "$dav_dir"
    fi
    if [[ -n "$rclone_dir" && -d "$rclone_dir" ]]; then
        bash "$repo/packaging/rclone-dav.sh" stop "$rclone_dir" || say "could not stop the rclone in $rclone_dir"
        rm -rf -- "$rclone_dir"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

dav_dir=$(mktemp -d "${TMPDIR:-/tmp}/tidesync-dav.XXXXXX") || fail_early "mktemp -d failed"
if ! bash packaging/dav-server.sh start "$dav_dir"; then
    fail_early "could not start the private Apache mod_dav (see above)"
fi
# shellcheck source=/dev/null
source "$dav_dir/env"
export TIDESYNC_TEST_DAV_URL TIDESYNC_TEST_DAV_INF_URL TIDESYNC_TEST_DAV_USER \
    TIDESYNC_TEST_DAV_PASSWORD TIDESYNC_TEST_DAV_ROOT TIDESYNC_TEST_DAV_INF_ROOT \
    TIDESYNC_TEST_DAV_ACCESS_LOG TIDESYNC_TEST_DAV_OWNER

rclone_dir=$(mktemp -d "${TMPDIR:-/tmp}/tidesync-rclone.XXXXXX") || fail_early "mktemp -d failed"
rclone_rc=0
bash packaging/rclone-dav.sh start "$rclone_dir" || rclone_rc=$?
if ((rclone_rc == 3)); then
    say "rclone is not installed: the contract tests skip the rclone store kind (install the package rclone to run them)"
elif ((rclone_rc != 0)); then
    fail_early "could not start the private rclone serve webdav (see above)"
else
    # shellcheck source=/dev/null
    source "$rclone_dir/env"
    export TIDESYNC_TEST_RCLONE_URL TIDESYNC_TEST_RCLONE_USER TIDESYNC_TEST_RCLONE_PASSWORD TIDESYNC_TEST_RCLONE_ROOT
fi

say "building (swift build --build-tests)"
build_rc=0
swift build --build-tests || build_rc=$?
if ((build_rc != 0)); then
    fail_early "swift build --build-tests failed (exit $build_rc)" "$build_rc"
fi
bin_path=$(swift build --show-bin-path) || fail_early "swift build --show-bin-path failed"
TIDESYNC_TEST_BINARY="$bin_path/tidesync"
export TIDESYNC_TEST_BINARY

log=${TIDESYNC_TEST_LOG:-$repo/.build/tidesync-test.log}
mkdir -p "$(dirname "$log")"
say "running swift test --disable-xctest $* (log: $log)"
set +e
swift test --disable-xctest "$@" 2>&1 | tee "$log"
test_rc=${PIPESTATUS[0]}
set -e

# Count from Swift Testing's human-readable output. Lines look like
#   ✔ Test run with 12 tests in 3 suites passed after 0.005 seconds.
#   ✘ Test run with 12 tests failed after 0.010 seconds with 2 issues.
#   ✘ Test foo() failed after 0.002 seconds with 1 issue.
#   ✘ Test foo() recorded an issue at X.swift:3:5: Expectation failed: ...
#   ➜ Test bar() skipped: "reason"
# The symbol is not trusted (a pass with known issues also shows ✘): the
# words after the test name decide. Skipped tests are in the run's total.
summary=$(sed 's/\x1b\[[0-9;]*[A-Za-z]//g; s/\r$//' "$log" | awk '
    {
        line = $0
        sub(/^[^A-Za-z]*/, "", line)          # drop the leading symbol
        if (line !~ /^Test /) next
        if (line ~ /^Test run started/) {     # only the last run counts
            failed = 0; skipped = 0
            next
        }
        if (line ~ /^Test run with [0-9]+ tests? /) {
            split(line, w, " ")
            total = w[4] + 0
            outcome = (index(line, " failed after ") > 0) ? "failed" : "passed"
            seen = 1; run_failed = failed; run_skipped = skipped
            next
        }
        # Issue lines ("recorded an issue ...") carry free text: skip them.
        if (line ~ /^Test ("[^"]*"|[^ ]+) recorded an? (known )?issue/) next
        # Result lines end in a fixed form; the test name may contain anything.
        if (line ~ / failed after [0-9][^ ]* [a-z]+( with .*)?\.$/) failed++
        else if (line ~ / skipped(\.|: ".*")$/) skipped++
    }
    END {
        if (!seen) { print "none"; exit }
        printf "%d %d %d %s\n", total, run_failed, run_skipped, outcome
    }')

if [[ "$summary" == none ]]; then
    say "swift test printed no \"Test run with\" line (exit $test_rc)"
    echo "0 passed, 1 failed"
    exit 1
fi
read -r total failed skipped outcome <<<"$summary"
if [[ "$outcome" == failed ]] && ((failed == 0)); then
    failed=1 # issues recorded outside any test we could attribute
fi
passed=$((total - failed - skipped))
((passed >= 0)) || passed=0
if ((test_rc != 0)) && ((failed == 0)); then
    say "swift test exited $test_rc although no test failed"
    failed=1
fi
if ((failed > 0 && test_rc == 0)); then
    test_rc=1
fi
if ((skipped > 0)); then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
exit "$test_rc"
