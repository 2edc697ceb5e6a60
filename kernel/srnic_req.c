// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The requester: executes the send queue of a QP.  Each WQE is copied out of
 * the user ring into the engine's scratch buffer before any field is read,
 * validated, then carried out against the peer through srnic_resp.c, and
 * completed.  A bad WQE completes in error and moves the QP to error.
 */
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "srnic_loc.h"
#include "srnic_trace.h"

/* RNR NAK timer encodings of the IB spec (table 45), in microseconds. */
static const u32 srnic_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static bool srnic_opcode_ok(enum ib_qp_type type, u8 op)
{
	/* A raw QP sends frames: no immediate, no remote memory. */
	if (type == IB_QPT_RAW_PACKET)
		return op == IB_UVERBS_WR_SEND;
	switch (op) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
		return true;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return type != IB_QPT_UD;
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
	case SRNIC_WR_ATOMIC_WRITE:
	case IB_UVERBS_WR_SEND_WITH_INV:	/* only RC and XRC have the IETH */
		return type == IB_QPT_RC || type == IB_QPT_XRC_INI;
	case IB_UVERBS_WR_BIND_MW:
	case IB_UVERBS_WR_LOCAL_INV:
		return type == IB_QPT_RC || type == IB_QPT_UC;
	default:
		return false;
	}
}

/* BIND_MW and LOCAL_INV: done at once, no peer involved. */
static enum ib_wc_status srnic_local_op(struct srnic_qp *qp,
					const struct srnic_wqe_ctrl *ctrl)
{
	if (ctrl->opcode == IB_UVERBS_WR_BIND_MW)
		return srnic_mw_bind(qp, ctrl, (const void *)(ctrl + 1)) ?
			       IB_WC_MW_BIND_ERR : IB_WC_SUCCESS;
	return srnic_mw_invalidate(qp, ctrl->imm_data, false) ?
		       IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
}

static enum ib_wc_status srnic_nak_status(enum srnic_resp r)
{
	switch (r) {
	case SRNIC_RESP_NAK_INV:
		return IB_WC_REM_INV_REQ_ERR;
	case SRNIC_RESP_NAK_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case SRNIC_RESP_NAK_OP:
		return IB_WC_REM_OP_ERR;
	case SRNIC_RESP_RNR:
		return IB_WC_RNR_RETRY_EXC_ERR;
	default:
		return IB_WC_RETRY_EXC_ERR;
	}
}

/*
 * An XRC initiator's message names an XRC SRQ of the target QP's domain;
 * @m holds it (referenced) for the responder.  -EINVAL if there is none.
 */
static int srnic_xrc_target(struct srnic_qp *dst, u32 srqn, struct srnic_msg *m)
{
	struct srnic_srq *srq = srnic_xrc_srq_get(to_sdev(dst->ibqp.device),
						  srqn);

	if (!srq)
		return -EINVAL;
	if (srq->ibsrq.ext.xrc.xrcd != dst->ibqp.xrcd) {
		srnic_srq_put(srq);
		return -EINVAL;
	}
	m->xrc_srq = srq;
	return 0;
}

/*
 * Drops what a message holds: an XRC SRQ, and @held, a destination QP
 * referenced for this WQE alone (UD's; a connected peer is the batch's).
 */
static void srnic_msg_put(struct srnic_qp *held, struct srnic_msg *m)
{
	if (m->xrc_srq)
		srnic_srq_put(m->xrc_srq);
	m->xrc_srq = NULL;
	if (held)
		srnic_qp_put(held);
}

