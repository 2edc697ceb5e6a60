/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srnic: a software RDMA NIC.  Umbrella header: the objects every part of the
 * driver shares.  Cross-file prototypes live in srnic_loc.h.
 */
#ifndef SRNIC_H
#define SRNIC_H

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/idr.h>
#include <linux/smp.h>
#include <linux/prandom.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "srnic-abi.h"
#include "srnic_compat.h"
#include "srnic_mr.h"
#include "srnic_fault.h"

#define SRNIC_DRV_NAME		"srnic"
#define SRNIC_LINK_TYPE		"srnic"

/* xarray mark of QPs the engine serves (can send, or must flush): debugfs. */
#define SRNIC_QP_ACTIVE		XA_MARK_1
/* A wire READ's responses go out from this QP (srnic_net_resp.c). */
#define SRNIC_QP_READING	XA_MARK_2

/* The destination QPN of multicast datagrams (IB spec: 0xFFFFFF). */
#define SRNIC_MCAST_QPN		0xffffff

/* The one port every srnic device has: RoCEv2 on the bound netdev. */
#define SRNIC_PORT		1

/*
 * Identity.  Software RoCE devices have no IEEE OUI; 0xffffff is not one an
 * IEEE registration can give, and it is what rdma_rxe reports, so tools
 * keyed on the vendor id (Open MPI's device parameters, UCX) treat srnic as
 * the soft RoCE device it is.  The part id tells srnic apart from rxe (0).
 */
#define SRNIC_VENDOR_ID		0xffffff
#define SRNIC_VENDOR_PART_ID	0x5352	/* "SR" */
#define SRNIC_HW_VER		1
/* 0.1.0, packed as SRNIC_FW_VER_* in srnic-abi.h unpack it. */
#define SRNIC_FW_VER		((0ULL << 32) | (1 << 16) | 0)

/*
 * Limits.  They are reported by query_device and enforced when the objects
 * they count are created; object types the driver cannot create yet fail
 * with EOPNOTSUPP in the core, whatever these say.
 */
#define SRNIC_MAX_UCONTEXT	1024
#define SRNIC_MAX_PD		(64 * 1024)
#define SRNIC_MAX_QP		(64 * 1024)
#define SRNIC_MAX_CQ		(64 * 1024)
#define SRNIC_MAX_CQE		((1 << 22) - 1)
#define SRNIC_MAX_MR		(256 * 1024)
#define SRNIC_MAX_MW		(64 * 1024)
/* UD multicast (srnic_mcast.c): groups, and QPs per group. */
#define SRNIC_MAX_MCAST_GRP	1024
#define SRNIC_MAX_MCAST_QP_ATTACH 64
/* Pages one fast registration maps (max_fast_reg_page_list_len). */
#define SRNIC_MAX_FR_PAGES	512
#define SRNIC_MAX_DM_SIZE	(SRNIC_DM_MAX_PAGES * PAGE_SIZE)
#define SRNIC_MAX_MR_SIZE	(1ULL << 40)
#define SRNIC_MAX_MSG_SIZE	(1U << 31)
#define SRNIC_GID_TABLE_LEN	32
/*
 * READs and atomics a QP may have outstanding, either way: as rxe, whose
 * peers ask for 128.  The wire responder keeps as many of them, its
 * responder resources (struct srnic_wire_res): a duplicate is answered
 * only from one of them, a READ's within what it first asked for.
 */
#define SRNIC_MAX_QP_RD_ATOM	128
/*
 * Request packets of a QP that wait behind the READ whose responses go
 * out (struct srnic_wire_qp: held); more are dropped, and go again.
 */
#define SRNIC_WIRE_HELD_MAX	256
#define SRNIC_MAX_SRQ		(64 * 1024)
#define SRNIC_MAX_AH		(1024 * 1024)
#define SRNIC_MAX_WQ		(64 * 1024)
#define SRNIC_MAX_RWQ_IND_TABLE_SIZE 256
/* Each context starts with one UAR page and grows up to this many. */
/*
 * Fair scheduling: a message goes in pieces of at most SRNIC_PIECE bytes,
 * and a visit of the engine thread to a QP ends once it has moved
 * SRNIC_VISIT_BYTES, so that a QP waits for another's visit, not for its
 * messages, however large (a 128 MiB SEND once held others for seconds).
 * A doorbell system call runs only its caller's QP, on its caller's time:
 * its bound is as loose as the WQE budget's (64 WQEs of 64 KiB).
 */
#define SRNIC_PIECE		SZ_64K
#define SRNIC_VISIT_BYTES	SZ_256K
#define SRNIC_CALL_BYTES	SZ_4M
/* How long the engine keeps the CPU within a pass or a window (srnic_offer_cpu()). */
#define SRNIC_CPU_HOLD		msecs_to_jiffies(50)
/*
 * How long a responder may take to answer, as 4.096 us << n: the engine
 * thread may be asleep and must be scheduled first, which a loaded host
 * delays by milliseconds (2^12 * 4.096 us = 16.8 ms).
 */
#define SRNIC_LOCAL_CA_ACK_DELAY 12
/*
 * The shortest Local ACK Timeout a piece on the wire waits for its answer
 * (4.096 us << 14 = 67 ms): the peer's engine thread, or an emulated
 * guest, may take milliseconds to answer, and an early retransmission
 * costs a whole piece.
 */
#define SRNIC_WIRE_MIN_TIMEOUT	14
#define SRNIC_WIRE_MAX_BACKOFF	3
/*
 * Pieces of an RC QP on the wire in flight behind the piece that waits for
 * its answer: at most this many pieces and bytes (struct
 * srnic_wire_qp: ahead); the bytes also for all the QPs of an engine
 * thread together (struct srnic_thread: wire_ahead).  Eight QPs with a
 * window each overflowed the receiver's queue (SRNIC_RXQ_MAX) or took
 * longer than a timeout to drain from it: every piece went twice.  More
 * pieces than a responder answers with one coalesced ACK (a visit takes
 * SRNIC_RX_BUDGET packets): at 32, small messages stopped every round trip.
 */
#define SRNIC_WIRE_WINDOW	128
#define SRNIC_WIRE_WINDOW_BYTES	SZ_1M
/*
 * READs and atomics of an RC QP on the wire in flight at once, the head's
 * included: the QP's max_rd_atomic, at most this many.  Each READ's data
 * wait in a stage of SRNIC_PIECE bytes until it reaches the head, so this
 * bounds the kernel memory of a QP (allocated at RTS, as max_rd_atomic asks).
 */
