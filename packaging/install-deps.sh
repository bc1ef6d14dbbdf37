#!/usr/bin/env bash
# Install the Debian packages that building and testing tidesync need, but only
# those that are missing. Quiet when everything is already there.
#
#   bash packaging/install-deps.sh
#
# As root it uses apt-get directly; as another user it uses sudo. When neither
# is possible it prints the exact packages to install and exits 1.
set -euo pipefail

# systemd (systemd-analyze verify of the unit), groff-base (man page check), util-linux (setpriv)
# are for the service tests; rclone serves the second WebDAV server of the contract tests;
# openssl makes the certificates of the TLS tests; dpkg-dev (dpkg-shlibdeps) builds the
# Debian package (packaging/deb/build-deb.sh), patchelf removes the toolchain RUNPATH from the
# test package's binary and lintian checks that package (DebianPackageTests); rsync is one of
# the hole-skipping copiers the files-on-demand tests run. libjpeg62-turbo-dev and libpng-dev are
# the thumbnails' codecs (CThumbnailCodecs); cjpeg, exiftool and gio make and check test images.
packages=(libsqlite3-dev apache2 apache2-utils curl procps systemd groff-base util-linux rclone python3 openssl dpkg-dev patchelf lintian rsync libjpeg62-turbo-dev libpng-dev libjpeg-turbo-progs libimage-exiftool-perl libglib2.0-bin)
# The other WebDAV servers the contract tests run over (nginx, lighttpd, and python3-venv for
# WsgiDAV from PyPI): installed when possible; when apt cannot, the tests skip that server
# and packaging/test.sh says so in its closing line.
optional=(nginx-light libnginx-mod-http-dav-ext lighttpd lighttpd-mod-webdav python3-venv)

say() { printf 'install-deps: %s\n' "$*" >&2; }

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
    for pkg in "${packages[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        if [[ "$status" != "install ok installed" ]]; then
            missing+=("$pkg")
        fi
    done
else
    say "dpkg-query not found: this script supports Debian/Ubuntu only."
    say "Install the equivalents of: ${packages[*]}"
    exit 1
fi

if ((${#missing[@]} > 0)); then
    apt_install=(apt-get install -y --no-install-recommends "${missing[@]}")
    if [[ "$(id -u)" -eq 0 ]]; then
        say "installing missing packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        if ! { apt-get update -q && "${apt_install[@]}"; }; then
            say "apt-get failed. Install these packages by hand: ${missing[*]}"
            exit 1
        fi
    elif command -v sudo >/dev/null 2>&1; then
        say "not root: using sudo to install missing packages: ${missing[*]}"
        sudo_args=()
        # Without a terminal sudo cannot ask for a password: fail fast instead.
        if [[ ! -t 0 ]]; then
            sudo_args=(-n)
        fi
        if ! { sudo "${sudo_args[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            sudo "${sudo_args[@]}" env DEBIAN_FRONTEND=noninteractive "${apt_install[@]}"; }; then
            say "sudo apt-get failed. As root, run:"
            say "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
            exit 1
        fi
    else
        say "missing packages and not root, and sudo is not available. As root, run:"
        say "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
        exit 1
    fi
    # Check again: apt-get may exit 0 and still leave something unconfigured.
    still=()
    for pkg in "${missing[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        [[ "$status" == "install ok installed" ]] || still+=("$pkg")
    done
    if ((${#still[@]} > 0)); then
        say "still not installed after apt-get: ${still[*]}"
        exit 1
    fi
fi

# Best effort, one package at a time: a missing optional server is not a failure.
if [[ "$(id -u)" -eq 0 ]]; then
    for pkg in "${optional[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        [[ "$status" == "install ok installed" ]] && continue
        say "installing $pkg (optional: a WebDAV server of the contract tests)"
        if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg" >/dev/null; then
            say "could not install $pkg: the tests that need it are skipped"
        fi
    done
fi

if ! command -v swift >/dev/null 2>&1 || ! swift --version >/dev/null 2>&1; then
    say "the Swift toolchain was not found ('swift --version' failed)."
    say "Install Swift 6.1 or newer (https://www.swift.org/install/linux/) and put its usr/bin on PATH."
    exit 1
fi
