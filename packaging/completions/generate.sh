#!/usr/bin/env bash
# Regenerates the shell completions shipped here from the built binary (swift-argument-parser
# writes them). Run after changing a command or option:
#
#   swift build && bash packaging/completions/generate.sh [path/to/tidesync]
#
# Install: bash: /usr/share/bash-completion/completions/tidesync; zsh: a directory in $fpath
# as _tidesync; fish: ~/.config/fish/completions/tidesync.fish.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
binary=${1:-$(cd "$here/../.." && swift build --show-bin-path)/tidesync}
"$binary" --generate-completion-script bash >"$here/tidesync.bash"
"$binary" --generate-completion-script zsh >"$here/_tidesync"
"$binary" --generate-completion-script fish >"$here/tidesync.fish"
echo "wrote $here/tidesync.bash, _tidesync, tidesync.fish"
