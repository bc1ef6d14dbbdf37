#!/usr/bin/env bash
# tidesync watcher benchmark: the running daemon (`tidesync run`, inotify
# watcher) against a private Apache mod_dav on 127.0.0.1.
#
#   1. save -> visible latency: BENCH_EDITS files (in 10 folders) are seeded
#      and synced, then the daemon runs (debounce 1 s, poll_interval 1h, so
#      only the watcher finds changes) while one python3 loop rewrites a
#      different file every BENCH_EDIT_GAP_MS (write + close in place, new
#      random bytes) and polls the server's disk every BENCH_POLL_MS until
#      each file's new bytes are there. Latency = first poll that sees the exact new content minus the
#      close() of the local file (so it is quantized by BENCH_POLL_MS).
#      Reported: p50 and p99 (nearest rank), min, mean, max, a histogram and
#      the `pass phases` debug lines of the passes the edits triggered.
#      Goals (the watcher issue): p50 <= 1.5 s, p99 <= 3 s.
#   2. idle CPU: BENCH_IDLE_FILES small files in 100 folders are seeded and
#      synced; once the daemon is quiet, its utime+stime (/proc/PID/stat) is
#      read, BENCH_IDLE_SECONDS pass, it is read again. Reported: CPU seconds
#      used, RSS (VmRSS, VmHWM), context switches of all its threads, HTTP
#      requests it made meanwhile. Measured twice on the same tree:
#        2a. poll_interval = "1h": only the watcher runs (goal: ~0 CPU)
#        2b. poll_interval = "30s" (the default): remote walks every 30 s
#            (BENCH_IDLE_POLL30=0 skips it)
#   3. case 1's edits again, spread over the BENCH_IDLE_FILES files of case 2
#      (2a's daemon, after its idle window): what a watched pass costs in a
#      big domain (BENCH_EDITS_BIG=0 skips it)
# Case 1's save -> visible latency is measured the same way in case 3.
# Every daemon runs with log_level debug (BENCH_LOG_LEVEL) and its stderr is
# prefixed with a wall-clock time stamp (its own stamps have 1 s resolution).
# All cases use the /dav-inf/ root (DavDepthInfinity On), like sync-bench.sh.
#
# Run from anywhere (builds the release binary into .build-bench unless
# TIDESYNC_BIN is set):
#   bash packaging/bench/watch-bench.sh
# Environment:
#   BENCH_EDITS=100           files edited in case 1, one edit each
#   BENCH_EDIT_GAP_MS=200     time between two edits
#   BENCH_POLL_MS=10          how often the server's disk is polled
#   BENCH_EDIT_TIMEOUT=30     seconds after which an edit counts as lost
#   BENCH_IDLE_FILES=10000    files watched in case 2 (100 folders)
#   BENCH_IDLE_SECONDS=60     length of each idle window
#   BENCH_IDLE_POLL30=1       also measure idle CPU with poll_interval 30s
#   BENCH_EDITS_BIG=1         also run case 3
#   BENCH_LOG_LEVEL=debug     tidesync log_level
#   BENCH_SYNC_TIMEOUT=900    seconds to wait for an initial sync to converge
#   BENCH_QUIET=3             seconds without a daemon log line = converged
#   BENCH_OUT=FILE            also write the final table to FILE
#   BENCH_KEEP=1              keep the work directory (logs, data) at the end
#   TIDESYNC_BIN=PATH         use this binary instead of building one
# Exits 0 when every daemon ran and every check passed (goals missed do not
# fail the run; the table says so), else 1.
# Only 127.0.0.1 is ever contacted (proxies are disabled for curl).
set -euo pipefail

me=watch-bench
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() {
    say "$*"
    exit 1
}

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$script_dir/../.." && pwd -P)

