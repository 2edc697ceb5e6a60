#!/usr/bin/env bash
# `make install`: the provider (into libibverbs' provider directory, with
# /etc/libibverbs.d/srnic.driver naming it) and srnic.ko for the running kernel (KVER_INSTALL=
# names another): through DKMS when dkms is installed, which also builds it for every kernel
# installed later; without DKMS (or with DKMS=no), built here into /lib/modules/KVER/updates,
# then depmod.
# What it puts in place is recorded (CMake's install_manifest.txt, BUILD/install-module.txt), so
# `make uninstall` (scripts/uninstall.sh) removes exactly that.
# Usage: scripts/install.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
kver=${KVER_INSTALL:-$(uname -r)}
record=$build/install-module.txt
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")

cmake --install "$build/cmake"

# DKMS=no: the module this tree built (make kernel), without DKMS even where it is installed.
if [ "${DKMS:-yes}" != no ] && command -v dkms >/dev/null; then
	src=/usr/src/srnic-$version
	# A reinstall replaces what an earlier one left.
	dkms remove -m srnic -v "$version" --all >/dev/null 2>&1 || true
	rm -rf "$src"
	mkdir -p "$src/kernel" "$src/include"
	cp "$top/dkms.conf" "$src/"
	cp "$top"/kernel/Kbuild "$top"/kernel/*.[ch] "$src/kernel/"
	cp "$top/include/srnic-abi.h" "$src/include/"
	dkms add -m srnic -v "$version"
	dkms install -m srnic -v "$version" -k "$kver"
	echo "dkms $version $src" >"$record"
else
	make -C "/lib/modules/$kver/build" M="$top/kernel" modules
	# Stripped, as DKMS strips what it installs: the debug info is most of the file.
	make -C "/lib/modules/$kver/build" M="$top/kernel" INSTALL_MOD_DIR=updates \
		INSTALL_MOD_STRIP=1 modules_install
	depmod -a "$kver"
	# The file as modules_install named it: compressed (srnic.ko.xz) where the kernel's
	# configuration compresses modules, as Debian's does.
	ko=$(ls "/lib/modules/$kver/updates/srnic.ko"* 2>/dev/null | head -n 1)
	[ -n "$ko" ] || { echo "install: modules_install left no srnic.ko in /lib/modules/$kver/updates" >&2; exit 1; }
	echo "file $ko $kver" >"$record"
fi
echo "install: srnic.ko for $kver ($(cut -d' ' -f1 "$record")) and the provider; load it with modprobe srnic"
