#!/usr/bin/env bash
# tidesync sync benchmark against a private Apache mod_dav on 127.0.0.1.
#
# Measures, each as one `tidesync run --once` process, wall seconds and peak
# RSS (/usr/bin/time -f %M), and compares with a curl reference doing the
# same HTTP work with one curl process (8 keep-alive connections):
#   1. initial upload of N small files (1-16 KiB, random bytes, fixed seed,
#      10 top folders x 10 subfolders); reference: sequential MKCOL of the
#      110 folders (timed, one curl process) + PUT of every file, 8 parallel
#   2. initial upload of 2 x 256 MiB files; reference: 2 parallel PUTs
#   3. initial download of the N files into an empty folder with a fresh state
#      dir; reference: GET of every file, 8 parallel
#   4. a pass after 1 % of the files changed locally; reference: PUT of them
#   5. a pass after 1 % changed on the server's disk; reference: GET of them
#   6. a pass with nothing changed; reference: one PROPFIND Depth: infinity
#   7. initial upload of a bundle (Bench.app) holding the files of one top
#      folder (N/10 files, 11 folders); reference: sequential MKCOL of its
#      folders + PUT of its files, 8 parallel
#   8. a pass after 1 % of the bundle's members changed locally (a new bundle
#      version: server-side COPY, PUT of the changed members, two MOVEs);
#      reference: PUT of the changed members
# All cases use the /dav-inf/ root (DavDepthInfinity On); each side writes
# into its own fresh collection. Files are in the page cache (warm reads).
# After every tidesync pass the result is checked (file counts on the
# server's disk, contents compared) and its HTTP requests are counted from
# Apache's access log (method counts and summed server time, %D).
#
# Run from anywhere (builds the release binary into .build-bench unless
# TIDESYNC_BIN is set):
#   bash packaging/bench/sync-bench.sh
# Environment:
#   BENCH_FILES=10000         number of small files (BENCH_FILES=1000: quick)
#   BENCH_BIG_MIB=256         size of each of the 2 big files, MiB
#   BENCH_TRANSFERS=8         `transfers` for cases 1-6
#   BENCH_TRANSFERS_SWEEP=1   also time case 1 with transfers = 4, 8 and 16
#   BENCH_LOG_LEVEL=warning   tidesync log_level
#   BENCH_TIMEOUT=900         seconds before one tidesync run is killed
#   BENCH_OUT=FILE            also write the final table to FILE
#   BENCH_KEEP=1              keep the work directory (logs, data) at the end
#   BENCH_IMAGE_MIB=4096      (root) put the work directory on a fresh ext4 image of this
#                             many MiB (journaled, as a desktop's disk), loop-mounted: every
#                             run starts from the same file system; on this VM's own root
#                             file system (ext4 without a journal) file creation slows down
#                             run after run once many files were deleted (curl's 10 000 GETs
#                             0.6 s, then 3-5 s)
#   TIDESYNC_BIN=PATH         use this binary instead of building one
# Exits 0 when every tidesync run succeeded and every check passed, else 1.
# Only 127.0.0.1 is ever contacted (proxies are disabled for curl).
set -euo pipefail

me=sync-bench
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() {
    say "$*"
    exit 1
}

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$script_dir/../.." && pwd -P)

FILES=${BENCH_FILES:-10000}
BIG_MIB=${BENCH_BIG_MIB:-256}
TRANSFERS=${BENCH_TRANSFERS:-8}
SWEEP=${BENCH_TRANSFERS_SWEEP:-0}
LOG_LEVEL=${BENCH_LOG_LEVEL:-warning}
RUN_TIMEOUT=${BENCH_TIMEOUT:-900}
KEEP=${BENCH_KEEP:-0}
IMAGE_MIB=${BENCH_IMAGE_MIB:-0}
CURL_PAR=8

[[ "$FILES" =~ ^[0-9]+$ && "$FILES" -ge 100 ]] || die "BENCH_FILES must be a whole number >= 100"
[[ "$BIG_MIB" =~ ^[0-9]+$ && "$BIG_MIB" -ge 1 ]] || die "BENCH_BIG_MIB must be a whole number >= 1"
[[ "$TRANSFERS" =~ ^[0-9]+$ && "$TRANSFERS" -ge 1 && "$TRANSFERS" -le 64 ]] ||
    die "BENCH_TRANSFERS must be 1..64"