#define SRNIC_WIRE_READS	4
#define SRNIC_WIRE_NO_STAGE	0xff
/* Tag matching SRQs: tag list entries, SGEs per tag, rendezvous header. */
#define SRNIC_TM_MAX_TAGS	256
#define SRNIC_TM_MAX_SGE	1
#define SRNIC_TM_MAX_RNDV_HDR	64

/*
 * Pinned user memory with a kernel mapping, or a kernel consumer's queue
 * memory (@kernel: allocated, nothing pinned) (srnic_umem.c).
 */
struct srnic_umem {
	struct ib_umem *umem;
	void *kva;
	size_t len;
	unsigned int npages;
	bool vmapped;
	bool kernel;
};

struct srnic_mr;

/* A scatter/gather list resolved against MRs, or a kernel buffer. */
struct srnic_sge_ref {
	/*
	 * Referenced, unless @borrowed: a QP's cached MR (struct
	 * srnic_mr_cache), good until the engine leaves srnic_engine_srcu.
	 */
	struct srnic_mr *mr;
	bool borrowed;
	u64 iova;
	u64 len;
};

struct srnic_sg {
	u8 *kbuf;			/* inline data: no MR */
	/* A received packet's payload, from @skb_off of its data: no MR. */
	const struct sk_buff *skb;
	u32 skb_off;
	u32 n;
	u64 total;
	struct srnic_sge_ref e[SRNIC_MAX_SGE];
	/* Set when resolving returned -EAGAIN: an ODP page to fault in. */
	struct srnic_fault fault;
};

/*
 * Starts @sg empty, or over @total bytes of kernel buffer @kbuf.  Only the
 * header: entries at n and above, and the fault, are written before they
 * are read, and zeroing the whole struct (~0.8 KiB) on the two lists of
 * every WQE was a good part of the engine's time per message.
 */
static inline void srnic_sg_init(struct srnic_sg *sg, u8 *kbuf, u64 total)
{
	sg->kbuf = kbuf;
	sg->skb = NULL;
	sg->n = 0;
	sg->total = total;
}

/*
 * An engine executes send queues: one WQE at a time, with scratch space for
 * the copies it makes of user memory.  The device's kernel thread owns one;
 * a doorbell system call borrows one from the device's pool and executes
 * the caller's QP itself (srnic_engine.c).  Only its user writes it.
 */
struct srnic_engine {
	void *wqe;			/* scratch: one send WQE, copied */
	void *rwqe;			/* scratch: one receive WQE, copied */
	struct srnic_sg local, remote;	/* scratch: the two sides of a copy */
	struct srnic_sg tm;		/* scratch: a rendezvous's source */
	struct srnic_sg wire;		/* scratch: a packet's payload */
	/*
	 * The connected peer of the QP whose batch of WQEs this engine runs,
	 * found at the batch's first WQE that needs it (NULL if there is
	 * none): the QP's cached pointer, or a lookup's, whose reference
	 * @peer_held is until the batch ends (srnic_loop_peer).
	 */
	struct srnic_qp *peer, *peer_held;
	bool peer_known;
	/*
	 * The wire responder's QP whose success ACK waits for the end of the
	 * thread's batch of packets (referenced; srnic_net_ack_flush).
	 */
	struct srnic_qp *ack_qp;
	/* ... another QP's, to send once the responder's lock is dropped */
	struct srnic_qp *ack_prev;
	u64 wqes, busy, runs;		/* counters: WQEs, QPs found locked, uses */
};

#define SRNIC_MARKED		64
#define SRNIC_HOT_MAX		64	/* hot QPs a thread polls */

/* Why the engine thread went to sleep: what a doorbell system call does. */
enum srnic_sleep_reason {
	SRNIC_SLEEP_IDLE,		/* no work with a CPU to itself: wake it */
	SRNIC_SLEEP_YIELD,		/* others wanted its CPU: run work inline */
};

/*
 * An engine thread: one processing unit of the device.  It serves the QPs
 * srnic_qp_engine() gives its @idx (srnic_qp_thread),
 * polling their send doorbells while it has a CPU to itself and sleeping
 * with the NEED_WAKEUP protocol, in its own record of the status page,
 * otherwise (see srnic_engine.c).  Only its own thread writes the fields
 * not marked otherwise.
 */
struct srnic_thread {
	struct srnic_dev *sdev;
	unsigned int idx;
	struct task_struct *task;
	wait_queue_head_t wait;
	bool kicked;			/* a waker's request, under wait.lock */
	int reason;			/* enum srnic_sleep_reason, READ_ONCE */
	wait_queue_head_t scanned;	/* srnic_engine_sync() waiters */
	struct srnic_engine_status *status; /* its record, user-visible */
	struct srnic_engine eng;
	struct sk_buff_head rxq;	/* from the wire (srnic_net.c) */
	unsigned long rx_taken;		/* packets taken from @rxq, ever */
	unsigned long rx_hold_until;	/* fault rx_hold: @rxq's head waits */
	u64 *idle_us;			/* per CPU, at idle_at: srnic_engine.c */
	u64 idle_at;
	unsigned long idle_jiffy;
	bool idle_free;
	u64 wakeups, sleeps, yields, scans;	/* counters */
	/*
	 * Bytes the thread's QPs have sent ahead on the wire, not yet known to be
	 * received (struct srnic_wire_piece: charged), SRNIC_WIRE_WINDOW_BYTES
	 * at most: QPs together queue no more at a receiver than one QP may.
	 */
	atomic_t wire_ahead;
	/*
	 * The QPs with work known to the engine, in the order it became known
	 * (srnic_qp_ready()), and the bell pages whose marks name the others
	 * (srnic_uar.c).  Under @run_lock, which writers take with interrupts
	 * off (completions of zero-copy sends make QPs ready); the engine
	 * walks @bells inside srnic_engine_srcu.
	 */
	spinlock_t run_lock;		/* @run, @run_n, QPs' queued and gone */
	struct list_head run;
	unsigned int run_n;
	struct list_head bells;
	/*
	 * The QPs a pass found marked, run in the same SRCU section: the
	 * common case (a doorbell rung, its WQEs run) without the run list's
	 * lock.  Marks beyond SRNIC_MARKED go to the run list.
	 */
	struct srnic_qp *marked[SRNIC_MARKED];
	unsigned int nmarked;
	/*
	 * Hot QPs: user QPs that did work lately, whose rung bit the engine
	 * leaves set and whose doorbell it reads on every pass (srnic-abi.h).
	 * Changed under @run_lock (destroy takes a QP off); the engine walks
	 * it inside srnic_engine_srcu.
	 */
	struct list_head hot;
	unsigned int nhot;
	/* counters: QPs looked at, marks taken, hot QPs found with work */
	u64 visits, marks, polls;
};

