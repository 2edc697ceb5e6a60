#!/usr/bin/env bash
# `make`'s module for the machine it runs on.  kernel/srnic.ko is built for the test guest's
# kernel (scripts/kver.sh); when the running kernel is another and its headers are installed,
# srnic.ko is built for it too.  Either way BUILD/module/$(uname -r)/srnic.ko is the module to
# load here (README, "Use"), and this says which kernel each module is for.
# Usage: scripts/module-running.sh [BUILD_DIR]   (KVER as the Makefile's)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
guest=${KVER:-$("$top/scripts/kver.sh")}
rel=$(uname -r)
link=$build/module/$rel/srnic.ko
if [ "$rel" = "$guest" ]; then
	mkdir -p "$(dirname "$link")" && ln -sfn "$top/kernel/srnic.ko" "$link"
	echo "module: kernel/srnic.ko is for $rel, the running kernel and the test guest's"
elif [ -e "/lib/modules/$rel/build/Makefile" ]; then
	ko=$("$top/scripts/module-for.sh" "$rel" "$build")
	ln -sfn "$ko" "$link"
	echo "module: ${link#"$top"/} is for the running kernel $rel; kernel/srnic.ko for the test guest's $guest"
else
	rm -f "$link"
	echo "module: kernel/srnic.ko is for the test guest's kernel $guest; the running kernel $rel has no headers" \
		"(apt-get install linux-headers-$rel, then make again, to build srnic.ko for it)"
fi