EDITS=${BENCH_EDITS:-100}
EDIT_GAP_MS=${BENCH_EDIT_GAP_MS:-200}
POLL_MS=${BENCH_POLL_MS:-10}
EDIT_TIMEOUT=${BENCH_EDIT_TIMEOUT:-30}
IDLE_FILES=${BENCH_IDLE_FILES:-10000}
IDLE_SECONDS=${BENCH_IDLE_SECONDS:-60}
IDLE_POLL30=${BENCH_IDLE_POLL30:-1}
EDITS_BIG=${BENCH_EDITS_BIG:-1}
LOG_LEVEL=${BENCH_LOG_LEVEL:-debug}
SYNC_TIMEOUT=${BENCH_SYNC_TIMEOUT:-900}
QUIET=${BENCH_QUIET:-3}
KEEP=${BENCH_KEEP:-0}

whole() { [[ "$2" =~ ^[0-9]+$ && "$2" -ge "$3" ]] || die "$1 must be a whole number >= $3"; }
whole BENCH_EDITS "$EDITS" 1
whole BENCH_EDIT_GAP_MS "$EDIT_GAP_MS" 1
whole BENCH_POLL_MS "$POLL_MS" 1
whole BENCH_EDIT_TIMEOUT "$EDIT_TIMEOUT" 1
whole BENCH_IDLE_FILES "$IDLE_FILES" 100
whole BENCH_IDLE_SECONDS "$IDLE_SECONDS" 1
whole BENCH_SYNC_TIMEOUT "$SYNC_TIMEOUT" 1
whole BENCH_QUIET "$QUIET" 1
[[ "$EDITS_BIG" != 1 || "$EDITS" -le "$IDLE_FILES" ]] || die "case 3 needs BENCH_EDITS <= BENCH_IDLE_FILES"

# Nothing may go through a proxy: all traffic stays on 127.0.0.1.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export no_proxy='*' NO_PROXY='*'

for tool in curl python3 awk getconf; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
done
[[ -d /proc/self ]] || die "/proc is needed (daemon CPU and RSS)"
CLK_TCK=$(getconf CLK_TCK)

# --- the binary --------------------------------------------------------------
if [[ -n "${TIDESYNC_BIN:-}" ]]; then
    BIN=$TIDESYNC_BIN
    BUILT=no
else
    say "building the release binary (swift build -c release --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2) || die "release build failed"
    BIN="$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)/tidesync"
    BUILT=yes
fi
[[ -x "$BIN" ]] || die "no tidesync binary at $BIN"
# What was measured: the commit built, and whether the tree had uncommitted
# changes (TIDESYNC_BIN: only where the repository stood).
REV=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no -- Sources Package.swift 2>/dev/null)" ]]; then
    REV="$REV + uncommitted changes in Sources/"
fi
if [[ "$BUILT" == yes ]]; then
    REV="built from commit $REV"
else
    REV="TIDESYNC_BIN; the repository is at $REV"
fi

