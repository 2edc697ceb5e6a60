// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions: pinning user memory (ibv_reg_mr), its MTT, the mkey table
 * and the translation the engine uses.  See srnic_mr.h for the model.
 */
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <rdma/iter.h>

#include "srnic_loc.h"

atomic_t srnic_mr_gen = ATOMIC_INIT(0);

/* After an MR left the table: no cached pointer to it survives this. */
static void srnic_mr_uncache(void)
{
	atomic_inc(&srnic_mr_gen);
	synchronize_srcu_expedited(&srnic_engine_srcu);
}

/*
 * srnic registers with dma_device == NULL, which relies on virtual DMA: the
 * core then stores each pinned page's kernel address as its DMA address.
 */
#if !IS_ENABLED(CONFIG_INFINIBAND_VIRT_DMA)
#error "srnic needs CONFIG_INFINIBAND_VIRT_DMA"
#endif

static void srnic_mr_release_work(struct work_struct *work);

int srnic_mr_table_init(struct srnic_dev *sdev)
{
	struct srnic_mr_table *mrt = &sdev->mrt;

	init_llist_head(&mrt->doomed);
	INIT_WORK(&mrt->release_work, srnic_mr_release_work);

	/* First, so that destroy always finds a valid (empty) table. */
	xa_init_flags(&mrt->xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&mrt->mw_xa, XA_FLAGS_ALLOC1);
	mrt->gen = kvzalloc(SRNIC_MAX_MR + 1, GFP_KERNEL);
	mrt->mw_gen = kvzalloc(SRNIC_MAX_MW + 1, GFP_KERNEL);
	return mrt->gen && mrt->mw_gen ? 0 : -ENOMEM;
}

void srnic_mr_table_destroy(struct srnic_dev *sdev)
{
	struct srnic_mr_table *mrt = &sdev->mrt;

	/* The core deregisters every MR before the device goes. */
	srnic_mr_flush_released(sdev);
	WARN_ON(!xa_empty(&mrt->xa));
	WARN_ON(!xa_empty(&mrt->mw_xa));
	xa_destroy(&mrt->xa);
	xa_destroy(&mrt->mw_xa);
	kvfree(mrt->gen);
	kvfree(mrt->mw_gen);
	mrt->gen = NULL;
	mrt->mw_gen = NULL;
}

/* The core checks most of this too (ib_check_mr_access); not every caller. */
static int srnic_mr_check_access(int access)
{
	if (access & ~(SRNIC_MR_ACCESS | IB_ACCESS_OPTIONAL))
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* Refused before anything is pinned: see srnic_mr_range_ok(). */
static int srnic_mr_check_range(u64 start, u64 length, u64 iova)
{
	return srnic_mr_range_ok(start, length, iova, SRNIC_MAX_MR_SIZE,
				 PAGE_SHIFT) ? 0 : -EINVAL;
}

static void srnic_mtt_free(struct srnic_dev *sdev, struct srnic_mtt *mtt)
{
	kvfree(mtt->blocks);
	if (mtt->umem) {
		ib_umem_release(mtt->umem);
		srnic_pinned_add(sdev, -(long)mtt->npages);
	}
	memset(mtt, 0, sizeof(*mtt));
}

/* Pins [start, start + length) and describes it as seen from @iova. */
static int srnic_mtt_build(struct srnic_dev *sdev, struct srnic_mtt *mtt,
			   u64 start, u64 length, u64 iova, int access)
{
	struct ib_block_iter biter;
	struct ib_umem *umem;
	unsigned long pgsz, n, i = 0;
	void **blocks;
	int err;

	umem = ib_umem_get(&sdev->ibdev, start, length, access);
	if (IS_ERR(umem))
		return PTR_ERR(umem);

	/*
	 * Largest block size for which iova and the pages' kernel addresses
	 * agree below the block size: huge pages give 2M (or 1G) blocks.
	 */
	pgsz = ib_umem_find_best_pgsz(umem, SRNIC_MR_PGSZ_BITMAP, iova);
	if (!pgsz) {
		err = -EINVAL;
		goto err_umem;
	}
	n = ib_umem_num_dma_blocks(umem, pgsz);
	blocks = kvcalloc(n, sizeof(*blocks), GFP_KERNEL);
	if (!blocks) {
		err = -ENOMEM;
		goto err_umem;
	}
	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		if (i == n)
			break;
		blocks[i++] = (void *)(uintptr_t)
			rdma_block_iter_dma_address(&biter);
		if (!(i % 4096))
			cond_resched();
	}
	if (i != n) {
		kvfree(blocks);
		err = -EFAULT;
		goto err_umem;
	}

	mtt->umem = umem;
	mtt->blocks = blocks;
	mtt->nblocks = n;
	mtt->page_shift = __ffs(pgsz);
	mtt->offset = iova & (pgsz - 1);
	mtt->npages = ib_umem_num_pages(umem);
	srnic_pinned_add(sdev, mtt->npages);
	return 0;

err_umem:
	ib_umem_release(umem);
	return err;
}

