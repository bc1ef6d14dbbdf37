#!/usr/bin/env bash
# tidesync scale benchmark: a domain of BENCH_ITEMS files (default 100 000) on
# the local-directory remote (no server: the cost measured is tidesync's own).
#
#   0. seed: the same tree is written on both sides (folders of 100 files, 10
#      subfolders per top folder, 1-64 byte files, names of mixed length and
#      case), then one `tidesync run --once` records it (both sides hold every
#      file: each is compared, none transferred). Reported: its time.
#   1. a pass with nothing changed: `tidesync run --once`, BENCH_RUNS times;
#      reference: `find` over both trees, reading every inode (-printf '%s %T@'),
#      the same number of times, interleaved. Reported: median wall time and
#      peak RSS (/usr/bin/time %M) of each, the ratio, the pass's phases (from
#      its debug log), and the state DB's size.
#   2. the daemon (`tidesync run`, default poll_interval 30 s): once idle
#      (`tidesync status` exits 0), BENCH_SAVES files are saved one after
#      another, each waited for on the remote side (content equal, polled
#      every 10 ms): save -> remote latency p50 / p99 (nearest rank). Then
#      BENCH_IDLE_SECONDS without changes: CPU seconds used (utime+stime of
#      /proc/PID/stat), scaled to a minute, and RSS (VmRSS) at the end.
#
# With BENCH_REMOTE=apache the remote is a private Apache mod_dav on 127.0.0.1
# (packaging/dav-server.sh; the tree is copied onto its disk, so the seed still
# transfers nothing) at its Depth-infinity root, with one PROPFIND Depth:
# infinity by curl as a second reference; BENCH_REMOTE=apache-stock uses its
# root with Debian's default DavDepthInfinity Off (a walk is one PROPFIND
# Depth: 1 per folder; the curl reference does the same, one process,
# keep-alive).
#
# Goals (issue 16): no-change pass <= 2x find and <= 64 MiB; save -> server
# p50 <= 1.1 s, p99 <= 1.5 s; idle <= 0.3 CPU s per minute and <= 64 MiB.
#
#   bash packaging/bench/scale-bench.sh
# Environment:
#   BENCH_ITEMS=100000      files (a multiple of 100; 1000000 takes long to seed)
#   BENCH_RUNS=3            no-change passes (and find runs) timed
#   BENCH_SAVES=20          saves timed in case 2 (0 skips case 2)
#   BENCH_IDLE_SECONDS=60   the idle window of case 2
#   BENCH_KEEP=1            keep the work directory
#   BENCH_REMOTE=local      local (a directory), apache or apache-stock
#   TIDESYNC_BIN=PATH       use this binary instead of building one
set -euo pipefail

me=scale-bench
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() { say "$*"; exit 1; }

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$script_dir/../.." && pwd -P)
ITEMS=${BENCH_ITEMS:-100000}
RUNS=${BENCH_RUNS:-3}
SAVES=${BENCH_SAVES:-20}
IDLE_SECONDS=${BENCH_IDLE_SECONDS:-60}
KEEP=${BENCH_KEEP:-0}
REMOTE=${BENCH_REMOTE:-local}
[[ "$REMOTE" =~ ^(local|apache|apache-stock)$ ]] || die "BENCH_REMOTE must be local, apache or apache-stock"
for pair in "BENCH_ITEMS $ITEMS 100" "BENCH_RUNS $RUNS 1" "BENCH_SAVES $SAVES 0" "BENCH_IDLE_SECONDS $IDLE_SECONDS 1"; do
    set -- $pair
    [[ "$2" =~ ^[0-9]+$ && "$2" -ge "$3" ]] || die "$1 must be a whole number >= $3"
done
(( ITEMS % 100 == 0 )) || die "BENCH_ITEMS must be a multiple of 100"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing: apt-get install time"

if [[ -n "${TIDESYNC_BIN:-}" ]]; then
    bin=$TIDESYNC_BIN
else
    say "building the release binary (swift build -c release --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2)
    bin=$repo/.build-bench/release/tidesync
fi
[[ -x "$bin" ]] || die "no tidesync binary at $bin"

