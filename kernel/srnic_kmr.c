// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions of kernel consumers: a kernel PD's DMA MR, which its
 * local_dma_lkey names, and fast-registration MRs (alloc_mr, map_mr_sg,
 * IB_WR_REG_MR, LOCAL_INV, SEND_WITH_INV), which NVMe and NFS over RDMA
 * register their I/O buffers with.  Addresses are kernel virtual
 * addresses: with no DMA device, the core's "DMA addresses" are those.
 * Only kernel PDs have them, and no user QP, window or advise_mr can name
 * a kernel PD, so no user WQE reaches them.
 */
#include "srnic_loc.h"

/* The device's own DMA MR, outside the table: it lives as long as the device. */
void srnic_dma_mr_init(struct srnic_dev *sdev)
{
	struct srnic_mr *mr = &sdev->dma_mr;

	memset(mr, 0, sizeof(*mr));
	mr->dma = true;
	mr->access = IB_ACCESS_LOCAL_WRITE;
	mr->length = U64_MAX;
	mr->key = SRNIC_LOCAL_DMA_LKEY;
	kref_init(&mr->ref);
	init_completion(&mr->drained);
	spin_lock_init(&mr->mw_lock);
}

/*
 * A kernel PD's DMA MR with remote rights (ib_alloc_pd with
 * IB_PD_UNSAFE_GLOBAL_RKEY asks for one): in the table, as any MR.
 */
struct ib_mr *srnic_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_mr *mr;
	int err;

	if (ibpd->uobject)
		return ERR_PTR(-EOPNOTSUPP);
	/*
	 * The core asks for remote rights only, the local ones being the
	 * local_dma_lkey's; an MR that may be written remotely is written
	 * locally too, as the IB spec requires of its rights.
	 */
	if (access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC))
		access |= IB_ACCESS_LOCAL_WRITE;
	mr = srnic_mr_alloc_kernel(access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->dma = true;
	err = srnic_mr_publish(sdev, mr, ibpd, 0, U64_MAX, access);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/* Created invalid: no access, no length, until a REG_MR. */
struct ib_mr *srnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_mr *mr;
	int err;

	if (ibpd->uobject || type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > SRNIC_MAX_FR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = srnic_mr_alloc_kernel(0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->mtt.blocks = kvcalloc(max_num_sg, sizeof(*mr->mtt.blocks),
				  GFP_KERNEL);
	if (!mr->mtt.blocks) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->fr = true;
	mr->fr_max = max_num_sg;
	mr->mtt.page_shift = PAGE_SHIFT;
	err = srnic_mr_publish(sdev, mr, ibpd, 0, 0, 0);
	if (err) {
		kvfree(mr->mtt.blocks);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int srnic_fr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct srnic_mr *mr = to_smr(ibmr);

	if (mr->mtt.nblocks >= mr->fr_max)
		return -ENOMEM;
	WRITE_ONCE(mr->mtt.blocks[mr->mtt.nblocks],
		   (void *)(uintptr_t)addr);
	mr->mtt.nblocks++;
	return 0;
}

/*
 * The page list of the next registration.  The consumer maps an MR it has
 * invalidated, so no access is being translated through these entries;
 * one that still were would find pages the consumer gave, never an index
 * past the array.
 */
int srnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct srnic_mr *mr = to_smr(ibmr);

	mr->mtt.nblocks = 0;
	/* The pages' size: a registration must translate with this one. */
	if (!is_power_of_2(ibmr->page_size) || ibmr->page_size < PAGE_SIZE)
		return -EINVAL;
	mr->fr_shift = ilog2(ibmr->page_size);
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, srnic_fr_set_page);
}

/*
 * srnic_mr_kva() for the DMA MR (the address is the iova) and for
 * fast-registration MRs, whose fields a registration may be changing:
 * each is read once, and the page index is bounded by the array.
 */
void *srnic_mr_kva_kernel(struct srnic_mr *mr, u64 iova, size_t *contig)
{
	unsigned int shift = READ_ONCE(mr->mtt.page_shift);
	u64 left = READ_ONCE(mr->length) - (iova - READ_ONCE(mr->iova));
	u64 idx, in_block;
	void *block;

	if (mr->dma) {
		*contig = left;
		return (void *)(uintptr_t)iova;
	}
	idx = srnic_mtt_block(shift, READ_ONCE(mr->mtt.offset),
			      iova - READ_ONCE(mr->iova), &in_block);
	if (idx >= mr->fr_max || idx >= READ_ONCE(mr->mtt.nblocks))
		return NULL;
	block = READ_ONCE(mr->mtt.blocks[idx]);
	if (!block)
		return NULL;
	*contig = srnic_mtt_contig(shift, in_block, left);
	return block + in_block;
}

/* IB_WR_REG_MR, for @qp's engine: 0 or a negative errno. */
int srnic_fr_register(struct srnic_qp *qp, const struct srnic_kwqe_reg *reg)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	u64 pgsz = 1ULL << reg->page_shift;
	struct srnic_mr *mr;
	int err = -EINVAL;

	mr = srnic_mr_get_index(sdev, reg->mr_index, 0, true);
	if (!mr)
		return -EINVAL;
	if (mr->fr && mr->pd == to_spd(qp->ibqp.pd) &&
	    srnic_mkey_index(reg->key) == mr->index &&
	    reg->page_shift >= PAGE_SHIFT && reg->page_shift < 32 &&
	    reg->page_shift == mr->fr_shift &&
	    srnic_mtt_fits(mr->mtt.nblocks, reg->page_shift, reg->iova,
			   reg->length)) {
		WRITE_ONCE(mr->access, 0);
		WRITE_ONCE(mr->length, 0);
		/* Cached lookups of the old key are not trusted again. */
		atomic_inc(&srnic_mr_gen);
		WRITE_ONCE(mr->mtt.page_shift, reg->page_shift);
		WRITE_ONCE(mr->mtt.offset, reg->iova & (pgsz - 1));
		WRITE_ONCE(mr->iova, reg->iova);
		WRITE_ONCE(mr->key, reg->key);
		smp_wmb();
		WRITE_ONCE(mr->length, reg->length);
		WRITE_ONCE(mr->access, reg->access & SRNIC_MR_ACCESS);
		err = 0;
	}
	srnic_mr_put(mr);
	return err;
}

/* LOCAL_INV or a remote invalidation of the fast-registration MR @key names. */
static int srnic_fr_invalidate(struct srnic_qp *qp, u32 key)
{
	struct srnic_mr *mr = srnic_mr_get(to_sdev(qp->ibqp.device), key);
	int err = -EINVAL;

	if (!mr)
		return -EINVAL;
	if (mr->fr && mr->pd == to_spd(qp->ibqp.pd)) {
		WRITE_ONCE(mr->access, 0);
		WRITE_ONCE(mr->length, 0);
		atomic_inc(&srnic_mr_gen);
		err = 0;
	}
	srnic_mr_put(mr);
	return err;
}

/*
 * Invalidates what @key names: a type 2 window, or a fast-registration MR
 * of @qp's PD (LOCAL_INV posted to @qp, or @remote: a SEND_WITH_INV it
 * received).  0 or a negative errno.
 */
int srnic_invalidate(struct srnic_qp *qp, u32 key, bool remote)
{
	if (srnic_mkey_is_mw(key))
		return srnic_mw_invalidate(qp, key, remote);
	return srnic_fr_invalidate(qp, key);
}