static void srnic_mr_release(struct kref *ref)
{
	complete(&container_of(ref, struct srnic_mr, ref)->drained);
}

/*
 * Drops the table's reference and waits for the others (engine, debugfs);
 * the MR must already be unreachable from the table.
 */
static void srnic_mr_drain(struct srnic_mr *mr)
{
	kref_put(&mr->ref, srnic_mr_release);
	wait_for_completion(&mr->drained);
}


struct ib_mr *srnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_mr_table *mrt = &sdev->mrt;
	struct srnic_mr *mr;
	int err;

	err = srnic_mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (srnic_should_fail(sdev, SRNIC_FAULT_ALLOC, 0))
		return ERR_PTR(-ENOMEM);
	/* An implicit ODP MR (start 0, length U64_MAX) covers everything. */
	if (!(access & IB_ACCESS_ON_DEMAND) || start || length != U64_MAX) {
		err = srnic_mr_check_range(start, length, iova);
		if (err)
			return ERR_PTR(err);
	}
	/* No driver data is defined; anything sent must be zero. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EOPNOTSUPP);
	if (!mrt->gen)
		return ERR_PTR(-ENOMEM);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	if (access & IB_ACCESS_ON_DEMAND) {
		err = srnic_odp_reg(sdev, mr, start, length, iova, access);
	} else {
		err = srnic_mtt_build(sdev, &mr->mtt, start, length, iova,
				      access);
		/* Pages of MRs deregistered a moment ago count until freed. */
		if (err == -ENOMEM && !llist_empty(&mrt->doomed)) {
			srnic_mr_flush_released(sdev);
			err = srnic_mtt_build(sdev, &mr->mtt, start, length,
					      iova, access);
		}
	}
	if (err)
		goto err_free;
	err = srnic_mr_publish(sdev, mr, ibpd, iova, length, access);
	if (err)
		goto err_mtt;
	return &mr->ibmr;

err_mtt:
	srnic_odp_dereg(mr);
	srnic_mtt_free(sdev, &mr->mtt);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/* An MR the kernel describes (no user memory, no ODP), not yet published. */
struct srnic_mr *srnic_mr_alloc_kernel(int access)
{
	struct srnic_mr *mr;
	int err;

	err = srnic_mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (access & IB_ACCESS_ON_DEMAND)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	return mr ?: ERR_PTR(-ENOMEM);
}

/*
 * An MR over kernel memory that is contiguous at @kva (device memory):
 * zero-based, one MTT block, nothing pinned.
 */
