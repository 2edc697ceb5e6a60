// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Queue pairs (RC, UC, UD, XRC initiator): rings in user memory pinned at
 * creation, a send doorbell slot, and the IB state machine with its
 * attribute rules.  XRC target QPs are the core's kernel objects: no rings,
 * no doorbell; they receive into the XRC SRQs their messages name.
 */
#include <linux/hash.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "srnic_loc.h"
#include "srnic_hdr.h"
#include "srnic_net.h"
#include "srnic_transport.h"


static bool srnic_log_in(u32 log, u32 min_bytes, u32 max_bytes)
{
	return log < 31 && (1U << log) >= min_bytes && (1U << log) <= max_bytes;
}

/*
 * Checks the provider's ring geometry against the requested capabilities
 * and returns, in @cap, what the rings really hold.
 */
static int srnic_qp_check_geometry(struct ib_qp_init_attr *init,
				   const struct srnic_create_qp_req *req,
				   struct ib_qp_cap *cap)
{
	const struct ib_qp_cap *want = &init->cap;
	u32 hdr = srnic_send_hdr(init->qp_type);
	u32 stride, room;

	/* max_send_wr 0 (receive only): the ring's one entry is never used. */
	if (want->max_send_wr > SRNIC_MAX_QP_WR ||
	    want->max_send_sge > SRNIC_MAX_SGE ||
	    want->max_inline_data > SRNIC_MAX_INLINE_DATA)
		return -EINVAL;
	if (!srnic_log_in(req->sq_log_stride, SRNIC_SEND_WQE_MIN,
			  SRNIC_SEND_WQE_MAX) ||
	    req->sq_log_entries > ilog2(SRNIC_MAX_QP_WR) ||
	    (1U << req->sq_log_entries) < want->max_send_wr)
		return -EINVAL;
	stride = 1U << req->sq_log_stride;
	/* A stride must hold its type's header (UD's is larger than 64 B). */
	if (stride < hdr)
		return -EINVAL;
	room = stride - hdr;
	if (room < want->max_send_sge * sizeof(struct srnic_wqe_data) ||
	    room < want->max_inline_data)
		return -EINVAL;
	cap->max_send_wr = 1U << req->sq_log_entries;
	cap->max_send_sge = min_t(u32, room / sizeof(struct srnic_wqe_data),
				  SRNIC_MAX_SGE);
	cap->max_inline_data = min_t(u32, room, SRNIC_MAX_INLINE_DATA);

	if (init->srq || !want->max_recv_wr) {
		/* No receive ring: the SRQ's, or none (send-only QP). */
		if (req->rq_buf_addr || req->rq_log_entries ||
		    req->rq_log_stride)
			return -EINVAL;
		if (!init->srq && want->max_recv_sge > SRNIC_MAX_SGE)
			return -EINVAL;
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		return 0;
	}
	if (want->max_recv_wr > SRNIC_MAX_QP_WR ||
	    want->max_recv_sge > SRNIC_MAX_SGE)
		return -EINVAL;
	if (!srnic_log_in(req->rq_log_stride, SRNIC_RECV_WQE_MIN,
			  SRNIC_RECV_WQE_MAX) ||
	    req->rq_log_entries > ilog2(SRNIC_MAX_QP_WR) ||
	    (1U << req->rq_log_entries) < want->max_recv_wr)
		return -EINVAL;
	room = (1U << req->rq_log_stride) - sizeof(struct srnic_recv_wqe_hdr);
	if (room < want->max_recv_sge * sizeof(struct srnic_wqe_data))
		return -EINVAL;
	cap->max_recv_wr = 1U << req->rq_log_entries;
	cap->max_recv_sge = min_t(u32, room / sizeof(struct srnic_wqe_data),
				  SRNIC_MAX_SGE);
	return 0;
}

void srnic_qp_release(struct srnic_dev *sdev, struct srnic_qp *qp)
{
	srnic_db_free(&qp->dbr);
	srnic_umem_release(sdev, &qp->db);
	srnic_umem_release(sdev, &qp->rq.ring);
	srnic_umem_release(sdev, &qp->sq.ring);
	kfree(qp->held_rwqe);
	qp->held_rwqe = NULL;
	while (qp->w.nstages)
		kvfree(qp->w.stage[--qp->w.nstages]);
	kvfree(qp->w.res);
	qp->w.res = NULL;
	srnic_net_req_forget(qp);
	kvfree(qp->w.ahead);
	qp->w.ahead = NULL;
	srnic_zc_release(qp);
	skb_queue_purge(&qp->w.held);
	dst_cache_destroy(&qp->w.route);
	qp->w.route.cache = NULL;
	kfree(qp->rss);
	qp->rss = NULL;
}