/*
 * The device's scheduling of work: its engine threads, and the engines of
 * @pool that doorbell system calls borrow to execute their QP's work
 * while the QP's thread sleeps (see srnic_engine.c).
 */
struct srnic_sched {
	struct srnic_thread *threads;
	unsigned int nthreads;		/* fixed for the device's life */
	struct srnic_engine *pool;	/* for doorbell system calls */
	unsigned int pool_size;
	unsigned long *pool_used;	/* bitmap, bit locks */
	atomic64_t doorbells, pool_empty;	/* counters of the system calls */
};

/*
 * Port counters of the datapath, counted per CPU (this_cpu_inc: no lock, no
 * shared cache line) and summed when read (srnic_stats.c).  "Messages" are
 * requests handed to the responder: one host has no packets yet.
 */
enum srnic_port_counter {
	SRNIC_PC_TX_MSGS,		/* requests sent, retransmissions included */
	SRNIC_PC_TX_BYTES,
	SRNIC_PC_RX_MSGS,		/* requests the responder accepted */
	SRNIC_PC_RX_BYTES,
	SRNIC_PC_RNR_NAKS_SENT,		/* answered RNR: no receive WQE */
	SRNIC_PC_RNR_NAKS_RCVD,
	SRNIC_PC_NAKS_SENT,		/* answered with an error NAK */
	SRNIC_PC_NAKS_RCVD,
	SRNIC_PC_RETRANSMITS,		/* sent again after no answer */
	SRNIC_PC_RNR_RETRIES,		/* sent again after an RNR NAK */
	SRNIC_PC_RETRY_EXCEEDED,
	SRNIC_PC_RNR_RETRY_EXCEEDED,
	SRNIC_PC_CQ_OVERRUNS,
	SRNIC_PC_LINK_DOWNED,
	SRNIC_PC_DUP_REQUESTS,		/* RC/UC requests that came twice */
	SRNIC_PC_ICRC_ERRORS,		/* requests dropped for a bad ICRC */
	SRNIC_PC_TX_PACKETS,		/* packets onto the wire */
	SRNIC_PC_TX_DROPPED,		/* not sent: no route, no memory, qdisc full */
	SRNIC_PC_RX_DROPPED,		/* from the wire, dropped unread */
	SRNIC_PC_SEQ_NAKS_SENT,		/* PSN sequence error NAKs sent */
	SRNIC_PC_IMPLIED_NAKS,		/* READ/atomic responses found lost */
	SRNIC_PC_TX_ZCOPY,		/* packets whose payload went as its pages */
	SRNIC_PC_RX_FRAGS,		/* taken with their payload in fragments */
	SRNIC_PC_RX_READ_STAGED,	/* READ responses not placed as they came */
	SRNIC_PC_RESP_LEN_ERRORS,	/* messages longer than their receive WQE */
	SRNIC_PC_RX_BAD_PKEY,		/* dropped: a P_Key not matching the port's */
	SRNIC_PC_NUM
};

struct srnic_port_counters {
	u64 v[SRNIC_PC_NUM];
};

/*
 * Per-QP counters (`rdma statistic qp`), each also a port counter.  The
 * requester's are written under the QP's lock; the responder's are atomic,
 * as UD and XRC targets hear from many requesters at once.
 */
enum srnic_qp_counter {
	SRNIC_QC_TX_MSGS,
	SRNIC_QC_TX_BYTES,
	SRNIC_QC_RNR_NAKS_RCVD,
	SRNIC_QC_NAKS_RCVD,
	SRNIC_QC_RETRANSMITS,
	SRNIC_QC_RNR_RETRIES,
	SRNIC_QC_REQ_NUM,
	SRNIC_QC_RX_MSGS = SRNIC_QC_REQ_NUM,
	SRNIC_QC_RX_BYTES,
	SRNIC_QC_RNR_NAKS_SENT,
	SRNIC_QC_NAKS_SENT,
	SRNIC_QC_NUM
};

struct srnic_qp_counters {
	u64 req[SRNIC_QC_REQ_NUM];
	atomic64_t resp[SRNIC_QC_NUM - SRNIC_QC_REQ_NUM];
	/* Bound to an rdma counter: the values at binding, and its list. */
	u64 base[SRNIC_QC_NUM];
	struct list_head node;
};

/*
 * Fault injection (srnic_fault.c, debugfs <dev>/fault/): what a test of an
 * RDMA application wants to see go wrong, seeded so a run can be repeated.
 */
enum srnic_fault_kind {
	SRNIC_FAULT_DROP,		/* a request is lost on its way */
	SRNIC_FAULT_RNR,		/* the responder answers RNR */
	SRNIC_FAULT_ODP,		/* an ODP page fault cannot be resolved */
	SRNIC_FAULT_CQ_OVERRUN,		/* a completion finds its CQ full */
	SRNIC_FAULT_ALLOC,		/* creating a QP, CQ, SRQ or MR fails */
	SRNIC_FAULT_DELAY,		/* a request leaves delay_us late */
	SRNIC_FAULT_DUPLICATE,		/* a request arrives twice */
	SRNIC_FAULT_CORRUPT,		/* a request fails the ICRC check */
	SRNIC_FAULT_ODP_BUSY,		/* an ODP fault finds its range changing */
	SRNIC_FAULT_ODP_SLOW,		/* a QP's ODP fault takes delay_us first */
	SRNIC_FAULT_RX_HOLD,		/* a packet waits, until turned off */
	SRNIC_FAULT_NUM
};

struct srnic_dev;

/* A debugfs file of a knob: its device and which field of which kind. */
struct srnic_fault_file {
	struct srnic_dev *sdev;
	unsigned long which;
};

#define SRNIC_FAULT_FILES	(2 + SRNIC_FAULT_NUM * 6)

struct srnic_faults {
	unsigned long armed;		/* kinds whose probability is set */
	spinlock_t lock;		/* the knobs' state and the generator */
	struct rnd_state rnd;
	u64 seed;
	u32 delay_us;			/* how late a delayed request leaves */
	struct srnic_fault_knob knob[SRNIC_FAULT_NUM];
	struct srnic_fault_file file[SRNIC_FAULT_FILES];
	unsigned int nfiles;
};

