// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Queue pairs of kernel consumers (RC, UC, UD and the GSI QP): rings and
 * doorbell record in kernel memory, in the layout a provider writes, so
 * that the engine runs them as it runs user queues.  Posting writes WQEs
 * and publishes the producer as a provider does, then wakes the engine if
 * it sleeps; it never sleeps itself and may be called in any context.
 */
#include "srnic_loc.h"

/* Ring geometry for @want: entries and stride, as powers of two. */
static int srnic_kqp_geometry(struct srnic_qp *qp, struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *want = &init->cap;
	u32 hdr = srnic_qpt_send_hdr(init->qp_type);
	u32 room, rsz;

	if (want->max_send_wr > SRNIC_MAX_QP_WR ||
	    want->max_send_sge > SRNIC_MAX_SGE ||
	    want->max_inline_data > SRNIC_MAX_INLINE_DATA ||
	    want->max_recv_wr > SRNIC_MAX_QP_WR ||
	    want->max_recv_sge > SRNIC_MAX_SGE)
		return -EINVAL;
	room = max_t(u32, want->max_send_sge * sizeof(struct srnic_wqe_data),
		     want->max_inline_data);
	qp->sq.log_stride = order_base_2(max_t(u32, hdr + room,
					       SRNIC_SEND_WQE_MIN));
	qp->sq.log_entries = order_base_2(max_t(u32, want->max_send_wr, 1));
	room = (1U << qp->sq.log_stride) - hdr;
	qp->cap.max_send_wr = 1U << qp->sq.log_entries;
	qp->cap.max_send_sge = min_t(u32, room / sizeof(struct srnic_wqe_data),
				     SRNIC_MAX_SGE);
	qp->cap.max_inline_data = min_t(u32, room, SRNIC_MAX_INLINE_DATA);
	if (init->srq || !want->max_recv_wr)
		return 0;
	rsz = sizeof(struct srnic_recv_wqe_hdr) +
	      max_t(u32, want->max_recv_sge, 1) * sizeof(struct srnic_wqe_data);
	qp->rq.log_stride = order_base_2(max_t(u32, rsz, SRNIC_RECV_WQE_MIN));
	qp->rq.log_entries = order_base_2(want->max_recv_wr);
	qp->cap.max_recv_wr = 1U << qp->rq.log_entries;
	qp->cap.max_recv_sge = min_t(u32, ((1U << qp->rq.log_stride) -
					   sizeof(struct srnic_recv_wqe_hdr)) /
					  sizeof(struct srnic_wqe_data),
				     SRNIC_MAX_SGE);
	return 0;
}

int srnic_kqp_create(struct srnic_dev *sdev, struct srnic_qp *qp,
		     struct ib_qp_init_attr *init)
{
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_GSI:
		break;
	default:
		return -EOPNOTSUPP;
	}
	err = srnic_qp_create_flags(qp, init);
	if (err)
		return err;
	if (init->qp_type == IB_QPT_GSI && init->port_num != SRNIC_PORT)
		return -EINVAL;
	memset(&qp->cap, 0, sizeof(qp->cap));
	err = srnic_kqp_geometry(qp, init);
	if (err)
		return err;
	spin_lock_init(&qp->kpost_lock);
	err = srnic_qp_init(qp, init->srq || qp->cap.max_recv_wr);
	if (!err)
		err = srnic_kmem_alloc((size_t)1 << (qp->sq.log_entries +
						     qp->sq.log_stride),
				       &qp->sq.ring);
	if (!err && qp->cap.max_recv_wr)
		err = srnic_kmem_alloc((size_t)1 << (qp->rq.log_entries +
						     qp->rq.log_stride),
				       &qp->rq.ring);
	if (!err)
		err = srnic_kdb_alloc(&qp->db, &qp->dbr);
	if (!err)
		err = srnic_qp_publish(sdev, qp, init);
	if (err)
		srnic_qp_release(sdev, qp);
	return err;
}

/* The QP went back to RESET: both rings start from slot 0 again. */
void srnic_kqp_reset(struct srnic_qp *qp)
{
	struct srnic_qp_db *db = qp->db.kva;
	unsigned long flags;

	spin_lock_irqsave(&qp->kpost_lock, flags);
	WRITE_ONCE(db->sq_producer, 0);
	WRITE_ONCE(db->rq_producer, 0);
	spin_unlock_irqrestore(&qp->kpost_lock, flags);
}

