#!/usr/bin/env bash
# tidesync's quick start: installs what the build needs, builds, and runs the
# daemon once on config/demo.toml, which syncs demo/Local with the folder
# demo/Remote (a local-directory remote: no server needed). Then files on
# demand: the daemon runs while a program reads 1 MiB of a 20 MiB file it holds
# as a dataless placeholder (as root on Linux 6.14+ on ext4, xfs or btrfs;
# elsewhere the file comes down whole and `status` says why), and stops.
#
#   bash packaging/quickstart.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"

bash packaging/install-deps.sh
echo "quickstart: building (swift build; the first build takes a few minutes)" >&2
swift build
bin="$(swift build --show-bin-path)/tidesync"

mkdir -p demo/Local demo/Remote
[[ -e demo/Local/hello.txt ]] || echo "hello from the local side" > demo/Local/hello.txt
[[ -e demo/Remote/welcome.txt ]] || echo "hello from the remote side" > demo/Remote/welcome.txt

"$bin" check-config --config config/demo.toml
"$bin" run --once --config config/demo.toml

# Files on demand (the default, mode = "auto": files of at least 16 MiB).
echo "quickstart: files on demand: a 20 MiB file on the remote side, read 1 MiB of it" >&2
[[ -e demo/Remote/movie.bin ]] || head -c $((20 << 20)) /dev/urandom > demo/Remote/movie.bin
"$bin" run --config config/demo.toml 2> demo/daemon.log &
daemon=$!
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null' EXIT
# Until every domain is idle and in sync (status exits 0), at most a minute.
for _ in $(seq 120); do
  "$bin" status --config config/demo.toml > /dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { echo "quickstart: the daemon stopped; its log:" >&2; cat demo/daemon.log >&2; exit 1; }
  sleep 0.5
done
"$bin" status --config config/demo.toml | grep -e "files on demand" -e "on disk" || true
ls -ls demo/Local/movie.bin
"$bin" file-status --config config/demo.toml demo/Local/movie.bin || true
echo "quickstart: dd reads 1 MiB at offset 5 MiB; the same bytes on the remote side:" >&2
dd if=demo/Local/movie.bin bs=1M skip=5 count=1 status=none | sha256sum
dd if=demo/Remote/movie.bin bs=1M skip=5 count=1 status=none | sha256sum
"$bin" file-status --config config/demo.toml demo/Local/movie.bin || true
kill "$daemon"; wait "$daemon" || true
trap - EXIT
echo "quickstart: done; the daemon's log is demo/daemon.log" >&2