struct srnic_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct list_head dev_list;	/* srnic_devices, see srnic_main.c */
	struct net_device *ndev;	/* held by the core (ib_device_set_netdev) */

	/* What query_device reports: the core zeroes ibdev.attrs first. */
	struct ib_device_attr attr;

	/* Last port state announced with an async event; under RTNL. */
	enum ib_port_state port_state;

	/*
	 * Connections begun on the wire, the responder's and the
	 * requester's (srnic_net_resp_forget, srnic_net_req_begin): a packet
	 * taken from the netdev before its QP's began is not for it.  64
	 * bits: a process that connects in a loop never wraps it for others.
	 */
	atomic64_t rx_gen;

	/* Engine status page, mapped read-only into every context. */
	struct page *status_page;

	atomic_t num_ucontext;
	atomic_t num_pd;
	struct ida pd_ida;

	/* Pages pinned for user memory (MRs, rings, doorbell records). */
	atomic64_t pinned_pages;

	struct srnic_mr_table mrt;
	/* UD multicast groups (srnic_mcast.c): RCU list, writers hold the lock. */
	struct mutex mcast_lock;
	struct list_head mcgs;
	u32 num_mcg;
	/* What SRNIC_LOCAL_DMA_LKEY names: kernel memory (srnic_mr.dma). */
	struct srnic_mr dma_mr;
	atomic64_t dm_used;	/* bytes of device memory allocated */

	/* On-demand paging counters (debugfs "odp"). */
	struct srnic_odp_stats {
		atomic64_t page_faults, pages_faulted;
		atomic64_t invalidations, pages_invalidated;
		atomic64_t prefetches, pages_prefetched;
		atomic64_t children;	/* implicit MRs' chunks, now */
		atomic64_t busy_retries; /* faults gone again (-EBUSY) */
	} odp_stats;

	/* Queue numbers: QPN 0 and 1 are reserved by the IB spec. */
	struct xarray qps;	/* qpn -> struct srnic_qp * */
	u32 next_qpn;
	struct xarray cqs;	/* cqn -> struct srnic_cq * */
	u32 next_cqn;
	struct xarray srqs;	/* srqn -> struct srnic_srq * */
	u32 next_srqn;
	atomic_t num_ah;

	struct dentry *debugfs;	/* /sys/kernel/debug/srnic/<name> */

	struct srnic_sched sched;
	u32 id;				/* in the host-wide device registry */

	struct srnic_port_counters __percpu *pcnt;
	u64 __percpu *cq_events;	/* completion events raised, per CPU */
	struct srnic_faults faults;
	/*
	 * rdma counters (srnic_stats.c): id -> struct srnic_qp_counter_set,
	 * and what all of them have counted of QPs since unbound.  Under
	 * @counter_lock, which nests inside the core's counter->lock.
	 */
	struct xarray counters;
	struct mutex counter_lock;
	u64 counted[SRNIC_QC_NUM];

	/* Raw packet steering (srnic_raw.c). */
	struct mutex flow_lock;		/* writers of @flows */
	struct list_head flows;		/* struct srnic_flow by priority, RCU */
	struct ida wq_ida;		/* receive WQ numbers */
	atomic_t next_ind_tbl;
	struct srnic_raw_stats {
		atomic64_t tx, tx_dropped;	/* sent on the netdev, or not */
		atomic64_t delivered;		/* frames placed in a receive WQE */
		atomic64_t no_flow;		/* matched no flow: dropped */
		atomic64_t no_wqe;		/* flow matched, nothing posted */
	} raw_stats;
};

enum srnic_mmap_type {
	SRNIC_MMAP_UAR,		/* context-private doorbell page, writable */
	SRNIC_MMAP_STATUS,	/* device engine status page, read-only */
	SRNIC_MMAP_DM,		/* device memory, 2^order pages, writable */
};

struct srnic_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	enum srnic_mmap_type type;
	struct page *page;
	unsigned int order;
	bool owns_page;		/* freed with the entry (UAR, DM) or not */
	/*
	 * Device memory stays charged to its device's budget until its pages
	 * are freed, i.e. until the last mapping of them goes.
	 */
	atomic64_t *charged_to;
	u64 charge;
};

/*
 * One UAR page of a context: which of its doorbell slots are taken (under
 * the context's uar_lock), and the QP each slot names, read by the engine
 * inside srnic_engine_srcu (srnic_uar.c).
 */
struct srnic_uar {
	struct srnic_mmap_entry *entry;
	u64 mmap_offset;
	struct srnic_uar_summary *summary;	/* user-writable */
	DECLARE_BITMAP(used, SRNIC_DBS_PER_UAR);
	struct srnic_qp *qp[SRNIC_DBS_PER_UAR];
};

/* A context's bell page for one engine thread, on that thread's list. */
struct srnic_bell_page {
	struct list_head node;		/* srnic_thread.bells, SRCU */
	struct srnic_ucontext *suc;
	struct srnic_mmap_entry *entry;
	u64 mmap_offset;
	struct srnic_bells *kva;	/* user-writable */
};

struct srnic_ucontext {
	struct ib_ucontext ibuc;
	struct srnic_mmap_entry *status;
	struct mutex uar_lock;		/* uars, bitmaps, bells[] */
	unsigned int num_uars;		/* written under it, read with acquire */
	unsigned int uar_hint;		/* every page below has no free slot */
	struct xarray uars;		/* index -> struct srnic_uar */
	struct srnic_bell_page *bells[SRNIC_MAX_ENGINES];
};

/* A queue's doorbell register: a slot of one of its context's UAR pages. */
struct srnic_db_ref {
	struct srnic_ucontext *suc;
	u16 uar;
	u16 slot;
	struct srnic_db_slot *kva;	/* user-writable: read with READ_ONCE */
};

struct srnic_xrcd {
	struct ib_xrcd ibxrcd;
};

struct srnic_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct srnic_cq {
	struct ib_cq ibcq;
	u32 cqn;
	spinlock_t lock;		/* ring, producer, arm: engines, resize */
	struct srnic_umem ring;		/* 1 << log_entries struct srnic_cqe */
	struct srnic_umem db;		/* struct srnic_cq_db */
	u32 log_entries;
	u32 producer;			/* kernel-owned, free running */
	u32 consumer_seen;		/* db->consumer as last read */
	u32 fired_arm;			/* last arm word that raised an event */
	bool overrun;			/* an entry was lost: CQ in error */
	bool timestamp;			/* CQEs carry the completion time */
	struct srnic_db_ref dbr;	/* arm doorbell */
	/*
	 * A kernel consumer's CQ (ring.kernel, srnic_kcq.c): its pollers
	 * and arming take @kpoll_lock, never @lock, as they may run in
	 * interrupt context while an engine thread holds @lock.
	 */
	spinlock_t kpoll_lock;
	u32 arm_seq;
	/*
	 * Its completion events are raised on the CPU of its comp_vector, as
	 * that vector's interrupt would be on a NIC: by @event, a function
	 * call there in hard interrupt context, @event_pending while it is
	 * on its way (srnic_comp.c).
	 */
	call_single_data_t event;
	int event_cpu;
	atomic_t event_pending;
};

