#!/usr/bin/env bash
# Unpacks the kselftest harness headers from Debian's linux-source-6.12 into $1.
set -euo pipefail
dest=$1
tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "ksft-headers: linux-source-6.12 is not installed (scripts/deps.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xf "$tarball" -C "$tmp" --wildcards --no-anchored 'tools/testing/selftests/kselftest*.h'
mkdir -p "$dest"
cp "$tmp"/linux-source-6.12/tools/testing/selftests/kselftest*.h "$dest"/
ls "$dest"/kselftest_harness.h >/dev/null