[[ "$IMAGE_MIB" =~ ^[0-9]+$ ]] || die "BENCH_IMAGE_MIB must be a whole number of MiB"
[[ "$IMAGE_MIB" -eq 0 || "$(id -u)" -eq 0 ]] || die "BENCH_IMAGE_MIB needs root (it loop-mounts an ext4 image)"
CHANGED=$((FILES / 100)) # 1 %

# Nothing may go through a proxy: all traffic stays on 127.0.0.1.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export no_proxy='*' NO_PROXY='*'

for tool in curl python3 timeout awk cmp; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
done
if [[ ! -x /usr/bin/time ]]; then
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing /usr/bin/time (Debian package time)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >&2 ||
            die "apt-get install time failed"
    else
        die "/usr/bin/time not found: install the package 'time' (apt-get install time)"
    fi
fi

# --- the binary --------------------------------------------------------------
if [[ -n "${TIDESYNC_BIN:-}" ]]; then
    BIN=$TIDESYNC_BIN
else
    say "building the release binary (swift build -c release --scratch-path .build-bench)"
    (cd "$repo" && swift build -c release --scratch-path .build-bench >&2) || die "release build failed"
    BIN="$(cd "$repo" && swift build -c release --scratch-path .build-bench --show-bin-path)/tidesync"
fi
[[ -x "$BIN" ]] || die "no tidesync binary at $BIN"

# --- work dir and server -----------------------------------------------------
W=$(mktemp -d /tmp/tidesync-bench.XXXXXX)
cleanup() {
    local rc=$?
    bash "$repo/packaging/dav-server.sh" stop "$W/dav" || true
    if [[ "$KEEP" == 1 ]]; then
        say "work directory kept: $W$([[ "$IMAGE_MIB" -gt 0 ]] && echo " (on $W.img, still mounted)")"
    else
        if [[ "$IMAGE_MIB" -gt 0 ]]; then
            if mountpoint -q "$W"; then umount "$W" || umount -l "$W"; fi
            rm -f "$W.img"
        fi
        rm -rf "$W"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ "$IMAGE_MIB" -gt 0 ]]; then
    if ! truncate -s "${IMAGE_MIB}M" "$W.img" || ! mkfs.ext4 -q -F "$W.img"; then die "cannot make an ext4 image at $W.img"; fi
    mount -o loop "$W.img" "$W" || die "cannot loop-mount $W.img"
    say "work directory on a fresh ext4 image of $IMAGE_MIB MiB (journaled), loop-mounted"
fi