/* A work queue in user memory: SQ, RQ or SRQ ring. */
struct srnic_wq {
	struct srnic_umem ring;
	u32 log_entries;
	u32 log_stride;
};

/*
 * Locking: @lock (mutex) serialises modify_qp with the owning engine's send
 * processing; @rq_lock (spinlock) guards the receive side, which engines of
 * any srnic device consume.  @ref pins the QP for an engine that found it
 * (srnic_qp_get/put); destroy waits until every such reference is gone.
 */
/*
 * An RC or UC QP whose peer is across the wire (srnic_net_req.c,
 * srnic_net_resp.c).  The requester sends a piece of its message and waits
 * for the answer (stop and wait, a piece of SRNIC_PIECE bytes at a time);
 * the WQE stays in the user ring meanwhile and is fetched again for the
 * answer or a retransmission.  READ data are placed as they come.
 */
/*
 * A piece an RC requester sent ahead on the wire, and the answer that came
 * for it before it reached the head (a NAK naming one of its PSNs).
 */
struct srnic_wire_piece {
	u32 idx;			/* its WQE's index in the send queue */
	u64 off;			/* its offset in the message */
	u32 len;
	u8 op;
	u32 first, last;		/* its PSNs */
	unsigned long sent;		/* jiffies */
	bool answered;
	u8 ans;				/* enum srnic_resp */
	u32 nak_psn;
	u32 rnr_usec;
	/*
	 * A READ: its stage, the next response's PSN, the bytes that came,
	 * the first of them that went to the stage (@len: none did).
	 */
	u8 stage;
	u32 rd_next;
	u32 rd_bytes;
	u32 rd_staged;
	u64 orig;			/* an atomic's original value */
	/* Counted in its thread's window (wire_ahead) until known received. */
	bool charged;
};

/* A READ or atomic the wire responder executed (SRNIC_MAX_QP_RD_ATOM kept). */
struct srnic_wire_res {
	bool valid;
	bool read;
	u32 psn;			/* its first PSN */
	u32 npsn;			/* READ: its response PSNs */
	u64 va;				/* READ: what it asked for */
	u32 rkey;
	u32 len;
	u64 orig;			/* atomic: the original value */
	bool empty;			/* ATOMIC WRITE, FLUSH: an empty READ response */
};

/*
 * A tag matching rendezvous from across the wire: the receiving QP reads
 * the RVH's range into the tag's buffer itself, an RDMA READ on its own
 * send PSNs, then sends the sender a FIN.  The user ring holds no WQE for
 * either, so the QP keeps them (struct srnic_wire_qp: rndv).
 */
struct srnic_rndv {
	u64 raddr;			/* the RVH: the sender's buffer */
	u32 rkey, len;
	struct srnic_wqe_data sge;	/* the tag's buffer, in the SRQ's PD */
	u8 num_sge;			/* ... or none */
	u64 wr_id;			/* the tag's recv_wr_id */
	bool solicited;
	bool read_done;			/* its data came: the FIN goes */
	u8 fin[SRNIC_TMH_SIZE];
};

struct srnic_zc_ring;

struct srnic_wire_qp {
	/* The path, set at RTR. */
	u8 dgid[16];
	u8 hop_limit, traffic_class;
	u32 flow_label;
	u32 mtu;			/* path MTU, bytes of payload per packet */
	u16 sport;
	/* The route to @dgid, per CPU: found once, not per packet. */
	struct dst_cache route;
	/* RC: its zero-copy packets out (srnic_zc.c), from RTS. */
	struct srnic_zc_ring *zc;
	/* Requester, under the QP's lock. */
	u32 psn;			/* the next PSN to send */
	/*
	 * The PSN after the furthest ever sent: go-back-N forgets what
	 * went after a piece (@psn goes back), but the responder may have
	 * it, and its ACKs up to here are cumulative, as they always are.
	 */
	u32 psn_top;
	bool out;			/* a piece waits for its answer */
	u32 out_first, out_last;	/* ... its PSNs */
	u64 out_off;			/* ... its offset in its message */
	u32 out_len;			/* ... its length */
	u8 out_op;
	u32 out_idx;			/* ... its WQE's index */
	bool out_rndv;			/* ... or the rendezvous at @rndv_head */
	unsigned long out_until;	/* ... when it goes again */
	u32 sent_from;			/* ... the PSN it last went from */
	bool resume;			/* ... it goes again from @resume_psn */
	u32 resume_psn;
	bool tx_stalled;		/* ... the netdev refused its packet ... */
	u32 stall_psn;			/* ... of this PSN: the rest go from it */
	u32 nak_psn;			/* the PSN an RNR or sequence NAK named */
	u32 got;			/* ... the furthest one named so far */
	u8 backoff;			/* timeouts without progress, in a row */
	/*
	 * A FLUSH goes with the spec's ICRC or rxe's (srnic_icrc.c): the
	 * form its peer last answered (@flush_rxe), the other one every
	 * second time it goes again (@out_tries), so either peer answers.
	 */
	u8 out_tries;			/* the head piece's transmissions */
	bool out_rxe_form;		/* ... the last in rxe's form */
	bool flush_rxe;
	/*
	 * Its timer ran out with packets queued for the QP's thread: it is
	 * believed once the thread has taken them (@expired_mark).
	 */
	bool expired;
	unsigned long expired_mark;
	/* The answer, written by the receive path: under @lock. */
	spinlock_t lock;
	u64 ans_gen;			/* the device's rx_gen at RTS */
	bool answered;
	u8 ans;				/* enum srnic_resp */
	u32 rnr_usec;
	u64 orig;			/* atomics: the original value */
	u32 rd_next;			/* READ: the next response's PSN */
	u32 rd_bytes;			/* ... the bytes that came */
	u32 rd_staged;			/* ... from here on, staged */
	u8 out_stage;			/* ... in this stage */
	/*
	 * SRNIC_PIECE bytes each, RC only: stage 0 from RTR, more at RTS
	 * for max_rd_atomic (@nstages); a READ's, the head's or one ahead.
	 * READ data go straight to the WQE's (or tag's) buffers; a stage
	 * holds only what could not be placed as it came
	 * (srnic_req_read_place).
	 */
	u8 *stage[SRNIC_WIRE_READS];
	u8 nstages;
	/*
	 * The pieces after @out's, sent ahead of its answer (READs and
	 * atomics within max_rd_atomic, none with FENCE past them): a ring of
	 * SRNIC_WIRE_WINDOW, RC only, oldest first; where the next goes
	 * from (@next_idx, @next_off); @una, the oldest PSN not known to be
	 * received.  Under @lock.
	 */
	struct srnic_wire_piece *ahead;
	u8 ahead_head, ahead_n;		/* SRNIC_WIRE_WINDOW at most */
	u32 ahead_bytes;
	u32 next_idx;
	u64 next_off;
	u32 una;
	bool tx_full;			/* the netdev refused a piece ahead */
	/*
	 * Responder, run by the QP's engine thread under @rx_lock, a packet
	 * or a READ's visit at a time; modify_qp takes it to start the
	 * responder anew (srnic_net_resp_forget), so a reset never lands
	 * inside a visit and nothing of the old connection goes on after it.
	 */
	spinlock_t rx_lock;
	u64 rx_gen;			/* the device's, at the last forget */
	u32 epsn;			/* the PSN expected next */
	u32 msn;			/* messages completed */
	bool nak_sent;			/* a sequence NAK for @epsn went */
	/* A success ACK held back (srnic_wresp_ack_later): its PSN and MSN. */
	bool ack_held;
	u32 ack_psn, ack_msn;
	u16 rx_kind;			/* SRNIC_OPF_SEND/WRITE of the message in progress */
	u64 rx_off;			/* ... the bytes it placed */
	u64 rx_len;			/* ... WRITE: its length, from the RETH */
	u64 rx_va;
	u32 rx_rkey;
	/* XRC: the SRQ the request in hand names (srnic_net_resp_rx). */
	struct srnic_srq *rx_srq;
	/* The last READs and atomics, for their duplicates: a ring, RC only. */
	struct srnic_wire_res *res;
	u8 res_next;
	/*
	 * The READs and atomics received and not answered, for the spec's
	 * "too many" (srnic_net_resp_hold): the READ going out unless it is
	 * a replay (@rd_counted), and those held in sequence behind it
	 * (@held_owed; the next in sequence has @held_psn).  @rd_excess: the
	 * request in hand came beyond the responder resources.
	 */
	bool rd_counted;
	bool rd_excess;
	u32 held_owed;
	u32 held_psn;
	/*
	 * The READ whose responses go out, SRNIC_VISIT_BYTES per visit of
	 * the thread (QP marked SRNIC_QP_READING); the QP's request packets
	 * that came meanwhile wait in @held, in order.
	 */
	struct srnic_wire_read {
		bool active;
		u32 psn;		/* ... of its first response */
		u64 va;
		u32 rkey;
		u32 len;
		u32 off;		/* ... bytes sent so far */
		u32 msn;		/* ... in its last response's AETH */
		u32 srqn;		/* ... XRC: the SRQ its request named */
		/* ... the netdev's queue refused one: the rest go on then */
		unsigned long until;
		unsigned long stalled;	/* ... since then no packet went */
	} rd;
	struct sk_buff_head held;
	/*
	 * Rendezvous the responder matched (srnic_tm.c), for the requester
	 * to read and FIN (srnic_req.c): a ring, filled and emptied under
	 * @lock; @rndv_on (the QP's lock) while the head's runs.
	 */
	struct srnic_rndv rndv[SRNIC_WIRE_READS];
	u32 rndv_head, rndv_tail;
	bool rndv_on;
};

