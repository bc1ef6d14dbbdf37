#!/usr/bin/env bash
# tidesync hashing benchmark: the throughput of `LocalFolder.digest(ofFileAt:_:)`
# (the checksums compared with a server's `oc:checksums`, and the `sha256:`
# content hashes of bundle manifests) on one file, release build, against
# coreutils (`sha256sum`, `sha1sum`, `md5sum`) on the same file in the same run.
#
# The file (BENCH_MIB MiB of random bytes) is read once before timing, so every
# run reads from the page cache: this measures hashing, not the disk. Each
# program runs BENCH_RUNS times, alternating with its reference; the best run
# of each is reported (the machine is shared: the best is the least disturbed).
# Two rates: by wall clock, and by CPU time (user + system, /usr/bin/time),
# which a loaded machine disturbs much less than the wall clock.
#
#   bash packaging/bench/hash-bench.sh
# Environment:
#   BENCH_MIB=1024        file size in MiB
#   BENCH_RUNS=3          runs of each program
#   BENCH_ALGORITHMS="sha256 sha1 md5"   (adler32 has no coreutils reference)
#   BENCH_CONFIG=release  build configuration (debug: what the test suite sees)
#   BENCH_DIR=DIR         where the file goes (default: a fresh directory in $TMPDIR)
#   BENCH_BIN=PATH        use this HashBench instead of building one
# MB/s is 10^6 bytes per second. Exits 1 when a digest differs from coreutils'.
set -euo pipefail

me=hash-bench
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() {
    say "$*"
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
mib=${BENCH_MIB:-1024}
runs=${BENCH_RUNS:-3}
algorithms=${BENCH_ALGORITHMS:-sha256 sha1 md5}
config=${BENCH_CONFIG:-release}
[[ "$mib" =~ ^[1-9][0-9]*$ && "$runs" =~ ^[1-9][0-9]*$ ]] || die "BENCH_MIB and BENCH_RUNS are whole numbers"
[[ "$config" == release || "$config" == debug ]] || die "BENCH_CONFIG is release or debug"

bench=${BENCH_BIN:-}
if [[ -z "$bench" ]]; then
    scratch=.build-bench
    # Debug shares the tree `swift build` and the tests use.
    [[ "$config" == debug ]] && scratch=.build
    say "building HashBench (swift build -c $config --product HashBench --scratch-path $scratch)"
    (cd "$repo" && swift build -c "$config" --product HashBench --scratch-path "$scratch" >&2) || die "build failed"
    bench="$(cd "$repo" && swift build -c "$config" --scratch-path "$scratch" --show-bin-path)/HashBench"
fi

out=$(mktemp)
times=$(mktemp)
dir=${BENCH_DIR:-}
if [[ -z "$dir" ]]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/tidesync-hash-bench.XXXXXX")
    trap 'rm -rf -- "$dir" "$out" "$times"' EXIT
else
    trap 'rm -f -- "$out" "$times"' EXIT
fi
file="$dir/random.bin"
if [[ ! -f "$file" || $(stat -c %s "$file") -ne $((mib * 1048576)) ]]; then
    say "writing $mib MiB of random bytes to $file"
    head -c $((mib * 1048576)) /dev/urandom >"$file"
fi
cat "$file" >/dev/null
bytes=$(stat -c %s "$file")

# "wall cpu" seconds that `"$@"` takes (cpu: user + system), its output to $out.
timed() {
    /usr/bin/time -f '%e %U %S' -o "$times" "$@" >"$out"
    awk '{printf "%s %.2f\n", $1, $2 + $3}' "$times"
}
# The smaller of two numbers.
least() { if [[ -z "$1" ]] || (($(echo "$2 < $1" | bc -l))); then echo "$2"; else echo "$1"; fi; }
# MB/s (10^6 bytes) for $bytes in $1 seconds.
rate() { if (($(echo "$1 > 0" | bc -l))); then printf '%.0f' "$(echo "$bytes / $1 / 1000000" | bc -l)"; else echo -; fi; }

printf '%-9s %-10s %8s %7s %8s %7s\n' algorithm program wall_s MB/s cpu_s MB/s
status=0
for algorithm in $algorithms; do
    reference=${algorithm}sum
    command -v "$reference" >/dev/null || reference=""
    ours_wall="" ours_cpu="" theirs_wall="" theirs_cpu="" ours_hex="" theirs_hex=""
    for ((run = 1; run <= runs; run++)); do
        read -r wall cpu < <(timed "$bench" "$file" "$algorithm")
        ours_hex=$(awk '{print $4}' "$out")
        ours_wall=$(least "$ours_wall" "$wall") ours_cpu=$(least "$ours_cpu" "$cpu")
        if [[ -n "$reference" ]]; then
            read -r wall cpu < <(timed "$reference" "$file")
            theirs_hex=$(awk '{print $1}' "$out")
            theirs_wall=$(least "$theirs_wall" "$wall") theirs_cpu=$(least "$theirs_cpu" "$cpu")
        fi
    done
    printf '%-9s %-10s %8s %7s %8s %7s\n' "$algorithm" tidesync "$ours_wall" "$(rate "$ours_wall")" "$ours_cpu" "$(rate "$ours_cpu")"
    if [[ -n "$reference" ]]; then
        printf '%-9s %-10s %8s %7s %8s %7s\n' "$algorithm" "$reference" "$theirs_wall" "$(rate "$theirs_wall")" "$theirs_cpu" "$(rate "$theirs_cpu")"
        if [[ "$ours_hex" != "$theirs_hex" ]]; then
            say "$algorithm: tidesync gave $ours_hex, $reference $theirs_hex"
            status=1
        fi
    fi
done
exit "$status"
