#!/bin/sh
# Writes OUT/BuildCommit.swift, `let buildCommit: String? = "<commit>"`, for
# `tidesync --version`: the git commit of REPO (12 hex digits, "+changes" when tracked
# files differ from it), or nil without git or outside a repository (a source tarball),
# which tidesync prints as "unknown commit". Rewrites the file only when its text changes.
# Run before each build by the BuildCommit plugin.
#
#   sh packaging/plugins/BuildCommit/build-commit.sh REPO OUT
# $GIT names the git to use (default: git on PATH).
repo=$1 out=$2
git=${GIT:-git}
commit=$("$git" -C "$repo" rev-parse --short=12 HEAD 2>/dev/null) || commit=""
case "$commit" in *[!0-9a-f]*) commit="" ;; esac
if [ -n "$commit" ] && [ -n "$("$git" -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit+changes"
fi
if [ -n "$commit" ]; then value="\"$commit\""; else value=nil; fi
mkdir -p "$out" || exit 1
text="// Generated before each build by packaging/plugins/BuildCommit: do not edit.
let buildCommit: String? = $value"
if [ "$(cat "$out/BuildCommit.swift" 2>/dev/null)" != "$text" ]; then
    printf '%s\n' "$text" >"$out/BuildCommit.swift.tmp" && mv -f "$out/BuildCommit.swift.tmp" "$out/BuildCommit.swift"
fi
