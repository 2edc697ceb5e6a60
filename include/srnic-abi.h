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
#include <rdma/ib_user_verbs.h>

/*
 * Bumped on any incompatible change.  The kernel reports it as the uverbs
 * ABI version (sysfs "abi_version" of the uverbs device) and in the
 * srnic_abi_version attribute of the ib device; the provider accepts
 * exactly this version.
 */
#define SRNIC_ABI_VERSION 2

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
 * that a store to one queue's doorbell never shares a cache line with
 * another's, and in its last 64 bytes the page's summary of which slots
 * rang (struct srnic_uar_summary).
 */
#define SRNIC_DB_SLOT_SIZE 64u
#define SRNIC_DBS_PER_UAR (SRNIC_PAGE_SIZE / SRNIC_DB_SLOT_SIZE - 1)

struct srnic_db_slot {
	__u32 value;		/* written by user space, read by the engine */
	__u32 reserved[15];
};

/*
 * Doorbells that name their queue.  The engine does not read every
 * queue's doorbell; it reads those a producer marked, in three levels:
 *
 *   rung (UAR page p, slot s)  ->  bells[t].pages[p / 64] bit p % 64
 *                              ->  bells[t].top bit p / 64
 *
 * where t is the engine thread of the queue's QP and bells[t] that
 * thread's bell page of the context.  A producer rings: it stores the
 * doorbell value (release), then sets the bits from the bottom level up
 * with atomic read-modify-writes, stopping at the first that was set
 * already (whoever set it sets, or has set, the ones above); then, after
 * a full barrier, it reads its engine's NEED_WAKEUP.  The engine takes
 * each level with an atomic exchange (or clears the bits it takes) from
 * the top down and reads the doorbell last, so a mark it clears was made
 * after the doorbell it then reads; a mark made after it cleared the
 * level stays for its next pass.
 *
 * The engine may leave a slot's rung bit set while its queue is busy (a
 * hot queue): it then reads that doorbell on every pass, and a producer
 * that finds the bit set stops there, at one read-modify-write.  It
 * clears the bit (an atomic read-modify-write) before it stops reading the
 * doorbell, and reads the doorbell once more after, so a producer that
 * found the bit set has its doorbell read.
 *
 * Every bit is a hint: the engine acts on a marked slot only if the slot
 * holds a QP of this context served by thread t, and a queue's doorbell
 * value is the truth of what it holds.  A mark of nothing costs the
 * engine one look; one never made leaves only its maker's queue unserved.
 */
struct srnic_uar_summary {
	__aligned_u64 rung;	/* bit s: slot s of this page rang */
	__aligned_u64 reserved[7];
};

#define SRNIC_UAR_SUMMARY_OFFSET (SRNIC_DBS_PER_UAR * SRNIC_DB_SLOT_SIZE)

/* UAR pages a context may have, and so the pages a bell page covers. */
#define SRNIC_MAX_UARS 4096u

struct srnic_bells {
	__aligned_u64 top;	/* bit i: pages[i] has a bit set */
	__aligned_u64 reserved0[7];
	__aligned_u64 pages[SRNIC_MAX_UARS / 64]; /* bit j: page 64 i + j rang */
	__aligned_u64 reserved[(SRNIC_PAGE_SIZE - 64) / 8 - SRNIC_MAX_UARS / 64];
};

/*
 * Engine status page: one 64-byte record per engine thread, written by the
 * kernel and mapped read-only into every context of the device.  The QP
 * with number N is served by engine thread srnic_qp_engine(N, num_engines):
 * after ringing its doorbell, the provider looks at that thread's record.
 */
#define SRNIC_MAX_ENGINES (SRNIC_PAGE_SIZE / 64u)

/*
 * Fibonacci hashing of the QPN rather than QPN % num_engines: QPs made
 * one after the other and QPs made in connected pairs (requester,
 * responder, requester, ...) both spread evenly over the threads.
 */