# --- work dir, server, daemon bookkeeping ------------------------------------
W=$(mktemp -d /tmp/tidesync-watch-bench.XXXXXX)
DAEMON_PID=''
cleanup() {
    local rc=$?
    stop_daemon || true
    bash "$repo/packaging/dav-server.sh" stop "$W/dav" || true
    if [[ "$KEEP" == 1 ]]; then
        say "work directory kept: $W"
    else
        rm -rf "$W"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'say "error at line $LINENO: $BASH_COMMAND"' ERR

mkdir -p "$W/logs" "$W/state"
bash "$repo/packaging/dav-server.sh" start "$W/dav" || die "could not start the DAV server"
# shellcheck source=/dev/null
source "$W/dav/env"
BASE=$TIDESYNC_TEST_DAV_INF_URL
ROOT=$TIDESYNC_TEST_DAV_INF_ROOT
ACCESS_LOG=$TIDESYNC_TEST_DAV_ACCESS_LOG
[[ "$BASE" == http://127.0.0.1:* ]] || die "unexpected server URL $BASE"
export TIDESYNC_PASSWORD_BENCH=$TIDESYNC_TEST_DAV_PASSWORD

# curl's credentials go in a config file, not on the command line.
CURL_AUTH="$W/curl-auth.conf"
(
    umask 077
    printf 'user = "%s:%s"\n' "$TIDESYNC_TEST_DAV_USER" "$TIDESYNC_TEST_DAV_PASSWORD" >"$CURL_AUTH"
)
curl_base=(curl --config "$CURL_AUTH" --noproxy '*' --silent --no-progress-meter --show-error --fail)
mkcol() { "${curl_base[@]}" -o /dev/null -X MKCOL "$BASE$1/"; }

failures=0
fail() {
    say "FAILED: $*"
    failures=$((failures + 1))
}

# write_config NAME LOCAL COLLECTION POLL: a config with its own state dir
# (NAME) and the given poll_interval; debounce and the rest stay default.
write_config() {
    local name=$1 local_dir=$2 coll=$3 poll=$4
    mkdir -p "$W/state/$name"
    cat >"$W/$name.toml" <<EOF
state_dir = "$W/state/$name"
socket = "$W/state/$name/tidesync.sock"
log_level = "$LOG_LEVEL"
[[domain]]
name = "bench"
local = "$local_dir"
remote = "$BASE$coll/"
username = "$TIDESYNC_TEST_DAV_USER"
poll_interval = "$poll"
EOF
}

# Prefixes each line of stdin with the wall-clock time (seconds, 1 ms).
STAMP='import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line))
    sys.stdout.flush()'

# start_daemon LABEL CONFIG: `tidesync run` in the background; its stderr,
# time-stamped, goes to $W/logs/LABEL.log. Sets DAEMON_PID and DAEMON_LOG.
start_daemon() {
    DAEMON_LOG="$W/logs/$1.log"
    DAEMON_T0=$(date +%s.%N)
    "$BIN" run --config "$2" > >(python3 -u -c "$STAMP" >"$DAEMON_LOG") 2>&1 &
    DAEMON_PID=$!
    sleep 0.2
    kill -0 "$DAEMON_PID" 2>/dev/null || die "$1: tidesync run exited at once; see $DAEMON_LOG"
    say "$1: tidesync run started (pid $DAEMON_PID)"
}

# stop_daemon: SIGTERM, then SIGKILL after 20 s. Fails when it had died before.
stop_daemon() {
    local pid=$DAEMON_PID i rc=0
    [[ -n "$pid" ]] || return 0
    DAEMON_PID=''
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" || rc=$?
        say "the daemon (pid $pid) had already exited with status $rc"
        return 1
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "the daemon (pid $pid) did not stop within 20 s of SIGTERM; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

alive() { [[ -n "$DAEMON_PID" ]] && kill -0 "$DAEMON_PID" 2>/dev/null; }

# CPU ticks (utime + stime) of the daemon; the name field may hold spaces.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$DAEMON_PID/stat"; }
# kB value of FIELD (VmRSS, VmHWM, ...) in /proc/PID/status.
status_kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$DAEMON_PID/status"; }
# Context switches of each of the daemon's threads, "tid voluntary involuntary"
# per line, into FILE.
ctx_switches() {
    local t
    for t in "/proc/$DAEMON_PID"/task/*; do
        awk -v tid="${t##*/}" '
            $1 == "voluntary_ctxt_switches:" { v = $2 }
            $1 == "nonvoluntary_ctxt_switches:" { n = $2 }
            END { if (v != "") print tid, v, n }' "$t/status" 2>/dev/null || true
    done >"$1"
}
# ctx_delta BEFORE AFTER: "V voluntary + N involuntary switches, T threads (E
# exited)": switches made in between by the threads alive at the end (a
# thread that exited meanwhile takes its count with it).
ctx_delta() {
    awk 'NR == FNR { v0[$1] = $2; n0[$1] = $3; next }
        { v += $2 - v0[$1]; n += $3 - n0[$1]; t++; seen[$1] = 1 }
        END {
            for (k in v0) if (!(k in seen)) gone++
            printf "%d voluntary + %d involuntary switches, %d threads (%d exited)", v, n, t, gone
        }' "$1" "$2"
}

# Requests in the access log after line $1: method counts and statuses >= 400.
requests_since() {
    tail -n +"$(($1 + 1))" "$ACCESS_LOG" | awk '
        { m = substr($5, 2); n[m]++; total++; if ($(NF - 3) >= 400) bad++ }
        END {
            s = ""
            for (k in n) s = s sprintf(" %s=%d", k, n[k])
            printf "%d requests%s (>=400: %d)", total, s, bad + 0
        }'
}

# trees_equal LOCAL SERVER: prints "ok" when the two trees hold the same
# regular files (tidesync temporaries on the server count as a difference)
# with the same bytes, else what differs.
trees_equal() {
    python3 - "$1" "$2" <<'EOF'
import os, sys
def files(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out[os.path.relpath(p, root)] = p
    return out
a, b = files(sys.argv[1]), files(sys.argv[2])
missing = sorted(set(a) - set(b))
extra = sorted(set(b) - set(a))
differ = []
for p in sorted(set(a) & set(b)):
    with open(a[p], "rb") as x, open(b[p], "rb") as y:
        if x.read() != y.read():
            differ.append(p)
if missing or extra or differ:
    print("%d missing on the server, %d extra (e.g. %s), %d differ" % (
        len(missing), len(extra), (extra or ["-"])[0], len(differ)))
else:
    print("ok")
EOF
}

# wait_converged LABEL LOCAL SERVER: waits until the server's tree equals the
# local one and the daemon has logged nothing for QUIET seconds; fails after
# SYNC_TIMEOUT. Sets CONV_SECS to the seconds from the daemon's start to its
# last log line (the end of its last pass), "-" when it failed.
wait_converged() {
    local label=$1 local_dir=$2 server_dir=$3 t0 lines last_lines quiet_since now verdict
    t0=$(date +%s.%N)
    last_lines=-1
    quiet_since=$t0
    while :; do
        alive || die "$label: the daemon exited; last lines of its log:$(printf '\n'; tail -n 30 "$DAEMON_LOG")"
        now=$(date +%s.%N)
        lines=$(wc -l <"$DAEMON_LOG")
        if [[ "$lines" -ne "$last_lines" ]]; then
            last_lines=$lines
            quiet_since=$now
        elif awk -v a="$quiet_since" -v b="$now" -v q="$QUIET" 'BEGIN { exit !(b - a >= q) }'; then
            verdict=$(trees_equal "$local_dir" "$server_dir")
            if [[ "$verdict" == ok ]]; then
                CONV_SECS=$(tail -n 1 "$DAEMON_LOG" | awk -v a="$DAEMON_T0" '{ printf "%.1f", $1 - a }')
                return 0
            fi
            quiet_since=$now # quiet but not there yet: look again later
        fi
        if awk -v a="$t0" -v b="$now" -v t="$SYNC_TIMEOUT" 'BEGIN { exit !(b - a >= t) }'; then
            fail "$label: not converged after $SYNC_TIMEOUT s: $(trees_equal "$local_dir" "$server_dir")"
            tail -n 30 "$DAEMON_LOG" >&2
            CONV_SECS=-
            return 1
        fi
        sleep 0.5
    done
}

# seed DIR N FOLDERS SEED: N files of 1-4 KiB random bytes, spread over
# FOLDERS folders (dNN/fNNNNN.bin), with a fixed seed.
seed() {
    python3 - "$@" <<'EOF'
import os, random, sys
root, n, folders, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % folders))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
        f.write(rng.randbytes(rng.randint(1024, 4096)))
EOF
}

# Summarizes the "pass phases (...)" debug lines of log lines FROM..TO of LOG:
# passes by scope, and per phase the median and max milliseconds.
phase_summary() {
    sed -n "$2,$3p" "$1" | python3 -c '
import re, sys, statistics
scopes, phases = {}, {}
for line in sys.stdin:
    m = re.search(r"pass phases \((.*?)\): (.*)$", line)
    if not m:
        continue
    scope = re.sub(r"^[1-9]\d* path\(s\)", "N path(s)", m.group(1))
    scopes[scope] = scopes.get(scope, 0) + 1
    for part in m.group(2).split(", "):
        name, ms, _ = part.rsplit(" ", 2)
        phases.setdefault(name, []).append(int(ms))
n = sum(scopes.values())
if not n:
    print("     no passes (no pass phases lines; they need log_level debug)")
    sys.exit()
print("     %d passes: %s" % (n, ", ".join("%d %s" % (v, k) for k, v in sorted(scopes.items()))))
for name, v in phases.items():
    print("     %-12s median %5d ms  max %5d ms  total %6d ms" % (name, statistics.median(v), max(v), sum(v)))
'
}

# The edit loop: rewrites EDITS of the files under LOCAL (spread evenly over
# the sorted list), file k at start + k * gap (write + close in place, new
# random bytes), and every poll interval reads the server's copy of every
# edited file not seen yet. Writes one line per edit: index, wall-clock time
# of the close(), latency in seconds (first poll that saw the new bytes minus
# the close) or "lost".
cat >"$W/edit-loop.py" <<'EOF'
import os, random, sys, time
local, server, n, gap, poll, timeout, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]) / 1000, int(sys.argv[5]) / 1000, float(sys.argv[6]), sys.argv[7]
paths = []
for d, _, names in os.walk(local):
    paths += [os.path.relpath(os.path.join(d, x), local) for x in names]
