#!/usr/bin/env bash
# Thumbnails of placeholders against a private Apache mod_dav on 127.0.0.1 (issue 17).
#
# A folder of camera-like JPEGs (random pixels at quality 90, so they do not compress, each
# with a 160x120 EXIF thumbnail as cameras write one) comes down as dataless placeholders
# (`mode = "all"`); the daemon makes their thumbnails into the freedesktop cache by itself.
# Reported, each against a reference in the same run:
#   - bytes fetched from the server per thumbnail (Apache's access log) / the image's size
#   - time from the placeholders being there to every thumbnail in the cache / one
#     `curl -r 0-65535` of each image, one after the other (the same first bytes)
# Needs root (fanotify pre-content events), Linux 6.14+, cjpeg and exiftool.
#
#   bash packaging/bench/thumbnail-bench.sh     # builds the release binary unless TIDESYNC_BIN is set
# Environment: BENCH_IMAGES=200, BENCH_WIDTH=2400, BENCH_HEIGHT=1600, TIDESYNC_BIN=PATH, BENCH_KEEP=1.
set -euo pipefail
me=thumbnail-bench
# shellcheck source=packaging/bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
IMAGES=${BENCH_IMAGES:-200}
WIDTH=${BENCH_WIDTH:-2400}
HEIGHT=${BENCH_HEIGHT:-1600}
[[ "$(id -u)" -eq 0 ]] || die "needs root: fanotify pre-content events need CAP_SYS_ADMIN"
for tool in curl cjpeg exiftool python3; do command -v "$tool" >/dev/null || die "$tool not found (packaging/install-deps.sh)"; done

release_binary
apache_work thbench
disk=$TIDESYNC_TEST_DAV_INF_ROOT/photos
url=${TIDESYNC_TEST_DAV_INF_URL}photos/
mkdir -p "$disk" "$work/Local" "$work/home/.config/tidesync" "$work/make"

say "making $IMAGES JPEGs of ${WIDTH}x${HEIGHT} with EXIF thumbnails"
{ printf 'P6\n%d %d\n255\n' "$WIDTH" "$HEIGHT"; head -c $((WIDTH * HEIGHT * 3)) /dev/urandom; } >"$work/make/big.ppm"
cjpeg -quality 90 -outfile "$work/make/big.jpg" "$work/make/big.ppm"
for i in $(seq -w 1 "$IMAGES"); do
    { printf 'P6\n160 120\n255\n'; head -c $((160 * 120 * 3)) /dev/urandom; } >"$work/make/small.ppm"
    cjpeg -outfile "$work/make/IMG_$i.thumb" "$work/make/small.ppm"
    cp "$work/make/big.jpg" "$disk/IMG_$i.jpg"
done
# One exiftool for all of them: each file gets its own thumbnail.
(cd "$disk" && exiftool -q -overwrite_original "-ThumbnailImage<=$work/make/%f.thumb" ./*.jpg)
chown -R "$TIDESYNC_TEST_DAV_OWNER:$TIDESYNC_TEST_DAV_OWNER" "$disk"
total=$(du -cb "$disk"/*.jpg | tail -1 | cut -f1)

cat >"$work/home/.config/tidesync/config.toml" <<EOF
log_level = "info"
socket = "$work/tidesync.sock"
state_dir = "$work/state"
[[domain]]
name = "photos"
local = "$work/Local"
remote = "$url"
username = "$TIDESYNC_TEST_DAV_USER"
[domain.placeholders]
mode = "all"
EOF
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config TIDESYNC_PASSWORD_PHOTOS=$TIDESYNC_TEST_DAV_PASSWORD
: >"$work/dav/access.log"
now() { date +%s.%N; }
"$TIDESYNC_BIN" run >"$work/daemon.log" 2>&1 &
daemon=$!
cache=$HOME/.cache/thumbnails/large
count() { find "$cache" -name '*.png' 2>/dev/null | wc -l; }
placeholders() { find "$work/Local" -name '*.jpg' | wc -l; }
# Waits (50 ms a look, at most $2 looks) until command $1 prints at least $IMAGES.
wait_for() {
    local _
    for _ in $(seq 1 "$2"); do
        [[ "$($1)" -ge "$IMAGES" ]] && return
        kill -0 "$daemon" 2>/dev/null || die "the daemon stopped: $(tail -5 "$work/daemon.log")"
        sleep 0.05
    done
}
wait_for placeholders 1200
start=$(now)
wait_for count 6000
end=$(now)
[[ "$(count)" -ge "$IMAGES" ]] || die "only $(count) of $IMAGES thumbnails after 300 s: $(grep -i thumbnail "$work/daemon.log" | tail -3)"
ours=$(echo "$end - $start" | bc -l)
# Bytes Apache sent for GETs of the images (the log's %O, headers included).
fetched=$(awk '/"GET [^"]*\/IMG_[0-9]+\.jpg / { sum += $(NF - 1); n++ } END { printf "%d %d", sum, n }' "$work/dav/access.log")
read -r bytes gets <<<"$fetched"
dataless=$(python3 - "$work/Local" <<'PY'
import os, sys
print(sum(1 for n in os.listdir(sys.argv[1]) if os.getxattr(os.path.join(sys.argv[1], n), "user.tidesync.state") == b"dataless"))
PY
)
start=$(now)
for i in $(seq -w 1 "$IMAGES"); do
    curl -u "$TIDESYNC_TEST_DAV_USER:$TIDESYNC_TEST_DAV_PASSWORD" --noproxy '*' -s -o /dev/null -r 0-65535 "${url}IMG_$i.jpg"
done
end=$(now)
curls=$(echo "$end - $start" | bc -l)

printf '\n%s images of %s bytes on average (%s dataless after their thumbnails were made)\n' "$IMAGES" "$((total / IMAGES))" "$dataless"
printf '%-62s %12s %12s %8s\n' case tidesync reference ratio
printf '%-62s %11dB %11dB %7.4fx\n' "bytes fetched per thumbnail / the image's size" "$((bytes / IMAGES))" "$((total / IMAGES))" \
    "$(echo "$bytes / $total" | bc -l)"
printf '%-62s %11.2fs %11.2fs %7.2fx\n' "all thumbnails made / curl -r 0-65535 of each, in turn" "$ours" "$curls" "$(echo "$ours / $curls" | bc -l)"
printf 'GETs of the images: %s (%s per image)\n' "$gets" "$(echo "scale=2; $gets / $IMAGES" | bc -l)"