static inline __u32 srnic_qp_engine(__u32 qpn, __u32 num_engines)
{
	return (__u32)(((__u64)(__u32)(qpn * 0x9e3779b9u) * num_engines) >> 32);
}

enum srnic_engine_flags {
	/*
	 * The engine is going to sleep (or sleeps): a producer that just rang
	 * a doorbell must, after a full barrier, wake it with one system call.
	 */
	SRNIC_ENGINE_NEED_WAKEUP = 1u << 0,
};

struct srnic_engine_status {
	__u32 flags;		/* enum srnic_engine_flags */
	__u32 num_engines;	/* records in use, the same in each */
	__u32 reserved[14];
};

/* ibv_get_context: udata of the request (optional, may be absent). */
struct srnic_alloc_ucontext_req {
	__u32 comp_mask;	/* must be 0 */
	__u32 reserved;
};

/*
 * A context's first UAR page and the engine status page are always at these
 * mmap offsets (also reported in the response below): a process importing
 * the context (ibv_import_device) gets no response and maps them here.
 */
#define SRNIC_UAR0_MMAP_OFFSET 0ull
#define SRNIC_STATUS_MMAP_OFFSET ((__u64)SRNIC_PAGE_SIZE)

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

/*
 * Device memory (ibv_alloc_dm) carries no driver data: the pages of the DM
 * with uverbs handle H are mapped at page offset SRNIC_DM_MMAP_PGOFF(H)
 * (the mmap offset times SRNIC_PAGE_SIZE), PAGE_ALIGN(length) bytes.  A DM
 * is at most SRNIC_DM_MAX_PAGES pages; the device's total is the same.
 */
#define SRNIC_DM_MAX_PAGES 64u
#define SRNIC_DM_MMAP_PGOFF(handle) \
	((1u << 24) + (__u32)(handle) * SRNIC_DM_MAX_PAGES)

/* ibv_alloc_pd: udata of the response. */
struct srnic_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

/*
 * Where a queue's doorbell register is: the UAR page (by its mmap offset,
 * each page mapped once per context by the provider) and the slot in it.
 * A context starts with one UAR page and gains pages as its queues need
 * slots.
 */
struct srnic_db_loc {
	__aligned_u64 uar_mmap_offset;
	__u32 slot;		/* < SRNIC_DBS_PER_UAR */
	__u32 uar_index;	/* the page's place in its context, < SRNIC_MAX_UARS */
};

/*
 * Queue memory.  Rings and doorbell records are allocated by the provider in
 * its own memory and pinned by the kernel when the queue is created: each
 * ring is page aligned (and pinned in whole pages); a doorbell record is
 * 8-byte aligned and does not cross a page.
 */

/*
 * Completion queue entry.  The engine writes every field, then owner last
 * with a release store; an entry belongs to software when its owner bit
 * is (index >> log2(entries) & 1) ^ 1 for its free-running index: 1 on the
 * first pass, 0 on the second, so a zeroed ring holds no valid entry.
 */
#define SRNIC_CQE_SIZE 64u

enum srnic_cqe_owner {
	SRNIC_CQE_OWNER_BIT = 1u << 0,
};

/* srnic_cqe.wc_flags; the provider maps them to enum ibv_wc_flags. */
enum srnic_cqe_flags {
	SRNIC_CQE_GRH = 1u << 0,	/* a 40-byte GRH precedes the data */
	SRNIC_CQE_WITH_IMM = 1u << 1,
	SRNIC_CQE_WITH_INV = 1u << 2,	/* imm_data holds the invalidated rkey */
	/* Tag matching (IBV_WC_TM_*): see struct srnic_tm_op. */
	SRNIC_CQE_TM_SYNC_REQ = 1u << 3,	/* the SRQ wants a TAG_SYNC */
	SRNIC_CQE_TM_MATCH = 1u << 4,	/* tm_tag/tm_priv hold the TMH's */
	SRNIC_CQE_TM_DATA_VALID = 1u << 5,	/* the data is in the tag's buffer */
	/* With GRH: the 40 bytes hold an IPv4 header in their last 20. */
	SRNIC_CQE_GRH_IPV4 = 1u << 6,
};