struct ib_mr *srnic_reg_kernel_mr(struct ib_pd *ibpd, void *kva, u64 length,
				  int access)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_mr *mr;
	int err;

	mr = srnic_mr_alloc_kernel(access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->mtt.blocks = kvcalloc(1, sizeof(*mr->mtt.blocks), GFP_KERNEL);
	if (!mr->mtt.blocks) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->mtt.blocks[0] = kva;
	mr->mtt.nblocks = 1;
	mr->mtt.page_shift = srnic_mtt_one_block_shift(length, PAGE_SHIFT);
	err = srnic_mr_publish(sdev, mr, ibpd, 0, length, access);
	if (err) {
		srnic_mtt_free(sdev, &mr->mtt);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/* Gives @mr an index and keys and makes it reachable by them. */
int srnic_mr_publish(struct srnic_dev *sdev, struct srnic_mr *mr,
			    struct ib_pd *ibpd, u64 iova, u64 length,
			    int access)
{
	struct srnic_mr_table *mrt = &sdev->mrt;
	u32 index;
	int err;

	/* Reserve the index; lookups find nothing there until the store. */
	err = xa_alloc(&mrt->xa, &index, NULL, XA_LIMIT(1, srnic_max_mr),
		       GFP_KERNEL);
	if (err)
		return err == -EBUSY ? -ENOMEM : err;
	mr->index = index;
	mr->ibmr.lkey = (index << SRNIC_MKEY_KEY_BITS) | mrt->gen[index];
	mr->ibmr.rkey = mr->ibmr.lkey;
	mr->key = mr->ibmr.lkey;
	if (!mr->odp)
		mr->ibmr.page_size = 1U << mr->mtt.page_shift;
	mr->pd = to_spd(ibpd);
	mr->access = access & SRNIC_MR_ACCESS;
	mr->iova = iova;
	mr->length = length;
	kref_init(&mr->ref);
	init_completion(&mr->drained);
	spin_lock_init(&mr->mw_lock);
	/* Replaces the reservation: cannot fail, publishes with release. */
	xa_store(&mrt->xa, index, mr, GFP_KERNEL);
	return 0;
}

/*
 * Changes the translation, PD and/or access flags in place: the keys, the
 * index and the ib_mr stay, so NULL is returned (the core's contract for an
 * in-place change).  Everything that can fail is done first; then the MR is
 * taken out of the table (its slot stays reserved), every reference is
 * waited for, the fields are swapped and the MR is published again.
 */
struct ib_mr *srnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibmr->device);
	struct srnic_mr_table *mrt = &sdev->mrt;
	struct srnic_mr *mr = to_smr(ibmr);
	struct srnic_mtt mtt = {};
	struct srnic_pd *pd = mr->pd;
	int err;

	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	/*
	 * ODP and device-memory MRs are not re-registered in place (nor is
	 * an MR made ODP).
	 */
	if (mr->odp || !mr->mtt.umem ||
	    ((flags & IB_MR_REREG_ACCESS) && (access & IB_ACCESS_ON_DEMAND)))
		return ERR_PTR(-EOPNOTSUPP);
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EOPNOTSUPP);

	if (flags & IB_MR_REREG_ACCESS) {
		err = srnic_mr_check_access(access);
		if (err)
			return ERR_PTR(err);
		/*
		 * Pages pinned without write may be shared copy-on-write
		 * with another process: writing them needs a new pinning,
		 * i.e. a new translation (as ib_umem_check_rereg() says).
		 */
		if (!(flags & IB_MR_REREG_TRANS) && ib_access_writable(access) &&
		    !mr->mtt.umem->writable)
			return ERR_PTR(-EACCES);
	} else {
		access = mr->access;
	}
	if (flags & IB_MR_REREG_PD)
		pd = to_spd(ibpd);
	if (flags & IB_MR_REREG_TRANS) {
		err = srnic_mr_check_range(start, length, iova);
		if (err)
			return ERR_PTR(err);
		err = srnic_mtt_build(sdev, &mtt, start, length, iova, access);
		if (err)
			return ERR_PTR(err);
	}

	/* Windows bound to the MR rely on what is about to change. */
	err = srnic_mr_mw_close(mr);
	if (err) {
		srnic_mtt_free(sdev, &mtt);
		return ERR_PTR(err);
	}
	/* The slot stays reserved (a zero entry), so the index is kept. */
	xa_cmpxchg(&mrt->xa, mr->index, mr, XA_ZERO_ENTRY, GFP_KERNEL);
	srnic_mr_uncache();
	/*
	 * A lookup that found the MR before it left the table may still try
	 * to take a reference; after a grace period none can, so reviving
	 * the reference count below is safe.
	 */
	synchronize_rcu();
	srnic_mr_drain(mr);

	mr->pd = pd;
	mr->access = access & SRNIC_MR_ACCESS;
	if (flags & IB_MR_REREG_TRANS) {
		swap(mr->mtt, mtt);
		mr->iova = iova;
		mr->length = length;
		mr->ibmr.page_size = 1U << mr->mtt.page_shift;
	}

	kref_init(&mr->ref);
	reinit_completion(&mr->drained);
	xa_store(&mrt->xa, mr->index, mr, GFP_KERNEL);
	srnic_mr_mw_reopen(mr);

	/* The old translation, if replaced; nobody can reach it now. */
	srnic_mtt_free(sdev, &mtt);
	return NULL;
}

/* Everything an MR out of the table and past a grace period still holds. */
static void srnic_mr_free(struct srnic_dev *sdev, struct srnic_mr *mr)
{
	srnic_mr_drain(mr);
	srnic_odp_dereg(mr);
	srnic_mtt_free(sdev, &mr->mtt);
	/* A lookup may still be looking at the MR under RCU. */
	kfree_rcu(mr, rcu);
}

/*
 * Frees, after one engine grace period shared by all of them, the MRs
 * deregistered since the last run: tearing down N MRs costs one grace
 * period per batch, not N.
 */