work=$(mktemp -d /tmp/tidesync-scale-bench.XXXXXX)
daemon=
cleanup() {
    [[ -n "$daemon" ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    [[ "$REMOTE" == local ]] || bash "$repo/packaging/dav-server.sh" stop "$work/dav" || true
    if [[ "$KEEP" == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

say "seeding $ITEMS files on both sides in $work"
python3 - "$work/L" "$ITEMS" <<'EOF'
import os, random, sys
root, items = sys.argv[1], int(sys.argv[2])
rng = random.Random(16)
words = ["report", "IMG", "notes", "Übersicht", "data", "café", "a", "Q3 budget (final)", "x" * 40]
folders = items // 100
for f in range(folders):
    folder = os.path.join(root, "top%03d %s" % (f // 10, words[f % len(words)]), "sub%d" % (f % 10))
    os.makedirs(folder, exist_ok=True)
    for i in range(100):
        name = "%s-%05d.%s" % (words[rng.randrange(len(words))], f * 100 + i, ["txt", "jpg", "md", "bin"][i % 4])
        with open(os.path.join(folder, name), "wb") as out:
            out.write(rng.randbytes(rng.randrange(1, 65)))
EOF
R=$work/R remote_url="file://$work/R" credentials="" curl_ref=""
if [[ "$REMOTE" == local ]]; then
    cp -a "$work/L" "$R"
else
    bash "$repo/packaging/dav-server.sh" start "$work/dav" >&2 || die "could not start the DAV server"
    # shellcheck source=/dev/null
    source "$work/dav/env"
    if [[ "$REMOTE" == apache ]]; then
        base=$TIDESYNC_TEST_DAV_INF_URL root=$TIDESYNC_TEST_DAV_INF_ROOT
    else
        base=$TIDESYNC_TEST_DAV_URL root=$TIDESYNC_TEST_DAV_ROOT
    fi
    R=$root/scale remote_url="${base}scale/"
    cp -a "$work/L" "$R"
    [[ "$(id -u)" -ne 0 ]] || chown -R "$TIDESYNC_TEST_DAV_OWNER:$TIDESYNC_TEST_DAV_OWNER" "$R"
    export TIDESYNC_PASSWORD_SCALE=$TIDESYNC_TEST_DAV_PASSWORD
    credentials="username = \"$TIDESYNC_TEST_DAV_USER\""
    (umask 077; printf 'user = "%s:%s"\n' "$TIDESYNC_TEST_DAV_USER" "$TIDESYNC_TEST_DAV_PASSWORD" > "$work/curl.conf")
    # The folders to list: the root alone with Depth infinity, every folder with Depth 1.
    python3 - "$R" "$remote_url" "$REMOTE" > "$work/propfind.conf" <<'EOF'
import os, sys, urllib.parse
root, url, mode = sys.argv[1:]
folders = [""] if mode == "apache" else sorted(os.path.relpath(t, root) for t, _, _ in os.walk(root))
for folder in folders:
    path = "" if folder in ("", ".") else urllib.parse.quote(folder) + "/"
    print('url = "%s%s"\noutput = "/dev/null"' % (url, path))
EOF
    depth=$([[ "$REMOTE" == apache ]] && echo infinity || echo 1)
    curl_ref="curl --config $work/curl.conf --config $work/propfind.conf --noproxy * --silent --show-error --fail -X PROPFIND -H Depth:$depth"
fi
config=$work/config.toml
cat > "$config" <<EOF
log_level = "debug"
state_dir = "$work/state"
socket = "$work/state/tidesync.sock"

[[domain]]
name = "scale"
local = "$work/L"
remote = "$remote_url"
$credentials
EOF

start=$(date +%s.%N)
"$bin" run --once --config "$config" 2> "$work/seed.log" || { tail -20 "$work/seed.log" >&2; die "the seeding run failed"; }
seed=$(printf "%.1f" "$(echo "$(date +%s.%N) - $start" | bc)")
say "seeded in ${seed}s"

# "seconds kib" of one command, from /usr/bin/time.
# A failed command prints nothing, so the `read` of its line fails and the caller dies
# (time's own file would start "Command exited with non-zero status").
timed() { /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2>> "$work/pass.log" || return 1; cat "$work/time"; }
passes=() finds=() rss=() frss=() curls=()
for k in $(seq "$RUNS"); do
    read -r s m < <(timed "$bin" run --once --config "$config") || die "a no-change pass failed: $(tail -5 "$work/pass.log")"
    passes+=("$s") rss+=("$m")
    read -r s m < <(timed find "$work/L" "$R" -printf '%s %T@\n') || die "find over both trees failed"
    finds+=("$s") frss+=("$m")
    if [[ -n "$curl_ref" ]]; then
        # shellcheck disable=SC2086
        read -r s m < <(set -f; timed $curl_ref) || die "curl's PROPFIND failed"
        curls+=("$s")
    fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
pass=$(median "${passes[@]}") find=$(median "${finds[@]}")
pass_rss=$(median "${rss[@]}") find_rss=$(median "${frss[@]}")
steps=$(grep -c " step(s): " "$work/pass.log" || true)
phases=$(grep "pass phases" "$work/pass.log" | tail -1 | sed 's/.*pass phases/pass phases/')
db=$(stat -c %s "$work/state/scale.sqlite")

latency="skipped" idle="skipped"
if (( SAVES > 0 )); then
    sed -i 's/^log_level = "debug"/log_level = "info"/' "$config"
    "$bin" run --config "$config" 2> "$work/daemon.log" &
    daemon=$!
    deadline=$((SECONDS + 600))
    until "$bin" status --config "$config" > /dev/null 2>&1; do
        kill -0 "$daemon" 2>/dev/null || die "the daemon stopped: $(tail -5 "$work/daemon.log")"
        (( SECONDS < deadline )) || die "the daemon was not idle after 600 s"
        sleep 0.2
    done
    latency=$(python3 - "$work/L" "$R" "$SAVES" <<'EOF'
import os, sys, time
local, remote, saves = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = []
for top, dirs, names in os.walk(local):
    dirs.sort()
    files += [os.path.relpath(os.path.join(top, n), local) for n in sorted(names)]
step = max(1, len(files) // saves)
times = []
for k in range(saves):
    rel = files[k * step]
    data = ("save %d %s\n" % (k, time.time())).encode()
    with open(os.path.join(local, rel), "wb") as out:
        out.write(data)
    start = time.monotonic()
    while True:
        try:
            with open(os.path.join(remote, rel), "rb") as f:
                if f.read() == data: break
        except OSError:
            pass
        if time.monotonic() - start > 60: sys.exit("save %d of %s never reached the remote" % (k, rel))
        time.sleep(0.01)
    times.append(time.monotonic() - start)
times.sort()
rank = lambda p: times[max(0, -(-len(times) * p // 100) - 1)]
print("p50 %.2f s, p99 %.2f s (%d saves)" % (rank(50), rank(99), len(times)))
EOF
) || die "case 2 failed"
    ticks=$(getconf CLK_TCK)
    cpu() { awk '{print $14 + $15}' "/proc/$daemon/stat"; }
    before=$(cpu)
    sleep "$IDLE_SECONDS"
    after=$(cpu)
    idle_rss=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status")
    idle=$(echo "scale=2; ($after - $before) / $ticks * 60 / $IDLE_SECONDS" | bc)" CPU s per minute, RSS $((idle_rss / 1024)) MiB"
fi

ratio=$(echo "scale=1; $pass / $find" | bc)
curl_row=""
if [[ -n "$curl_ref" ]]; then
    curl=$(median "${curls[@]}")
    folders=$(grep -c '^url' "$work/propfind.conf")
    curl_row="| the same, reference curl | - | $folders PROPFIND(s) Depth $depth, one curl process: ${curl}s | $(echo "scale=1; $pass / $curl" | bc)x |
"
fi
remote_name=$([[ "$REMOTE" == local ]] && echo "local-directory remote" || echo "Apache mod_dav on 127.0.0.1 ($REMOTE)")
cat <<EOF

scale-bench: $ITEMS files, $remote_name, release binary $("$bin" --version 2>/dev/null | head -1)
| case | tidesync | reference | ratio |
| --- | --- | --- | --- |
| seed (both sides hold every file) | ${seed}s | - | - |
| a pass with nothing changed (median of $RUNS) | ${pass}s, peak RSS $((pass_rss / 1024)) MiB | find over both trees ${find}s, $((find_rss / 1024)) MiB | ${ratio}x |
$curl_row| save -> remote ($SAVES saves) | $latency | the 1 s debounce | - |
| idle, poll_interval 30 s ($IDLE_SECONDS s) | $idle | - | - |
| state DB | $((db / 1024)) KiB | - | - |
$phases
EOF
(( steps == 0 )) || die "a no-change pass planned steps: $(grep " step(s): " "$work/pass.log" | head -3)"
