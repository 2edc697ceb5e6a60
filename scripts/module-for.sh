#!/usr/bin/env bash
# srnic.ko for kernel release $1 (its headers installed), built in a copy of the module's sources
# (Kbuild writes next to them) under BUILD/module/<release>/; prints the module's path.  Kbuild's
# output goes to stderr.  Used by `make` for the running kernel and by make check for every
# other kernel whose headers are installed.
# Usage: scripts/module-for.sh RELEASE [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rel=$1
dir=${2:-$top/build}/module/$rel
kb=/lib/modules/$rel/build
[ -e "$kb/Makefile" ] || { echo "module-for: no headers for $rel ($kb)" >&2; exit 2; }
rm -rf "$dir" && mkdir -p "$dir"
cp -r "$top/kernel" "$top/include" "$top/dkms.conf" "$dir/"
rm -f "$dir"/kernel/*.o "$dir"/kernel/*.ko "$dir"/kernel/.*.cmd
make -s -C "$kb" M="$dir/kernel" modules >&2
echo "$dir/kernel/srnic.ko"
