#!/usr/bin/env bash
# Builds the debug guest kernel for `make check-debug`: Debian's linux-source-6.12 with KASAN,
# lockdep, UBSAN, kmemleak, SLUB debugging and the other checks a kernel maintainer runs, and only
# what the VM needs, built in (RDMA core, 9p, virtio, veth); rdma_rxe stays a module because the
# tests load it themselves.  The result is cached under build/kdebug and rebuilt only when this
# script (which holds the configuration) or the source package changes.
# Usage: scripts/debug-kernel.sh [OUTDIR]      prints the kernel release when done
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$(realpath -m "${1:-$root/build/kdebug}")
tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n1)
[ -n "$tarball" ] || { echo "debug-kernel: linux-source-6.12 is not installed" >&2; exit 1; }

stamp=$( { sha256sum "$0"; stat -L -c '%n %s %Y' "$tarball"; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$out/src/arch/x86/boot/bzImage" ]; then
	cat "$out/release"
	exit 0
fi
rm -rf "$out"
mkdir -p "$out"
echo "debug-kernel: unpacking $tarball" >&2
tar -C "$out" -xf "$tarball"
mv "$out"/linux-source-6.12 "$out/src"
src=$out/src

# Fragments merged over x86_64_defconfig and the KVM-guest fragment.
cat >"$out/srnic-debug.config" <<'CFG'
CONFIG_LOCALVERSION="-srnic-debug"
CONFIG_LOCALVERSION_AUTO=n
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
CONFIG_MODULE_SIG=n
CONFIG_DEBUG_INFO_NONE=y
CONFIG_DEBUG_INFO_BTF=n
CONFIG_SYSTEM_TRUSTED_KEYS=""
CONFIG_SYSTEM_REVOCATION_KEYS=""
CONFIG_DRM=n
CONFIG_SOUND=n
CONFIG_USB_SUPPORT=n
CONFIG_WLAN=n
CONFIG_WIRELESS=n
CONFIG_CFG80211=n
CONFIG_HID=n
CONFIG_INPUT_JOYSTICK=n
CONFIG_INPUT_TABLET=n
CONFIG_INPUT_TOUCHSCREEN=n
CONFIG_AGP=n
CONFIG_NETWORK_FILESYSTEMS=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_9P_FS=y
CONFIG_9P_FS_POSIX_ACL=y
CONFIG_OVERLAY_FS=y
CONFIG_TMPFS=y
CONFIG_TMPFS_POSIX_ACL=y
CONFIG_HUGETLBFS=y
CONFIG_TRANSPARENT_HUGEPAGE=y
CONFIG_VIRTIO=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_CONSOLE=y
CONFIG_VETH=y
CONFIG_DUMMY=y
CONFIG_NET_SCHED=y
CONFIG_NET_SCH_NETEM=y
CONFIG_IPV6=y
CONFIG_NETFILTER=y
CONFIG_INFINIBAND=y
CONFIG_INFINIBAND_USER_MAD=y
CONFIG_INFINIBAND_USER_ACCESS=y
CONFIG_INFINIBAND_ON_DEMAND_PAGING=y
CONFIG_INFINIBAND_ADDR_TRANS=y
CONFIG_RDMA_RXE=m
CONFIG_RDMA_SIW=n
CONFIG_HMM_MIRROR=y
CONFIG_CONFIGFS_FS=y
CONFIG_NFS_FS=m
CONFIG_NFS_V4=m
CONFIG_NFSD=m
CONFIG_NFSD_V4=y
CONFIG_SUNRPC_XPRT_RDMA=m
CONFIG_NVME_RDMA=m
CONFIG_NVME_TARGET=m
CONFIG_NVME_TARGET_RDMA=m
CONFIG_DEBUG_FS=y
CONFIG_FAULT_INJECTION=y
CONFIG_FAULT_INJECTION_DEBUG_FS=y
CONFIG_FAILSLAB=y
CONFIG_FAIL_PAGE_ALLOC=y
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_UBSAN=y
CONFIG_UBSAN_BOUNDS=y
CONFIG_UBSAN_SHIFT=y
CONFIG_UBSAN_BOOL=y
CONFIG_UBSAN_ENUM=y
CONFIG_PROVE_LOCKING=y
CONFIG_PROVE_RCU=y
CONFIG_DEBUG_LOCKDEP=n
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DEBUG_LIST=y
CONFIG_DEBUG_SG=y
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_RCU_HEAD=y
CONFIG_DEBUG_OBJECTS_WORK=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE=65536
CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=n
CONFIG_SLUB_DEBUG=y
CONFIG_SLUB_DEBUG_ON=y
CONFIG_DEBUG_VM=y
CONFIG_DEBUG_PREEMPT=y
CONFIG_SOFTLOCKUP_DETECTOR=y
CONFIG_BOOTPARAM_SOFTLOCKUP_PANIC=n
CONFIG_DETECT_HUNG_TASK=y
CONFIG_DEFAULT_HUNG_TASK_TIMEOUT=120
CONFIG_WQ_WATCHDOG=y
CONFIG_SCHED_STACK_END_CHECK=y
CONFIG_HARDENED_USERCOPY=y
CONFIG_FORTIFY_SOURCE=y
CONFIG_KALLSYMS_ALL=y
CONFIG_FRAME_POINTER=y
CONFIG_UNWINDER_FRAME_POINTER=y
CFG

echo "debug-kernel: configuring" >&2
make -C "$src" -s x86_64_defconfig >/dev/null
(cd "$src" && scripts/kconfig/merge_config.sh -m .config kernel/configs/kvm_guest.config \
	"$out/srnic-debug.config" >/dev/null)
make -C "$src" -s olddefconfig >/dev/null
# Every option asked for must have survived olddefconfig (a missing dependency drops it).
missing=0
while IFS= read -r line; do
	case $line in CONFIG_*=n | CONFIG_*=\"*) continue ;; esac
	grep -qx -- "$line" "$src/.config" || { echo "debug-kernel: $line did not stick" >&2; missing=1; }
done <"$out/srnic-debug.config"
[ "$missing" = 0 ] || exit 1

echo "debug-kernel: building (2 cores: about half an hour)" >&2
start=$SECONDS
make -C "$src" -s -j"$(nproc)" bzImage modules
make -C "$src" -s INSTALL_MOD_PATH="$out/mods" INSTALL_MOD_STRIP=1 modules_install >/dev/null
make -C "$src" -s kernelrelease >"$out/release"
echo "debug-kernel: built $(cat "$out/release") in $((SECONDS - start)) s" >&2
echo "$stamp" >"$out/stamp"
cat "$out/release"