/* What every QP starts with. */
int srnic_qp_init(struct srnic_qp *qp, bool receives)
{
	INIT_LIST_HEAD(&qp->cnt.node);
	INIT_LIST_HEAD(&qp->run_node);
	INIT_LIST_HEAD(&qp->hot_node);
	mutex_init(&qp->lock);
	spin_lock_init(&qp->rq_lock);
	spin_lock_init(&qp->recv_lock);
	spin_lock_init(&qp->w.lock);
	spin_lock_init(&qp->w.rx_lock);
	skb_queue_head_init(&qp->w.held);
	refcount_set(&qp->ref, 1);
	init_completion(&qp->drained);
	srnic_qp_fault_init(qp);
	qp->state = IB_QPS_RESET;
	qp->peer_dev = -1;
	qp->xport = &srnic_loopback;
	/*
	 * Room to hold a receive WQE between the pieces of a message, or
	 * whose buffer faulted (ODP).
	 */
	if (receives) {
		qp->held_rwqe = kzalloc(SRNIC_RECV_WQE_MAX, GFP_KERNEL);
		if (!qp->held_rwqe)
			return -ENOMEM;
	}
	return 0;
}

/* Gives @qp its number and initial attributes; it is findable after. */
int srnic_qp_publish(struct srnic_dev *sdev, struct srnic_qp *qp,
			    struct ib_qp_init_attr *init)
{
	u32 qpn;
	int err;

	/*
	 * QPNs 0 and 1 are the special QPs of the IB spec: QP1, the GSI QP,
	 * is created by the core's MAD layer; a RoCE port has no QP0.
	 */
	if (init->qp_type == IB_QPT_GSI) {
		qpn = 1;
		err = xa_insert(&sdev->qps, qpn, qp, GFP_KERNEL);
	} else {
		err = xa_alloc_cyclic(&sdev->qps, &qpn, qp,
				      XA_LIMIT(2, SRNIC_MAX_QP + 1),
				      &sdev->next_qpn, GFP_KERNEL);
	}
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	qp->qpn = qpn;
	qp->ibqp.qp_num = qpn;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->attr.qp_state = IB_QPS_RESET;
	qp->attr.cur_qp_state = IB_QPS_RESET;
	qp->attr.path_mtu = IB_MTU_1024;
	qp->attr.port_num = SRNIC_PORT;
	qp->attr.path_mig_state = IB_MIG_MIGRATED;
	init->cap = qp->cap;
	return 0;
}

/* An XRC target QP (created by the core for a process, without udata). */
static int srnic_create_xrc_tgt(struct srnic_dev *sdev, struct srnic_qp *qp,
				struct ib_qp_init_attr *init)
{
	int err;

	if (init->create_flags)
		return -EOPNOTSUPP;
	memset(&qp->cap, 0, sizeof(qp->cap));
	err = srnic_qp_init(qp, true);
	if (!err)
		err = srnic_qp_publish(sdev, qp, init);
	if (err)
		srnic_qp_release(sdev, qp);
	return err;
}

int srnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	struct srnic_create_qp_resp resp = {};
	struct srnic_qp *qp = to_sqp(ibqp);
	struct srnic_create_qp_req req;
	struct srnic_ucontext *suc;
	int err;

	if (srnic_should_fail(sdev, SRNIC_FAULT_ALLOC, 0))
		return -ENOMEM;
	if (init->qp_type == IB_QPT_XRC_TGT)
		return srnic_create_xrc_tgt(sdev, qp, init);
	if (!udata)
		return srnic_kqp_create(sdev, qp, init);
	if (!udata->inlen)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_RAW_PACKET:
		/* The core checks it too; frames bypass every protocol. */
		if (!capable(CAP_NET_RAW))
			return -EPERM;
		if (init->rwq_ind_tbl)
			return srnic_create_rss_qp(sdev, qp, init, udata);
		break;
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_XRC_INI:
		break;
	default:
		return -EOPNOTSUPP;
	}
	err = srnic_qp_create_flags(qp, init);
	if (err)
		return err;
	err = srnic_udata_in(udata, &req, sizeof(req));
	if (err)
		return err;
	err = srnic_qp_check_geometry(init, &req, &qp->cap);
	if (err)
		return err;
	if (req.db_addr % 8)
		return -EINVAL;

	suc = rdma_udata_to_drv_context(udata, struct srnic_ucontext, ibuc);
	/*
	 * A raw QP cannot hold a receive WQE for a frame whose page faulted:
	 * a frame is not sent again.  Such a receive fails (srnic_resp_recv).
	 */
	err = srnic_qp_init(qp, init->qp_type != IB_QPT_RAW_PACKET &&
				(init->srq || qp->cap.max_recv_wr));
	if (err)
		goto err;
	qp->sq.log_entries = req.sq_log_entries;
	qp->sq.log_stride = req.sq_log_stride;
	err = srnic_umem_pin(sdev, req.sq_buf_addr,
			     (size_t)1 << (req.sq_log_entries + req.sq_log_stride),
			     true, &qp->sq.ring);
	if (err)
		goto err;
	if (qp->cap.max_recv_wr) {
		qp->rq.log_entries = req.rq_log_entries;
		qp->rq.log_stride = req.rq_log_stride;
		err = srnic_umem_pin(sdev, req.rq_buf_addr,
				     (size_t)1 << (req.rq_log_entries +
						   req.rq_log_stride),
				     true, &qp->rq.ring);
		if (err)
			goto err;
	}
	err = srnic_umem_pin(sdev, req.db_addr, sizeof(struct srnic_qp_db),
			     false, &qp->db);
	if (err)
		goto err;
	err = srnic_db_alloc(suc, &qp->dbr, &resp.db);
	if (err)
		goto err;
	err = srnic_qp_publish(sdev, qp, init);
	if (err)
		goto err;

	resp.qpn = qp->qpn;
	resp.max_inline_data = qp->cap.max_inline_data;
	err = srnic_db_name_qp(&qp->dbr, qp, &resp.bells_mmap_offset);
	if (!err)
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
	if (err) {
		srnic_db_unname_qp(&qp->dbr);
		srnic_qp_unready(qp);
		srnic_qp_unpublish(sdev, qp->qpn);
		goto err;
	}
	return 0;

err:
	srnic_qp_release(sdev, qp);
	return err;
}

int srnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	struct srnic_qp *qp = to_sqp(ibqp);

	/* No engine finds it from now on; wait for those that did. */
	srnic_db_unname_qp(&qp->dbr);
	srnic_qp_unready(qp);
	srnic_qp_unpublish(sdev, qp->qpn);
	srnic_qp_put(qp);
	wait_for_completion(&qp->drained);
	if (qp->db.kernel) {
		srnic_kcq_forget_qp(to_scq(ibqp->send_cq), qp->qpn);
		srnic_kcq_forget_qp(ibqp->recv_cq ? to_scq(ibqp->recv_cq) :
						    NULL, qp->qpn);
	}
	srnic_qp_release(sdev, qp);
	mutex_destroy(&qp->lock);
	return 0;
}

/* Checks the values of the attributes in @mask (ib_modify_qp_is_ok() checked the mask). */
static int srnic_qp_check_attr(struct srnic_qp *qp, const struct ib_qp_attr *a,
			       int mask)
{
	if ((mask & IB_QP_PORT) && a->port_num != SRNIC_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && a->pkey_index > 0)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IB_ACCESS_LOCAL_WRITE |
				    IB_ACCESS_REMOTE_WRITE |
				    IB_ACCESS_REMOTE_READ |
				    IB_ACCESS_REMOTE_ATOMIC |
				    SRNIC_ACCESS_FLUSH_GLOBAL |
				    /*
				     * The CM asks for both FLUSH rights of
				     * a device that offers either: no MR has
				     * the persistent one, so it grants nothing.
				     */
				    SRNIC_ACCESS_FLUSH_PERSISTENT |
				    /* an MR flag some pass here too; ignored */
				    IB_ACCESS_ON_DEMAND)))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (a->path_mtu < IB_MTU_256 || a->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && a->sq_psn > 0xffffff)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && a->rq_psn > 0xffffff)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > SRNIC_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > SRNIC_MAX_QP_RD_ATOM)
		return -EINVAL;
	/* Automatic path migration: no alternate path on a one-port NIC. */
	if (mask & IB_QP_ALT_PATH)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PATH_MIG_STATE) &&
	    a->path_mig_state != IB_MIG_MIGRATED)
		return -EOPNOTSUPP;
	if (mask & IB_QP_AV) {
		const struct rdma_ah_attr *ah = &a->ah_attr;

		/* RoCEv2 addresses by GID: a GRH is required. */
		if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
		    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH) ||
		    rdma_ah_get_port_num(ah) != SRNIC_PORT)
			return -EINVAL;
	}
	return 0;
}