paths.sort()
assert len(paths) >= n, "fewer files than edits"
paths = [paths[k * len(paths) // n] for k in range(n)]
rng = random.Random(7)
pending = {}   # k -> (path on the server, new bytes, perf_counter at close)
saved, seen = {}, {}
start = time.perf_counter() + 0.1
i = 0
while i < n or pending:
    now = time.perf_counter()
    if i < n and now >= start + i * gap:
        p = paths[i]
        data = b"edit %d\n" % i + rng.randbytes(rng.randint(1024, 4096))
        with open(os.path.join(local, p), "wb") as f:
            f.write(data)
        t = time.perf_counter()
        saved[i] = time.time()
        pending[i] = (os.path.join(server, p), data, t)
        i += 1
    now = time.perf_counter()
    for k, (sp, data, t) in list(pending.items()):
        try:
            with open(sp, "rb") as f:
                ok = f.read() == data
        except OSError:
            ok = False
        if ok:
            seen[k] = now - t
            del pending[k]
        elif now - t > timeout:
            seen[k] = None
            del pending[k]
    wake = time.perf_counter() + poll
    if i < n:
        wake = min(wake, start + i * gap)
    time.sleep(max(0.0, wake - time.perf_counter()))
with open(out, "w") as f:
    for k in range(n):
        f.write("%d %.3f %s %s\n" % (k, saved[k], "lost" if seen[k] is None else "%.4f" % seen[k], paths[k]))
EOF

# p50, p99 (nearest rank), min, mean, max, lost count, histogram, goal
# verdicts of a latencies file, as KEY=VALUE lines.
cat >"$W/edit-stats.py" <<'EOF'
import math, sys
rows = [l.split() for l in open(sys.argv[1])]
lat = sorted(float(r[2]) for r in rows if r[2] != "lost")
lost = sum(1 for r in rows if r[2] == "lost")
n = len(rows)
def rank(p):  # nearest rank over all edits; a lost edit counts as infinite
    k = max(1, math.ceil(p / 100 * n)) - 1
    return lat[k] if k < len(lat) else float("inf")
fmt = lambda x: "lost" if x == float("inf") else "%.3f" % x
p50, p99 = rank(50), rank(99)
print("P50=%s" % fmt(p50))
print("P99=%s" % fmt(p99))
print("MIN=%s" % (fmt(lat[0]) if lat else "-"))
print("MAX=%s" % ("lost" if lost else fmt(lat[-1]) if lat else "-"))
print("MEAN=%s" % ("%.3f" % (sum(lat) / len(lat)) if lat else "-"))
print("LOST=%d" % lost)
print("GOAL50=%s" % ("met" if p50 <= 1.5 else "MISSED"))
print("GOAL99=%s" % ("met" if p99 <= 3.0 else "MISSED"))
edges = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.75, 2.0, 2.5, 3.0, 5.0, 10.0, float("inf")]
num = lambda x: ("%.2f" % x).rstrip("0").rstrip(".")
lo, hist = 0.0, []
for hi in edges:
    c = sum(1 for x in lat if lo <= x < hi)
    if c:
        hist.append("%s-%s s: %d" % (num(lo), "" if hi == float("inf") else num(hi), c))
    lo = hi
if lost:
    hist.append("lost: %d" % lost)
print("HIST=%s" % "; ".join(hist))
EOF

# edit_run CASE LOCAL SERVER: the edit loop against the running daemon; the
# results go to R[CASE.p50], R[CASE.p99], ... (see edit-stats.py), R[CASE.reqs]
# and R[CASE.phases]; the latencies to $W/logs/CASE-latencies.txt.
declare -A R
edit_run() {
    local c=$1 local_dir=$2 server_dir=$3 log_from req_from log_to final line k v
    say "$c: $EDITS edits, one every $EDIT_GAP_MS ms, server polled every $POLL_MS ms"
    log_from=$(($(wc -l <"$DAEMON_LOG") + 1))
    req_from=$(wc -l <"$ACCESS_LOG")
    python3 "$W/edit-loop.py" "$local_dir" "$server_dir" "$EDITS" "$EDIT_GAP_MS" "$POLL_MS" "$EDIT_TIMEOUT" \
        "$W/logs/$c-latencies.txt" || die "$c: the edit loop failed"
    sleep 1 # the last pass's log line
    alive || fail "$c: the daemon exited during the edits"
    log_to=$(wc -l <"$DAEMON_LOG")
    R[$c.reqs]=$(requests_since "$req_from")
    R[$c.phases]=$(phase_summary "$DAEMON_LOG" "$log_from" "$log_to")
    final=$(trees_equal "$local_dir" "$server_dir")
    [[ "$final" == ok ]] || fail "$c: after the edits the server differs: $final"
    while IFS='=' read -r k v; do
        R[$c.${k,,}]=$v
    done < <(python3 "$W/edit-stats.py" "$W/logs/$c-latencies.txt")
    line="p50 ${R[$c.p50]}s, p99 ${R[$c.p99]}s, min ${R[$c.min]}s, max ${R[$c.max]}s, lost ${R[$c.lost]}"
    say "$c: $line"
}

# --- case 1: save -> visible latency -----------------------------------------
say "case 1: $EDITS files"
E_LOCAL="$W/edit"
E_SERVER="$ROOT/edit"
seed "$E_LOCAL" "$EDITS" 10 1
mkcol edit
write_config edit "$E_LOCAL" edit 1h
start_daemon 1-edit "$W/edit.toml"
wait_converged 1-initial "$E_LOCAL" "$E_SERVER" || die "1-edit: the initial sync did not converge"
E_SYNC=$CONV_SECS
say "1-edit: initial sync of $EDITS files converged after ${E_SYNC}s"
edit_run 1 "$E_LOCAL" "$E_SERVER"
stop_daemon || fail "1-edit: the daemon died"

# --- case 2: idle CPU with many files watched -------------------------------
# idle_window LABEL: measures the running daemon for IDLE_SECONDS; sets
# I_CPU I_RSS I_HWM I_CTX I_REQS I_PHASES.
idle_window() {
    local label=$1 c0 c1 req0 log0 log1
    req0=$(wc -l <"$ACCESS_LOG")
    log0=$(($(wc -l <"$DAEMON_LOG") + 1))
    ctx_switches "$W/ctx0"
    c0=$(cpu_ticks)
    say "$label: idle for $IDLE_SECONDS s"
    sleep "$IDLE_SECONDS" &
    wait $! # (a signal's trap runs at once, not after the sleep)
    alive || fail "$label: the daemon exited during the idle window"
    c1=$(cpu_ticks)
    ctx_switches "$W/ctx1"
    log1=$(wc -l <"$DAEMON_LOG")
    I_CPU=$(awk -v a="$c0" -v b="$c1" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / hz }')
    I_RSS=$(($(status_kb VmRSS) / 1024))
    I_HWM=$(($(status_kb VmHWM) / 1024))
    I_CTX=$(ctx_delta "$W/ctx0" "$W/ctx1")
    I_REQS=$(requests_since "$req0")
    I_PHASES=$(phase_summary "$DAEMON_LOG" "$log0" "$log1")
    I_LINES=$((log1 - log0 + 1))
    say "$label: ${I_CPU} CPU s in $IDLE_SECONDS s, RSS $I_RSS MiB (peak $I_HWM), $I_CTX; $I_REQS; $I_LINES log lines"
}

say "case 2: $IDLE_FILES files in 100 folders"
I_LOCAL="$W/idle"
I_SERVER="$ROOT/idle"
seed "$I_LOCAL" "$IDLE_FILES" 100 2
mkcol idle
write_config idle "$I_LOCAL" idle 1h
start_daemon 2a-idle-1h "$W/idle.toml"
wait_converged 2-initial "$I_LOCAL" "$I_SERVER" || die "2a: the initial sync did not converge"
I_SYNC=$CONV_SECS
say "2a: initial sync of $IDLE_FILES files converged after ${I_SYNC}s"
I_START_CPU=$(awk -v t="$(cpu_ticks)" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
idle_window 2a-idle-1h
A_CPU=$I_CPU A_RSS=$I_RSS A_HWM=$I_HWM A_CTX=$I_CTX A_REQS=$I_REQS A_PHASES=$I_PHASES A_LINES=$I_LINES

# --- case 3: case 1's edits in the big tree ----------------------------------
# The same daemon (poll_interval 1h), now that its idle window is over.
if [[ "$EDITS_BIG" == 1 ]]; then
    say "case 3: $EDITS edits spread over the $IDLE_FILES files"
    edit_run 3 "$I_LOCAL" "$I_SERVER"
fi
stop_daemon || fail "2a: the daemon died"

B_CPU='-' B_RSS='-' B_HWM='-' B_CTX='-' B_REQS='-' B_PHASES='' B_LINES='-' B_SYNC='-'
if [[ "$IDLE_POLL30" == 1 ]]; then
    # Same tree and state DB, poll_interval 30s: the start's full pass finds
    # nothing to do, then the remote is walked every 30 s.
    write_config idle "$I_LOCAL" idle 30s
    start_daemon 2b-idle-30s "$W/idle.toml"
    wait_converged 2b-start "$I_LOCAL" "$I_SERVER" || die "2b: the start's pass did not converge"
    B_SYNC=$CONV_SECS
    idle_window 2b-idle-30s
    B_CPU=$I_CPU B_RSS=$I_RSS B_HWM=$I_HWM B_CTX=$I_CTX B_REQS=$I_REQS B_PHASES=$I_PHASES B_LINES=$I_LINES
    stop_daemon || fail "2b: the daemon died"
fi

# --- report ------------------------------------------------------------------
repro="bash packaging/bench/watch-bench.sh"
for v in BENCH_EDITS:100:$EDITS BENCH_EDIT_GAP_MS:200:$EDIT_GAP_MS BENCH_POLL_MS:10:$POLL_MS \
    BENCH_IDLE_FILES:10000:$IDLE_FILES BENCH_IDLE_SECONDS:60:$IDLE_SECONDS BENCH_IDLE_POLL30:1:$IDLE_POLL30 \
    BENCH_EDITS_BIG:1:$EDITS_BIG BENCH_LOG_LEVEL:debug:$LOG_LEVEL; do
    IFS=: read -r name def val <<<"$v"
    [[ "$val" == "$def" ]] || repro="$name=$val $repro"
done
# edit_report CASE: the latency table of one edit run.
edit_report() {
    local c=$1
    printf '   %-8s %8s   %s\n' metric seconds goal
    printf '   %-8s %8s   %s\n' p50 "${R[$c.p50]}" "<= 1.5 s: ${R[$c.goal50]}"
    printf '   %-8s %8s   %s\n' p99 "${R[$c.p99]}" "<= 3 s: ${R[$c.goal99]}"
    printf '   %-8s %8s\n' min "${R[$c.min]}" mean "${R[$c.mean]}" max "${R[$c.max]}" lost "${R[$c.lost]}"
    printf '   histogram: %s\n' "${R[$c.hist]}"
    printf '   requests meanwhile: %s\n' "${R[$c.reqs]}"
    printf '   passes meanwhile (pass phases debug lines):\n%s\n' "${R[$c.phases]}"
}
report() {
    printf 'tidesync watcher benchmark (tidesync run, inotify) against Apache mod_dav on 127.0.0.1 (/dav-inf/)\n'
    printf 'binary: %s (%s); %s cores; %s\n' "$BIN" "$REV" "$(nproc)" "$(date -u +%Y-%m-%dT%H:%MZ)"
    printf 'reproduce: %s\n' "$repro"
    printf '\n1. save -> visible on the server: %s edits of different files (%s files in the domain), one every %s ms\n' \
        "$EDITS" "$EDITS" "$EDIT_GAP_MS"
    printf '   (debounce 1s default, poll_interval 1h; server disk polled every %s ms; initial sync: %s s)\n' \
        "$POLL_MS" "$E_SYNC"
    edit_report 1
    printf '\n2. idle, %s files in 100 folders watched, %s s window after convergence\n' "$IDLE_FILES" "$IDLE_SECONDS"
    printf '   (initial upload of the %s files: %s s from the daemon start to its last log line, %s CPU s)\n' \
        "$IDLE_FILES" "$I_SYNC" "$I_START_CPU"
    printf '   %-22s %9s %9s %9s   %s\n' poll_interval 'CPU s' 'RSS MiB' 'peak MiB' 'log lines / requests / wakeups'
    printf '   %-22s %9s %9s %9s   %s lines; %s; %s\n' '2a "1h" (watcher only)' "$A_CPU" "$A_RSS" "$A_HWM" "$A_LINES" "$A_REQS" "$A_CTX"
    printf '   %-22s %9s %9s %9s   %s lines; %s; %s\n' '2b "30s" (default)' "$B_CPU" "$B_RSS" "$B_HWM" "$B_LINES" "$B_REQS" "$B_CTX"
    printf '   2a passes in the window:\n%s\n' "$A_PHASES"
    if [[ "$IDLE_POLL30" == 1 ]]; then
        printf '   2b passes in the window (the start pass over the synced tree took %s s before it):\n%s\n' \
            "$B_SYNC" "$B_PHASES"
    fi
    if [[ "$EDITS_BIG" == 1 ]]; then
        printf '\n3. save -> visible on the server: %s edits of different files, %s files in the domain (case 2a'"'"'s daemon)\n' \
            "$EDITS" "$IDLE_FILES"
        edit_report 3
    fi
    if [[ "$failures" -ne 0 ]]; then
        printf '\n%s check(s) FAILED (see the messages above)\n' "$failures"
    fi
}
report >"$W/report.txt"
cat "$W/report.txt"
if [[ -n "${BENCH_OUT:-}" ]]; then
    cp "$W/report.txt" "$BENCH_OUT"
fi
[[ "$failures" -eq 0 ]]