/*
 * A tag matching message's receive: its completion's opcode (if not
 * RECV) and, for a matched tag, the TMH's tag and app context and the
 * bytes not placed (the TMH).  A message from the wire comes a packet at
 * a time: its first piece finds these, the QP holds them for the others.
 */
struct srnic_tm_piece {
	u64 tag;
	u32 priv;
	u8 wc;
	u8 skip;
};

struct srnic_qp {
	struct ib_qp ibqp;
	u32 qpn;
	refcount_t ref;
	struct completion drained;
	struct mutex lock;		/* attr, state changes, SQ processing */
	spinlock_t rq_lock;
	/* UD: a datagram's receive, from its WQE taken to its completion. */
	spinlock_t recv_lock;
	int state;			/* enum ib_qp_state, READ_ONCE */
	u32 sq_cons;			/* next send WQE to execute */
	u32 rq_cons;			/* next receive WQE to consume */
	/* RNR: when the blocked send may be retried, and retries left. */
	unsigned long rnr_until;
	bool rnr_wait;
	u8 rnr_left;
	u8 retry_left;
	bool in_progress;		/* the WQE at sq_cons was started */
	/*
	 * Its pieces: bytes delivered so far, and the length and opcode it
	 * had when its first piece left (a WQE rewritten meanwhile fails).
	 */
	u64 msg_off;
	u64 msg_len;
	u8 msg_opcode;
	bool delayed;			/* ... and held by an injected delay */
	u32 wire_psn;			/* UD: PSN of the next datagram sent */
	struct srnic_wire_qp w;		/* RC/UC across the wire */
	bool last_wqe_sent;		/* IB_EVENT_QP_LAST_WQE_REACHED raised */
	bool block_mcast_lb;		/* UD: its multicasts never loop back to it */
	u32 visits;
	/*
	 * On its thread's run list (srnic_qp_ready), under the thread's
	 * run_lock; @gone once destroy began: it is made ready no more.
	 */
	struct list_head run_node;
	bool queued;
	bool gone;
	/*
	 * On its thread's hot list, under run_lock; @hot_seen the jiffy it
	 * last had work.  @rung and @rung_bit: its doorbell slot's mark
	 * (user QPs only; the page lives as long as the context).
	 */
	struct list_head hot_node;
	bool hot;
	unsigned long hot_seen;
	u64 *rung;
	u64 rung_bit;
	/* The transport its requests take (srnic_transport.h), set at RTR. */
	const struct srnic_transport *xport;
	int peer_dev;			/* RC/UC: device of the peer, or -1 */
	/*
	 * The connected peer as last found (srnic_loop_peer), unreferenced:
	 * good while the peer generation is @peer_cache_gen, and only inside
	 * an engine batch's SRCU section.  Under @lock.
	 */
	struct srnic_qp *peer_cache;
	u32 peer_cache_gen;
	/* The MRs its send WQEs named last (struct srnic_mr_cache), under @lock. */
	struct srnic_mr_cache lkey_cache, rkey_cache;
	u8 sgid[16];			/* our GID (from the path's sgid_index) */
	struct srnic_wq sq;
	struct srnic_wq rq;		/* unused with an SRQ */
	struct srnic_umem db;		/* struct srnic_qp_db */
	struct srnic_db_ref dbr;	/* send doorbell */
	/* A kernel consumer's QP (db.kernel): posting, in any context. */
	spinlock_t kpost_lock;
	struct ib_qp_cap cap;		/* what the queue really holds */
	struct ib_qp_attr attr;		/* current attributes (query_qp) */
	bool sq_sig_all;