static void srnic_qp_set_av(struct srnic_qp *qp, const struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);
	struct rdma_ah_attr *mine = &qp->attr.ah_attr;

	/* A plain copy: the core's reference on sgid_attr is not ours. */
	memset(mine, 0, sizeof(*mine));
	mine->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(mine, SRNIC_PORT);
	rdma_ah_set_sl(mine, rdma_ah_get_sl(ah));
	union ib_gid dgid = grh->dgid;

	rdma_ah_set_grh(mine, &dgid, grh->flow_label, grh->sgid_index,
			grh->hop_limit, grh->traffic_class);
	memcpy(mine->roce.dmac, ah->roce.dmac, ETH_ALEN);
}

/*
 * The wire's view of @qp's path: addresses, MTU, UDP source port.  The
 * MTU is the path's, within what the netdev carries (RoCEv2 headers off).
 */
static void srnic_qp_wire_path(struct srnic_qp *qp)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(&qp->attr.ah_attr);
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	enum ib_mtu mtu = qp->attr.path_mtu ? qp->attr.path_mtu : IB_MTU_1024;
	struct srnic_wire_qp *w = &qp->w;

	memcpy(w->dgid, grh->dgid.raw, 16);
	w->hop_limit = grh->hop_limit;
	w->traffic_class = grh->traffic_class;
	w->flow_label = grh->flow_label & 0xfffff;
	w->mtu = ib_mtu_enum_to_int(min(mtu, iboe_get_mtu(READ_ONCE(sdev->ndev->mtu))));
	w->sport = SRNIC_UDP_SPORT_BASE | hash_32(qp->qpn, 14);
}

/*
 * At least @n READ stages (SRNIC_WIRE_READS at most): the READs and
 * atomics an RC requester on the wire keeps in flight.  A stage no piece
 * names yet is published under w.lock, where the receive path looks.
 */
static int srnic_qp_wire_stages(struct srnic_qp *qp, u32 n)
{
	struct srnic_wire_qp *w = &qp->w;
	u8 *st;

	n = clamp_t(u32, n, 1, SRNIC_WIRE_READS);
	while (w->nstages < n) {
		st = kvmalloc(SRNIC_PIECE, GFP_KERNEL);
		if (!st)
			return -ENOMEM;
		spin_lock(&w->lock);
		w->stage[w->nstages++] = st;
		spin_unlock(&w->lock);
	}
	return 0;
}

/*
 * Where the path's destination GID lives, and our source GID; the transport
 * the QP's requests take: the internal loopback when an srnic device of
 * this host owns the GID, else the wire.  -ENOMEM when the wire's READ
 * staging cannot be had.
 */
static int srnic_qp_resolve_path(struct srnic_qp *qp)
{
	const struct rdma_ah_attr *ah = &qp->attr.ah_attr;
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);
	const struct ib_gid_attr *sgid;

	if (srnic_qpt_ud(qp->ibqp.qp_type) ||
	    qp->ibqp.qp_type == IB_QPT_RAW_PACKET)
		return 0;
	sgid = rdma_get_gid_attr(qp->ibqp.device, SRNIC_PORT, grh->sgid_index);
	if (!IS_ERR(sgid)) {
		memcpy(qp->sgid, sgid->gid.raw, sizeof(qp->sgid));
		rdma_put_gid_attr(sgid);
	}
	qp->peer_dev = srnic_dev_by_gid(grh->dgid.raw,
					 to_sdev(qp->ibqp.device));
	qp->xport = &srnic_loopback;
	if (qp->peer_dev >= 0)
		return 0;
	/* An acknowledged requester: READ stages, the window. */
	if (qp->ibqp.qp_type == IB_QPT_RC ||
	    qp->ibqp.qp_type == IB_QPT_XRC_INI) {
		if (srnic_qp_wire_stages(qp, 1))
			return -ENOMEM;
		BUILD_BUG_ON(SRNIC_WIRE_WINDOW > U8_MAX);	/* ahead_n */
		if (!qp->w.ahead)
			qp->w.ahead = kvcalloc(SRNIC_WIRE_WINDOW,
					       sizeof(*qp->w.ahead), GFP_KERNEL);
		if (!qp->w.ahead)
			return -ENOMEM;
	}
	/* An acknowledged responder: the READs and atomics it keeps. */
	if (qp->ibqp.qp_type == IB_QPT_RC ||
	    qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		if (!qp->w.res)
			qp->w.res = kvcalloc(SRNIC_MAX_QP_RD_ATOM,
					     sizeof(*qp->w.res), GFP_KERNEL);
		if (!qp->w.res)
			return -ENOMEM;
	}
	/* A new path: the route is found again. */
	if (!qp->w.route.cache && dst_cache_init(&qp->w.route, GFP_KERNEL))
		return -ENOMEM;
	dst_cache_reset(&qp->w.route);
	srnic_qp_wire_path(qp);
	qp->xport = &srnic_wire;
	return 0;
}

