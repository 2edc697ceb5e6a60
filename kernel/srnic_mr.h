/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Memory regions, their MTT, and the mkey table (srnic_mr.c).
 *
 * An mkey (lkey == rkey) is (index << 8) | key byte: the index names a slot
 * of the per-device table, the key byte changes every time the slot is
 * reused, so a stale key does not reach a newer MR at the same index.
 *
 * The engine translates an SGE in three steps, none of which sleeps:
 *
 *	mr = srnic_mr_get(sdev, key);		   NULL: bad key
 *	err = srnic_mr_check(mr, pd, access, iova, len);
 *	... srnic_mr_kva() ...
 *	srnic_mr_put(mr);
 *
 * While the reference is held the MR's translation, PD and access flags do
 * not change and its pages stay pinned: deregistration and re-registration
 * first unpublish the MR, then wait for every reference to be dropped.
 */
#ifndef SRNIC_MR_H
#define SRNIC_MR_H

#include <linux/xarray.h>
#include <linux/llist.h>
#include <linux/workqueue.h>
#include <linux/kref.h>
#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <linux/srcu.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>

#include "srnic_mtt.h"

struct srnic_dev;
struct srnic_pd;

/*
 * Per-device mkey table: index -> MR, and the key byte of each index; and
 * the same for memory windows, whose indexes have SRNIC_MKEY_MW set so that
 * an rkey names a window or an MR by its top bit.
 */
struct srnic_mr_table {
	struct xarray xa;	/* index -> struct srnic_mr *, RCU-safe reads */
	/* Deregistered MRs whose memory waits for one shared grace period. */
	struct llist_head doomed;
	struct work_struct release_work;
	u8 *gen;		/* next key byte per index */
	struct xarray mw_xa;	/* index & ~SRNIC_MKEY_MW -> struct srnic_mw * */
	u8 *mw_gen;
};

/*
 * The block sizes of the MTT, as a real RNIC's would be: 4K, 2M and 1G
 * (query_device's page_size_cap reports the same set).
 */
#define SRNIC_MR_PGSZ_BITMAP \
	(((SZ_4K | SZ_2M | SZ_1G) & PAGE_MASK) | PAGE_SIZE)

/*
 * The device's local_dma_lkey (IBK_LOCAL_DMA_LKEY): index 0, which no MR
 * ever has, so a lookup in the table never finds it.  It names all kernel
 * memory, for local access from kernel PDs only (srnic_sge_mr).
 */
#define SRNIC_LOCAL_DMA_LKEY	0x000000ffU

#define SRNIC_MKEY_KEY_BITS	8
#define SRNIC_MKEY_KEY_MASK	((1U << SRNIC_MKEY_KEY_BITS) - 1)
#define srnic_mkey_index(key)	((key) >> SRNIC_MKEY_KEY_BITS)
#define SRNIC_MKEY_MW		(1U << 23)	/* in the index */
#define srnic_mkey_is_mw(key)	(srnic_mkey_index(key) & SRNIC_MKEY_MW)

/*
 * The MTT: one entry per block of 2^page_shift bytes, the kernel virtual
 * address of the block (soft devices use virtual DMA, so the pinned pages'
 * DMA addresses are their direct-map addresses, contiguous within a block).
 * iova maps to byte @offset of block 0.
 */
struct srnic_mtt {
	struct ib_umem *umem;
	void **blocks;
	unsigned long nblocks;
	unsigned long npages;	/* PAGE_SIZE pages pinned */
	unsigned int page_shift;
	unsigned int offset;
};

struct srnic_mr {
	struct ib_mr ibmr;
	u32 index;

	/* One reference while published, one per engine/debugfs user. */
	struct kref ref;
	struct completion drained;	/* ref reached zero */
	struct rcu_head rcu;
	struct llist_node doomed;	/* on mrt->doomed */

