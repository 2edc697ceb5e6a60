// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What `rdma resource show {qp,cq,mr,srq} -dd` prints of srnic's own state,
 * and the raw QP context of `rdma resource show qp -r`.  Everything is read
 * without the objects' locks: a snapshot for people, not for decisions.
 * Fields of user-written doorbell records are shown as software last wrote
 * them, whatever that is.
 */
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "srnic_loc.h"

static u32 srnic_res_db(const u32 *field)
{
	return field ? READ_ONCE(*field) : 0;
}

static void srnic_res_qp_raw_fill(struct srnic_qp *qp,
				  struct srnic_res_qp_raw *r)
{
	struct srnic_qp_db *db = qp->db.kva;

	r->version = SRNIC_RES_QP_RAW_VERSION;
	r->qpn = qp->qpn;
	r->state = READ_ONCE(qp->state);
	r->type = qp->ibqp.qp_type;
	r->sq_log_entries = qp->sq.log_entries;
	r->sq_log_stride = qp->sq.log_stride;
	r->rq_log_entries = qp->rq.log_entries;
	r->rq_log_stride = qp->rq.log_stride;
	/* Software rings the doorbell slot; the record's field is unused. */
	r->sq_producer = srnic_qp_has_sq(qp) && qp->dbr.kva ?
			 READ_ONCE(qp->dbr.kva->value) : 0;
	r->sq_consumer = READ_ONCE(qp->sq_cons);
	r->rq_producer = srnic_res_db(db ? &db->rq_producer : NULL);
	r->rq_consumer = READ_ONCE(qp->rq_cons);
	r->dest_qpn = READ_ONCE(qp->attr.dest_qp_num);
	r->peer_dev = READ_ONCE(qp->peer_dev);
	r->flags = (READ_ONCE(qp->rnr_wait) ? SRNIC_RES_QP_RNR_WAIT : 0) |
		   (READ_ONCE(qp->fault_wait) ? SRNIC_RES_QP_FAULT_WAIT : 0) |
		   (READ_ONCE(qp->in_progress) ? SRNIC_RES_QP_IN_PROGRESS : 0) |
		   (qp->rss ? SRNIC_RES_QP_RSS : 0);
	r->rnr_left = READ_ONCE(qp->rnr_left);
	r->retry_left = READ_ONCE(qp->retry_left);
	r->engine = srnic_qp_engine(qp->qpn,
				    to_sdev(qp->ibqp.device)->sched.nthreads);
	r->visits = READ_ONCE(qp->visits);
}

static int srnic_res_qp_fields(struct sk_buff *msg,
			       const struct srnic_res_qp_raw *r)
{
	if (rdma_nl_put_driver_u32(msg, "sq_log_entries", r->sq_log_entries) ||
	    rdma_nl_put_driver_u32(msg, "sq_log_stride", r->sq_log_stride) ||
	    rdma_nl_put_driver_u32(msg, "rq_log_entries", r->rq_log_entries) ||
	    rdma_nl_put_driver_u32(msg, "sq_producer", r->sq_producer) ||
	    rdma_nl_put_driver_u32(msg, "sq_consumer", r->sq_consumer) ||
	    rdma_nl_put_driver_u32(msg, "rq_producer", r->rq_producer) ||
	    rdma_nl_put_driver_u32(msg, "rq_consumer", r->rq_consumer) ||
	    rdma_nl_put_driver_u32(msg, "engine", r->engine) ||
	    rdma_nl_put_driver_u32(msg, "visits", r->visits) ||
	    rdma_nl_put_driver_u32_hex(msg, "flags", r->flags) ||
	    rdma_nl_put_driver_u32(msg, "rnr_left", r->rnr_left) ||
	    rdma_nl_put_driver_u32(msg, "retry_left", r->retry_left))
		return -EMSGSIZE;
	if (r->peer_dev >= 0 &&
	    rdma_nl_put_driver_u32(msg, "peer_dev", r->peer_dev))
		return -EMSGSIZE;
	return 0;
}