/* Fills the UD part of @m from the WQE's address vector. */
static int srnic_ud_target(struct srnic_dev *sdev, struct srnic_qp *qp,
			   const struct srnic_wqe_ud *ud, struct srnic_msg *m,
			   u8 *sgid, struct srnic_qp **dst)
{
	const struct ib_gid_attr *attr;

	attr = rdma_get_gid_attr(&sdev->ibdev, SRNIC_PORT, ud->av.sgid_index);
	if (IS_ERR(attr))
		return -EINVAL;
	memcpy(sgid, attr->gid.raw, 16);
	rdma_put_gid_attr(attr);
	m->sgid = sgid;
	m->dgid = ud->av.dgid;
	m->hop_limit = ud->av.hop_limit;
	m->traffic_class = ud->av.traffic_class;
	m->flow_label = ud->av.flow_label & 0xfffff;
	m->src_qpn = qp->qpn;
	*dst = srnic_peer_get(srnic_dev_by_gid(ud->av.dgid),
			      ud->remote_qpn & 0xffffff);
	return 0;
}

/*
 * The connected peer of @qp, or NULL, found once per batch.  Usually the
 * QP's cached pointer, used without a reference: the lookup takes the
 * registry's and the peer device's locks, which the engine thread and
 * doorbell calls of every QP contend for, and costs as much as the rest of
 * a short WQE.  The cached pointer is good because the batch runs inside
 * srnic_engine_srcu and a QP leaving its table bumps the generation, then
 * waits for such sections (srnic_qp_unpublish) before it drops its own
 * reference; so a peer that the generation says is still there cannot be
 * destroyed before the batch ends.  After a generation change the batch
 * looks the peer up and holds that reference until srnic_batch_end().  The
 * batch holds @qp's lock, so its destination cannot change meanwhile
 * (modify_qp clears the cache).
 */
static struct srnic_qp *srnic_batch_peer(struct srnic_engine *eng,
					 struct srnic_qp *qp)
{
	u32 gen;

	if (eng->peer_known)
		return eng->peer;
	eng->peer_known = true;
	gen = srnic_peer_generation();
	if (qp->peer_cache && qp->peer_cache_gen == gen) {
		eng->peer = qp->peer_cache;
		return eng->peer;
	}
	eng->peer = srnic_peer_get(qp->peer_dev, qp->attr.dest_qp_num);
	eng->peer_held = eng->peer;
	qp->peer_cache = eng->peer;
	qp->peer_cache_gen = gen;
	return eng->peer;
}

static void srnic_batch_end(struct srnic_engine *eng)
{
	if (eng->peer_held)
		srnic_qp_put(eng->peer_held);
	eng->peer_held = NULL;
	eng->peer = NULL;
	eng->peer_known = false;
}

/*
 * Is @dst connected to @qp: of the matching type, and its path names @qp's
 * QPN, @qp's source GID and @qp's device?  A QPN alone is not enough: a QP
 * elsewhere with the same number would be taken for the peer (IB spec
 * 9.6.1.5: a packet from another source is not the connection's).
 */
static bool srnic_peer_connected(struct srnic_dev *sdev, struct srnic_qp *qp,
				 struct srnic_qp *dst)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	const struct ib_global_route *grh = rdma_ah_read_grh(&dst->attr.ah_attr);

	return dst->ibqp.qp_type == (type == IB_QPT_XRC_INI ?
				     IB_QPT_XRC_TGT : type) &&
	       READ_ONCE(dst->attr.dest_qp_num) == qp->qpn &&
	       READ_ONCE(dst->peer_dev) == (int)sdev->id &&
	       !memcmp(grh->dgid.raw, qp->sgid, sizeof(qp->sgid));
}

/*
 * Executes the WQE at qp->sq_cons.  Returns 0 when it is finished (whatever
 * its status), -EAGAIN when an RNR NAK holds it (retry at qp->rnr_until),
 * -EINPROGRESS when it waits for an ODP page fault (qp->fault_wait).
 * Runs inside srnic_engine_srcu: ODP pages it found mapped stay so.
 */
/*
 * An injected RNR NAK (debugfs fault/rnr), for requests that need a
 * receive WQE at the responder: the one case where RNR is an answer.
 */
static bool srnic_fault_rnr(struct srnic_qp *dst, u8 opcode)
{
	return (opcode == IB_UVERBS_WR_SEND ||
		opcode == IB_UVERBS_WR_SEND_WITH_IMM ||
		opcode == IB_UVERBS_WR_SEND_WITH_INV ||
		opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM) &&
	       srnic_should_fail(to_sdev(dst->ibqp.device), SRNIC_FAULT_RNR,
				 dst->qpn);
}

