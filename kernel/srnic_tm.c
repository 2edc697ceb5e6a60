// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Tag matching SRQs (IBV_SRQT_TM), with mlx5's semantics as libibverbs
 * shows them.  The tag list lives in the kernel; ibv_post_srq_ops reaches
 * it through modify_srq driver data (one struct srnic_tm_op per command),
 * executed at once, so a list operation is ordered with the messages the
 * engines deliver by the SRQ's rq_lock and its completion is in the CQ when
 * the call returns.  A SEND to an RC QP on the SRQ carries a TMH: EAGER and
 * RNDV messages whose tag matches a posted tag go to that tag's buffer
 * (RNDV: read from the sender's buffer the RVH names), others to the SRQ's
 * receive WQEs, as unexpected (counted) or NO_TAG messages.
 */
#include "srnic_loc.h"

int srnic_tm_create(struct srnic_srq *srq, u32 num_tags)
{
	if (!num_tags || num_tags > SRNIC_TM_MAX_TAGS)
		return -EINVAL;
	srq->tm.tags = kvcalloc(num_tags, sizeof(*srq->tm.tags), GFP_KERNEL);
	if (!srq->tm.tags)
		return -ENOMEM;
	srq->tm.num_tags = num_tags;
	return 0;
}

void srnic_tm_destroy(struct srnic_srq *srq)
{
	kvfree(srq->tm.tags);
	srq->tm.tags = NULL;
}

static bool srnic_tm_in_sync(const struct srnic_srq *srq)
{
	return srq->tm.sw_unexp == srq->tm.hw_unexp;
}

/* A completion of a list operation, on the SRQ's CQ. */
static void srnic_tm_op_cqe(struct srnic_srq *srq, u8 opcode, u64 wr_id,
			    u8 status, bool sync_req)
{
	struct srnic_cqe cqe = {
		.wr_id = wr_id, .opcode = opcode, .status = status,
		.wc_flags = sync_req ? SRNIC_CQE_TM_SYNC_REQ : 0,
	};

	srnic_cq_post(to_scq(srq->ibsrq.ext.cq), &cqe, false);
}

/* ADD: the lowest free entry; its buffer must be writable in the SRQ's PD. */
static int srnic_tm_add(struct srnic_srq *srq, const struct srnic_tm_op *op,
			u8 *status, u32 *idx)
{
	struct srnic_dev *sdev = to_sdev(srq->ibsrq.device);
	u32 i;

	if (op->num_sge > SRNIC_TM_MAX_SGE)
		return -EINVAL;
	if (op->num_sge && op->sge.length) {
		struct srnic_mr *mr = srnic_mr_get(sdev, op->sge.lkey);

		if (!mr || srnic_mr_check(mr, to_spd(srq->ibsrq.pd),
					  IB_ACCESS_LOCAL_WRITE, op->sge.addr,
					  op->sge.length)) {
			*status = IB_WC_LOC_PROT_ERR;
			if (mr)
				srnic_mr_put(mr);
			return 0;
		}
		srnic_mr_put(mr);
	}
	/* Only ADD (under the mutex) makes a free entry anything else. */
	for (i = 0; i < srq->tm.num_tags; i++)
		if (READ_ONCE(srq->tm.tags[i].state) == SRNIC_TAG_FREE)
			break;
	if (i == srq->tm.num_tags)
		return -ENOMEM;
	if (put_user(i, (u32 __user *)u64_to_user_ptr(op->handle_addr)))
		return -EFAULT;
	*idx = i;
	return 0;
}

/*
 * One ibv_post_srq_ops operation.  Errors of the request itself (unknown
 * opcode or flags, a handle beyond the list, more SGEs than tm_caps, a
 * full list) fail the command; what the device finds (a bad buffer, a tag
 * already consumed) completes in error, signaled or not.
 */
int srnic_tm_post(struct srnic_srq *srq, int mask, struct ib_udata *udata)
{
	struct srnic_tm *tm = &srq->tm;
	struct srnic_tm_op op;
	u8 status = IB_WC_SUCCESS, opcode;
	u32 idx = 0;
	bool sync_req;
	int err;

	err = srnic_udata_in(udata, &op, sizeof(op));
	if (err)
		return err;
	if (mask || memchr_inv(op.reserved, 0, sizeof(op.reserved)) ||
	    op.flags & ~(SRNIC_TM_OP_SIGNALED | SRNIC_TM_OP_TM_SYNC))
		return -EINVAL;

	mutex_lock(&srq->lock);
	switch (op.opcode) {
	case SRNIC_TM_OP_ADD:
		opcode = SRNIC_WC_TM_ADD;
		err = srnic_tm_add(srq, &op, &status, &idx);
		break;
	case SRNIC_TM_OP_DEL:
		opcode = SRNIC_WC_TM_DEL;
		if (op.handle >= tm->num_tags)
			err = -EINVAL;
		break;
	case SRNIC_TM_OP_SYNC:
		opcode = SRNIC_WC_TM_SYNC;
		break;
	default:
		err = -EINVAL;
	}
	if (err)
		goto out;

	spin_lock(&srq->rq_lock);
	if (op.flags & SRNIC_TM_OP_TM_SYNC)
		tm->sw_unexp = op.unexpected_cnt;
	if (op.opcode == SRNIC_TM_OP_ADD && status == IB_WC_SUCCESS) {
		struct srnic_tag *t = &tm->tags[idx];

		t->tag = op.tag;
		t->mask = op.mask;
		t->wr_id = op.recv_wr_id;
		t->sge = op.sge;
		t->num_sge = op.num_sge;
		t->seq = tm->next_seq++;
		WRITE_ONCE(t->state, SRNIC_TAG_POSTED);
	} else if (op.opcode == SRNIC_TM_OP_DEL) {
		struct srnic_tag *t = &tm->tags[op.handle];

		/* Consumed by a message (or never posted): as mlx5, TM_ERR. */
		if (t->state == SRNIC_TAG_POSTED)
			WRITE_ONCE(t->state, SRNIC_TAG_FREE);
		else
			status = SRNIC_WC_TM_ERR;
	}
	sync_req = !srnic_tm_in_sync(srq);
	spin_unlock(&srq->rq_lock);

	if ((op.flags & SRNIC_TM_OP_SIGNALED) || status != IB_WC_SUCCESS)
		srnic_tm_op_cqe(srq, opcode, op.wr_id, status, sync_req);
out:
	mutex_unlock(&srq->lock);
	return err;
}

/*
 * The oldest posted tag that @tag matches, marked busy, or -1.  While
 * software has not accounted for every unexpected message nothing
 * matches: it may hold a message for a tag it is about to post.
 */
static int srnic_tm_match(struct srnic_srq *srq, u64 tag, struct srnic_tag *out)
{
	struct srnic_tm *tm = &srq->tm;
	int i, best = -1;

	spin_lock(&srq->rq_lock);
	if (srnic_tm_in_sync(srq)) {
		for (i = 0; i < tm->num_tags; i++) {
			struct srnic_tag *t = &tm->tags[i];

			if (t->state == SRNIC_TAG_POSTED &&
			    !((t->tag ^ tag) & t->mask) &&
			    (best < 0 || t->seq < tm->tags[best].seq))
				best = i;
		}
	}
	if (best >= 0) {
		*out = tm->tags[best];
		tm->tags[best].state = SRNIC_TAG_BUSY;
	}
	spin_unlock(&srq->rq_lock);
	return best;
}

/* A busy tag is done with (@state FREE) or matchable again (POSTED). */
static void srnic_tm_settle(struct srnic_srq *srq, int idx, u8 state)
{
	spin_lock(&srq->rq_lock);
	srq->tm.tags[idx].state = state;
	spin_unlock(&srq->rq_lock);
}

void srnic_tm_unexpected(struct srnic_srq *srq)
{
	spin_lock(&srq->rq_lock);
	srq->tm.hw_unexp++;
	spin_unlock(&srq->rq_lock);
}

/*
 * The rendezvous read: the RVH's range of the sender's memory into the
 * tag's buffer (resolved in eng->remote), checked as an RDMA READ the
 * receiver's QP makes to the sender's.  Any failure leaves it to software
 * (IBV_WC_TM_RNDV_INCOMPLETE), which has the RVH from the first completion.
 */
static u8 srnic_tm_rndv_read(struct srnic_engine *eng,
			     const struct srnic_msg *m, const u8 *rvh, u32 *len)
{
	struct srnic_msg rm = {
		.raddr = get_unaligned_be64(rvh),
		.rkey = get_unaligned_be32(rvh + 8),
		.len = get_unaligned_be32(rvh + 12),
		.plen = get_unaligned_be32(rvh + 12),
	};
	enum srnic_resp r;

	if (rm.len > eng->remote.total || !m->src ||
	    !m->src->attr.max_dest_rd_atomic)
		return SRNIC_WC_TM_RNDV_INCOMPLETE;
	r = srnic_resp_target(m->src, &rm, IB_ACCESS_REMOTE_READ, &eng->tm);
	if (r == SRNIC_RESP_FAULT) {
		/* No waiting for the sender's pages here. */
		srnic_sg_drop_fault(&eng->tm);
	}
	if (r != SRNIC_RESP_OK)
		return SRNIC_WC_TM_RNDV_INCOMPLETE;
	srnic_sg_copy(&eng->remote, 0, &eng->tm, 0, rm.len);
	srnic_sg_release(&eng->tm);
	*len = rm.len;
	return IB_WC_SUCCESS;
}

/*
 * A rendezvous from across the wire, tag @t matched (its buffer @buf_len
 * bytes): queued for @dst's requester, which reads the RVH's range into
 * the buffer and then sends the FIN (srnic_send_rndv).  False when it
 * cannot be (longer than the buffer, a QP that makes no READs, its ring
 * full): software finishes it.
 */
static bool srnic_tm_rndv_queue(struct srnic_qp *dst, const struct srnic_tag *t,
				const struct srnic_msg *m, const u8 *h,
				u64 buf_len)
{
	const u8 *rvh = h + SRNIC_TMH_SIZE;
	struct srnic_wire_qp *w = &dst->w;
	u32 len = get_unaligned_be32(rvh + 12);
	struct srnic_rndv *rv;

	if (len > buf_len || !dst->attr.max_rd_atomic)
		return false;
	spin_lock(&w->lock);
	/*
	 * Not for a QP that stopped receiving meanwhile (one that raced
	 * with this is emptied at its next RTR).
	 */
	if (w->rndv_tail - w->rndv_head >= SRNIC_WIRE_READS ||
	    !srnic_qp_receives(READ_ONCE(dst->state))) {
		spin_unlock(&w->lock);
		return false;
	}
	rv = &w->rndv[w->rndv_tail % SRNIC_WIRE_READS];
	*rv = (struct srnic_rndv){
		.raddr = get_unaligned_be64(rvh),
		.rkey = get_unaligned_be32(rvh + 8),
		.len = len, .sge = t->sge, .num_sge = t->num_sge,
		.wr_id = t->wr_id,
		.solicited = m->solicited,
		.fin = { SRNIC_TMH_FIN },
	};
	memcpy(rv->fin + 8, h + 8, 8);
	WRITE_ONCE(w->rndv_tail, w->rndv_tail + 1);
	spin_unlock(&w->lock);
	srnic_engine_kick(dst);
	return true;
}

/* The rendezvous at the head of @qp's ring, or NULL.  Under the QP's lock. */
struct srnic_rndv *srnic_tm_rndv_head(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;

	if (READ_ONCE(w->rndv_tail) == w->rndv_head)
		return NULL;
	return &w->rndv[w->rndv_head % SRNIC_WIRE_READS];
}

/*
 * Bytes [@off, @off + @len) of the tag's buffer of @rv, resolved for
 * writing into @sg, in the SRQ's PD (as the tag was checked when posted).
 */
int srnic_tm_rndv_dest(struct srnic_qp *qp, const struct srnic_rndv *rv,
		       u64 off, u32 len, struct srnic_sg *sg)
{
	struct srnic_srq *srq = to_ssrq(qp->ibqp.srq);

	return srnic_sg_resolve_window(to_sdev(qp->ibqp.device),
				       to_spd(srq->ibsrq.pd), &rv->sge,
				       rv->num_sge,
				       IB_ACCESS_LOCAL_WRITE, sg, NULL, off,
				       len);
}

/* The tag's second completion: the data, or why not. */
static void srnic_tm_rndv_cqe(struct srnic_qp *qp, const struct srnic_rndv *rv,
			      u8 status)
{
	struct srnic_cqe cqe = {
		.wr_id = rv->wr_id, .status = status,
		.opcode = SRNIC_WC_TM_RECV, .qp_num = qp->qpn,
	};

	if (status == IB_WC_SUCCESS) {
		cqe.wc_flags = SRNIC_CQE_TM_DATA_VALID;
		cqe.byte_len = rv->len;
	}
	srnic_qp_recv_cqe(qp, to_ssrq(qp->ibqp.srq), &cqe,
			  status == IB_WC_SUCCESS && rv->solicited);
}

/*
 * The head's READ (@status) or FIN is done.  A READ completes the tag;
 * if it succeeded the FIN goes next, else the rendezvous is over, as it is
 * after the FIN.  Under the QP's lock.
 */
void srnic_tm_rndv_done(struct srnic_qp *qp, struct srnic_rndv *rv,
			u8 status)
{
	struct srnic_wire_qp *w = &qp->w;

	qp->w.rndv_on = false;
	if (!rv->read_done) {
		srnic_tm_rndv_cqe(qp, rv, status);
		if (status == IB_WC_SUCCESS) {
			rv->read_done = true;
			return;
		}
	}
	spin_lock(&w->lock);
	w->rndv_head++;
	spin_unlock(&w->lock);
}

/*
 * A QP in error: the rendezvous whose data did not come complete their
 * tags flushed; their FINs are not sent.
 */
void srnic_tm_rndv_flush(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_rndv rv;

	spin_lock(&w->lock);
	while (w->rndv_head != w->rndv_tail) {
		rv = w->rndv[w->rndv_head++ % SRNIC_WIRE_READS];
		spin_unlock(&w->lock);
		if (!rv.read_done)
			srnic_tm_rndv_cqe(qp, &rv, IB_WC_WR_FLUSH_ERR);
		spin_lock(&w->lock);
	}
	w->rndv_on = false;
	spin_unlock(&w->lock);
}

/* A matched tag's TMH in its completion. */
void srnic_tm_cqe_match(struct srnic_cqe *cqe, const struct srnic_tm_piece *tm)
{
	cqe->tm_tag_lo = lower_32_bits(tm->tag);
	cqe->tm_tag_hi = upper_32_bits(tm->tag);
	cqe->tm_priv = tm->priv;
	cqe->wc_flags |= SRNIC_CQE_TM_MATCH;
}

/*
 * The first packet of an eager message in several matched tag @t: the
 * QP holds the tag's buffer as a receive WQE for the others, which the
 * receive path places (less the TMH) and completes with the match.
 */
static enum srnic_resp srnic_tm_hold(struct srnic_engine *eng,
				     struct srnic_qp *dst,
				     struct srnic_srq *srq,
				     const struct srnic_tag *t,
				     const struct srnic_msg *m)
{
	struct srnic_recv_wqe_hdr *hdr = eng->rwqe;
	struct srnic_cqe cqe = {
		.wr_id = t->wr_id, .status = IB_WC_LOC_QP_OP_ERR,
		.opcode = SRNIC_WC_TM_RECV, .qp_num = dst->qpn,
	};

	*hdr = (struct srnic_recv_wqe_hdr){ .wr_id = t->wr_id,
					    .num_sge = t->num_sge };
	memcpy(hdr + 1, &t->sge, sizeof(t->sge));
	if (srnic_recv_hold(dst, srq, hdr, SRNIC_TM_MAX_SGE, m))
		return SRNIC_RESP_OK;
	/* The slot holds another message's WQE, which must not be lost. */
	srnic_qp_set_error(dst);
	srnic_qp_recv_cqe(dst, srq, &cqe, false);
	return SRNIC_RESP_NAK_OP;
}

/*
 * An eager message that matched tag @t: its data, after the TMH, into the
 * tag's buffer (resolved in eng->remote, released here), then the tag's
 * completion @cqe, or the QP's held WQE for the pieces to come.
 */
static enum srnic_resp srnic_tm_recv_eager(struct srnic_engine *eng,
					   struct srnic_qp *dst,
					   struct srnic_srq *srq,
					   const struct srnic_tag *t,
					   struct srnic_msg *m,
					   struct srnic_cqe *cqe)
{
	cqe->byte_len = m->plen - SRNIC_TMH_SIZE;
	srnic_sg_copy(&eng->remote, 0, m->payload, SRNIC_TMH_SIZE,
		      cqe->byte_len);
	srnic_sg_release(&eng->remote);
	m->tm.skip = SRNIC_TMH_SIZE;
	if (!srnic_msg_last(m))
		return srnic_tm_hold(eng, dst, srq, t, m);
	srnic_tm_cqe_match(cqe, &m->tm);
	cqe->wc_flags |= SRNIC_CQE_TM_DATA_VALID;
	srnic_qp_recv_cqe(dst, srq, cqe, m->solicited);
	return SRNIC_RESP_OK;
}

/*
 * A rendezvous that matched tag @t (@h: its TMH and RVH): the match's
 * completion @cqe first, then the data, as mlx5 reports them.  From the
 * wire the QP's own READ fetches them when its requester gets to it; on
 * one host they are read at once, and the data's completion follows.
 */
static enum srnic_resp srnic_tm_recv_rndv(struct srnic_engine *eng,
					  struct srnic_qp *dst,
					  struct srnic_srq *srq,
					  const struct srnic_tag *t,
					  struct srnic_msg *m, const u8 *h,
					  struct srnic_cqe *cqe)
{
	srnic_tm_cqe_match(cqe, &m->tm);
	srnic_qp_recv_cqe(dst, srq, cqe, false);
	if (!m->src && srnic_tm_rndv_queue(dst, t, m, h, eng->remote.total)) {
		srnic_sg_release(&eng->remote);
		return SRNIC_RESP_OK;
	}
	*cqe = (struct srnic_cqe){ .wr_id = t->wr_id,
				   .opcode = SRNIC_WC_TM_RECV,
				   .qp_num = dst->qpn };
	cqe->status = srnic_tm_rndv_read(eng, m, h + SRNIC_TMH_SIZE,
					 &cqe->byte_len);
	srnic_sg_release(&eng->remote);
	if (cqe->status == IB_WC_SUCCESS) {
		cqe->wc_flags = SRNIC_CQE_TM_DATA_VALID;
		m->tm_fin = true;
		m->tm_fin_tag = get_unaligned((u64 *)(h + 8));
	}
	srnic_qp_recv_cqe(dst, srq, cqe, m->solicited);
	return SRNIC_RESP_OK;
}

/*
 * A SEND to @dst, an RC QP on the TM SRQ @srq.  Returns true when the
 * message went to a tag (verdict in *@r); false when it goes to a receive
 * WQE, with the completion's opcode in m->tm.wc.
 */
bool srnic_tm_recv(struct srnic_engine *eng, struct srnic_qp *dst,
		   struct srnic_srq *srq, struct srnic_msg *m,
		   enum srnic_resp *r)
{
	u8 h[SRNIC_TMH_SIZE + SRNIC_RVH_SIZE] = {};
	struct srnic_cqe cqe = { .opcode = SRNIC_WC_TM_RECV, .qp_num = dst->qpn };
	struct srnic_tag t;
	u64 tag;
	int idx, err;
	u8 op;

	srnic_sg_read(m->payload, 0, h, min_t(u64, m->len, sizeof(h)));
	op = h[0];
	m->tm.wc = SRNIC_WC_TM_NO_TAG;
	if (m->len < SRNIC_TMH_SIZE ||
	    (op != SRNIC_TMH_EAGER && op != SRNIC_TMH_RNDV))
		return false;
	m->tm.wc = SRNIC_WC_TM_RECV;
	/*
	 * A rendezvous without its RVH is software's to sort out, as is one
	 * whose header does not fit one packet.
	 */
	if (op == SRNIC_TMH_RNDV &&
	    (m->len < sizeof(h) || !srnic_msg_last(m))) {
		m->tm_unexp = true;
		return false;
	}
	tag = get_unaligned_be64(h + 8);
	idx = srnic_tm_match(srq, tag, &t);
	if (idx < 0) {
		m->tm_unexp = true;
		return false;
	}

	cqe.wr_id = t.wr_id;
	err = srnic_sg_resolve(to_sdev(dst->ibqp.device), to_spd(srq->ibsrq.pd),
			       &t.sge, t.num_sge, IB_ACCESS_LOCAL_WRITE,
			       &eng->remote, NULL);
	if (err == -EAGAIN) {
		/* The requester waits for the page, then the tag matches again. */
		srnic_tm_settle(srq, idx, SRNIC_TAG_POSTED);
		*r = SRNIC_RESP_FAULT;
		return true;
	}
	srnic_tm_settle(srq, idx, SRNIC_TAG_FREE);
	if (!err && op == SRNIC_TMH_EAGER &&
	    eng->remote.total < m->len - SRNIC_TMH_SIZE) {
		srnic_sg_release(&eng->remote);
		err = -EMSGSIZE;
	}
	if (err) {
		cqe.status = err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR :
						IB_WC_LOC_PROT_ERR;
		srnic_qp_set_error(dst);
		srnic_qp_recv_cqe(dst, srq, &cqe, false);
		*r = err == -EMSGSIZE ? SRNIC_RESP_NAK_INV : SRNIC_RESP_NAK_OP;
		return true;
	}

	m->tm.tag = tag;
	m->tm.priv = get_unaligned_be32(h + 4);
	if (op == SRNIC_TMH_EAGER)
		*r = srnic_tm_recv_eager(eng, dst, srq, &t, m, &cqe);
	else
		*r = srnic_tm_recv_rndv(eng, dst, srq, &t, m, h, &cqe);
	return true;
}

/*
 * After a rendezvous the receiver tells the sender its buffer is free: a
 * FIN message (a TMH with the tag) to the sending QP's receive queue,
 * after the SEND's own completion.  Without a receive WQE it is lost.
 */
void srnic_tm_fin(struct srnic_engine *eng, struct srnic_qp *qp, u64 tag)
{
	u8 fin[SRNIC_TMH_SIZE] = { SRNIC_TMH_FIN };
	struct srnic_msg fm = {
		.opcode = IB_UVERBS_WR_SEND, .len = sizeof(fin),
		.plen = sizeof(fin), .fresh_wqe = true,
		.payload = &eng->local, .src_qpn = qp->qpn,
	};

	memcpy(fin + 8, &tag, sizeof(tag));
	srnic_sg_init(&eng->local, fin, sizeof(fin));
	if (srnic_resp_recv(eng, qp, &fm, true) == SRNIC_RESP_FAULT) {
		srnic_sg_drop_fault(&eng->remote);
		srnic_recv_fail_held(qp, &fm, IB_WC_LOC_PROT_ERR);
	}
	srnic_sg_init(&eng->local, NULL, 0);
}
