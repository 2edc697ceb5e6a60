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
 *	... srnic_mr_kva() / srnic_mr_copy() ...
 *	srnic_mr_put(mr);
 *
 * While the reference is held the MR's translation, PD and access flags do
 * not change and its pages stay pinned: deregistration and re-registration
 * first unpublish the MR, then wait for every reference to be dropped.
 */
#ifndef SRNIC_MR_H
#define SRNIC_MR_H

#include <linux/xarray.h>
#include <linux/kref.h>
#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>

struct srnic_dev;
struct srnic_pd;

/* Per-device mkey table: index -> MR, and the key byte of each index. */
struct srnic_mr_table {
	struct xarray xa;	/* index -> struct srnic_mr *, RCU-safe reads */
	u8 *gen;		/* next key byte per index */
};

#define SRNIC_MKEY_KEY_BITS	8
#define SRNIC_MKEY_KEY_MASK	((1U << SRNIC_MKEY_KEY_BITS) - 1)
#define srnic_mkey_index(key)	((key) >> SRNIC_MKEY_KEY_BITS)

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

	/* Stable while a reference is held (see srnic_rereg_user_mr). */
	struct srnic_pd *pd;
	int access;			/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	struct srnic_mtt mtt;
};

static inline struct srnic_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct srnic_mr, ibmr);
}

struct srnic_mr *srnic_mr_get(struct srnic_dev *sdev, u32 key);
void srnic_mr_put(struct srnic_mr *mr);
int srnic_mr_check(struct srnic_mr *mr, struct srnic_pd *pd, int access,
		   u64 iova, u64 len);
void *srnic_mr_kva(struct srnic_mr *mr, u64 iova, size_t *contig);
int srnic_mr_copy(struct srnic_mr *mr, u64 iova, void *buf, size_t len,
		  bool to_mr);

/* For debugfs: the first MR at an index >= *index, referenced. */
struct srnic_mr *srnic_mr_get_next(struct srnic_dev *sdev, u32 *index);

#endif /* SRNIC_MR_H */
