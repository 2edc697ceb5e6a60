#!/usr/bin/env bash
# Removes exactly what `make install` (cmake --install) put in place: the files it recorded in
# the build's install_manifest.txt, and nothing else.
# Usage: scripts/uninstall-provider.sh [CMAKE_BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$(dirname "$here")/build/cmake}
manifest=$build/install_manifest.txt
if [ ! -f "$manifest" ]; then
	echo "uninstall: $manifest not found: nothing was installed from this build" >&2
	exit 0
fi
while IFS= read -r f || [ -n "$f" ]; do
	[ -n "$f" ] || continue
	if [ -e "$f" ] || [ -L "$f" ]; then
		rm -f -- "$f"
		echo "uninstall: removed $f"
	fi
done <"$manifest"
rm -f -- "$manifest"