mkdir -p "$W/logs" "$W/state"
bash "$repo/packaging/dav-server.sh" start "$W/dav" || die "could not start the DAV server"
# shellcheck source=/dev/null
source "$W/dav/env"
BASE=$TIDESYNC_TEST_DAV_INF_URL
ROOT=$TIDESYNC_TEST_DAV_INF_ROOT
ACCESS_LOG=$TIDESYNC_TEST_DAV_ACCESS_LOG
[[ "$BASE" == http://127.0.0.1:* ]] || die "unexpected server URL $BASE"
export TIDESYNC_PASSWORD_BENCH=$TIDESYNC_TEST_DAV_PASSWORD
is_root=no
[[ "$(id -u)" -eq 0 ]] && is_root=yes

# curl's credentials go in a config file, not on the command line.
CURL_AUTH="$W/curl-auth.conf"
(
    umask 077
    printf 'user = "%s:%s"\n' "$TIDESYNC_TEST_DAV_USER" "$TIDESYNC_TEST_DAV_PASSWORD" >"$CURL_AUTH"
)
curl_base=(curl --config "$CURL_AUTH" --noproxy '*' --silent --no-progress-meter --show-error --fail)

now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

mkcol() { "${curl_base[@]}" -o /dev/null -X MKCOL "$BASE$1/"; }

failures=0
cur=setup # the case under way: its failed checks are counted in BAD[$cur]
declare -A BAD
fail() {
    say "FAILED: $*"
    failures=$((failures + 1))
    BAD[$cur]=$((${BAD[$cur]:-0} + 1))
}

# Regular files under DIR whose names are not tidesync temporaries.
count_files() { find "$1" -type f ! -name '.tidesync-*' | wc -l; }
count_temps() { find "$1" -name '.tidesync-*' | wc -l; }

# --- data --------------------------------------------------------------------
DATA="$W/data"
say "generating $FILES small files and 2 x $BIG_MIB MiB (fixed seed)"
python3 - "$DATA" "$FILES" "$BIG_MIB" <<'EOF'
import os, random, sys
data, n, big_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20240601)
for i in range(n):
    leaf = i % 100
    d = os.path.join(data, "small", "d%d" % (leaf // 10), "s%d" % (leaf % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
        f.write(rng.randbytes(rng.randint(1024, 16384)))
os.makedirs(os.path.join(data, "big"), exist_ok=True)
for k in range(2):
    with open(os.path.join(data, "big", "big%d.bin" % k), "wb") as f:
        for _ in range(big_mib // 16):
            f.write(rng.randbytes(16 << 20))
        f.write(rng.randbytes((big_mib % 16) << 20))
EOF
(cd "$DATA/small" && find . -type f | sed 's|^\./||' | sort) >"$W/files.txt"
(cd "$DATA/small" && find . -mindepth 1 -type d | sed 's|^\./||' | sort) >"$W/dirs.txt"
[[ "$(wc -l <"$W/files.txt")" -eq "$FILES" ]] || die "data generation made the wrong number of files"
ndirs=$(wc -l <"$W/dirs.txt")
# The 1 % changed locally (case 4) and the other 1 % changed on the server (case 5).
step=$((FILES / CHANGED))
awk -v s="$step" '(NR - 1) % s == 0' "$W/files.txt" >"$W/changed-local.txt"
awk -v s="$step" '(NR - 1) % s == int(s / 2)' "$W/files.txt" >"$W/changed-remote.txt"

# --- helpers -----------------------------------------------------------------
# write_config NAME LOCAL COLLECTION TRANSFERS: a config with its own state dir.
write_config() {
    local name=$1 local_dir=$2 coll=$3 transfers=$4
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
transfers = $transfers
EOF
}

# Requests in the access log after line $1: method counts, statuses >= 400,
# total server time (%D, the last field, in microseconds). The requests of the
# store's one-time probe (its `.tidesync-tmp-probe-` scratch file: a few PUTs,
# HEADs and a DELETE per process) are counted apart, as probe=N: they touch no
# synced file.
requests_since() {
    tail -n +"$(($1 + 1))" "$ACCESS_LOG" | awk '
        { total++; us += $NF; if ($(NF - 3) >= 400) bad++ }
        index($6, ".tidesync-tmp-probe-") { probe++; next }
        { m = substr($5, 2); n[m]++ }
        END {
            s = ""
            for (k in n) s = s sprintf("%s=%d ", k, n[k])
            printf "%d requests: %s(probe=%d, >=400: %d) server time %.2f s", total, s, probe + 0, bad + 0, us / 1e6
        }'
}

# run_tidesync LABEL CONFIG: one `tidesync run --once`; sets T_SECS, T_RSS, T_OK.
declare -A REQS
run_tidesync() {
    local label=$1 conf=$2 t0 t1 rc=0 before
    before=$(wc -l <"$ACCESS_LOG")
    t0=$(now)
    /usr/bin/time -f %M -o "$W/logs/$label.rss" \
        timeout "$RUN_TIMEOUT" "$BIN" run --once --config "$conf" >"$W/logs/$label.log" 2>&1 || rc=$?
    t1=$(now)
    T_SECS=$(sub "$t0" "$t1")
    T_RSS=$(awk '/^[0-9]+$/ { printf "%.0f", $1 / 1024 }' "$W/logs/$label.rss")
    REQS[$label]=$(requests_since "$before")
    say "$label: tidesync ${T_SECS}s, peak RSS ${T_RSS} MiB, exit $rc; ${REQS[$label]}"
    T_OK=ok
    if [[ "$rc" -ne 0 ]]; then
        T_OK="exit $rc"
        fail "$label: tidesync run --once exited $rc; last lines of its output:"
        tail -n 40 "$W/logs/$label.log" >&2
    fi
}

# timed_curl VAR ARGS...: runs curl ARGS, stores its wall seconds in VAR.
c1a='' c1b='' c2='' c3='' c4='' c5='' c6='' c7a='' c7b='' c8=''
timed_curl() {
    local var=$1 t0 t1 rc=0
    shift
    t0=$(now)
    "${curl_base[@]}" "$@" >/dev/null || rc=$?
    t1=$(now)
    printf -v "$var" '%s' "$(sub "$t0" "$t1")"
    [[ "$rc" -eq 0 ]] || fail "curl reference exited $rc ($*)"
}

# curl_list MODE COLL LIST DIR OUT: a curl config pairing each path in LIST
# (relative) with its URL in COLL: MODE put uploads DIR/path, get saves to it.
curl_list() {
    local mode=$1 coll=$2 list=$3 dir=$4 out=$5 p
    while IFS= read -r p; do
        printf 'url = "%s%s/%s"\n' "$BASE" "$coll" "$p"
        if [[ "$mode" == put ]]; then
            printf 'upload-file = "%s/%s"\n' "$dir" "$p"
        else
            printf 'output = "%s/%s"\n' "$dir" "$p"
        fi
    done <"$list" >"$out"
}
curl_par=(--parallel --parallel-max "$CURL_PAR")

# Compare LIST's files between two trees; fail with LABEL when they differ.
same_files() {
    local label=$1 list=$2 a=$3 b=$4 p bad=0
    while IFS= read -r p; do
        cmp -s "$a/$p" "$b/$p" || bad=$((bad + 1))
    done <"$list"
    if [[ "$bad" -ne 0 ]]; then
        fail "$label: $bad of $(wc -l <"$list") files differ between $a and $b"
    fi
}

# Server-side check: COLL on disk holds exactly WANT files and no temporaries.
server_has() {
    local label=$1 coll=$2 want=$3 have temps
    have=$(count_files "$ROOT/$coll")
    temps=$(count_temps "$ROOT/$coll")
    if [[ "$have" -ne "$want" || "$temps" -ne 0 ]]; then
        fail "$label: server collection $coll has $have files (want $want) and $temps tidesync temporaries"
    fi
}

declare -A TS CURL RSS OK NOTE
record() { # record CASE CURL_SECS NOTE
    TS[$1]=$T_SECS
    RSS[$1]=$T_RSS
    OK[$1]=$T_OK
    CURL[$1]=$2
    NOTE[$1]=$3
}

# --- case 1: initial upload of the small files ------------------------------
cur=1
say "case 1: initial upload of $FILES files"
cp -a "$DATA/small" "$W/t-up"
mkcol bench-up
write_config up "$W/t-up" bench-up "$TRANSFERS"
run_tidesync 1-upload "$W/up.toml"
server_has 1-upload bench-up "$FILES"
same_files 1-upload "$W/files.txt" "$W/t-up" "$ROOT/bench-up"

mkcol ref-up
while IFS= read -r d; do printf 'url = "%sref-up/%s/"\n' "$BASE" "$d"; done <"$W/dirs.txt" >"$W/ref-mkcol.conf"
curl_list put ref-up "$W/files.txt" "$DATA/small" "$W/ref-up.conf"
timed_curl c1a -X MKCOL --config "$W/ref-mkcol.conf"
timed_curl c1b "${curl_par[@]}" --config "$W/ref-up.conf"
server_has 1-reference ref-up "$FILES"
record 1 "$(awk -v a="$c1a" -v b="$c1b" 'BEGIN { printf "%.2f", a + b }')" \
    "curl: ${c1a}s for $ndirs MKCOLs (sequential) + ${c1b}s PUTs"

# --- optional: transfers sweep for case 1 ------------------------------------
declare -A SW_S SW_RSS SW_OK
sweep_values=()
if [[ "$SWEEP" == 1 ]]; then
    sweep_values=(4 8 16)
    for t in "${sweep_values[@]}"; do
        cur=sweep-$t
        say "sweep: initial upload of $FILES files with transfers = $t"
        mkcol "sweep-$t"
        write_config "sweep-$t" "$DATA/small" "sweep-$t" "$t"
        run_tidesync "sweep-$t" "$W/sweep-$t.toml"
        server_has "sweep-$t" "sweep-$t" "$FILES"
        SW_S[$t]=$T_SECS
        SW_RSS[$t]=$T_RSS
        SW_OK[$t]=$T_OK
        rm -rf "${ROOT:?}/sweep-$t" # free the space; nothing else uses it
    done
fi

# --- case 2: initial upload of the 2 big files -------------------------------
cur=2
say "case 2: initial upload of 2 x $BIG_MIB MiB"
mkcol bench-big
write_config big "$DATA/big" bench-big "$TRANSFERS"
run_tidesync 2-big "$W/big.toml"
server_has 2-big bench-big 2
printf '%s\n' big0.bin big1.bin >"$W/big.txt"
same_files 2-big "$W/big.txt" "$DATA/big" "$ROOT/bench-big"
mkcol ref-big
curl_list put ref-big "$W/big.txt" "$DATA/big" "$W/ref-big.conf"
timed_curl c2 --parallel --parallel-max 2 --config "$W/ref-big.conf"
server_has 2-reference ref-big 2
record 2 "$c2" "curl: 2 parallel PUTs"
rm -rf "${ROOT:?}/ref-big"

# --- case 3: initial download of the small files -----------------------------
cur=3
say "case 3: initial download of $FILES files"
mkdir "$W/t-down"
write_config down "$W/t-down" bench-up "$TRANSFERS"
run_tidesync 3-download "$W/down.toml"
have=$(count_files "$W/t-down")
[[ "$have" -eq "$FILES" ]] || fail "3-download: local folder has $have files (want $FILES)"
same_files 3-download "$W/files.txt" "$DATA/small" "$W/t-down"
mkdir "$W/ref-down"
curl_list get bench-up "$W/files.txt" "$W/ref-down" "$W/ref-down.conf"
timed_curl c3 "${curl_par[@]}" --create-dirs --config "$W/ref-down.conf"
have=$(count_files "$W/ref-down")
[[ "$have" -eq "$FILES" ]] || fail "3-reference: curl downloaded $have files (want $FILES)"
record 3 "$c3" "curl: GET with --create-dirs"
rm -rf "$W/ref-down" "$W/t-down"

# rewrite_files ROOT LIST SEED: give every file LIST names below ROOT new random
# bytes of another size (1-16 KiB), with a fixed seed.
rewrite_files() {
    python3 - "$1" "$2" "$3" <<'EOF'
import os, random, sys
root, listing, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
for p in open(listing).read().split():
    path = os.path.join(root, p)
    old = os.path.getsize(path) if os.path.exists(path) else -1
    os.makedirs(os.path.dirname(path), exist_ok=True)
    size = old
    while size == old:
        size = rng.randint(1024, 16384)
    with open(path, "wb") as f:
        f.write(rng.randbytes(size))
EOF
}

# --- case 4: 1 % changed locally ---------------------------------------------
cur=4
say "case 4: $CHANGED files changed locally"
rewrite_files "$W/t-up" "$W/changed-local.txt" 4
run_tidesync 4-local-1pct "$W/up.toml"
server_has 4-local-1pct bench-up "$FILES"
same_files 4-local-1pct "$W/changed-local.txt" "$W/t-up" "$ROOT/bench-up"
curl_list put ref-up "$W/changed-local.txt" "$W/t-up" "$W/ref-4.conf"
timed_curl c4 "${curl_par[@]}" --config "$W/ref-4.conf"
record 4 "$c4" "curl: PUT of the $CHANGED files"

# --- case 5: 1 % changed on the server ---------------------------------------
cur=5
say "case 5: $CHANGED files changed on the server"
rewrite_files "$ROOT/bench-up" "$W/changed-remote.txt" 5
if [[ "$is_root" == yes ]]; then
    while IFS= read -r p; do
        chown "$TIDESYNC_TEST_DAV_OWNER:$TIDESYNC_TEST_DAV_OWNER" "$ROOT/bench-up/$p"
    done <"$W/changed-remote.txt"
fi
sleep 1.1 # so that Apache's ETags of the new files are strong
run_tidesync 5-remote-1pct "$W/up.toml"
same_files 5-remote-1pct "$W/changed-remote.txt" "$ROOT/bench-up" "$W/t-up"
have=$(count_files "$W/t-up")
[[ "$have" -eq "$FILES" ]] || fail "5-remote-1pct: local folder has $have files (want $FILES)"
mkdir "$W/ref-5"
curl_list get bench-up "$W/changed-remote.txt" "$W/ref-5" "$W/ref-5.conf"
timed_curl c5 "${curl_par[@]}" --create-dirs --config "$W/ref-5.conf"
record 5 "$c5" "curl: GET of the $CHANGED files"

# --- case 6: nothing changed -------------------------------------------------
cur=6
say "case 6: nothing changed"
run_tidesync 6-no-change "$W/up.toml"
server_has 6-no-change bench-up "$FILES"
same_files 6-no-change "$W/files.txt" "$W/t-up" "$ROOT/bench-up"
if [[ "${REQS[6-no-change]}" =~ (PUT|GET|MOVE|DELETE|MKCOL)= ]]; then
    fail "6-no-change: the pass transferred or changed something: ${REQS[6-no-change]}"
fi
timed_curl c6 -X PROPFIND -H 'Depth: infinity' -o "$W/propfind.xml" "${BASE}bench-up/"
record 6 "$c6" "curl: 1 PROPFIND Depth: infinity (allprop, $(($(wc -c <"$W/propfind.xml") / 1024)) KiB)"

# --- case 7: initial upload of a bundle --------------------------------------
cur=7
mkdir -p "$W/t-bundle"
cp -a "$DATA/small/d0" "$W/t-bundle/Bench.app"
(cd "$W/t-bundle" && find Bench.app -type f | sort) >"$W/bundle-files.txt"
(cd "$W/t-bundle" && find Bench.app -type d | sort) >"$W/bundle-dirs.txt"
nbundle=$(wc -l <"$W/bundle-files.txt")
say "case 7: initial upload of a bundle of $nbundle files"
mkcol bench-bundle
write_config bundle "$W/t-bundle" bench-bundle "$TRANSFERS"
run_tidesync 7-bundle "$W/bundle.toml"
server_has 7-bundle bench-bundle "$nbundle"
same_files 7-bundle "$W/bundle-files.txt" "$W/t-bundle" "$ROOT/bench-bundle"
mkcol ref-bundle
while IFS= read -r d; do printf 'url = "%sref-bundle/%s/"\n' "$BASE" "$d"; done <"$W/bundle-dirs.txt" >"$W/ref-7-mkcol.conf"
curl_list put ref-bundle "$W/bundle-files.txt" "$W/t-bundle" "$W/ref-7.conf"
timed_curl c7a -X MKCOL --config "$W/ref-7-mkcol.conf"
timed_curl c7b "${curl_par[@]}" --config "$W/ref-7.conf"
record 7 "$(awk -v a="$c7a" -v b="$c7b" 'BEGIN { printf "%.2f", a + b }')" \
    "curl: ${c7a}s for $(wc -l <"$W/bundle-dirs.txt") MKCOLs (sequential) + ${c7b}s PUTs, no scratch name, no MOVE"

# --- case 8: 1 % of the bundle's members changed -------------------------------
cur=8
awk -v s=100 '(NR - 1) % s == 0' "$W/bundle-files.txt" >"$W/bundle-changed.txt"
say "case 8: $(wc -l <"$W/bundle-changed.txt") of the bundle's members changed locally"
rewrite_files "$W/t-bundle" "$W/bundle-changed.txt" 8
run_tidesync 8-bundle-1pct "$W/bundle.toml"
server_has 8-bundle-1pct bench-bundle "$nbundle"
same_files 8-bundle-1pct "$W/bundle-files.txt" "$W/t-bundle" "$ROOT/bench-bundle"
curl_list put ref-bundle "$W/bundle-changed.txt" "$W/t-bundle" "$W/ref-8.conf"
timed_curl c8 "${curl_par[@]}" --config "$W/ref-8.conf"
record 8 "$c8" "curl: PUT of the $(wc -l <"$W/bundle-changed.txt") changed members in place (not atomic)"

# --- report ------------------------------------------------------------------
# result CASE TIDESYNC_STATUS: ok, "exit N" (tidesync failed) or "N checks failed".
result() {
    if [[ "$2" != ok ]]; then
        printf 'FAILED (%s)\n' "$2"
    elif [[ "${BAD[$1]:-0}" -ne 0 ]]; then
        printf 'FAILED (%s checks)\n' "${BAD[$1]}"
    else
        printf 'ok\n'
    fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
mbps() { awk -v mib="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.1f", 2 * mib * 1048576 / s / 1e6; else print "-" }'; }
report() {
    local c label
    local -A names=(
        [1]="initial upload, $FILES x 1-16 KiB"
        [2]="initial upload, 2 x $BIG_MIB MiB"
        [3]="initial download, $FILES files"
        [4]="pass, $CHANGED changed locally"
        [5]="pass, $CHANGED changed on server"
        [6]="pass, nothing changed"
        [7]="bundle upload, $nbundle members"
        [8]="bundle pass, 1 % members changed"
    )
    printf 'tidesync sync benchmark: %s files in %s folders, transfers = %s, curl with %s connections\n' \
        "$FILES" "$ndirs" "$TRANSFERS" "$CURL_PAR"
    printf 'server: Apache mod_dav on 127.0.0.1 (/dav-inf/, Depth infinity on); %s cores; %s\n' \
        "$(nproc)" "$(date -u +%Y-%m-%dT%H:%MZ)"
    printf '\n%-2s %-36s %11s %9s %8s %9s  %s\n' '#' case 'tidesync s' 'curl s' ratio 'RSS MiB' result
    for c in 1 2 3 4 5 6 7 8; do
        label=${names[$c]}
        printf '%-2s %-36s %11s %9s %8s %9s  %s\n' "$c" "$label" "${TS[$c]}" "${CURL[$c]}" \
            "$(ratio "${TS[$c]}" "${CURL[$c]}")" "${RSS[$c]}" "$(result "$c" "${OK[$c]}")"
    done
    printf '\n2 x %s MiB throughput: tidesync %s MB/s, curl %s MB/s, ratio %s\n' "$BIG_MIB" \
        "$(mbps "$BIG_MIB" "${TS[2]}")" "$(mbps "$BIG_MIB" "${CURL[2]}")" "$(ratio "${CURL[2]}" "${TS[2]}")"
    printf '\nreference notes:\n'
    for c in 1 2 3 4 5 6 7 8; do printf '  %s: %s\n' "$c" "${NOTE[$c]}"; done
    printf '\ntidesync requests per pass (from the access log):\n'
    for label in 1-upload 2-big 3-download 4-local-1pct 5-remote-1pct 6-no-change 7-bundle 8-bundle-1pct; do
        printf '  %-14s %s\n' "$label" "${REQS[$label]}"
    done
    if [[ ${#sweep_values[@]} -gt 0 ]]; then
        printf '\ncase 1 by transfers (fresh state and collection each):\n'
        printf '  %-10s %11s %8s %9s  %s\n' transfers 'tidesync s' 'vs curl' 'RSS MiB' result
        for c in "${sweep_values[@]}"; do
            printf '  %-10s %11s %8s %9s  %s\n' "$c" "${SW_S[$c]}" "$(ratio "${SW_S[$c]}" "${CURL[1]}")" \
                "${SW_RSS[$c]}" "$(result "sweep-$c" "${SW_OK[$c]}")"
        done
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