static u8 srnic_kwqe_flags(int send_flags)
{
	return (send_flags & IB_SEND_SIGNALED ? SRNIC_WQE_SIGNALED : 0) |
	       (send_flags & IB_SEND_SOLICITED ? SRNIC_WQE_SOLICITED : 0) |
	       (send_flags & IB_SEND_FENCE ? SRNIC_WQE_FENCE : 0) |
	       (send_flags & IB_SEND_INLINE ? SRNIC_WQE_INLINE : 0);
}

/* The segments after the control segment, by opcode and QP type. */
static int srnic_kwqe_remote(struct srnic_qp *qp, void *seg,
			     const struct ib_send_wr *wr)
{
	struct srnic_wqe_raddr *raddr = seg;
	struct srnic_wqe_atomic *atomic = seg + sizeof(*raddr);
	struct srnic_wqe_ud *ud = seg;

	if (srnic_qpt_ud(qp->ibqp.qp_type)) {
		if (!ud_wr(wr)->ah)
			return -EINVAL;
		ud->av = to_sah(ud_wr(wr)->ah)->av;
		ud->remote_qpn = ud_wr(wr)->remote_qpn;
		ud->remote_qkey = ud_wr(wr)->remote_qkey;
		return 0;
	}
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		raddr->remote_addr = rdma_wr(wr)->remote_addr;
		raddr->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		raddr->remote_addr = atomic_wr(wr)->remote_addr;
		raddr->rkey = atomic_wr(wr)->rkey;
		atomic->compare_add = atomic_wr(wr)->compare_add;
		atomic->swap = atomic_wr(wr)->swap;
		break;
	default:
		break;
	}
	return 0;
}

/* The data: scatter/gather entries, or the bytes they name (inline). */
static int srnic_kwqe_data(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
			   void *seg, const struct ib_send_wr *wr)
{
	struct srnic_wqe_data *d = seg;
	u32 len = 0;
	int i;

	if (wr->num_sge < 0)
		return -EINVAL;
	if (!(wr->send_flags & IB_SEND_INLINE)) {
		if (wr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			d[i].addr = wr->sg_list[i].addr;
			d[i].length = wr->sg_list[i].length;
			d[i].lkey = wr->sg_list[i].lkey;
		}
		ctrl->num_sge = wr->num_sge;
		return 0;
	}
	/* Kernel "DMA addresses" are kernel virtual addresses here. */
	for (i = 0; i < wr->num_sge; i++) {
		u32 l = wr->sg_list[i].length;

		if (l > qp->cap.max_inline_data - len)
			return -EINVAL;
		memcpy(seg + len, (void *)(uintptr_t)wr->sg_list[i].addr, l);
		len += l;
	}
	ctrl->inline_len = len;
	return 0;
}

/* What the registration sets, as the ib_mr holds it now. */
static void srnic_kwqe_reg(struct srnic_kwqe_reg *seg,
			   const struct ib_reg_wr *wr)
{
	seg->mr_index = to_smr(wr->mr)->index;
	seg->key = wr->key;
	seg->access = wr->access;
	seg->iova = wr->mr->iova;
	seg->length = wr->mr->length;
	seg->page_shift = ilog2(wr->mr->page_size);
}

static int srnic_kwqe_send(struct srnic_qp *qp, void *wqe,
			   const struct ib_send_wr *wr)
{
	u32 hdr = srnic_qpt_send_hdr(qp->ibqp.qp_type);
	struct srnic_wqe_ctrl *ctrl = wqe;
	int err;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		ctrl->imm_data = (__force u32)wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		ctrl->imm_data = wr->ex.invalidate_rkey;
		break;
	case IB_WR_REG_MR:
		srnic_kwqe_reg(wqe + sizeof(*ctrl), reg_wr(wr));
		break;
	case IB_WR_SEND:
	case IB_WR_RDMA_WRITE:
		break;
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		/* Their answer lands in the list: there is nothing to inline. */
		if (wr->send_flags & IB_SEND_INLINE)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	/* These kernel opcodes have the values of the user ones. */
	ctrl->opcode = wr->opcode;
	ctrl->wr_id = wr->wr_id;
	ctrl->flags = srnic_kwqe_flags(wr->send_flags);
	if (wr->opcode == IB_WR_REG_MR) {
		ctrl->flags &= ~SRNIC_WQE_INLINE;
		return 0;
	}
	err = srnic_kwqe_remote(qp, wqe + sizeof(*ctrl), wr);
	if (!err)
		err = srnic_kwqe_data(qp, ctrl, wqe + hdr, wr);
	return err;
}

/*
 * After a producer moved: the engine thread is woken if it sleeps and
 * sends were posted, or if the QP is in error (what was posted is the
 * engine's to flush); receives are read when a message needs one.  The
 * full barrier pairs with the engine's before its last look
 * (srnic_engine.c).
 */