/*
 * srnic_cqe.opcode and .status carry ibv_wc_opcode / ibv_wc_status values;
 * the kernel's enums stop before the tag-matching ones, named here.
 */
enum srnic_wc_tm {
	SRNIC_WC_TM_ADD = 130,		/* IBV_WC_TM_ADD */
	SRNIC_WC_TM_DEL = 131,
	SRNIC_WC_TM_SYNC = 132,
	SRNIC_WC_TM_RECV = 133,
	SRNIC_WC_TM_NO_TAG = 134,
	SRNIC_WC_TM_ERR = 22,		/* status IBV_WC_TM_ERR */
	SRNIC_WC_TM_RNDV_INCOMPLETE = 23,
};

struct srnic_cqe {
	__aligned_u64 wr_id;
	__aligned_u64 timestamp;	/* ns, with SRNIC_CQ_FLAG_TIMESTAMP, else 0 */
	__u32 byte_len;
	__u32 imm_data;		/* network order, or invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 vendor_err;
	__u16 pkey_index;
	__u8 opcode;		/* enum ibv_wc_opcode */
	__u8 status;		/* enum ibv_wc_status */
	__u8 wc_flags;		/* enum srnic_cqe_flags */
	__u8 sl;
	__u8 reserved0[2];
	__u32 tm_tag_lo;	/* SRNIC_CQE_TM_MATCH: the TMH tag, low half */
	__u32 tm_tag_hi;
	__u32 tm_priv;		/* SRNIC_CQE_TM_MATCH: the TMH's app_ctx */
	__u32 reserved1;
	__u8 reserved2[3];
	__u8 owner;		/* written last */
};

/* CQ doorbell record, in user memory. */
struct srnic_cq_db {
	__u32 consumer;		/* software's consumer counter (free running) */
	__u32 arm;		/* enum srnic_cq_arm | sequence << 8 */
};

enum srnic_cq_arm {
	SRNIC_CQ_ARM_NONE = 0,
	SRNIC_CQ_ARM_NEXT = 1,		/* event on the next completion */
	SRNIC_CQ_ARM_SOLICITED = 2,	/* event on the next solicited one */
};

/* srnic_create_cq_req.flags; other bits must be zero. */
enum srnic_create_cq_flags {
	/*
	 * The engine fills srnic_cqe.timestamp of every entry with the
	 * device clock: CLOCK_MONOTONIC in ns (hca_core_clock 1 GHz), the
	 * clock user space reads with clock_gettime().
	 */
	SRNIC_CQ_FLAG_TIMESTAMP = 1u << 0,
};

/* ibv_create_cq: udata of the request and the response. */
struct srnic_create_cq_req {
	__aligned_u64 buf_addr;	/* ring: entries * SRNIC_CQE_SIZE bytes */
	__aligned_u64 db_addr;	/* struct srnic_cq_db */
	__u32 log_entries;	/* ring holds 1 << log_entries CQEs */
	__u32 flags;		/* enum srnic_create_cq_flags */
};

struct srnic_create_cq_resp {
	struct srnic_db_loc db;	/* arm doorbell */
	__u32 cqn;
	__u32 reserved;
};

/* ibv_resize_cq: the new ring; CQEs not yet polled are moved into it. */
struct srnic_resize_cq_req {
	__aligned_u64 buf_addr;
	__u32 log_entries;
	__u32 reserved;
};

struct srnic_resize_cq_resp {
	__u32 consumer;		/* consumer counter to continue from */
	__u32 reserved;
};

