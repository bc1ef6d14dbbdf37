#!/usr/bin/env bash
# Checks a tidesync .deb with lintian: any error or warning fails (exit 1), infos are
# shown. The only tags accepted are the package's own overrides, each with its reason, in
# usr/share/lintian/overrides/tidesync (written by build-deb.sh); lintian applies them.
#
#   bash packaging/deb/lintian.sh path/to/tidesync_<version>_<arch>.deb
#
# Exit 2 when lintian is not installed (apt-get install lintian).
set -euo pipefail
deb=${1:?usage: lintian.sh PACKAGE.deb}
[[ -f "$deb" ]] || { echo "lintian.sh: $deb is not a file" >&2; exit 1; }
command -v lintian >/dev/null 2>&1 || { echo "lintian.sh: lintian not installed (apt-get install lintian)" >&2; exit 2; }
# lintian says "running with root privileges is not recommended!" as root: not a finding.
if lintian --fail-on error,warning --display-level '>=info' "$deb"; then
    echo "lintian.sh: no error or warning in $deb"
else
    echo "lintian.sh: lintian found errors or warnings in $deb (the E: and W: lines above)" >&2
    exit 1
fi
