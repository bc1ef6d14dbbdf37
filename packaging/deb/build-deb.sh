#!/usr/bin/env bash
# Builds tidesync_<version>_<arch>.deb: the release binary (the Swift runtime linked in
# statically, so only Debian's own libraries are needed), the man page, shell completions,
# the systemd user unit, the example config and the default exclude list, each in its
# Debian place. `Depends:` is computed by dpkg-shlibdeps from the binary's libraries.
#
#   bash packaging/deb/build-deb.sh                   # release build, then the package
#   bash packaging/deb/build-deb.sh --binary PATH     # package a binary built already
#   bash packaging/deb/build-deb.sh --out DIR         # where the .deb goes (default .build/deb)
#   bash packaging/deb/build-deb.sh --binary PATH --toolchain-libraries
#       the test suite's package of its debug binary, which loads the Swift runtime from the
#       toolchain on this machine: those libraries get no Depends, the packaged copy has its
#       RUNPATH (the toolchain's folder) removed with patchelf, so it runs only with
#       LD_LIBRARY_PATH naming that folder, and it is compressed fast. Only for testing the
#       layout and apt-get install/remove; the suite runs packaging/deb/lintian.sh on it.
#
# Install:  sudo apt-get install ./tidesync_*.deb    Then, as yourself:
#   systemctl --user enable --now tidesync           (after writing ~/.config/tidesync/config.toml)
# lintian, when installed, checks the release package (packaging/deb/lintian.sh): an error
# or a warning fails the build.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
binary=
out=$repo/.build/deb
toolchain=no
die() { echo "build-deb: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
    case "$1" in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --toolchain-libraries) toolchain=yes; shift ;;
    *) die "unknown argument '$1' (use --binary PATH, --out DIR)" ;;
    esac
done
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture gzip; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: apt-get install dpkg-dev"
done
if [[ -z "$binary" ]]; then
    echo "build-deb: swift build -c release --static-swift-stdlib (takes several minutes)" >&2
    (cd "$repo" && swift build -c release --static-swift-stdlib --product tidesync)
    binary=$(cd "$repo" && swift build -c release --show-bin-path)/tidesync
fi
[[ -x "$binary" ]] || die "$binary is not an executable"
if [[ "$toolchain" == yes ]] && ! command -v patchelf >/dev/null 2>&1; then
    die "patchelf not found (it removes the toolchain RUNPATH from the test package): apt-get install patchelf"
fi

# "tidesync 0.1.0 (commit abc1234)": the package version is the second word.
version=$("$binary" --version | awk 'NR == 1 { print $2 }')
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "'$binary --version' gave no usable version ('$version')"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
# Who builds it: DEBFULLNAME and DEBEMAIL, as Debian's own tools read them.
maintainer="${DEBFULLNAME:-tidesync developers} <${DEBEMAIL:-tidesync@users.noreply.github.com}>"

