// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues: a receive ring and doorbell record in user memory
 * (a kernel consumer's: in kernel memory, posted by srnic_post_srq_recv).
 * XRC SRQs also have a CQ and an XRC domain, and are named by number in
 * the messages that XRC target QPs receive.
 */
#include "srnic_loc.h"

/* The XRC SRQ @srqn of @sdev, referenced, or NULL. */
struct srnic_srq *srnic_xrc_srq_get(struct srnic_dev *sdev, u32 srqn)
{
	struct srnic_srq *srq;

	xa_lock(&sdev->srqs);
	srq = xa_load(&sdev->srqs, srqn);
	if (srq && (srq->ibsrq.srq_type != IB_SRQT_XRC ||
		    !refcount_inc_not_zero(&srq->ref)))
		srq = NULL;
	xa_unlock(&sdev->srqs);
	return srq;
}

void srnic_srq_put(struct srnic_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->drained);
}

/*
 * Checks a receive ring's geometry (SRQ or WQ) against what was asked and
 * pins it with its doorbell record (struct srnic_srq_db); @sge_room gets
 * the scatter entries a WQE really has room for.
 */
int srnic_recv_ring_pin(struct srnic_dev *sdev, u32 max_wr, u32 max_sge,
			u32 max_entries, u64 buf_addr, u64 db_addr,
			u32 log_entries, u32 log_stride, struct srnic_wq *wq,
			struct srnic_umem *db, u32 *sge_room)
{
	u32 room;
	int err;

	if (log_stride >= 31 ||
	    (1U << log_stride) < SRNIC_RECV_WQE_MIN ||
	    (1U << log_stride) > SRNIC_RECV_WQE_MAX ||
	    log_entries > ilog2(max_entries) ||
	    (1U << log_entries) < max_wr)
		return -EINVAL;
	room = (1U << log_stride) - sizeof(struct srnic_recv_wqe_hdr);
	if (room < max_sge * sizeof(struct srnic_wqe_data))
		return -EINVAL;
	if (db_addr % sizeof(struct srnic_srq_db))
		return -EINVAL;
	wq->log_entries = log_entries;
	wq->log_stride = log_stride;
	*sge_room = min_t(u32, room / sizeof(struct srnic_wqe_data),
			  SRNIC_MAX_SGE);
	err = srnic_umem_pin(sdev, buf_addr, (size_t)1 << (log_entries +
							   log_stride),
			     true, &wq->ring);
	if (err)
		return err;
	err = srnic_umem_pin(sdev, db_addr, sizeof(struct srnic_srq_db), false,
			     db);
	if (err)
		srnic_umem_release(sdev, &wq->ring);
	return err;
}

/* What every SRQ starts with. */
static void srnic_srq_init(struct srnic_srq *srq)
{
	mutex_init(&srq->lock);
	spin_lock_init(&srq->rq_lock);
	spin_lock_init(&srq->kpost_lock);
	refcount_set(&srq->ref, 1);
	init_completion(&srq->drained);
	srq->cons = 0;
}

/* A kernel consumer's SRQ (basic only): its ring in kernel memory. */
static int srnic_ksrq_create(struct srnic_dev *sdev, struct srnic_srq *srq,
			     struct ib_srq_init_attr *init)
{
	struct ib_srq_attr *a = &init->attr;
	u32 wqe = sizeof(struct srnic_recv_wqe_hdr) +
		  a->max_sge * sizeof(struct srnic_wqe_data);
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	srnic_srq_init(srq);
	srq->wq.log_entries = order_base_2(a->max_wr);
	srq->wq.log_stride = order_base_2(max_t(u32, wqe, SRNIC_RECV_WQE_MIN));
	srq->max_sge = min_t(u32, ((1U << srq->wq.log_stride) -
				   sizeof(struct srnic_recv_wqe_hdr)) /
				  sizeof(struct srnic_wqe_data), SRNIC_MAX_SGE);
	err = srnic_kmem_alloc((size_t)1 << (srq->wq.log_entries +
					     srq->wq.log_stride), &srq->wq.ring);
	if (!err)
		err = srnic_kmem_alloc(sizeof(struct srnic_srq_db), &srq->db);
	if (!err)
		err = xa_alloc_cyclic(&sdev->srqs, &srq->srqn, srq,
				      XA_LIMIT(1, SRNIC_MAX_SRQ),
				      &sdev->next_srqn, GFP_KERNEL);
	if (err < 0) {
		srnic_umem_release(sdev, &srq->db);
		srnic_umem_release(sdev, &srq->wq.ring);
		return err == -EBUSY ? -ENOMEM : err;
	}
	a->max_wr = 1U << srq->wq.log_entries;
	a->max_sge = srq->max_sge;
	return 0;
}

int srnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibsrq->device);
	struct srnic_create_srq_resp resp = {};
	struct srnic_srq *srq = to_ssrq(ibsrq);
	struct ib_srq_attr *a = &init->attr;
	struct srnic_create_srq_req req;
	int err;

	if (srnic_should_fail(sdev, SRNIC_FAULT_ALLOC, 0))
		return -ENOMEM;
	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC &&
	    init->srq_type != IB_SRQT_TM)
		return -EOPNOTSUPP;
	if (!a->max_wr || a->max_wr > SRNIC_MAX_SRQ_WR || !a->max_sge ||
	    a->max_sge > SRNIC_MAX_SGE)
		return -EINVAL;
	if (!udata)
		return srnic_ksrq_create(sdev, srq, init);
	if (!udata->inlen)
		return -EOPNOTSUPP;
	err = srnic_udata_in(udata, &req, sizeof(req));
	if (err)
		return err;

	if (init->srq_type == IB_SRQT_TM) {
		err = srnic_tm_create(srq, init->ext.tag_matching.max_num_tags);
		if (err)
			return err;
	}
	srnic_srq_init(srq);
	err = srnic_recv_ring_pin(sdev, a->max_wr, a->max_sge, SRNIC_MAX_SRQ_WR,
				  req.buf_addr, req.db_addr, req.log_entries,
				  req.log_stride, &srq->wq, &srq->db,
				  &srq->max_sge);
	if (err)
		goto err_tm;
	err = xa_alloc_cyclic(&sdev->srqs, &srq->srqn, srq,
			      XA_LIMIT(1, SRNIC_MAX_SRQ), &sdev->next_srqn,
			      GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_db;
	}
	/* The core answers it as the XRC SRQ number. */
	if (init->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;
	/* srq_limit is not armed at creation (IB spec, 11.2.3.1). */
	a->max_wr = 1U << req.log_entries;
	a->max_sge = srq->max_sge;
	resp.srqn = srq->srqn;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto err_xa;
	return 0;

err_xa:
	xa_erase(&sdev->srqs, srq->srqn);
err_db:
	srnic_umem_release(sdev, &srq->db);
	srnic_umem_release(sdev, &srq->wq.ring);
err_tm:
	srnic_tm_destroy(srq);
	return err;
}

int srnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct srnic_srq *srq = to_ssrq(ibsrq);
	int err = 0;

	/* ibv_post_srq_ops on a TM SRQ: one list operation. */
	if (srq->tm.tags && udata && udata->inlen)
		return srnic_tm_post(srq, mask, udata);
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	/* Resizing is not offered (no IB_DEVICE_SRQ_RESIZE). */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	mutex_lock(&srq->lock);
	if (attr->srq_limit >= (1U << srq->wq.log_entries)) {
		err = -EINVAL;
	} else {
		spin_lock(&srq->rq_lock);
		srq->limit = attr->srq_limit;
		spin_unlock(&srq->rq_lock);
	}
	mutex_unlock(&srq->lock);
	return err;
}

int srnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct srnic_srq *srq = to_ssrq(ibsrq);

	mutex_lock(&srq->lock);
	attr->max_wr = 1U << srq->wq.log_entries;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	mutex_unlock(&srq->lock);
	return 0;
}

int srnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibsrq->device);
	struct srnic_srq *srq = to_ssrq(ibsrq);

	xa_erase(&sdev->srqs, srq->srqn);
	/* An engine delivering to it by number finishes first. */
	srnic_srq_put(srq);
	wait_for_completion(&srq->drained);
	srnic_umem_release(sdev, &srq->db);
	srnic_umem_release(sdev, &srq->wq.ring);
	srnic_tm_destroy(srq);
	mutex_destroy(&srq->lock);
	return 0;
}

int srnic_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	/* Nothing but the core's object: SRQs and QPs point at it. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	return 0;
}

int srnic_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}