	/*
	 * ODP: the WQE at sq_cons waits for @fault, resolved by @fault_work
	 * (which clears @fault_wait); @fault_err is its outcome.
	 */
	bool fault_wait;
	int fault_err;
	struct srnic_fault fault;
	struct work_struct fault_work;
	/*
	 * A receive WQE taken for a message whose buffer faulted: the next
	 * message to this QP uses it first.  Under @rq_lock.
	 */
	void *held_rwqe;
	bool rwqe_held;
	u32 held_max_sge;
	u32 held_srqn;			/* XRC: the SRQ it came from */
	struct srnic_tm_piece held_tm;	/* its message's tag matching */
	/* RSS raw packet QP: the hash; its queues are the table's WQs. */
	struct srnic_rss *rss;
	struct srnic_qp_counters cnt;
};

struct srnic_rss {
	u64 fields;			/* IB_RX_HASH_* */
	u8 key[SRNIC_RSS_KEY_LEN];
};

/* A receive WQ (RSS): a receive ring in user memory, like an SRQ's. */
struct srnic_rwq {
	struct ib_wq ibwq;
	spinlock_t lock;		/* consumption, state */
	int state;			/* enum ib_wq_state */
	u32 cons;
	struct srnic_wq wq;
	struct srnic_umem db;		/* struct srnic_srq_db */
	u32 max_sge;
};

struct srnic_ind_tbl {
	struct ib_rwq_ind_table ibtbl;
};

/* A steering rule: what a frame must match to reach @qp. */
struct srnic_flow {
	struct ib_flow ibflow;
	struct list_head list;		/* srnic_dev.flows */
	struct srnic_qp *qp;		/* the core holds it while we exist */
	u16 priority;
	u8 layers;			/* SRNIC_FLOW_* present */
	struct ib_flow_eth_filter eth, eth_mask;
	struct ib_flow_ipv4_filter ip4, ip4_mask;
	struct ib_flow_ipv6_filter ip6, ip6_mask;
	struct ib_flow_tcp_udp_filter l4, l4_mask;
	struct rcu_head rcu;
};

/* A tag list entry of a TM SRQ (srnic_tm.c). */
enum srnic_tag_state {
	SRNIC_TAG_FREE,
	SRNIC_TAG_POSTED,		/* matches incoming messages */
	SRNIC_TAG_BUSY,			/* matched: a message is being placed */
};

struct srnic_tag {
	u64 tag, mask, wr_id;
	u64 seq;			/* posting order: the oldest match wins */
	struct srnic_wqe_data sge;
	u8 num_sge;
	u8 state;			/* enum srnic_tag_state */
};

/*
 * Tag matching state.  @tags is NULL for other SRQs.  Matching is on while
 * software has accounted for every unexpected message (@sw_unexp, from
 * IBV_OPS_TM_SYNC, equals @hw_unexp).  Entries change under the SRQ's
 * rq_lock; operations take turns under its mutex.
 */
struct srnic_tm {
	struct srnic_tag *tags;
	u32 num_tags;
	u32 hw_unexp, sw_unexp;
	u64 next_seq;
};

struct srnic_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	/* XRC SRQs are found by number: engines hold a reference. */
	refcount_t ref;
	struct completion drained;
	spinlock_t rq_lock;		/* consumption by any engine */
	u32 cons;
	struct mutex lock;
	struct srnic_wq wq;
	struct srnic_umem db;		/* struct srnic_srq_db */
	u32 max_sge;
	u32 limit;			/* armed when non-zero */
	struct srnic_tm tm;
	/* A kernel consumer's SRQ (db.kernel): posting, in any context. */
	spinlock_t kpost_lock;
};

/* A message as the responder sees it (srnic_resp.c). */
struct srnic_msg {
	u8 opcode;			/* IB_UVERBS_WR_* of the requester */
	bool has_imm;
	bool has_inv;			/* SEND_WITH_INV: imm is the rkey */
	bool solicited;
	bool fence;			/* waits for the READs and atomics before it */
	u32 imm;			/* network order, or rkey to invalidate */
	u64 len;			/* the whole message */
	/*
	 * The piece this request carries: bytes [off, off + plen) of the
	 * message.  A message longer than SRNIC_PIECE goes in pieces, one
	 * request each, so that one QP's large message cannot hold the
	 * engine from other QPs (srnic_req.c).
	 */
	u64 off, plen;
	/*
	 * The message offset of @payload's first byte: 0 when it holds the
	 * whole message (the loopback), @off when only this piece (a packet
	 * from the wire).
	 */
	u64 pbase;
	bool whole;			/* set by a responder that took it all */
	/*
	 * The device's own message (a tag matching FIN): it takes a fresh
	 * receive WQE, never the one held for another message's pieces.
	 */
	bool fresh_wqe;
	/* The requester's own READ or FIN of a rendezvous (struct srnic_rndv). */
	bool rndv;
	const struct srnic_sg *payload;	/* SEND, WRITE */
	u32 src_qpn;
	int src_dev;			/* the requester's device (registry id) */
	u32 dqpn, qkey;			/* UD: the address vector's */
	u32 xrc_srqn;			/* XRC: the target's SRQ */
	u32 rkey;			/* RDMA, atomics */
	u64 raddr;
	u64 compare_add;
	u64 swap;
	/* UD: what goes into the receiver's GRH */
	struct srnic_srq *xrc_srq;	/* XRC: the SRQ the message names */
	const u8 *sgid;
	const u8 *dgid;
	/*
	 * Set by the loopback transport: the sending QP, which a tag
	 * matching rendezvous reads back from (a wire transport's RDMA READ),
	 * and the connection's cache of the keys its requests name.
	 */
	struct srnic_qp *src;
	struct srnic_mr_cache *rkey_cache;
	/* Tag matching: the receive completion's opcode, a match's TMH. */
	struct srnic_tm_piece tm;
	bool tm_unexp;			/* counts as an unexpected message */
	bool tm_fin;			/* rendezvous done: FIN to @src */
	u64 tm_fin_tag;			/* big endian, as in the TMH */
	u8 hop_limit;
	u8 traffic_class;
	u32 flow_label;
	/* FLUSH: the remote range's length (rkey, raddr), type and level. */
	u32 flush_len;
	u8 flush_type;
	u8 flush_level;
};

/*
 * Owner bit of the CQE with free-running index @n in a ring of 1 << log
 * entries: 1 on the first pass, 0 on the second, and so on, so that a
 * zeroed ring holds no valid entry.
 */
