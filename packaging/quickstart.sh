#!/usr/bin/env bash
# tidesync's quick start: installs what the build needs, builds, and runs the
# daemon once on config/demo.toml, which syncs demo/Local with the folder
# demo/Remote (a local-directory remote: no server needed).
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