/* Whether the piece @m carries ends its message. */
static bool srnic_msg_last(const struct srnic_msg *m)
{
	return m->whole || m->off + m->plen >= m->len;
}

/*
 * Messages that go in pieces (srnic_msg_piece): the others carry at most
 * 8 bytes, or are datagrams of one MTU at most.
 */
static bool srnic_opcode_pieces(u8 op)
{
	switch (op) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
	case IB_UVERBS_WR_RDMA_READ:
		return true;
	default:
		return false;
	}
}

/*
 * The piece of its message that @qp sends now: the rest from qp->msg_off,
 * at most SRNIC_PIECE bytes.  A message goes in pieces, one per request,
 * so that the engine can turn to other QPs between them, as a NIC
 * interleaves the packets of its QPs.  -EINVAL when the WQE is not what it
 * was when its first piece left: its owner rewrote it meanwhile.
 */
static int srnic_msg_piece(struct srnic_qp *qp, struct srnic_msg *m)
{
	if (!qp->msg_off) {
		qp->msg_len = m->len;
		qp->msg_opcode = m->opcode;
	} else if (qp->msg_len != m->len || qp->msg_opcode != m->opcode) {
		return -EINVAL;
	}
	m->off = qp->msg_off;
	m->plen = m->len - m->off;
	if (srnic_opcode_pieces(m->opcode))
		m->plen = min_t(u64, m->plen, SRNIC_PIECE);
	return 0;
}

/*
 * Counts a request @qp sent to @dst (NULL: nobody) and the answer @r, on
 * both ends: requester and responder may be on different devices.  Bytes
 * are counted by piece; a message is sent with its first piece and
 * received with its last.
 */
static void srnic_msg_account(struct srnic_qp *qp, struct srnic_qp *dst,
			      u32 dqpn, const struct srnic_msg *m,
			      enum srnic_resp r)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	struct srnic_dev *ddev = dst ? to_sdev(dst->ibqp.device) : NULL;
	u64 len = m->plen;

	trace_srnic_msg(qp, dqpn, m->opcode, len, r);
	srnic_count_n(sdev, SRNIC_PC_TX_BYTES, len);
	srnic_qp_count(qp, SRNIC_QC_TX_BYTES, len);
	if (!m->off) {
		srnic_count(sdev, SRNIC_PC_TX_MSGS);
		srnic_qp_count(qp, SRNIC_QC_TX_MSGS, 1);
	}
	if (!dst)
		return;
	switch (r) {
	case SRNIC_RESP_OK:
		srnic_count_n(ddev, SRNIC_PC_RX_BYTES, len);
		srnic_qp_count_resp(dst, SRNIC_QC_RX_BYTES, len);
		if (srnic_msg_last(m)) {
			srnic_count(ddev, SRNIC_PC_RX_MSGS);
			srnic_qp_count_resp(dst, SRNIC_QC_RX_MSGS, 1);
		}
		break;
	case SRNIC_RESP_RNR:
		srnic_count(ddev, SRNIC_PC_RNR_NAKS_SENT);
		srnic_qp_count_resp(dst, SRNIC_QC_RNR_NAKS_SENT, 1);
		srnic_count(sdev, SRNIC_PC_RNR_NAKS_RCVD);
		srnic_qp_count(qp, SRNIC_QC_RNR_NAKS_RCVD, 1);
		break;
	case SRNIC_RESP_NAK_INV:
	case SRNIC_RESP_NAK_ACCESS:
	case SRNIC_RESP_NAK_OP:
		srnic_count(ddev, SRNIC_PC_NAKS_SENT);
		srnic_qp_count_resp(dst, SRNIC_QC_NAKS_SENT, 1);
		srnic_count(sdev, SRNIC_PC_NAKS_RCVD);
		srnic_qp_count(qp, SRNIC_QC_NAKS_RCVD, 1);
		break;
	default:
		break;
	}
}

