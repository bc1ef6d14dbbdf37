#!/usr/bin/env bash
# Files-on-demand benchmark against a private Apache mod_dav on 127.0.0.1 (issue 15).
#
# A daemon (`tidesync run`, files on demand `mode = "auto"`, default alignment 1 MiB) brings
# a 1 GiB remote file down as a dataless placeholder; then, each against a reference in the
# same run, on the same server:
#   1. first read of 4 MiB at random page-aligned offsets of the placeholder (dd, one read each);
#      reference: `curl -r` of the same 4 MiB
#   2. full sequential read of a second dataless 1 GiB placeholder (cat > /dev/null);
#      reference: a plain `curl` GET of the whole file; also the same GET into a file, and
#      writing as many zeros into a new file (this machine's ceiling for storing the bytes)
#   3. a read of the now materialized file, warm in the page cache; reference: the same read
#      of an ordinary file of the same size (both warm)
# Goals (issue 15): case 1 <= 1.5x curl, case 2 >= 90 % of curl's throughput, case 3 no
# measurable overhead. Needs root (fanotify pre-content events) and Linux 6.14 or later.
#
#   bash packaging/bench/ondemand-bench.sh        # builds the release binary unless TIDESYNC_BIN is set
# Environment: BENCH_MIB=1024 (file size), BENCH_READS=7 (case 1 repetitions),
#              TIDESYNC_BIN=PATH, BENCH_KEEP=1 (keep the work directory).
set -euo pipefail
me=ondemand-bench
# shellcheck source=packaging/bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MIB=${BENCH_MIB:-1024}
READS=${BENCH_READS:-7}
[[ "$(id -u)" -eq 0 ]] || die "needs root: fanotify pre-content events need CAP_SYS_ADMIN"
command -v curl >/dev/null || die "curl not found"