	/* Stable while a reference is held (see srnic_rereg_user_mr). */
	struct srnic_pd *pd;
	int access;			/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	struct srnic_mtt mtt;		/* pinned MRs */
	struct srnic_odp *odp;		/* on-demand paging MRs (srnic_odp.c) */
	/*
	 * A kernel PD's DMA MR (get_dma_mr): iova is the kernel address,
	 * as the core's virtual DMA gives it to kernel consumers.
	 */
	bool dma;
	/*
	 * A fast-registration MR (alloc_mr): its MTT holds up to @fr_max
	 * pages, filled by map_mr_sg; IB_WR_REG_MR makes it valid (iova,
	 * length, access, key), LOCAL_INV or a remote invalidation invalid
	 * (length and access 0).  Those change while engines may read the
	 * MR: its translation bounds every index by @fr_max.
	 */
	bool fr;
	u32 fr_max;
	u32 fr_shift;			/* page shift of the last map_mr_sg */
	/* The key lookups compare: the ib_mr's, which a ULP may change early. */
	u32 key;

	/*
	 * Windows bound to the MR (each holds a reference).  While any is,
	 * the MR can be neither deregistered nor re-registered; once either
	 * has begun (@mw_closed), no window can be bound to it.
	 */
	spinlock_t mw_lock;
	u32 num_mw;
	bool mw_closed;
};

/*
 * A memory window: a remote-access view of part of an MR, bound and
 * invalidated by work requests the engine executes.  Type 1 windows are
 * bound through ibv_bind_mw() and always valid (a zero-length bind makes
 * them grant nothing); type 2 windows (2B: tied to a QP and its PD) are
 * free until bound and free again once invalidated.
 */
struct srnic_mw {
	struct ib_mw ibmw;
	u32 index;			/* without SRNIC_MKEY_MW */

	spinlock_t lock;		/* the fields below */
	u32 rkey;
	struct srnic_mr *mr;		/* referenced; NULL while free/unbound */
	u32 qpn;			/* type 2: the QP it was bound through */
	int access;			/* IB_ACCESS_REMOTE_* */
	bool zero_based;
	u64 addr;			/* iova in the MR */
	u64 length;
};

static inline struct srnic_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct srnic_mw, ibmw);
}

static inline struct srnic_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct srnic_mr, ibmr);
}

/*
 * Access flags an MR may carry.  Optional flags (relaxed ordering) may be
 * ignored by definition and are not stored.  Atomic and MW-bind rights are
 * permissions only; the operations themselves are refused elsewhere.
 */
#define SRNIC_MR_ACCESS \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
	 IB_ACCESS_MW_BIND | IB_ACCESS_HUGETLB | IB_ACCESS_ON_DEMAND | \
	 SRNIC_ACCESS_FLUSH_GLOBAL)

struct srnic_mr *srnic_mr_get(struct srnic_dev *sdev, u32 key);
struct srnic_mr *srnic_mr_get_index(struct srnic_dev *sdev, u32 index,
				    u32 key, bool any_key);

/*
 * The MR a key named last time, kept by a QP for the keys its send WQEs
 * name (most name the same ones every time): a lookup in the mkey table
 * costs as much as the rest of a short WQE.  It holds no reference: it is
 * good while the MR generation is @gen, and only inside srnic_engine_srcu, as
 * an MR leaving the table bumps the generation, then waits for such
 * sections.  Used under its QP's lock.
 */
struct srnic_mr_cache {
	struct srnic_dev *sdev;
	struct srnic_mr *mr;
	u32 key;
	u32 gen;
};

/* Bumped whenever an MR leaves the table: see struct srnic_mr_cache. */
extern atomic_t srnic_mr_gen;

struct srnic_mr *srnic_mr_get_uncached(struct srnic_dev *sdev, u32 key,
				       struct srnic_mr_cache *cache);

/*
 * srnic_mr_get() through @cache (NULL: none).  Inside srnic_engine_srcu.  A
 * cached MR is returned without a reference (*@borrowed), good until the
 * caller leaves that SRCU section; a looked-up one with a reference.
 *
 * This and the two helpers after it are inline: they run for every SGE
 * of every WQE, and under TCG each call and return costs about as much as
 * their whole body (docs/bench.md, "fourth round").
 */
