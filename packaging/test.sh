#!/usr/bin/env bash
# tidesync's test command: installs what is missing, starts a private Apache
# mod_dav, `rclone serve webdav`, nginx, lighttpd and WsgiDAV on 127.0.0.1, builds,
# runs the Swift Testing suite against them, and ends with one line "N passed,
# N failed". A server other than Apache that cannot be installed or started (exit 3
# of its script) is left out of the tests, with a message and a count in that line
# ("N passed, N failed; 1 server skipped: nginx").
#
#   bash packaging/test.sh                 # everything
#   bash packaging/test.sh --filter WebDAV # extra args go to `swift test`
#
# The full output of `swift test` is kept in $TIDESYNC_TEST_LOG
# (default: .build/tidesync-test.log).
#
# Time limits (seconds), well inside CI's 90 minutes: the build gets
# $TIDESYNC_BUILD_TIMEOUT (default 2700), `swift test` $TIDESYNC_TEST_TIMEOUT
# (default 1500). A run that outlives its limit is stopped, the tests that
# started and never finished are named, and each counts as failed.
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
# "script:DIR" of each other server started, for cleanup.
servers=()
skipped_servers=()
test_pid=""
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [[ -n "$test_pid" ]] && kill -0 "$test_pid" 2>/dev/null; then
        kill -KILL -- "-$test_pid" 2>/dev/null || true
    fi
    if [[ -n "$dav_dir" && -d "$dav_dir" ]]; then
        bash "$repo/packaging/dav-server.sh" stop "$dav_dir" || say "could not stop the Apache in $dav_dir"
        rm -rf -- "$dav_dir"
    fi
    local entry
    for entry in "${servers[@]}"; do
        bash "$repo/packaging/${entry%%:*}" stop "${entry#*:}" || say "could not stop the server in ${entry#*:}"
        rm -rf -- "${entry#*:}"
    done
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

# Starts server NAME with packaging/SCRIPT and exports what its DIR/env says; a script's
# exit 3 (not installed) leaves the server out, with a message, and counts it as skipped.
start_server() {
    local name=$1 script=$2 dir rc=0
    dir=$(mktemp -d "${TMPDIR:-/tmp}/tidesync-$name.XXXXXX") || fail_early "mktemp -d failed"
    servers+=("$script:$dir")
    bash "packaging/$script" start "$dir" || rc=$?
    if ((rc == 3)); then
        say "SKIPPED $name: it is not installed (see above); the tests over $name are left out"
        skipped_servers+=("$name")
    elif ((rc != 0)); then
        fail_early "could not start the private $name (see above)"
    else
        # shellcheck source=/dev/null
        source "$dir/env" # every line an export
    fi
}
start_server rclone rclone-dav.sh
start_server nginx nginx-dav.sh
start_server lighttpd lighttpd-dav.sh
start_server wsgidav wsgidav-dav.sh

build_timeout=${TIDESYNC_BUILD_TIMEOUT:-2700}
test_timeout=${TIDESYNC_TEST_TIMEOUT:-1500}
for limit in "$build_timeout" "$test_timeout"; do
    [[ "$limit" =~ ^[1-9][0-9]*$ ]] || fail_early "TIDESYNC_BUILD_TIMEOUT and TIDESYNC_TEST_TIMEOUT are whole seconds (got \"$limit\")"
done

say "building (swift build --build-tests, at most $build_timeout s)"
build_rc=0
timeout --kill-after=30 "$build_timeout" swift build --build-tests || build_rc=$?
if ((build_rc == 124 || build_rc == 137)); then
    fail_early "swift build --build-tests did not finish within $build_timeout s (TIDESYNC_BUILD_TIMEOUT)" 124
elif ((build_rc != 0)); then
    fail_early "swift build --build-tests failed (exit $build_rc)" "$build_rc"
fi
bin_path=$(swift build --show-bin-path) || fail_early "swift build --show-bin-path failed"
TIDESYNC_TEST_BINARY="$bin_path/tidesync"
export TIDESYNC_TEST_BINARY