/*
 * Injected faults of the path between requester and responder (debugfs
 * fault/), what a wire does to a request.  A delayed request leaves
 * delay_us late, once; its WQE waits as after an RNR NAK, costing no retry.
 */
static bool srnic_fault_delay(struct srnic_dev *sdev, struct srnic_qp *qp)
{
	if (qp->delayed ||
	    !srnic_should_fail(sdev, SRNIC_FAULT_DELAY, qp->qpn))
		return false;
	qp->delayed = true;
	qp->rnr_until = jiffies +
			usecs_to_jiffies(READ_ONCE(sdev->faults.delay_us));
	qp->rnr_wait = true;
	return true;
}

/* A corrupted request fails @dst's ICRC check: dropped there, counted. */
static bool srnic_fault_corrupt(struct srnic_dev *sdev, struct srnic_qp *qp,
				struct srnic_qp *dst)
{
	if (!srnic_should_fail(sdev, SRNIC_FAULT_CORRUPT, qp->qpn))
		return false;
	srnic_count(to_sdev(dst->ibqp.device), SRNIC_PC_ICRC_ERRORS);
	return true;
}

/*
 * A request @dst accepted (@r) arrives a second time.  RC and UC responders
 * know the copy by its PSN (RC acknowledges it again, UC drops it) and
 * execute nothing; UD has no PSN, so the copy is one more message, received
 * if a receive WQE is there and otherwise lost.
 */
static enum srnic_resp srnic_fault_duplicate(struct srnic_engine *eng,
					     struct srnic_qp *qp,
					     struct srnic_qp *dst,
					     struct srnic_msg *m,
					     enum srnic_resp r)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);

	if (r != SRNIC_RESP_OK ||
	    !srnic_should_fail(sdev, SRNIC_FAULT_DUPLICATE, qp->qpn))
		return r;
	if (qp->ibqp.qp_type != IB_QPT_UD) {
		srnic_count(to_sdev(dst->ibqp.device), SRNIC_PC_DUP_REQUESTS);
		return r;
	}
	return srnic_resp_recv(eng, dst, m, true) == SRNIC_RESP_FAULT ?
		       SRNIC_RESP_FAULT : r;
}

/* Holds @qp's request for @usec, to send it again: after RNR or silence. */
static void srnic_retry_later(struct srnic_qp *qp, bool rnr, u8 left,
			      unsigned int usec)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);

	trace_srnic_retry(qp, rnr, left, usec);
	srnic_count(sdev, rnr ? SRNIC_PC_RNR_RETRIES : SRNIC_PC_RETRANSMITS);
	srnic_qp_count(qp, rnr ? SRNIC_QC_RNR_RETRIES : SRNIC_QC_RETRANSMITS, 1);
	qp->rnr_until = jiffies + usecs_to_jiffies(usec);
	qp->rnr_wait = true;
}