/* The wire's PSNs and message state start anew: responder at RTR, requester at RTS. */
static void srnic_qp_wire_start(struct srnic_qp *qp, enum ib_qp_state to)
{
	struct srnic_wire_qp *w = &qp->w;

	if (to != IB_QPS_RTR) {
		srnic_net_req_begin(qp);
		/* RC: the connection's zero-copy packets, PSNs from sq_psn. */
		if (qp->w.ahead && srnic_zc_init(qp))
			pr_debug("srnic: QP %u copies its payloads: no memory\n", qp->qpn);
	}
	if (to == IB_QPS_RTR)
		srnic_net_resp_forget(qp, qp->attr.rq_psn);
	spin_lock(&w->lock);
	if (to == IB_QPS_RTR) {
		/*
		 * Rendezvous of an earlier connection (one queued as a reset
		 * raced with it) are no longer: the ring starts empty.
		 */
		w->rndv_head = 0;
		w->rndv_tail = 0;
		w->rndv_on = false;
	} else {
		w->psn = qp->attr.sq_psn;
		w->una = w->psn;
		w->psn_top = w->psn;
		w->out = false;
		w->resume = false;
		w->answered = false;
		w->tx_full = false;
		w->tx_stalled = false;
		/* A new peer, maybe: FLUSH starts with the spec's ICRC. */
		w->flush_rxe = false;
	}
	spin_unlock(&w->lock);
}

/* Back to a new QP: empty queues, no attributes of a connection. */
static void srnic_qp_reset(struct srnic_qp *qp)
{
	struct srnic_qp_db *db = qp->db.kva;

	qp->attr.qkey = 0;
	qp->attr.dest_qp_num = 0;
	qp->peer_dev = -1;
	qp->sq_cons = 0;
	qp->in_progress = false;
	qp->msg_off = 0;
	qp->rnr_wait = false;
	qp->fault_err = 0;
	qp->last_wqe_sent = false;
	srnic_recv_wait(qp);
	spin_lock(&qp->rq_lock);
	qp->rwqe_held = false;
	qp->rq_cons = 0;
	spin_unlock(&qp->rq_lock);
	/*
	 * The doorbell still holds the producer of the work posted before:
	 * left there, the engine would run that old ring again once the QP is
	 * back in RTS.  The provider counts from 0 again after a reset.
	 */
	if (srnic_qp_has_sq(qp) && qp->dbr.kva)
		WRITE_ONCE(qp->dbr.kva->value, 0);
	if (!db)
		return;
	WRITE_ONCE(db->sq_consumer, 0);
	WRITE_ONCE(db->error, 0);
	WRITE_ONCE(db->rq_consumer, 0);
	/* A kernel consumer's producers are ours: they restart too. */
	if (qp->db.kernel)
		srnic_kqp_reset(qp);
}

/* Publishes @state to the engines; they scan QPs that can send or flush. */
static void srnic_qp_set_state(struct srnic_qp *qp, enum ib_qp_state state)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	bool active = state == IB_QPS_ERR ||
		      (srnic_qp_has_sq(qp) &&
		       (state == IB_QPS_RTS || state == IB_QPS_SQD ||
			state == IB_QPS_SQE));

	WRITE_ONCE(qp->state, state);
	/*
	 * As when the engine moves a QP to error: receives posted from now
	 * on are the engine's to flush, so the provider must wake it.
	 */
	if (state == IB_QPS_ERR && qp->db.kva)
		WRITE_ONCE(((struct srnic_qp_db *)qp->db.kva)->error, 1);
	srnic_qp_set_active(sdev, qp->qpn, active);
	if (active)
		srnic_engine_kick(qp);
}

int srnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct srnic_qp *qp = to_sqp(ibqp);
	struct ib_qp_attr *cur = &qp->attr;
	enum ib_qp_state from, to;
	int err;

	/* No driver data is defined for modify_qp. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->lock);
	/* The engine may have moved the QP to error meanwhile. */
	cur->qp_state = READ_ONCE(qp->state);
	from = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : cur->qp_state;
	to = mask & IB_QP_STATE ? attr->qp_state : from;
	err = -EINVAL;
	if (from != cur->qp_state ||
	    !ib_modify_qp_is_ok(from, to, ibqp->qp_type, mask))
		goto out;
	err = srnic_qp_check_attr(qp, attr, mask);
	if (err)
		goto out;

	if (mask & IB_QP_PKEY_INDEX)
		cur->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		cur->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		cur->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		cur->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_AV)
		srnic_qp_set_av(qp, &attr->ah_attr);
	if (mask & IB_QP_PATH_MTU)
		cur->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		cur->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		cur->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		cur->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		cur->rq_psn = attr->rq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		cur->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		cur->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		cur->sq_psn = attr->sq_psn;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		cur->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		cur->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		cur->en_sqd_async_notify = attr->en_sqd_async_notify;
	if ((mask & IB_QP_AV) || (to == IB_QPS_RTR && from == IB_QPS_INIT)) {
		err = srnic_qp_resolve_path(qp);
		if (err)
			goto out;
	}
	/* The READs and atomics in flight that max_rd_atomic allows. */
	if (to == IB_QPS_RTS && qp->xport == &srnic_wire &&
	    (qp->ibqp.qp_type == IB_QPT_RC ||
	     qp->ibqp.qp_type == IB_QPT_XRC_INI)) {
		err = srnic_qp_wire_stages(qp, cur->max_rd_atomic);
		if (err)
			goto out;
	}
	if ((to == IB_QPS_RTR && from == IB_QPS_INIT) ||
	    (to == IB_QPS_RTS && from == IB_QPS_RTR))
		srnic_qp_wire_start(qp, to);
	/* What a QP in error or reset sent ahead is not in flight. */
	if (to == IB_QPS_ERR || to == IB_QPS_RESET)
		srnic_net_req_forget(qp);
	if (to == IB_QPS_RESET) {
		/* First: a packet after the forget finds the QP not receiving. */
		WRITE_ONCE(qp->state, IB_QPS_RESET);
		srnic_net_resp_forget(qp, 0);
		srnic_qp_reset(qp);
	}
	cur->qp_state = to;
	cur->cur_qp_state = to;
	/* The peer may have changed; the engine looks it up again. */
	qp->peer_cache = NULL;
	srnic_qp_set_state(qp, to);
out:
	mutex_unlock(&qp->lock);
	return err;
}

int srnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct srnic_qp *qp = to_sqp(ibqp);

	mutex_lock(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	mutex_unlock(&qp->lock);
	attr->cap = qp->cap;
	attr->sq_draining = 0;

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

/* Whether the engine serves QP @qpn: what debugfs lists. */
void srnic_qp_set_active(struct srnic_dev *sdev, u32 qpn, bool active)
{
	if (active)
		xa_set_mark(&sdev->qps, qpn, SRNIC_QP_ACTIVE);
	else
		xa_clear_mark(&sdev->qps, qpn, SRNIC_QP_ACTIVE);
}

/*
 * Takes QP @qpn out of its device's table.  Then waits for every engine
 * batch that may have begun with the old peer generation: such a batch may
 * still use a cached pointer to the QP (without a reference), so the QP
 * must outlive it.
 */
void srnic_qp_unpublish(struct srnic_dev *sdev, u32 qpn)
{
	xa_erase(&sdev->qps, qpn);
	atomic_inc(&srnic_peer_gen);
	synchronize_srcu_expedited(&srnic_engine_srcu);
}

/* QP @qpn of @sdev, referenced, or NULL. */
struct srnic_qp *srnic_qp_get(struct srnic_dev *sdev, u32 qpn)
{
	struct srnic_qp *qp;

	xa_lock(&sdev->qps);
	qp = xa_load(&sdev->qps, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	xa_unlock(&sdev->qps);
	return qp;
}

void srnic_qp_put(struct srnic_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->drained);
}
