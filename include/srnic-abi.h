/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * srnic user/kernel ABI: the only definitions shared by srnic.ko and the
 * rdma-core provider libsrnic.
 *
 * Rules: fixed-width types only, explicit padding, 8-byte aligned 64-bit
 * fields, no pointers.  Every driver-private udata struct carries reserved
 * fields that must be zero, so that later versions can extend them.  Both
 * sides compile this file; host unit tests pin every size and offset.
 *
 * Trust: everything here that lives in user-writable memory (UAR pages, and
 * later the queue rings and doorbell records) is read by the kernel as
 * untrusted input.  The engine status page is the opposite direction: the
 * kernel writes it and user space only ever maps it read-only.
 */
#ifndef SRNIC_ABI_H
#define SRNIC_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <linux/types.h>
#include <stdint.h>
#endif

/*
 * Bumped on any incompatible change.  The kernel reports it as the uverbs
 * ABI version (sysfs "abi_version" of the uverbs device) and in the
 * srnic_abi_version attribute of the ib device; the provider accepts
 * exactly this version.
 */
#define SRNIC_ABI_VERSION 1

/*
 * Name of the ib_device sysfs attribute that identifies an srnic device,
 * whatever name the user gave it.  The provider matches on its presence and
 * content, never on the device name.
 */
#define SRNIC_SYSFS_ABI_ATTR "srnic_abi_version"

/*
 * The firmware version in query_device (a u64) packs major.minor.sub; the
 * provider prints it as the fw_ver string, sysfs prints the same.
 */
#define SRNIC_FW_VER_MAJOR(v) ((unsigned int)((v) >> 32))
#define SRNIC_FW_VER_MINOR(v) ((unsigned int)(((v) >> 16) & 0xffff))
#define SRNIC_FW_VER_SUB(v) ((unsigned int)((v) & 0xffff))

/* mmap granularity of every srnic mapping. */
#define SRNIC_PAGE_SIZE 4096u

/*
 * UAR page: an array of doorbell registers, one 64-byte slot per queue so
 * that the engine's polling of one queue never shares a cache line with a
 * store to another queue's doorbell.
 */
#define SRNIC_DB_SLOT_SIZE 64u
#define SRNIC_DBS_PER_UAR (SRNIC_PAGE_SIZE / SRNIC_DB_SLOT_SIZE)

struct srnic_db_slot {
	__u32 value;		/* written by user space, read by the engine */
	__u32 reserved[15];
};

/*
 * Engine status page: one 64-byte record per engine thread, written by the
 * kernel and mapped read-only into every context of the device.
 */
#define SRNIC_MAX_ENGINES (SRNIC_PAGE_SIZE / 64u)

enum srnic_engine_flags {
	/*
	 * The engine is going to sleep (or sleeps): a producer that just rang
	 * a doorbell must, after a full barrier, wake it with one system call.
	 */
	SRNIC_ENGINE_NEED_WAKEUP = 1u << 0,
};

struct srnic_engine_status {
	__u32 flags;		/* enum srnic_engine_flags */
	__u32 reserved[15];
};

/* ibv_get_context: udata of the request (optional, may be absent). */
struct srnic_alloc_ucontext_req {
	__u32 comp_mask;	/* must be 0 */
	__u32 reserved;
};

/* ibv_get_context: udata of the response. */
struct srnic_alloc_ucontext_resp {
	__u32 abi_version;	/* SRNIC_ABI_VERSION */
	__u32 page_size;	/* SRNIC_PAGE_SIZE */
	__u32 num_uars;		/* UAR pages mapped at uar_mmap_offset */
	__u32 dbs_per_uar;	/* SRNIC_DBS_PER_UAR */
	__aligned_u64 uar_mmap_offset;	  /* num_uars pages, PROT_WRITE */
	__aligned_u64 status_mmap_offset; /* 1 page, PROT_READ only */
	__u32 num_engines;	/* valid records in the status page */
	__u32 reserved;
};

/* ibv_alloc_pd: udata of the response. */
struct srnic_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

#endif /* SRNIC_ABI_H */