static void srnic_kqp_ring(struct srnic_qp *qp, bool sends)
{
	struct srnic_thread *t = srnic_qp_thread(qp);
	bool err = READ_ONCE(qp->state) == IB_QPS_ERR;

	if (sends || err)
		srnic_qp_ready(qp);
	smp_mb();
	if ((sends &&
	     (READ_ONCE(t->status->flags) & SRNIC_ENGINE_NEED_WAKEUP)) || err)
		srnic_thread_kick(t);
}

int srnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct srnic_qp *qp = to_sqp(ibqp);
	u32 n = 1U << qp->sq.log_entries, prod;
	struct srnic_qp_db *db = qp->db.kva;
	unsigned long flags;
	void *wqe;
	int err = 0;

	/* A zero-WR post_send is a provider's doorbell system call. */
	if (!wr) {
		srnic_engine_doorbell(to_sdev(ibqp->device), qp);
		return 0;
	}
	if (!qp->db.kernel || !srnic_qp_has_sq(qp)) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&qp->kpost_lock, flags);
	prod = db->sq_producer;
	for (; wr; wr = wr->next) {
		if (prod - READ_ONCE(db->sq_consumer) >= n) {
			err = -ENOMEM;
			break;
		}
		wqe = qp->sq.ring.kva + ((prod & (n - 1)) << qp->sq.log_stride);
		memset(wqe, 0, 1U << qp->sq.log_stride);
		err = srnic_kwqe_send(qp, wqe, wr);
		if (err)
			break;
		prod++;
	}
	/* The WQEs before the producers that announce them. */
	smp_store_release(&db->sq_producer, prod);
	smp_store_release(&qp->dbr.kva->value, prod);
	spin_unlock_irqrestore(&qp->kpost_lock, flags);
	if (err)
		*bad_wr = wr;
	srnic_kqp_ring(qp, true);
	return err;
}

/*
 * Receive WQEs from @wr into @wq, whose free-running producer (ours) and
 * consumer (the engine's) are *@prod and *@cons; under the queue's
 * kpost_lock.  Stops at the first WR that does not fit, in *@bad_wr.
 */
static int srnic_kwq_post(struct srnic_wq *wq, u32 max_sge, u32 *prod,
			  const u32 *cons, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr)
{
	u32 n = 1U << wq->log_entries, p = *prod;
	struct srnic_recv_wqe_hdr *hdr;
	struct srnic_wqe_data *d;
	int err = 0, i;

	for (; wr; wr = wr->next) {
		if (p - READ_ONCE(*cons) >= n) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > max_sge) {
			err = -EINVAL;
			break;
		}
		hdr = wq->ring.kva + ((p & (n - 1)) << wq->log_stride);
		hdr->wr_id = wr->wr_id;
		hdr->num_sge = wr->num_sge;
		d = (struct srnic_wqe_data *)(hdr + 1);
		for (i = 0; i < wr->num_sge; i++) {
			d[i].addr = wr->sg_list[i].addr;
			d[i].length = wr->sg_list[i].length;
			d[i].lkey = wr->sg_list[i].lkey;
		}
		p++;
	}
	/* The WQEs before the producer that announces them. */
	smp_store_release(prod, p);
	if (err)
		*bad_wr = wr;
	return err;
}

int srnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct srnic_qp *qp = to_sqp(ibqp);
	struct srnic_qp_db *db = qp->db.kva;
	unsigned long flags;
	int err;

	if (!qp->db.kernel || !qp->rq.ring.kva) {
		*bad_wr = wr;
		return qp->db.kernel ? -EINVAL : -EOPNOTSUPP;
	}
	spin_lock_irqsave(&qp->kpost_lock, flags);
	err = srnic_kwq_post(&qp->rq, qp->cap.max_recv_sge, &db->rq_producer,
			     &db->rq_consumer, wr, bad_wr);
	spin_unlock_irqrestore(&qp->kpost_lock, flags);
	srnic_kqp_ring(qp, false);
	return err;
}

/* A kernel SRQ: receives are read when a message needs one, no doorbell. */
int srnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct srnic_srq *srq = to_ssrq(ibsrq);
	struct srnic_srq_db *db = srq->db.kva;
	unsigned long flags;
	int err;

	if (!srq->db.kernel) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&srq->kpost_lock, flags);
	err = srnic_kwq_post(&srq->wq, srq->max_sge, &db->producer,
			     &db->consumer, wr, bad_wr);
	spin_unlock_irqrestore(&srq->kpost_lock, flags);
	return err;
}