static inline u8 srnic_cqe_owner(u32 n, u32 log)
{
	return ((n >> log) & 1) ^ 1;
}

/* The atomics, ATOMIC WRITE included: one 8-byte operation, one packet. */
static inline bool srnic_opcode_is_atomic(u8 op)
{
	return op == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD ||
	       op == SRNIC_WR_ATOMIC_WRITE;
}

/*
 * ATOMIC WRITE and FLUSH: no local data (the WQE carries what the request
 * needs), and the responder answers with an empty READ RESPONSE, as rxe
 * does, from its responder resources.
 */
static inline bool srnic_opcode_remote_only(u8 op)
{
	return op == SRNIC_WR_ATOMIC_WRITE || op == SRNIC_WR_FLUSH;
}

/*
 * A FLUSH's FETH values any responder could carry out: a placement type of
 * global visibility, persistence or both, a level of a range or the whole
 * region.  Checked where the WQE is read and where the packet arrives.
 */
static inline bool srnic_flush_valid(u8 type, u8 level)
{
	return type && !(type & ~(SRNIC_FLUSH_GLOBAL | SRNIC_FLUSH_PERSISTENT)) &&
	       level <= SRNIC_FLUSH_MR;
}

/* One request packet, one PSN, an answer of its own: atomics and FLUSH. */
static inline bool srnic_opcode_one_packet(u8 op)
{
	return srnic_opcode_is_atomic(op) || op == SRNIC_WR_FLUSH;
}

/* Whether the piece @m carries ends its message. */
static inline bool srnic_msg_last(const struct srnic_msg *m)
{
	return m->whole || m->off + m->plen >= m->len;
}

/* The responder's answer, as an RC requester would get it on the wire. */
enum srnic_resp {
	SRNIC_RESP_OK,
	SRNIC_RESP_RNR,			/* no receive WQE: RNR NAK */
	SRNIC_RESP_DROP,		/* destination not receiving: no answer */
	SRNIC_RESP_FAULT,		/* an ODP page must be faulted in first */
	SRNIC_RESP_NAK_INV,		/* invalid request */
	SRNIC_RESP_NAK_ACCESS,		/* remote access error */
	SRNIC_RESP_NAK_OP,		/* remote operational error */
	SRNIC_RESP_PENDING,		/* sent: the answer comes later (wire) */
};

/*
 * IB_WR_REG_MR, posted by kernel consumers only: the segment after the
 * control segment (where RDMA WQEs have their remote address).  The MR is
 * named by its index; what the registration sets was read from the ib_mr
 * when it was posted, as a NIC reads its WQE.
 */
#define SRNIC_WR_REG_MR		IB_WR_REG_MR
struct srnic_kwqe_reg {
	u64 iova;
	u64 length;
	u32 mr_index;
	u32 key;			/* the key it gets */
	u32 access;			/* IB_ACCESS_* */
	u32 page_shift;
};

struct srnic_ah {
	struct ib_ah ibah;
	struct srnic_av av;
};

static inline struct srnic_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct srnic_dev, ibdev);
}

static inline void srnic_count(struct srnic_dev *sdev,
			       enum srnic_port_counter c)
{
	this_cpu_inc(sdev->pcnt->v[c]);
}

static inline void srnic_count_n(struct srnic_dev *sdev,
				 enum srnic_port_counter c, u64 n)
{
	this_cpu_add(sdev->pcnt->v[c], n);
}

/* The requester's counters: under the QP's lock. */
static inline void srnic_qp_count(struct srnic_qp *qp, enum srnic_qp_counter c,
				  u64 n)
{
	WRITE_ONCE(qp->cnt.req[c], qp->cnt.req[c] + n);
}

/* The responder's: any engine, any requester. */
static inline void srnic_qp_count_resp(struct srnic_qp *qp,
				       enum srnic_qp_counter c, u64 n)
{
	atomic64_add(n, &qp->cnt.resp[c - SRNIC_QC_REQ_NUM]);
}

static inline struct srnic_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct srnic_ucontext, ibuc);
}

static inline struct srnic_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct srnic_pd, ibpd);
}

static inline struct srnic_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct srnic_cq, ibcq);
}

static inline struct srnic_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct srnic_qp, ibqp);
}

/*
 * The GSI QP (QP1, a kernel consumer's) is a UD QP with a fixed number and
 * Q_Key: every datagram path treats it as UD.
 */
static inline bool srnic_qpt_ud(enum ib_qp_type type)
{
	return type == IB_QPT_UD || type == IB_QPT_GSI;
}

/* The reliable connected services: acknowledged, READ and atomics. */
static inline bool srnic_qpt_acked(enum ib_qp_type type)
{
	return type == IB_QPT_RC || type == IB_QPT_XRC_INI ||
	       type == IB_QPT_XRC_TGT;
}

/*
 * The creation flags of @init, taken by @qp: UD QPs may block multicast
 * loopback to themselves, nothing else is supported.
 */
static inline int srnic_qp_create_flags(struct srnic_qp *qp,
					const struct ib_qp_init_attr *init)
{
	u32 ok = init->qp_type == IB_QPT_UD ?
		 IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK : 0;

	if (init->create_flags & ~ok)
		return -EOPNOTSUPP;
	qp->block_mcast_lb = init->create_flags &
			     IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK;
	return 0;
}

/* The send WQE header of a QP of @type (srnic_send_hdr takes the uverbs type). */
static inline u32 srnic_qpt_send_hdr(enum ib_qp_type type)
{
	return srnic_send_hdr(srnic_qpt_ud(type) ? IB_UVERBS_QPT_UD : type);
}

/* XRC target QPs have no send queue, receive queue or doorbell record. */
static inline bool srnic_qp_has_sq(const struct srnic_qp *qp)
{
	return qp->sq.ring.kva;
}

/* The states in which a QP's responder takes requests. */
static inline bool srnic_qp_receives(int state)
{
	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

static inline struct srnic_rwq *to_srwq(struct ib_wq *ibwq)
{
	return container_of(ibwq, struct srnic_rwq, ibwq);
}

static inline struct srnic_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct srnic_srq, ibsrq);
}

static inline struct srnic_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct srnic_ah, ibah);
}

static inline struct srnic_mmap_entry *
to_smmap(struct rdma_user_mmap_entry *rdma)
{
	return container_of(rdma, struct srnic_mmap_entry, rdma);
}

#define srnic_dbg(sdev, fmt, ...) ibdev_dbg(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define srnic_info(sdev, fmt, ...) ibdev_info(&(sdev)->ibdev, fmt, ##__VA_ARGS__)

#endif /* SRNIC_H */