static int srnic_send_one(struct srnic_dev *sdev, struct srnic_engine *eng,
			  struct srnic_qp *qp, u64 *bytes)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	u32 stride = 1U << qp->sq.log_stride;
	u32 hdr = srnic_send_hdr(type);
	struct srnic_wqe_ctrl *ctrl = eng->wqe;
	const struct srnic_wqe_raddr *raddr;
	const struct srnic_wqe_atomic *atomic;
	enum ib_wc_status status = IB_WC_SUCCESS;
	enum srnic_resp r = SRNIC_RESP_OK;
	struct srnic_qp *dst = NULL, *held = NULL;
	struct srnic_msg m = {};
	const u8 *slot = qp->sq.ring.kva +
		((qp->sq_cons & ((1U << qp->sq.log_entries) - 1)) <<
		 qp->sq.log_stride);
	u8 sgid[16];
	u64 orig, len;
	int err;

	/*
	 * Only what the WQE uses is copied (a stride sized for inline data
	 * is mostly unused): the header first, then as many data bytes as
	 * the copied control segment announces.  Only the copy is read.
	 * The usual sizes (a connected QP's header, one SGE) are copied by
	 * inline moves rather than a call.
	 */
	if (hdr == SRNIC_SEND_HDR_RC)
		memcpy(eng->wqe, slot, SRNIC_SEND_HDR_RC);
	else
		memcpy(eng->wqe, slot, hdr);
	len = (ctrl->flags & SRNIC_WQE_INLINE) ? ctrl->inline_len :
		ctrl->num_sge * sizeof(struct srnic_wqe_data);
	if (len == sizeof(struct srnic_wqe_data) && len <= stride - hdr)
		memcpy(eng->wqe + hdr, slot + hdr, sizeof(struct srnic_wqe_data));
	else if (len <= stride - hdr)
		memcpy(eng->wqe + hdr, slot + hdr, len);
	raddr = eng->wqe + sizeof(*ctrl);
	atomic = eng->wqe + sizeof(*ctrl) + sizeof(*raddr);
	trace_srnic_wqe(qp, qp->sq_cons, ctrl->opcode, ctrl->flags,
			ctrl->num_sge);

	if (!qp->in_progress) {
		qp->in_progress = true;
		qp->rnr_left = qp->attr.rnr_retry;
		qp->retry_left = qp->attr.retry_cnt;
	}

	/* Validate the copy: opcode, lengths, everything that sizes memory. */
	if (!srnic_opcode_ok(type, ctrl->opcode) ||
	    ((ctrl->flags & SRNIC_WQE_INLINE) ?
		     ctrl->inline_len > qp->cap.max_inline_data ||
			     hdr + ctrl->inline_len > stride || ctrl->num_sge :
		     ctrl->num_sge > qp->cap.max_send_sge ||
			     hdr + ctrl->num_sge * sizeof(struct srnic_wqe_data) > stride)) {
		status = IB_WC_LOC_QP_OP_ERR;
		goto complete;
	}
	/* ATOMIC WRITE carries its 8 bytes in the atomic segment. */
	if (ctrl->opcode == SRNIC_WR_ATOMIC_WRITE &&
	    (ctrl->num_sge || (ctrl->flags & SRNIC_WQE_INLINE))) {
		status = IB_WC_LOC_QP_OP_ERR;
		goto complete;
	}
	if (ctrl->opcode == IB_UVERBS_WR_BIND_MW ||
	    ctrl->opcode == IB_UVERBS_WR_LOCAL_INV) {
		status = srnic_local_op(qp, ctrl);
		goto complete;
	}

	/* The local side: gather list, or scatter list for READ/atomics. */
	if (ctrl->flags & SRNIC_WQE_INLINE) {
		srnic_sg_init(&eng->local, eng->wqe + hdr, ctrl->inline_len);
	} else {
		bool into = ctrl->opcode == IB_UVERBS_WR_RDMA_READ ||
			    ctrl->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
			    ctrl->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;

		err = srnic_sg_resolve(sdev, to_spd(qp->ibqp.pd),
				       eng->wqe + hdr, ctrl->num_sge,
				       into ? IB_ACCESS_LOCAL_WRITE : 0,
				       &eng->local, &qp->lkey_cache);
		if (err == -EAGAIN && srnic_qp_fault(qp, &eng->local.fault))
			return -EINPROGRESS;
		if (err) {
			status = err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR :
						    IB_WC_LOC_PROT_ERR;
			goto complete;
		}
	}
	if (type != IB_QPT_RAW_PACKET && srnic_fault_delay(sdev, qp)) {
		srnic_sg_release(&eng->local);
		return -EAGAIN;
	}
	m.opcode = ctrl->opcode;
	m.len = eng->local.total;
	m.plen = m.len;
	m.payload = &eng->local;
	m.solicited = ctrl->flags & SRNIC_WQE_SOLICITED;
	m.has_imm = ctrl->opcode == IB_UVERBS_WR_SEND_WITH_IMM ||
		    ctrl->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM;
	m.has_inv = ctrl->opcode == IB_UVERBS_WR_SEND_WITH_INV;
	m.imm = ctrl->imm_data;
	m.src = qp;

	if (type == IB_QPT_RAW_PACKET) {
		status = srnic_raw_send(sdev, eng, &eng->local);
		m.len = eng->local.total;
		goto release;
	}
	if (type == IB_QPT_UD) {
		const struct srnic_wqe_ud *ud = eng->wqe + sizeof(*ctrl);
		u32 mtu = ib_mtu_enum_to_int(iboe_get_mtu(READ_ONCE(sdev->ndev->mtu)));

		/* Larger than the path MTU: not sent, and no error (C10-93.1.1). */
		if (m.len > mtu)
			goto release;
		if (srnic_ud_target(sdev, qp, ud, &m, sgid, &dst)) {
			status = IB_WC_LOC_QP_OP_ERR;
			goto release;
		}
		held = dst;
		/* Unreachable, wrong Q_Key or not receiving: lost, as on a wire. */
		r = SRNIC_RESP_DROP;
		if (dst && dst->ibqp.qp_type == IB_QPT_UD &&
		    dst->attr.qkey == ud->remote_qkey &&
		    !srnic_should_fail(sdev, SRNIC_FAULT_DROP, qp->qpn) &&
		    !srnic_fault_corrupt(sdev, qp, dst))
			r = srnic_fault_duplicate(eng, qp, dst, &m,
				srnic_resp_recv(eng, dst, &m, true));
		if (r == SRNIC_RESP_FAULT) {
			/* One host: rather than lose it, wait for the page. */
			if (srnic_qp_fault(qp, &eng->remote.fault)) {
				srnic_sg_release(&eng->local);
				srnic_qp_put(dst);
				return -EINPROGRESS;
			}
			srnic_recv_fail_held(dst, &m, IB_WC_LOC_PROT_ERR);
		}
		srnic_msg_account(qp, r == SRNIC_RESP_DROP ? NULL : dst,
				  ud->remote_qpn, &m, r);
		r = SRNIC_RESP_OK;
		goto release;
	}

	if (srnic_msg_piece(qp, &m)) {
		status = IB_WC_LOC_QP_OP_ERR;
		goto release;
	}
	dst = srnic_batch_peer(eng, qp);
	if (!dst || !srnic_peer_connected(sdev, qp, dst) ||
	    srnic_should_fail(sdev, SRNIC_FAULT_DROP, qp->qpn) ||
	    srnic_fault_corrupt(sdev, qp, dst))
		r = SRNIC_RESP_DROP;	/* not connected to us, or lost */
	else if (type != IB_QPT_UC && srnic_fault_rnr(dst, ctrl->opcode))
		r = SRNIC_RESP_RNR;
	else if (type == IB_QPT_XRC_INI &&
		 srnic_xrc_target(dst, ctrl->xrc_srqn, &m))
		r = SRNIC_RESP_NAK_INV;	/* no such XRC SRQ there */
	else switch (ctrl->opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
		r = srnic_resp_recv(eng, dst, &m, true);
		break;
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		/*
		 * The immediate needs a receive WQE: without one, RNR before
		 * any data is placed.  (Should a racing SRQ consumer take it
		 * meanwhile, the retry rewrites the same data.)
		 */
		m.rkey = raddr->rkey;
		m.raddr = raddr->remote_addr;
		if (srnic_msg_last(&m) && !srnic_recv_available(dst, &m)) {
			r = SRNIC_RESP_RNR;
			break;
		}
		r = srnic_resp_write(eng, dst, &m);
		if (r == SRNIC_RESP_OK && srnic_msg_last(&m))
			r = srnic_resp_recv(eng, dst, &m, false);
		break;
	case IB_UVERBS_WR_RDMA_WRITE:
		m.rkey = raddr->rkey;
		m.raddr = raddr->remote_addr;
		r = srnic_resp_write(eng, dst, &m);
		break;
	case IB_UVERBS_WR_RDMA_READ:
		m.rkey = raddr->rkey;
		m.raddr = raddr->remote_addr;
		r = srnic_resp_read(eng, dst, &m, &eng->local);
		break;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		if (eng->local.total != 8) {
			status = IB_WC_LOC_LEN_ERR;
			goto release;
		}
		m.rkey = raddr->rkey;
		m.raddr = raddr->remote_addr;
		m.compare_add = atomic->compare_add;
		m.swap = atomic->swap;
		r = srnic_resp_atomic(eng, dst, &m, &orig);
		if (r == SRNIC_RESP_OK)
			srnic_sg_put_u64(&eng->local, orig);
		break;
	case SRNIC_WR_ATOMIC_WRITE:
		m.rkey = raddr->rkey;
		m.raddr = raddr->remote_addr;
		m.compare_add = atomic->compare_add;
		r = srnic_resp_atomic(eng, dst, &m, &orig);
		break;
	}
	if (dst && r == SRNIC_RESP_OK)
		r = srnic_fault_duplicate(eng, qp, dst, &m, r);

	srnic_msg_account(qp, r == SRNIC_RESP_DROP ? NULL : dst,
			  qp->attr.dest_qp_num, &m, r);
	if (r == SRNIC_RESP_FAULT) {
		/* The responder's page: the requester waits, as for a NAK. */
		if (srnic_qp_fault(qp, &eng->remote.fault)) {
			srnic_sg_release(&eng->local);
			srnic_msg_put(held, &m);
			return -EINPROGRESS;
		}
		/* It cannot be mapped: a receive fails, an RDMA access too. */
		if (ctrl->opcode == IB_UVERBS_WR_SEND ||
		    ctrl->opcode == IB_UVERBS_WR_SEND_WITH_IMM ||
		    ctrl->opcode == IB_UVERBS_WR_SEND_WITH_INV) {
			srnic_recv_fail_held(dst, &m, IB_WC_LOC_PROT_ERR);
			r = SRNIC_RESP_NAK_OP;
		} else {
			r = SRNIC_RESP_NAK_ACCESS;
		}
	}
	if (r == SRNIC_RESP_OK) {
		*bytes += m.plen;
		if (srnic_msg_last(&m))
			goto release;
		/* More pieces: the WQE stays, the next piece goes next. */
		qp->msg_off += m.plen;
		srnic_sg_release(&eng->local);
		srnic_msg_put(held, &m);
		return 1;
	}
	if (type == IB_QPT_UC)
		goto release;	/* UC has no acknowledgements: lost */
	if (r == SRNIC_RESP_RNR && qp->rnr_left) {
		/* rnr_retry 7 means retry for ever. */
		if (qp->rnr_left != 7)
			qp->rnr_left--;
		srnic_retry_later(qp, true, qp->rnr_left,
				  srnic_rnr_usec[dst->attr.min_rnr_timer & 31]);
		srnic_sg_release(&eng->local);
		srnic_msg_put(held, &m);
		return -EAGAIN;
	}
	/*
	 * No answer (the destination does not receive, e.g. not yet in RTR):
	 * the request is sent again after the transport timer, 4.096 us <<
	 * timeout (0: never), retry_cnt times.
	 */
	if (r == SRNIC_RESP_DROP && qp->retry_left && qp->attr.timeout) {
		qp->retry_left--;
		srnic_retry_later(qp, false, qp->retry_left,
				  (4096ULL << qp->attr.timeout) / NSEC_PER_USEC);
		srnic_sg_release(&eng->local);
		srnic_msg_put(held, &m);
		return -EAGAIN;
	}
	status = srnic_nak_status(r);
	if (r == SRNIC_RESP_RNR || r == SRNIC_RESP_DROP)
		srnic_count(sdev, r == SRNIC_RESP_RNR ?
			    SRNIC_PC_RNR_RETRY_EXCEEDED :
			    SRNIC_PC_RETRY_EXCEEDED);
	/* The responder of an RC access or request error also fails. */
	if (dst && (r == SRNIC_RESP_NAK_ACCESS || r == SRNIC_RESP_NAK_INV))
		srnic_qp_set_error(dst);