/* Runs @fill between the driver attribute nest's start and end. */
#define SRNIC_RES_NEST(msg, fill)					\
({									\
	struct nlattr *_nest = nla_nest_start_noflag(msg,		\
						     RDMA_NLDEV_ATTR_DRIVER); \
	int _err = _nest ? (fill) : -EMSGSIZE;				\
									\
	if (_nest && _err)						\
		nla_nest_cancel(msg, _nest);				\
	else if (_nest)							\
		nla_nest_end(msg, _nest);				\
	_err;								\
})

int srnic_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct srnic_res_qp_raw r = {};

	srnic_res_qp_raw_fill(to_sqp(ibqp), &r);
	return SRNIC_RES_NEST(msg, srnic_res_qp_fields(msg, &r));
}

int srnic_fill_res_qp_entry_raw(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct srnic_res_qp_raw r = {};

	srnic_res_qp_raw_fill(to_sqp(ibqp), &r);
	return nla_put(msg, RDMA_NLDEV_ATTR_RES_RAW, sizeof(r), &r);
}

static int srnic_res_cq_fields(struct sk_buff *msg, struct srnic_cq *cq)
{
	struct srnic_cq_db *db = cq->db.kva;

	if (rdma_nl_put_driver_u32(msg, "cqn", cq->cqn) ||
	    rdma_nl_put_driver_u32(msg, "log_entries", READ_ONCE(cq->log_entries)) ||
	    rdma_nl_put_driver_u32(msg, "producer", READ_ONCE(cq->producer)) ||
	    rdma_nl_put_driver_u32(msg, "consumer",
				   srnic_res_db(db ? &db->consumer : NULL)) ||
	    rdma_nl_put_driver_u32_hex(msg, "arm",
				       srnic_res_db(db ? &db->arm : NULL)) ||
	    rdma_nl_put_driver_u32(msg, "overrun", READ_ONCE(cq->overrun)) ||
	    rdma_nl_put_driver_u32(msg, "timestamp", cq->timestamp))
		return -EMSGSIZE;
	return 0;
}

int srnic_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	return SRNIC_RES_NEST(msg, srnic_res_cq_fields(msg, to_scq(ibcq)));
}

static int srnic_res_mr_fields(struct sk_buff *msg, struct srnic_mr *mr)
{
	if (rdma_nl_put_driver_u32(msg, "index", mr->index) ||
	    rdma_nl_put_driver_u32_hex(msg, "access", mr->access) ||
	    rdma_nl_put_driver_u32(msg, "odp", !!mr->odp))
		return -EMSGSIZE;
	if (mr->odp)
		return rdma_nl_put_driver_u32(msg, "implicit",
					      srnic_odp_is_implicit(mr)) ?
			       -EMSGSIZE : 0;
	if (rdma_nl_put_driver_u32(msg, "page_size", 1U << mr->mtt.page_shift) ||
	    rdma_nl_put_driver_u64(msg, "blocks", mr->mtt.nblocks) ||
	    rdma_nl_put_driver_u64(msg, "pinned_pages", mr->mtt.npages))
		return -EMSGSIZE;
	return 0;
}

int srnic_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	return SRNIC_RES_NEST(msg, srnic_res_mr_fields(msg, to_smr(ibmr)));
}

static int srnic_res_srq_fields(struct sk_buff *msg, struct srnic_srq *srq)
{
	struct srnic_srq_db *db = srq->db.kva;

	if (rdma_nl_put_driver_u32(msg, "srqn", srq->srqn) ||
	    rdma_nl_put_driver_u32(msg, "log_entries", srq->wq.log_entries) ||
	    rdma_nl_put_driver_u32(msg, "producer",
				   srnic_res_db(db ? &db->producer : NULL)) ||
	    rdma_nl_put_driver_u32(msg, "consumer", READ_ONCE(srq->cons)) ||
	    rdma_nl_put_driver_u32(msg, "limit", READ_ONCE(srq->limit)) ||
	    rdma_nl_put_driver_u32(msg, "tm_tags", srq->tm.num_tags))
		return -EMSGSIZE;
	return 0;
}

int srnic_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq)
{
	return SRNIC_RES_NEST(msg, srnic_res_srq_fields(msg, to_ssrq(ibsrq)));
}
