// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion queues of kernel consumers (ib_alloc_cq): the ring and the
 * doorbell record are kernel memory in the user layout, so the engine
 * writes them as it writes a provider's; polling and arming are done here,
 * in whatever context the consumer calls from (softirq and hard interrupt
 * included), under the CQ's poll lock only.
 */
#include "srnic_loc.h"

/* A kernel queue's doorbell record, and its doorbell slot 64 bytes on. */
#define SRNIC_KDB_SLOT		64
#define SRNIC_KDB_SIZE		(SRNIC_KDB_SLOT + sizeof(struct srnic_db_slot))

int srnic_kdb_alloc(struct srnic_umem *db, struct srnic_db_ref *dbr)
{
	int err = srnic_kmem_alloc(SRNIC_KDB_SIZE, db);

	if (err)
		return err;
	memset(dbr, 0, sizeof(*dbr));
	dbr->kva = db->kva + SRNIC_KDB_SLOT;
	return 0;
}

int srnic_kcq_create(struct srnic_dev *sdev, struct srnic_cq *cq,
		     const struct ib_cq_init_attr *attr)
{
	u32 log;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SRNIC_MAX_CQE)
		return -EINVAL;
	/* One entry stays free, so a full ring is told from an empty one. */
	log = max_t(u32, order_base_2(attr->cqe + 1), 1);
	spin_lock_init(&cq->lock);
	spin_lock_init(&cq->kpoll_lock);
	srnic_cq_event_init(cq, attr->comp_vector);
	cq->log_entries = log;
	err = srnic_kmem_alloc((size_t)SRNIC_CQE_SIZE << log, &cq->ring);
	if (err)
		return err;
	err = srnic_kdb_alloc(&cq->db, &cq->dbr);
	if (err)
		goto err_ring;
	err = xa_alloc_cyclic(&sdev->cqs, &cq->cqn, cq,
			      XA_LIMIT(1, SRNIC_MAX_CQ), &sdev->next_cqn,
			      GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_db;
	}
	cq->ibcq.cqe = (1 << log) - 1;
	return 0;

err_db:
	srnic_umem_release(sdev, &cq->db);
err_ring:
	srnic_umem_release(sdev, &cq->ring);
	return err;
}

/* The entry at @cons if the engine has handed it over, else NULL. */
static struct srnic_cqe *srnic_kcq_peek(struct srnic_cq *cq, u32 cons)
{
	struct srnic_cqe *cqe = (struct srnic_cqe *)cq->ring.kva +
				(cons & ((1U << cq->log_entries) - 1));

	/* Every other field is read after the owner byte. */
	if ((smp_load_acquire(&cqe->owner) & SRNIC_CQE_OWNER_BIT) !=
	    srnic_cqe_owner(cons, cq->log_entries))
		return NULL;
	return cqe;
}

static void srnic_kcq_wc_flags(const struct srnic_cqe *cqe, struct ib_wc *wc)
{
	if (cqe->wc_flags & SRNIC_CQE_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)cqe->imm_data;
	}
	if (cqe->wc_flags & SRNIC_CQE_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->imm_data;
	}
	/* RoCEv2: the GRH area holds the IP header; its kind is told. */
	if (cqe->wc_flags & SRNIC_CQE_GRH) {
		wc->wc_flags |= IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
		wc->network_hdr_type = cqe->wc_flags & SRNIC_CQE_GRH_IPV4 ?
					       RDMA_NETWORK_IPV4 :
					       RDMA_NETWORK_IPV6;
	}
}

/*
 * Fills @wc from @cqe.  False for an entry of a QP that is gone (its
 * destruction cleared qp_num, srnic_kcq_forget_qp).
 */
static bool srnic_kcq_wc(struct srnic_dev *sdev, const struct srnic_cqe *cqe,
			 struct ib_wc *wc)
{
	struct srnic_qp *qp;

	if (!cqe->qp_num)
		return false;
	/* The QP cannot go while we hold the poll lock: see forget_qp. */
	qp = xa_load(&sdev->qps, cqe->qp_num);
	if (!qp)
		return false;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->qp = &qp->ibqp;
	wc->src_qp = cqe->src_qp;
	wc->pkey_index = cqe->pkey_index;
	wc->sl = cqe->sl;
	wc->port_num = SRNIC_PORT;
	srnic_kcq_wc_flags(cqe, wc);
	return true;
}

int srnic_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct srnic_dev *sdev = to_sdev(ibcq->device);
	struct srnic_cq *cq = to_scq(ibcq);
	struct srnic_cq_db *db = cq->db.kva;
	struct srnic_cqe *cqe;
	unsigned long flags;
	int n = 0;
	u32 cons;

	/* A user CQ is polled in user space only. */
	if (!cq->ring.kernel)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&cq->kpoll_lock, flags);
	cons = db->consumer;
	while (n < num && (cqe = srnic_kcq_peek(cq, cons))) {
		if (srnic_kcq_wc(sdev, cqe, &wc[n]))
			n++;
		cons++;
	}
	/* The entries are read before the engine may write them again. */
	smp_store_release(&db->consumer, cons);
	spin_unlock_irqrestore(&cq->kpoll_lock, flags);
	return n;
}

/*
 * Arms the CQ as the provider does (a new arm word in the record and the
 * doorbell slot), then, for IB_CQ_REPORT_MISSED_EVENTS, says whether an
 * entry is already there: the engine reads the arm word after it publishes
 * an entry, with a full barrier on both sides (srnic_cq_put), so an entry
 * that is not seen here raises the event.
 */
int srnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct srnic_cq *cq = to_scq(ibcq);
	struct srnic_cq_db *db = cq->db.kva;
	unsigned long irqflags;
	int missed = 0;
	u32 arm;

	if (!cq->ring.kernel)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&cq->kpoll_lock, irqflags);
	arm = ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		       SRNIC_CQ_ARM_SOLICITED : SRNIC_CQ_ARM_NEXT) |
	      (++cq->arm_seq << 8);
	WRITE_ONCE(db->arm, arm);
	WRITE_ONCE(cq->dbr.kva->value, arm);
	smp_mb();
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    srnic_kcq_peek(cq, db->consumer))
		missed = 1;
	spin_unlock_irqrestore(&cq->kpoll_lock, irqflags);
	return missed;
}

/*
 * @qp is being destroyed and no engine completes its work any more: its
 * entries not yet polled are cleared, so no poll names the freed QP (or a
 * new QP given its number).
 */
void srnic_kcq_forget_qp(struct srnic_cq *cq, u32 qpn)
{
	unsigned long flags;
	struct srnic_cqe *cqe;
	u32 cons;

	if (!cq || !cq->ring.kernel)
		return;
	spin_lock_irqsave(&cq->kpoll_lock, flags);
	for (cons = ((struct srnic_cq_db *)cq->db.kva)->consumer;
	     (cqe = srnic_kcq_peek(cq, cons)); cons++)
		if (cqe->qp_num == qpn)
			cqe->qp_num = 0;
	spin_unlock_irqrestore(&cq->kpoll_lock, flags);
}