release:
complete:
	qp->in_progress = false;
	qp->delayed = false;
	qp->msg_off = 0;
	qp->fault_err = 0;
	/*
	 * The slot is free before its completion is visible: a provider that
	 * polled the CQE may post into it at once.
	 */
	qp->sq_cons++;
	smp_store_release(&((struct srnic_qp_db *)qp->db.kva)->sq_consumer,
			  qp->sq_cons);
	srnic_send_complete(qp, ctrl, status,
			    status == IB_WC_SUCCESS ? (u32)m.len : 0);
	/*
	 * The WQE's references go once its completion is out, not before:
	 * the poller waits for nothing it does not need.  Whoever destroys
	 * what they name on seeing the completion waits for them.
	 */
	srnic_sg_release(&eng->local);
	srnic_msg_put(held, &m);
	if (status != IB_WC_SUCCESS)
		srnic_qp_set_error(qp);
	else if (m.tm_fin)
		srnic_tm_fin(eng, qp, m.tm_fin_tag);
	eng->wqes++;
	return 0;
}

/*
 * Runs up to @budget send WQEs of @qp with @eng: the engine thread's, or a
 * doorbell system call's, and about @max_bytes of their data (a piece
 * more at most).
 * qp->lock makes them take turns, so the QP's WQEs execute one at a time
 * and in order whoever runs them.  Returns the WQEs done (@budget when the
 * visit ended with work left), or -EBUSY if the QP is locked (by the other
 * executor, or by a modify_qp); @timer gets the earliest time a held WQE
 * may be retried.
 *
 * The caller holds srnic_engine_srcu for the batch: ODP invalidations and
 * removals of MRs and QPs wait for it, so the batch may use the QP's
 * cached MRs and peer, and ODP pages it found mapped stay so.
 */
