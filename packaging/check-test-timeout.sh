#!/usr/bin/env bash
# Checks packaging/test.sh's watchdog: runs the two-client test (minutes long) under a
# time limit far too short for it, and expects test.sh to stop the run, name that test
# as hung, count it as failed and exit 124.
#
#   bash packaging/check-test-timeout.sh
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=$(mktemp "${TMPDIR:-/tmp}/tidesync-timeout-check.XXXXXX")
trap 'rm -f -- "$out"' EXIT

# Long enough for swift test to start on a loaded machine; the workload is made far
# longer than that.
limit=${TIDESYNC_CHECK_TIMEOUT:-240}
TIDESYNC_TWO_CLIENT_OPS=1000000 TIDESYNC_TEST_TIMEOUT=$limit TIDESYNC_TEST_LOG="$out.log" \
    bash "$repo/packaging/test.sh" --filter TwoClientTests >"$out" 2>&1
rc=$?
failures=0
check() {
    if grep -qE -- "$1" "$out"; then
        echo "ok: $2"
    else
        echo "FAILED: $2 (no line matching /$1/)"
        failures=$((failures + 1))
    fi
}
if ((rc == 124)); then echo "ok: test.sh exited 124"; else echo "FAILED: test.sh exited $rc, not 124"; failures=$((failures + 1)); fi
check "did not finish within $limit s" "the timeout is reported"
check 'hung: "a seeded random workload on two clients' "the hung test is named"
check '^[0-9]+ passed, [1-9][0-9]* failed' "the closing line counts a failure"
check "every process of the run is stopped" "the test runner and the daemons it started are stopped"
rm -f -- "$out.log"
if ((failures > 0)); then
    echo "--- test.sh's output ---"
    tail -n 30 "$out"
    exit 1
fi