stage=$(mktemp -d "${TMPDIR:-/tmp}/tidesync-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root
doc=$root/usr/share/doc/tidesync
install -Dm755 "$binary" "$root/usr/bin/tidesync"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/tidesync"
# A debug build finds the Swift runtime through a RUNPATH naming the toolchain's folder,
# which a Debian package must not carry (lintian: custom-library-search-path, an error).
[[ "$toolchain" == yes ]] && patchelf --remove-rpath "$root/usr/bin/tidesync"
install -d "$root/usr/share/man/man1"
gzip -9n <"$repo/packaging/man/tidesync.1" >"$root/usr/share/man/man1/tidesync.1.gz"
# The generated bash completion starts with "#!/bin/bash"; bash-completion sources it, and
# lintian warns about the hashbang (bash-completion-with-hashbang): the packaged copy has none.
install -d "$root/usr/share/bash-completion/completions"
sed '1{/^#!/d}' "$repo/packaging/completions/tidesync.bash" >"$root/usr/share/bash-completion/completions/tidesync"
chmod 644 "$root/usr/share/bash-completion/completions/tidesync"
install -Dm644 "$repo/packaging/completions/_tidesync" "$root/usr/share/zsh/vendor-completions/_tidesync"
install -Dm644 "$repo/packaging/completions/tidesync.fish" "$root/usr/share/fish/vendor_completions.d/tidesync.fish"
install -d "$root/usr/lib/systemd/user"
sed -e 's|/usr/local/bin/tidesync|/usr/bin/tidesync|g' \
    -e 's|^# It expects the binary at /usr/local/bin/tidesync.*$|# Installed by the Debian package: the binary is /usr/bin/tidesync.|' \
    "$repo/packaging/systemd/tidesync.service" >"$root/usr/lib/systemd/user/tidesync.service"
chmod 644 "$root/usr/lib/systemd/user/tidesync.service"
install -Dm644 "$repo/config/example.toml" "$doc/examples/config.toml"
install -Dm644 "$repo/config/exclude.default" "$root/usr/share/tidesync/exclude.default"
# The Swift toolchain's static runtime (Foundation) carries its own zlib; Debian's zlib1g is
# linked too, for the rest. Not a copy this package made, and not one it can drop.
install -d "$root/usr/share/lintian/overrides"
printf '%s\n' '# zlib inside the Swift toolchain'"'"'s static Foundation runtime (--static-swift-stdlib)' \
    'tidesync: embedded-library zlib [usr/bin/tidesync]' >"$root/usr/share/lintian/overrides/tidesync"
chmod 644 "$root/usr/share/lintian/overrides/tidesync"
cat >"$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tidesync
Source: https://github.com/tidesync/tidesync

Files: *
Copyright: 2026-$(date -u -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y) the tidesync authors
License: other
 The authors have not chosen a license for tidesync yet: all rights reserved
 until they do. This package is for testing and internal use.
COPYRIGHT
{
    printf 'tidesync (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Package built from commit %s.\n\n' "$("$binary" --version | sed -n 's/.*commit \([0-9a-f]*\).*/\1/p' | head -1)"
    printf ' -- %s  %s\n' "$maintainer" "$(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}")"
} | gzip -9n >"$doc/changelog.gz"
chmod 644 "$doc/changelog.gz" "$doc/copyright"

# Depends: what dpkg-shlibdeps finds the binary needs (never typed by hand).
mkdir -p "$stage/debian"
printf 'Source: tidesync\n\nPackage: tidesync\nArchitecture: any\n' >"$stage/debian/control"
shlibdeps=(-O)
if [[ "$toolchain" == yes ]]; then
    shlibdeps+=(--ignore-missing-info -l"$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift/linux")
fi
depends=$(cd "$stage" && dpkg-shlibdeps "${shlibdeps[@]}" root/usr/bin/tidesync 2>"$stage/shlibdeps.log") \
    || { cat "$stage/shlibdeps.log" >&2; die "dpkg-shlibdeps failed (a library no Debian package provides? build with --static-swift-stdlib)"; }
depends=${depends#shlibs:Depends=}
rm -rf "$stage/debian"
install -d "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: tidesync
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Section: net
Priority: optional
Homepage: https://github.com/tidesync/tidesync
Description: two-way folder sync with WebDAV servers and local directories
 tidesync keeps a folder in two-way sync with a WebDAV server (Nextcloud,
 ownCloud, Apache mod_dav, nginx, lighttpd, rclone serve webdav) or a local
 directory, on the model of Apple's File Provider: versions on every item,
 conflict copies instead of lost edits, bundles as one item, and files on
 demand (dataless placeholders hydrated when read, with fanotify on
 Linux 6.14 and later).
 It runs as a systemd user service; "tidesync status" says what it is doing.
CONTROL
mkdir -p "$out"
deb=$out/tidesync_${version}_${arch}.deb
compression=(-Zxz)
[[ "$toolchain" == yes ]] && compression=(-Zgzip -z1)
dpkg-deb --root-owner-group "${compression[@]}" --build "$root" "$deb" >/dev/null
echo "build-deb: wrote $deb (Depends: $depends)"
if [[ "$toolchain" == yes ]]; then
    echo "build-deb: a test package (toolchain libraries); the suite runs packaging/deb/lintian.sh on it" >&2
elif command -v lintian >/dev/null 2>&1; then
    bash "$repo/packaging/deb/lintian.sh" "$deb" || die "lintian found errors or warnings in $deb (above)"
else
    echo "build-deb: lintian not installed (apt-get install lintian); the package was not checked" >&2
fi