static void srnic_mr_release_work(struct work_struct *work)
{
	struct srnic_mr_table *mrt =
		container_of(work, struct srnic_mr_table, release_work);
	struct srnic_dev *sdev = container_of(mrt, struct srnic_dev, mrt);
	struct llist_node *batch = llist_del_all(&mrt->doomed);
	struct srnic_mr *mr, *next;

	if (!batch)
		return;
	synchronize_srcu(&srnic_engine_srcu);
	llist_for_each_entry_safe(mr, next, batch, doomed) {
		srnic_mr_free(sdev, mr);
		cond_resched();
	}
}

void srnic_mr_flush_released(struct srnic_dev *sdev)
{
	flush_work(&sdev->mrt.release_work);
}

/*
 * The MR leaves the table at once (no new lookup finds it, no cached
 * pointer is trusted again) and returns.  Its pages are released once every
 * engine section that may have found it is over, by srnic_mr_release_work.
 * Device memory is the exception: it goes with its DM as soon as this
 * returns, so such an MR waits for its grace period here.
 */
int srnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibmr->device);
	struct srnic_mr_table *mrt = &sdev->mrt;
	struct srnic_mr *mr = to_smr(ibmr);
	int err;

	err = srnic_mr_mw_close(mr);
	if (err)
		return err;
	/*
	 * The next MR at this index gets another key byte: for a
	 * fast-registration MR, past the last key the consumer gave it.
	 */
	if (mr->fr)
		mrt->gen[mr->index] = (u8)mr->ibmr.rkey + 1;
	else
		mrt->gen[mr->index]++;
	xa_erase(&mrt->xa, mr->index);
	atomic_inc(&srnic_mr_gen);
	if (!mr->mtt.umem && !mr->odp) {
		synchronize_srcu_expedited(&srnic_engine_srcu);
		srnic_mr_free(sdev, mr);
		return 0;
	}
	if (llist_add(&mr->doomed, &mrt->doomed))
		queue_work(system_unbound_wq, &mrt->release_work);
	return 0;
}

/*
 * srnic_mr_get_cached() when @cache does not hold @key: a lookup, which
 * @cache then holds.  The generation is read before the lookup, so an MR
 * leaving the table after it is looked up again next time.
 */
struct srnic_mr *srnic_mr_get_uncached(struct srnic_dev *sdev, u32 key,
				       struct srnic_mr_cache *cache)
{
	u32 gen = atomic_read(&srnic_mr_gen);
	struct srnic_mr *mr = srnic_mr_get(sdev, key);

	*cache = (struct srnic_mr_cache){
		.sdev = sdev, .mr = mr, .key = key, .gen = gen,
	};
	return mr;
}

/*
 * Returns the MR that @key names, referenced, or NULL.  Does not sleep;
 * callable from any context.
 */
/*
 * The MR at @index, referenced, if its key is @key (any key: @any_key, for
 * a fast registration that gives the MR its next key).
 */
struct srnic_mr *srnic_mr_get_index(struct srnic_dev *sdev, u32 index,
				    u32 key, bool any_key)
{
	XA_STATE(xas, &sdev->mrt.xa, index);
	struct srnic_mr *mr;

	/*
	 * xa_load() would enter a second RCU section of its own.  A reserved
	 * slot (index 0 of an ALLOC1 array, an index being registered or
	 * re-registered) holds XA_ZERO_ENTRY, which xas_retry() treats as
	 * "retry" without moving on: it reads as no MR, as xa_load() has it.
	 */
	rcu_read_lock();
	do {
		mr = xas_load(&xas);
		if (xa_is_zero(mr))
			mr = NULL;
	} while (xas_retry(&xas, mr));
	if (mr && ((!any_key && READ_ONCE(mr->key) != key) ||
		   !kref_get_unless_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

struct srnic_mr *srnic_mr_get(struct srnic_dev *sdev, u32 key)
{
	return srnic_mr_get_index(sdev, srnic_mkey_index(key), key, false);
}

void srnic_mr_put(struct srnic_mr *mr)
{
	kref_put(&mr->ref, srnic_mr_release);
}

struct srnic_mr *srnic_mr_get_next(struct srnic_dev *sdev, u32 *index)
{
	unsigned long i = *index;
	struct srnic_mr *mr;

	if (i > SRNIC_MAX_MR)
		return NULL;
	rcu_read_lock();
	for (mr = xa_find(&sdev->mrt.xa, &i, SRNIC_MAX_MR, XA_PRESENT); mr;
	     mr = xa_find_after(&sdev->mrt.xa, &i, SRNIC_MAX_MR, XA_PRESENT))
		if (kref_get_unless_zero(&mr->ref))
			break;
	rcu_read_unlock();
	if (mr)
		*index = i;
	return mr;
}
