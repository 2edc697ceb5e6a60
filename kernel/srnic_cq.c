// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion queues: the CQE ring and the doorbell record live in user
 * memory, pinned here; the producer counter is the kernel's own, the
 * consumer counter in the doorbell record is the user's and untrusted.
 * Kernel consumers' CQs have the same layout in kernel memory (srnic_kcq.c).
 */
#include "srnic_loc.h"

#define SRNIC_CQ_MIN_LOG 1
#define SRNIC_CQ_MAX_LOG 22	/* SRNIC_MAX_CQE + 1 entries */

/*
 * Checks a create or resize request against the CQEs asked for; @unknown
 * holds the request's reserved or unknown flag bits.
 */
static int srnic_cq_check_req(u32 unknown, u32 log_entries, int cqe)
{
	if (unknown)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > SRNIC_MAX_CQE)
		return -EINVAL;
	if (log_entries < SRNIC_CQ_MIN_LOG || log_entries > SRNIC_CQ_MAX_LOG)
		return -EINVAL;
	/* One entry stays free, so a full ring is told from an empty one. */
	if ((1U << log_entries) - 1 < (u32)cqe)
		return -EINVAL;
	return 0;
}

static int srnic_cq_pin(struct srnic_dev *sdev, u64 addr, u32 log_entries,
			struct srnic_umem *ring)
{
	return srnic_umem_pin(sdev, addr, (size_t)SRNIC_CQE_SIZE << log_entries,
			      true, ring);
}

int srnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    SRNIC_CREATE_CQ_ARGS)
{
	struct ib_udata *udata = srnic_create_cq_udata();
	struct srnic_dev *sdev = to_sdev(ibcq->device);
	struct srnic_create_cq_resp resp = {};
	struct srnic_create_cq_req req;
	struct srnic_cq *cq = to_scq(ibcq);
	struct srnic_ucontext *suc;
	int err;

	if (srnic_should_fail(sdev, SRNIC_FAULT_ALLOC, 0))
		return -ENOMEM;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (!udata)
		return srnic_kcq_create(sdev, cq, attr);
	/* A user CQ's rings are the provider's: it must say where. */
	if (!udata->inlen)
		return -EOPNOTSUPP;
	/*
	 * The core passes TIMESTAMP_COMPLETION for a CQ created with
	 * completion timestamps; IGNORE_OVERRUN is not offered.
	 */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)
		return -EOPNOTSUPP;
	err = srnic_udata_in(udata, &req, sizeof(req));
	if (!err)
		err = srnic_cq_check_req(req.flags & ~SRNIC_CQ_FLAG_TIMESTAMP,
					 req.log_entries, attr->cqe);
	if (err)
		return err;
	if (req.db_addr % sizeof(struct srnic_cq_db))
		return -EINVAL;

	suc = rdma_udata_to_drv_context(udata, struct srnic_ucontext, ibuc);
	spin_lock_init(&cq->lock);
	srnic_cq_event_init(cq, attr->comp_vector);
	cq->log_entries = req.log_entries;
	cq->timestamp = (req.flags & SRNIC_CQ_FLAG_TIMESTAMP) ||
			(attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION);
	err = srnic_cq_pin(sdev, req.buf_addr, req.log_entries, &cq->ring);
	if (err)
		return err;
	err = srnic_umem_pin(sdev, req.db_addr, sizeof(struct srnic_cq_db),
			     false, &cq->db);
	if (err)
		goto err_ring;
	err = srnic_db_alloc(suc, &cq->dbr, &resp.db);
	if (err)
		goto err_db;
	err = xa_alloc_cyclic(&sdev->cqs, &cq->cqn, cq,
			      XA_LIMIT(1, SRNIC_MAX_CQ), &sdev->next_cqn,
			      GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_dbr;
	}

	ibcq->cqe = (1 << req.log_entries) - 1;
	resp.cqn = cq->cqn;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto err_xa;
	return 0;

err_xa:
	xa_erase(&sdev->cqs, cq->cqn);
err_dbr:
	srnic_db_free(&cq->dbr);
err_db:
	srnic_umem_release(sdev, &cq->db);
err_ring:
	srnic_umem_release(sdev, &cq->ring);
	return err;
}

int srnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibcq->device);
	struct srnic_cq *cq = to_scq(ibcq);

	xa_erase(&sdev->cqs, cq->cqn);
	/* No QP completes on it now (the core saw to it); an event may be on its way. */
	srnic_cq_event_sync(cq);
	srnic_db_free(&cq->dbr);
	srnic_umem_release(sdev, &cq->db);
	srnic_umem_release(sdev, &cq->ring);
	return 0;
}

/*
 * Moves the entries not yet polled into a new ring.  The consumer counter
 * comes from user memory: a value that does not describe a possible state
 * (more outstanding entries than the ring holds) is refused.
 */
int srnic_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibcq->device);
	struct srnic_resize_cq_resp resp = {};
	struct srnic_cq *cq = to_scq(ibcq);
	struct srnic_resize_cq_req req;
	struct srnic_umem ring, old;
	struct srnic_cqe *src, *dst;
	u32 consumer, pending, i, old_mask;
	struct srnic_cq_db *db;
	int err;

	if (!udata)
		return -EOPNOTSUPP;
	err = srnic_udata_in(udata, &req, sizeof(req));
	if (!err)
		err = srnic_cq_check_req(req.reserved, req.log_entries, cqe);
	if (err)
		return err;
	err = srnic_cq_pin(sdev, req.buf_addr, req.log_entries, &ring);
	if (err)
		return err;

	/* Completions of work already posted count as not yet polled. */
	srnic_engine_sync(sdev);
	db = cq->db.kva;
	spin_lock(&cq->lock);
	consumer = READ_ONCE(db->consumer);
	pending = cq->producer - consumer;
	if (pending > (1U << cq->log_entries) ||
	    pending > (1U << req.log_entries) - 1) {
		spin_unlock(&cq->lock);
		srnic_umem_release(sdev, &ring);
		return -EINVAL;
	}
	src = cq->ring.kva;
	dst = ring.kva;
	old_mask = (1U << cq->log_entries) - 1;
	for (i = 0; i < pending; i++) {
		dst[i] = src[(consumer + i) & old_mask];
		/* Entry i of the new ring, first pass. */
		smp_store_release(&dst[i].owner,
				  srnic_cqe_owner(i, req.log_entries));
	}
	old = cq->ring;
	cq->ring = ring;
	cq->log_entries = req.log_entries;
	cq->producer = pending;
	cq->consumer_seen = 0;
	WRITE_ONCE(db->consumer, 0);
	spin_unlock(&cq->lock);

	srnic_umem_release(sdev, &old);
	ibcq->cqe = (1 << req.log_entries) - 1;
	resp.consumer = 0;
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}
