#!/usr/bin/env bash
# `make uninstall`: removes exactly what `make install` (scripts/install.sh) put in place: the
# module (its DKMS registration and source, or the file and then depmod), recorded in
# BUILD/install-module.txt, and the provider's files, recorded by CMake in install_manifest.txt.
# A loaded srnic stays loaded: `rdma link del` its devices and `modprobe -r srnic` first.
# Usage: scripts/uninstall.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
record=$build/install-module.txt
manifest=$build/cmake/install_manifest.txt

if [ -f "$record" ]; then
	read -r kind what where <"$record"
	case $kind in
	dkms)
		dkms remove -m srnic -v "$what" --all
		rm -rf -- "$where"
		;;
	file)
		rm -f -- "$what"
		depmod -a "$where"
		;;
	esac
	echo "uninstall: removed the module ($kind)"
	rm -f -- "$record"
fi

if [ ! -f "$manifest" ]; then
	echo "uninstall: $manifest not found: no provider was installed from this build" >&2
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