/*
 * Send queue WQE: a control segment, then by opcode a remote-address and an
 * atomic segment or a UD segment, then scatter/gather entries or inline
 * data.  Every WQE of a QP has the same size, a power of two (the "stride")
 * chosen at creation; the engine copies a WQE into kernel memory before it
 * reads any field.
 */
#define SRNIC_SEND_WQE_MIN 64u
#define SRNIC_SEND_WQE_MAX 1024u
#define SRNIC_RECV_WQE_MIN 32u
#define SRNIC_RECV_WQE_MAX 1024u
/* Inline data a QP can be asked for (what ibv_create_qp may request). */
#define SRNIC_MAX_INLINE_DATA 512u
/*
 * Bytes before the data/inline part of a send WQE: control, then for RC/UC
 * remote address + atomic, for UD the UD segment.  Every opcode of a QP uses
 * its type's header size, so capacity does not depend on the opcode.
 */
#define SRNIC_SEND_HDR_RC 64u	/* ctrl 32 + raddr 16 + atomic 16 */
#define SRNIC_SEND_HDR_UD 80u	/* ctrl 32 + ud 48 */
#define SRNIC_SEND_HDR_RAW 32u	/* ctrl 32: the data is a whole Ethernet frame */

/* The send header of a QP of type @qp_type (enum ib_uverbs_qp_type). */
static inline __u32 srnic_send_hdr(__u32 qp_type)
{
	switch (qp_type) {
	case IB_UVERBS_QPT_UD:
		return SRNIC_SEND_HDR_UD;
	case IB_UVERBS_QPT_RAW_PACKET:
		return SRNIC_SEND_HDR_RAW;
	default:
		return SRNIC_SEND_HDR_RC;
	}
}

/*
 * Queue limits: the kernel enforces and reports them (query_device), the
 * provider refuses more before asking.
 */
#define SRNIC_MAX_QP_WR		(32 * 1024)
#define SRNIC_MAX_SRQ_WR	(32 * 1024)
#define SRNIC_MAX_SGE		32

enum srnic_wqe_flags {
	SRNIC_WQE_SIGNALED = 1u << 0,
	SRNIC_WQE_SOLICITED = 1u << 1,
	SRNIC_WQE_FENCE = 1u << 2,
	SRNIC_WQE_INLINE = 1u << 3,
	/*
	 * BIND_MW posted by ibv_bind_mw() for a type 1 window; without it a
	 * BIND_MW names a type 2 window.  The engine checks the claim.
	 */
	SRNIC_WQE_BIND_TYPE1 = 1u << 4,
};

struct srnic_wqe_ctrl {
	__aligned_u64 wr_id;
	__u8 opcode;		/* enum ibv_wr_opcode */
	__u8 flags;		/* enum srnic_wqe_flags */
	__u8 num_sge;		/* data segments that follow, or 0 if inline */
	__u8 reserved0;
	__u32 imm_data;		/* network order imm, or rkey to invalidate
				 * (SEND_WITH_INV, LOCAL_INV) */
	__u32 inline_len;	/* bytes of inline data, when INLINE */
	__u32 xrc_srqn;		/* XRC initiator: the target's XRC SRQ */
	__u32 reserved1[2];
};

struct srnic_wqe_raddr {
	__aligned_u64 remote_addr;
	__u32 rkey;
	__u32 reserved;
};

/*
 * ATOMIC_WRITE (RC and XRC): the 8 bytes to write are compare_add, in the
 * host's byte order, and the WQE has no data segment.  Its opcode values
 * are those of rdma-core and Linux 6.2+ uapi; older kernel headers lack
 * them.
 */
struct srnic_wqe_atomic {
	__aligned_u64 compare_add;
	__aligned_u64 swap;
};

#define SRNIC_WR_ATOMIC_WRITE 15u	/* IBV_WR_ATOMIC_WRITE */
#define SRNIC_WC_ATOMIC_WRITE 9u	/* IBV_WC_ATOMIC_WRITE */