int srnic_qp_process(struct srnic_dev *sdev, struct srnic_engine *eng,
		     struct srnic_qp *qp, int budget, u64 max_bytes,
		     unsigned long *timer)
{
	u32 prod, n = 1U << qp->sq.log_entries;
	int done = 0, state, ret;
	u64 bytes = 0;

	/* Never wait: the lock holder runs the QP, or the next scan will. */
	if (!mutex_trylock(&qp->lock)) {
		eng->busy++;
		return -EBUSY;
	}
	qp->visits++;
	state = READ_ONCE(qp->state);
	if (state == IB_QPS_ERR) {
		done = srnic_qp_flush(qp);
		goto out;
	}
	/* XRC target QPs have no send queue. */
	if (state != IB_QPS_RTS || !srnic_qp_has_sq(qp))
		goto out;
	/* Waiting for an ODP page fault: srnic_fault_work() kicks us. */
	if (smp_load_acquire(&qp->fault_wait))
		goto out;
	if (qp->rnr_wait) {
		if (time_before(jiffies, qp->rnr_until)) {
			if (!*timer || time_before(qp->rnr_until, *timer))
				*timer = qp->rnr_until;
			goto out;
		}
		qp->rnr_wait = false;
	}
	while (done < budget) {
		prod = READ_ONCE(qp->dbr.kva->value);
		if (prod == qp->sq_cons)
			break;
		if (prod - qp->sq_cons > n) {
			/* The owner broke the ring protocol. */
			srnic_qp_set_error(qp);
			srnic_qp_event(qp, IB_EVENT_QP_FATAL);
			break;
		}
		/* The WQE is read after the doorbell that announced it. */
		smp_rmb();
		ret = srnic_send_one(sdev, eng, qp, &bytes);
		if (ret == -EINPROGRESS)
			break;
		if (ret == -EAGAIN) {
			if (!*timer || time_before(qp->rnr_until, *timer))
				*timer = qp->rnr_until;
			break;
		}
		if (!ret)
			done++;
		if (READ_ONCE(qp->state) != IB_QPS_RTS)
			break;
		/* Its share of this visit: others' turn, then its next. */
		if (bytes >= max_bytes) {
			done = budget;
			break;
		}
	}
	srnic_batch_end(eng);
out:
	mutex_unlock(&qp->lock);
	return done;
}