log=${TIDESYNC_TEST_LOG:-$repo/.build/tidesync-test.log}
mkdir -p "$(dirname "$log")"
# The pids of $1 (one a word) that are still running.
alive_of() {
    local pid
    for pid in $1; do
        if kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
    done
}

# A process and all its descendants, one pid a line.
process_tree() {
    local pid child
    echo "$1"
    for child in $(pgrep -P "$1" 2>/dev/null); do
        for pid in $(process_tree "$child"); do echo "$pid"; done
    done
}

# The closing line: PASSED FAILED SKIPPED (tests), then the servers left out.
closing_line() {
    local line="$1 passed, $2 failed"
    if (($3 > 0)); then line+=", $3 skipped"; fi
    if ((${#skipped_servers[@]} > 0)); then
        line+="; ${#skipped_servers[@]} server$( ((${#skipped_servers[@]} > 1)) && echo s) skipped: ${skipped_servers[*]}"
    fi
    echo "$line"
}

say "running swift test --skip-build --disable-xctest $* (at most $test_timeout s; log: $log)"
: >"$log"
# In a session of its own, so that on timeout the whole tree (swift test, the test
# runner, the daemons it started) can be stopped at once.
# Line-buffered (stdbuf), so the log holds every "started" line the moment it is
# printed: on timeout it names the tests that never finished.
# The counts come from Swift Testing's xUnit report: under load its console output
# has been seen to lose lines (the "started" and "skipped" lines of dozens of tests in
# one run), which the counting below would read as passes.
xunit="${log%.log}.xml"
rm -f -- "$xunit"
setsid stdbuf -oL -eL swift test --skip-build --disable-xctest --xunit-output "$xunit" "$@" >"$log" 2>&1 </dev/null &
test_pid=$!
tail -n +1 -f --pid="$test_pid" "$log" &
tail_pid=$!
timed_out=0
started_at=$SECONDS
while kill -0 "$test_pid" 2>/dev/null; do
    if ((SECONDS - started_at >= test_timeout)); then
        timed_out=1
        say "swift test did not finish within $test_timeout s (TIDESYNC_TEST_TIMEOUT): stopping it"
        # The whole tree, looked up before anything dies: daemons a test started may
        # sit in process groups of their own, and are orphaned once their parent goes.
        tree=$(process_tree "$test_pid")
        # shellcheck disable=SC2086 # one pid a word
        kill -TERM -- "-$test_pid" $tree 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            alive=$(alive_of "$tree")
            [[ -z "$alive" ]] && break
            sleep 1
        done
        # shellcheck disable=SC2086
        kill -KILL -- "-$test_pid" $tree 2>/dev/null || true
        sleep 1
        alive=$(alive_of "$tree")
        if [[ -n "$alive" ]]; then
            say "these processes of the run could not be stopped: $(echo $alive)"
        else
            say "every process of the run is stopped ($(echo $tree | wc -w))"
        fi
        break
    fi
    sleep 1
done
set +e
wait "$test_pid"
test_rc=$?
set -e
wait "$tail_pid" 2>/dev/null || true

# Count from Swift Testing's human-readable output. Lines look like
#   ✔ Test run with 12 tests in 3 suites passed after 0.005 seconds.
#   ✘ Test run with 12 tests failed after 0.010 seconds with 2 issues.
#   ✘ Test foo() failed after 0.002 seconds with 1 issue.
#   ✘ Test foo() recorded an issue at X.swift:3:5: Expectation failed: ...
#   ➜ Test bar() skipped: "reason"
# The symbol is not trusted (a pass with known issues also shows ✘): the
# words after the test name decide. Skipped tests are in the run's total.
plain_log() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g; s/\r$//' "$log"; }

# The tests that started and never ended: "Test NAME started." without a later
# "Test NAME passed/failed/skipped ..." (names as Swift Testing prints them).
unfinished_tests() {
    plain_log | awk '
        {
            line = $0
            sub(/^[^A-Za-z]*/, "", line)
            if (line !~ /^Test / || line ~ /^Test (run|case) /) next
            if (line ~ /^Test ("[^"]*"|[^ ]+) recorded an? (known )?issue/) next
            name = substr(line, 6)
            if (name ~ / started\.$/) {
                sub(/ started\.$/, "", name)
                if (!(name in open)) order[++count] = name
                open[name] = 1
                next
            }
            if (sub(/ (passed|failed) after [0-9][^ ]* [a-z]+( with .*)?\.$/, "", name) ||
                sub(/ skipped(\.|: ".*")$/, "", name) || sub(/ passed\.$/, "", name)) {
                delete open[name]
            }
        }
        END { for (i = 1; i <= count; i++) if (order[i] in open) print order[i] }'
}

if ((timed_out)); then
    hung=$(unfinished_tests)
    hung_count=$(printf '%s' "$hung" | grep -c . || true)
    if ((hung_count > 0)); then
        say "these tests started and never finished within $test_timeout s:"
        printf '%s\n' "$hung" | sed 's/^/test.sh:   hung: /' >&2
    else
        say "no test had started yet (swift test was still starting up)"
    fi
    # What did finish, counted from the result lines; each hung test is a failure.
    read -r done_passed done_failed done_skipped <<<"$(plain_log | awk '
        {
            line = $0
            sub(/^[^A-Za-z]*/, "", line)
            if (line !~ /^Test / || line ~ /^Test (run|case) /) next
            if (line ~ /^Test ("[^"]*"|[^ ]+) recorded an? (known )?issue/) next
            if (line ~ / passed after [0-9][^ ]* [a-z]+( with .*)?\.$/) p++
            else if (line ~ / failed after [0-9][^ ]* [a-z]+( with .*)?\.$/) f++
            else if (line ~ / skipped(\.|: ".*")$/) s++
        }
        END { printf "%d %d %d\n", p, f, s }')"
    failed=$((done_failed + (hung_count > 0 ? hung_count : 1)))
    closing_line "$done_passed" "$failed" "$done_skipped"
    exit 124
fi

summary=$(plain_log | awk '
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
# Tests, failures and skips as the xUnit report lists them, one <testcase> a test.
if [[ -s "$xunit" ]] && counted=$(python3 - "$xunit" <<'PY'
import sys, xml.etree.ElementTree as tree
cases = list(tree.parse(sys.argv[1]).getroot().iter("testcase"))
failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
skipped = sum(1 for c in cases if c.find("skipped") is not None)
print(len(cases), failed, skipped)
PY
); then
    read -r x_total x_failed x_skipped <<<"$counted"
    if ((x_total != total || x_failed != failed || x_skipped != skipped)); then
        say "the console output counted $total tests, $failed failed, $skipped skipped; the xUnit report $x_total, $x_failed, $x_skipped: taking the report"
    fi
    total=$x_total failed=$x_failed skipped=$x_skipped
else
    say "no readable xUnit report ($xunit): counted from the console output"
fi
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
if ((failed > 0)) && [[ -s "$xunit" ]]; then
    # Named again just above the closing line: a CI excerpt shows the end of the output,
    # where only the failed suite's and the run's summary lines would be.
    python3 - "$xunit" <<'PY' || true
import sys, xml.etree.ElementTree as tree
shown = 0
for case in tree.parse(sys.argv[1]).getroot().iter("testcase"):
    problem = case.find("failure")
    if problem is None:
        problem = case.find("error")
    if problem is None:
        continue
    shown += 1
    if shown > 20:
        print("failed: … (more in the log)")
        break
    lines = (problem.get("message") or problem.text or "").strip().splitlines()
    print(f"failed: {case.get('classname')} {case.get('name')}: {lines[0][:300] if lines else '(no message)'}")
PY
fi
closing_line "$passed" "$failed" "$skipped"
exit "$test_rc"