/*
 * FLUSH (RC and XRC; IBA 1.5 annex A19): what was written before it into
 * the remote range (@level IB_FLUSH_RANGE: remote_addr and @length) or the
 * whole region of rkey (IB_FLUSH_MR) is visible (@type IB_FLUSH_GLOBAL) or
 * persistent (IB_FLUSH_PERSISTENT) when it completes.  In place of the
 * atomic segment; the WQE has no data segment.  The values of Linux 6.2+
 * uapi (IB_UVERBS_WR_FLUSH, IB_UVERBS_WC_FLUSH); rdma-core 44 has no verb
 * that posts it.
 */
struct srnic_wqe_flush {
	__u32 length;
	__u8 type;		/* enum ib_placement_type bits */
	__u8 level;		/* enum ib_selectivity_level */
	__u16 reserved0;
	__aligned_u64 reserved1;
};

#define SRNIC_WR_FLUSH 14u
#define SRNIC_WC_FLUSH 8u

/*
 * BIND_MW (RC and UC): in place of the remote-address and atomic segments.
 * The window is named by the index part of any of its rkeys (key >> 8);
 * new_rkey is the rkey the bind gives it (same index, a new key byte).  A
 * zero length unbinds a type 1 window.
 */
struct srnic_wqe_bind {
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 mw_rkey;
	__u32 new_rkey;
	__u32 mr_lkey;
	__u32 access;		/* IBV_ACCESS_* of the window */
};

/* Address vector, as filled from an AH (RoCEv2: GRH always present). */
struct srnic_av {
	__u8 dgid[16];
	__u8 dmac[6];
	__u8 sgid_index;
	__u8 hop_limit;
	__u32 flow_label;
	__u8 traffic_class;
	__u8 sl;
	__u16 reserved;
};

struct srnic_wqe_ud {
	struct srnic_av av;
	__u32 remote_qpn;
	__u32 remote_qkey;
	__u32 reserved[2];
};

struct srnic_wqe_data {
	__u32 length;
	__u32 lkey;
	__aligned_u64 addr;
};

