#!/usr/bin/env bash
# The kselftest tree srnic's VM suites build and run in: Debian's linux-source-6.12 selftests
# (tools/testing/selftests, plus scripts/subarch.include, which their Makefile reads), with
# tests/vm placed as the target drivers/infiniband/srnic, as it would sit in a kernel tree, and
# the two headers the suites share with srnic (the ABI, the provider ABI) in its include/.
# The selftests are unpacked once; the target is placed again on every call, copying only what
# changed (times kept), so make rebuilds only those suites.
# Usage: scripts/ksft-tree.sh DEST     (DEST/tools/testing/selftests is then the kselftest root)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dest=$(realpath -m "$1")
selftests=$dest/tools/testing/selftests

if [ ! -f "$selftests/lib.mk" ]; then
	tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || { echo "ksft-tree: linux-source-6.12 is not installed (scripts/deps.sh)" >&2; exit 1; }
	rm -rf "$dest"
	mkdir -p "$dest"
	tar -xf "$tarball" -C "$dest" --strip-components=1 \
		linux-source-6.12/tools/testing/selftests linux-source-6.12/scripts/subarch.include
fi

target=$selftests/drivers/infiniband/srnic
mkdir -p "$target/include"
place() { cmp -s "$1" "$2" || cp -p "$1" "$2"; }
for f in "$top"/tests/vm/{Makefile,settings,config,*.c,*.h}; do
	place "$f" "$target/$(basename "$f")"
done
place "$top/include/srnic-abi.h" "$target/include/srnic-abi.h"
place "$top/user/verbs_provider.h" "$target/include/verbs_provider.h"