static inline struct srnic_mr *
srnic_mr_get_cached(struct srnic_dev *sdev, u32 key,
		    struct srnic_mr_cache *cache, bool *borrowed)
{
	*borrowed = false;
	if (!cache)
		return srnic_mr_get(sdev, key);
	if (cache->mr && cache->key == key && cache->sdev == sdev &&
	    cache->gen == (u32)atomic_read(&srnic_mr_gen)) {
		*borrowed = true;
		return cache->mr;
	}
	return srnic_mr_get_uncached(sdev, key, cache);
}

void srnic_mr_put(struct srnic_mr *mr);

/*
 * May @pd access [iova, iova + len) of @mr with the rights in @access
 * (IB_ACCESS_*; 0 for a local read, which every MR allows)?  Returns 0,
 * -EACCES (PD or rights) or -EFAULT (outside the MR).  Overflow-safe for
 * any iova and len.
 */
static inline int srnic_mr_check(struct srnic_mr *mr, struct srnic_pd *pd,
				 int access, u64 iova, u64 len)
{
	if (mr->pd != pd || (mr->access & access) != access)
		return -EACCES;
	if (!srnic_range_within(mr->iova, mr->length, iova, len))
		return -EFAULT;
	return 0;
}

void *srnic_odp_kva(struct srnic_mr *mr, u64 iova, size_t *contig);
void *srnic_mr_kva_kernel(struct srnic_mr *mr, u64 iova, size_t *contig);

/*
 * Kernel address of @iova in @mr, and in *@contig how many bytes from there
 * are contiguous (up to the end of its block or of the MR).  NULL if @iova
 * is outside the MR.
 */
static inline void *srnic_mr_kva(struct srnic_mr *mr, u64 iova, size_t *contig)
{
	const struct srnic_mtt *mtt = &mr->mtt;
	u64 idx, in_block;

	if (iova < mr->iova || iova - mr->iova >= mr->length)
		return NULL;
	if (mr->odp)
		return srnic_odp_kva(mr, iova, contig);
	if (unlikely(mr->dma || mr->fr))
		return srnic_mr_kva_kernel(mr, iova, contig);
	idx = srnic_mtt_block(mtt->page_shift, mtt->offset, iova - mr->iova,
			      &in_block);
	*contig = srnic_mtt_contig(mtt->page_shift, in_block,
				   mr->length - (iova - mr->iova));
	return mtt->blocks[idx] + in_block;
}

/*
 * On-demand paging (srnic_odp.c).  An ODP MR pins nothing: its translation
 * is the ODP umem's DMA list (kernel addresses, soft devices using virtual
 * DMA), filled by page faults resolved off the engine and emptied by the MMU
 * notifier.  The engine reads it only inside srnic_engine_srcu: the notifier
 * marks the MR, waits for that SRCU's readers, then unmaps, so no engine
 * access to a page outlives its invalidation.
 */
struct srnic_fault {
	struct srnic_mr *mr;		/* referenced while set */
	u64 iova;
	u64 len;
	bool write;
};

extern struct srcu_struct srnic_engine_srcu;

int srnic_odp_reg(struct srnic_dev *sdev, struct srnic_mr *mr, u64 start,
		  u64 length, u64 iova, int access);
void srnic_odp_dereg(struct srnic_mr *mr);
int srnic_odp_check(struct srnic_mr *mr, u64 iova, u64 len, bool write);
int srnic_odp_fault(struct srnic_mr *mr, u64 iova, u64 len, bool write,
		    bool prefetch);

/* Binding windows to an MR (srnic_mw.c); false if the MR is closing. */
bool srnic_mr_mw_hold(struct srnic_mr *mr);
void srnic_mr_mw_release(struct srnic_mr *mr);
/* Deregistration/re-registration begins: -EBUSY while windows are bound. */
int srnic_mr_mw_close(struct srnic_mr *mr);
void srnic_mr_mw_reopen(struct srnic_mr *mr);

/* Waits until every deregistered MR has returned its memory. */
void srnic_mr_flush_released(struct srnic_dev *sdev);

/* For debugfs: the first MR at an index >= *index, referenced. */
struct srnic_mr *srnic_mr_get_next(struct srnic_dev *sdev, u32 *index);

#endif /* SRNIC_MR_H */