/* Receive WQE (RQ and SRQ): a header, then scatter entries; power-of-two stride. */
struct srnic_recv_wqe_hdr {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/*
 * QP doorbell record, in user memory.  Counters are free running.  The
 * provider writes the producers (after the WQEs, with release order); the
 * engine writes the consumers once it has copied WQEs out of the rings, so
 * the provider knows which ring slots it may reuse.  The engine trusts
 * neither: a producer more than a ring ahead of its consumer is an error of
 * the queue's owner.
 *
 * Posting sends: write WQEs, store sq_producer (release), store the same
 * value into the QP's doorbell slot (release), full barrier, then if the
 * engine status says NEED_WAKEUP, wake it with a zero-WR post_send command.
 * Posting receives needs no doorbell: the engine reads rq_producer when it
 * needs a receive WQE.  Except once the engine has set @error: work posted
 * to a QP in error is flushed by the engine, so the provider then wakes it
 * (the same zero-WR post_send) after posting either queue.
 */
struct srnic_qp_db {
	__u32 sq_producer;
	__u32 rq_producer;
	__u32 sq_consumer;	/* engine-written */
	__u32 rq_consumer;	/* engine-written */
	__u32 error;		/* engine-written: non-zero once in error */
	__u32 reserved;
};

/* SRQ doorbell record; same rules as the QP's receive side. */
struct srnic_srq_db {
	__u32 producer;
	__u32 consumer;		/* engine-written */
};

/* ibv_create_qp: udata of the request and the response. */
struct srnic_create_qp_req {
	__aligned_u64 sq_buf_addr;	/* sq entries << sq_log_stride bytes */
	__aligned_u64 rq_buf_addr;	/* 0 with an SRQ or no receive queue */
	__aligned_u64 db_addr;		/* struct srnic_qp_db */
	__u32 sq_log_entries;
	__u32 sq_log_stride;
	__u32 rq_log_entries;
	__u32 rq_log_stride;
};

struct srnic_create_qp_resp {
	struct srnic_db_loc db;		/* send doorbell */
	__u32 qpn;
	__u32 max_inline_data;		/* what the stride leaves room for */
	/* The bell page of the QP's engine thread (struct srnic_bells). */
	__aligned_u64 bells_mmap_offset;
};

/* ibv_create_srq: udata of the request and the response. */
struct srnic_create_srq_req {
	__aligned_u64 buf_addr;
	__aligned_u64 db_addr;		/* struct srnic_srq_db */
	__u32 log_entries;
	__u32 log_stride;
};

struct srnic_create_srq_resp {
	__u32 srqn;
	__u32 reserved;
};

/*
 * Tag matching SRQs (IBV_SRQT_TM).  Messages to a QP on such an SRQ start
 * with a tag-matching header (the layout of libibverbs' struct ibv_tmh,
 * big endian), for RNDV followed by a rendezvous header (struct ibv_rvh).
 */
#define SRNIC_TMH_SIZE 16u
#define SRNIC_RVH_SIZE 16u

enum srnic_tmh_opcode {			/* enum ibv_tmh_op */
	SRNIC_TMH_NO_TAG = 0,
	SRNIC_TMH_RNDV = 1,
	SRNIC_TMH_FIN = 2,
	SRNIC_TMH_EAGER = 3,
};

enum srnic_tm_op_code {
	SRNIC_TM_OP_ADD = 1,
	SRNIC_TM_OP_DEL = 2,
	SRNIC_TM_OP_SYNC = 3,
};

enum srnic_tm_op_flags {
	SRNIC_TM_OP_SIGNALED = 1u << 0,	/* IBV_OPS_SIGNALED */
	SRNIC_TM_OP_TM_SYNC = 1u << 1,	/* IBV_OPS_TM_SYNC: unexpected_cnt */
};

/*
 * One ibv_post_srq_ops operation: the driver data of an ibv_modify_srq
 * command with attr_mask 0 on a TM SRQ, executed before the command
 * returns (its completion, if any, is then in the SRQ's CQ).  ADD writes
 * the tag's handle (its index in the SRQ's tag list) to the __u32 at user
 * address handle_addr.
 */
struct srnic_tm_op {
	__aligned_u64 wr_id;		/* of the TM_ADD/DEL/SYNC completion */
	__aligned_u64 recv_wr_id;	/* ADD: of the tag's TM_RECV completions */
	__aligned_u64 tag;		/* ADD: matches if (tmh.tag ^ tag) & mask == 0 */
	__aligned_u64 mask;
	__aligned_u64 handle_addr;	/* ADD */
	struct srnic_wqe_data sge;	/* ADD: the tag's buffer (num_sge 1) */
	__u32 unexpected_cnt;		/* with SRNIC_TM_OP_TM_SYNC */
	__u32 handle;			/* DEL */
	__u8 opcode;			/* enum srnic_tm_op_code */
	__u8 flags;			/* enum srnic_tm_op_flags */
	__u8 num_sge;			/* ADD: 0 or 1 */
	__u8 reserved[5];
};

/*
 * ibv_create_wq (receive WQ of raw packet QPs, for RSS): a receive ring and
 * doorbell record as an SRQ's (struct srnic_srq_db, same rules), posted
 * with the same receive WQEs.  The core answers the WQ number.
 */
struct srnic_create_wq_req {
	__aligned_u64 buf_addr;
	__aligned_u64 db_addr;		/* struct srnic_srq_db */
	__u32 log_entries;
	__u32 log_stride;
	__u32 comp_mask;		/* must be 0 */
	__u32 reserved;			/* must be 0 */
};

/*
 * ibv_create_qp_ex of an RSS raw packet QP (IBV_QP_INIT_ATTR_IND_TABLE and
 * _RX_HASH): the hash configuration, which the core does not carry.  Only
 * Toeplitz with a 40-byte key; fields are IBV_RX_HASH_* bits (IPv4/IPv6
 * addresses, TCP/UDP ports).  The response is srnic_create_qp_resp (no
 * doorbell: an RSS QP has no queue of its own).
 */
#define SRNIC_RSS_KEY_LEN 40u
#define SRNIC_RX_HASH_FUNC_TOEPLITZ 1u

/* rx_hash_fields_mask bits: the values of enum ibv_rx_hash_fields. */
enum srnic_rx_hash_fields {
	SRNIC_RX_HASH_SRC_IPV4 = 1u << 0,
	SRNIC_RX_HASH_DST_IPV4 = 1u << 1,
	SRNIC_RX_HASH_SRC_IPV6 = 1u << 2,
	SRNIC_RX_HASH_DST_IPV6 = 1u << 3,
	SRNIC_RX_HASH_SRC_PORT_TCP = 1u << 4,
	SRNIC_RX_HASH_DST_PORT_TCP = 1u << 5,
	SRNIC_RX_HASH_SRC_PORT_UDP = 1u << 6,
	SRNIC_RX_HASH_DST_PORT_UDP = 1u << 7,
	/* Every field srnic hashes; the provider reports it as rss_caps. */
	SRNIC_RX_HASH_FIELDS = (1u << 8) - 1,
};

struct srnic_create_qp_rss_req {
	__aligned_u64 rx_hash_fields_mask;
	__u8 rx_hash_function;		/* IBV_RX_HASH_FUNC_TOEPLITZ */
	__u8 rx_hash_key_len;		/* SRNIC_RSS_KEY_LEN */
	__u8 reserved0[6];		/* must be 0 */
	__u8 rx_hash_key[SRNIC_RSS_KEY_LEN];
	__u32 comp_mask;		/* must be 0 */
	__u32 reserved1;		/* must be 0 */
};

/* ibv_create_ah: the resolved destination MAC for the provider's AV. */
struct srnic_create_ah_resp {
	__u8 dmac[6];
	__u8 reserved[2];
};

/*
 * `rdma resource show qp -r`: the QP context as the engine holds it, in the
 * host's byte order.  @version changes whenever the layout does.
 */
#define SRNIC_RES_QP_RAW_VERSION 1

enum srnic_res_qp_flags {
	SRNIC_RES_QP_RNR_WAIT = 1u << 0,	/* waiting out an RNR timer */
	SRNIC_RES_QP_FAULT_WAIT = 1u << 1,	/* waiting for an ODP fault */
	SRNIC_RES_QP_IN_PROGRESS = 1u << 2,	/* the WQE at sq_consumer started */
	SRNIC_RES_QP_RSS = 1u << 3,		/* an RSS raw packet QP */
};

struct srnic_res_qp_raw {
	__u32 version;		/* SRNIC_RES_QP_RAW_VERSION */
	__u32 qpn;
	__u32 state;		/* enum ib_qp_state */
	__u32 type;		/* enum ib_qp_type */
	__u32 sq_log_entries;
	__u32 sq_log_stride;
	__u32 rq_log_entries;
	__u32 rq_log_stride;
	__u32 sq_producer;	/* as software last wrote it */
	__u32 sq_consumer;	/* the next send WQE to execute */
	__u32 rq_producer;
	__u32 rq_consumer;	/* the next receive WQE to consume */
	__u32 dest_qpn;
	__s32 peer_dev;		/* device of the connected peer, -1 if none */
	__u32 flags;		/* enum srnic_res_qp_flags */
	__u8 rnr_left;
	__u8 retry_left;
	__u16 engine;		/* engine thread that serves the QP */
	__u32 visits;		/* engine visits since the QP was made */
	__u32 reserved;
};

#endif /* SRNIC_ABI_H */
