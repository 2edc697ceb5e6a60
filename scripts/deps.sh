#!/usr/bin/env bash
# Installs, idempotently, every Debian package srnic needs to build, boot its VM and run its tests.
# Usage: scripts/deps.sh            (does nothing when all is present)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive

base_pkgs=(build-essential cmake pkg-config git kmod bc flex bison libelf-dev python3
	qemu-system-x86 busybox-static iproute2 strace procps rsync tcpdump tshark
	dkms iperf3 rdma-core libibverbs-dev ibverbs-utils ibverbs-providers libibverbs1 librdmacm-dev
	perftest rdmacm-utils python3-pyverbs infiniband-diags nvme-cli fio nfs-kernel-server
	linux-source-6.12 linux-headers-amd64 googletest libgtest-dev zlib1g-dev
	ucx-utils openmpi-bin libopenmpi-dev)

missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}

updated=
apt_update() { [ -n "$updated" ] || { apt-get update -q; updated=1; }; }

kver=$("$here/kver.sh" 2>/dev/null) || { apt_update; kver=$("$here/kver.sh"); }
pkgs=("${base_pkgs[@]}" "linux-image-$kver-unsigned" "linux-headers-$kver")
mapfile -t need < <(missing "${pkgs[@]}")
if [ "${#need[@]}" -gt 0 ]; then
	apt_update
	apt-get install -y -q --no-install-recommends "${need[@]}"
fi
echo "deps: ready (kernel $kver)"