release_binary
apache_work odbench
disk=$TIDESYNC_TEST_DAV_INF_ROOT/od
url=${TIDESYNC_TEST_DAV_INF_URL}od/
mkdir -p "$disk" "$work/Local" "$work/home/.config/tidesync"
say "writing two ${MIB} MiB files of random bytes on the server"
for name in a.bin b.bin; do head -c $((MIB << 20)) /dev/urandom >"$disk/$name"; done
head -c $((MIB << 20)) /dev/urandom >"$work/ordinary.bin"
chown -R "$TIDESYNC_TEST_DAV_OWNER:$TIDESYNC_TEST_DAV_OWNER" "$disk"
cat >"$work/home/.config/tidesync/config.toml" <<EOF
log_level = "warning"
socket = "$work/tidesync.sock"
state_dir = "$work/state"
[[domain]]
name = "od"
local = "$work/Local"
remote = "$url"
username = "$TIDESYNC_TEST_DAV_USER"
[domain.placeholders]
mode = "auto"
EOF
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config TIDESYNC_PASSWORD_OD=$TIDESYNC_TEST_DAV_PASSWORD
"$TIDESYNC_BIN" run >"$work/daemon.log" 2>&1 &
daemon=$!
state() { python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.tidesync.state").decode())' "$1" 2>/dev/null || true; }
for _ in $(seq 1 600); do
    [[ "$(state "$work/Local/b.bin")" == dataless ]] && break
    kill -0 "$daemon" 2>/dev/null || die "the daemon stopped: $(tail -5 "$work/daemon.log")"
    sleep 0.1
done
[[ "$(du -k "$work/Local/a.bin" | cut -f1)" -lt 1024 ]] || die "a.bin is not a placeholder (files on demand unavailable? $(grep -i 'on demand' "$work/daemon.log" | tail -1))"

now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc -l; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
auth=(-u "$TIDESYNC_TEST_DAV_USER:$TIDESYNC_TEST_DAV_PASSWORD" --noproxy '*' -s -o /dev/null)

# 1. First reads of 4 MiB at random page-aligned offsets (each in its own 8 MiB slot, so no
#    read finds bytes an earlier one fetched), each timed.
: >"$work/ours.txt"; : >"$work/curl.txt"; : >"$work/curl-file.txt"
RANDOM=42
offsets=()
for slot in $(shuf -i 0-$((MIB / 8 - 1)) -n "$READS" --random-source=<(yes)); do
    offsets+=($(((slot << 23) + ((RANDOM % 1024) << 12))))
done
for offset in "${offsets[@]}"; do
    start=$(now); dd if="$work/Local/a.bin" of=/dev/null bs=4M iflag=skip_bytes skip="$offset" count=1 status=none; end=$(now)
    elapsed "$start" "$end" >>"$work/ours.txt"
    start=$(now); curl "${auth[@]}" -r "$offset-$((offset + (4 << 20) - 1))" "${url}a.bin"; end=$(now)
    elapsed "$start" "$end" >>"$work/curl.txt"
    # The same range kept in a file on the same file system, as a hydration keeps it.
    start=$(now); curl "${auth[@]:0:4}" -s -o "$work/range-copy.bin" -r "$offset-$((offset + (4 << 20) - 1))" "${url}a.bin"; end=$(now)
    elapsed "$start" "$end" >>"$work/curl-file.txt"; rm -f "$work/range-copy.bin"
done
ours1=$(median <"$work/ours.txt"); curl1=$(median <"$work/curl.txt"); file1=$(median <"$work/curl-file.txt")
cmp <(dd if="$work/Local/a.bin" bs=4M iflag=skip_bytes skip="${offsets[0]}" count=1 status=none) \
    <(dd if="$disk/a.bin" bs=4M iflag=skip_bytes skip="${offsets[0]}" count=1 status=none) || die "case 1 read wrong bytes"

# 2. Full sequential read of the second placeholder; plain GET of the whole file.
start=$(now); cat "$work/Local/b.bin" >/dev/null; end=$(now); ours2=$(elapsed "$start" "$end")
start=$(now); curl "${auth[@]}" "${url}b.bin"; end=$(now); curl2=$(elapsed "$start" "$end")
cmp "$work/Local/b.bin" "$disk/b.bin" || die "case 2 read wrong bytes"
# The same GET into a new file on the sync folder's file system: a hydration writes every
# byte into the page cache too, which a GET to /dev/null never does. On a VM whose memory
# is backed on first touch that write is most of the cost: here the first 1 GiB copy took
# 3.6 s and a second one, into the pages the first freed, 1.9 s with its fdatasync. Taken
# after `sync`, so the hydration's own writeback is not on the disk meanwhile.
sync
start=$(now); curl -u "$TIDESYNC_TEST_DAV_USER:$TIDESYNC_TEST_DAV_PASSWORD" --noproxy '*' -s -o "$work/curl-copy.bin" "${url}b.bin"
end=$(now); file2=$(elapsed "$start" "$end"); rm -f "$work/curl-copy.bin"
# The machine's own ceiling: the same number of bytes written from memory into a new file
# on that file system, no network at all. No hydration that stores the bytes can beat it.
sync
start=$(now); head -c $((MIB << 20)) /dev/zero >"$work/zeros.bin"; end=$(now); write2=$(elapsed "$start" "$end")
rm -f "$work/zeros.bin"

# 3. The materialized file against an ordinary one, both warm (each read once before),
#    the median of five reads each, taken in turns.
[[ "$(state "$work/Local/b.bin")" == materialized ]] || die "b.bin is $(state "$work/Local/b.bin") after a whole read"
cat "$work/Local/b.bin" "$work/ordinary.bin" >/dev/null
: >"$work/ours3.txt"; : >"$work/plain3.txt"
for _ in 1 2 3 4 5; do
    start=$(now); cat "$work/Local/b.bin" >/dev/null; end=$(now); elapsed "$start" "$end" >>"$work/ours3.txt"
    start=$(now); cat "$work/ordinary.bin" >/dev/null; end=$(now); elapsed "$start" "$end" >>"$work/plain3.txt"
done
ours3=$(median <"$work/ours3.txt"); plain3=$(median <"$work/plain3.txt")

printf '\n%-58s %10s %10s %8s\n' "case (${MIB} MiB files, alignment 1 MiB)" tidesync reference ratio
printf '%-58s %9.3fs %9.3fs %7.2fx\n' "1. first read of 4 MiB at a random offset (median of $READS) / curl -r" "$ours1" "$curl1" "$(echo "$ours1 / $curl1" | bc -l)"
printf '%-58s %9.3fs %9.3fs %7.2fx\n' "1b. the same / curl -r into a file (-o) on the same fs" "$ours1" "$file1" "$(echo "$ours1 / $file1" | bc -l)"
printf '%-58s %9.3fs %9.3fs %7.2fx\n' "2. full sequential read of a placeholder / curl GET" "$ours2" "$curl2" "$(echo "$ours2 / $curl2" | bc -l)"
printf '%-58s %9.3fs %9.3fs %7.2fx\n' "2b. the same / curl GET into a file (-o) on the same fs" "$ours2" "$file2" "$(echo "$ours2 / $file2" | bc -l)"
printf '%-58s %9.3fs %9.3fs %7.2fx\n' "2c. the same / writing as many zeros into a new file" "$ours2" "$write2" "$(echo "$ours2 / $write2" | bc -l)"
printf '%-58s %9.3fs %9.3fs %7.2fx\n' "3. warm read, materialized / ordinary file (median of 5)" "$ours3" "$plain3" "$(echo "$ours3 / $plain3" | bc -l)"
printf 'throughput of case 2: %.0f MiB/s (curl %.0f MiB/s, curl -o file %.0f MiB/s, writing zeros %.0f MiB/s)\n' \
    "$(echo "$MIB / $ours2" | bc -l)" "$(echo "$MIB / $curl2" | bc -l)" "$(echo "$MIB / $file2" | bc -l)" "$(echo "$MIB / $write2" | bc -l)"
