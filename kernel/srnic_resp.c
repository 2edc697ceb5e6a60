// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The responder: what a message does at its destination QP, and the answer
 * it gives (srnic_transport.h).  It accepts requests only from the QP it is
 * connected to, answers RNR with its own timer, and on an error moves only
 * its own QP to error.  Run by the transport that carried the request (the
 * loopback runs it in the requester's engine); receive WQEs are copied out
 * of user memory under the destination's receive lock before they are read.
 */
#include <net/ipv6.h>
#include <net/ip.h>

#include "srnic_loc.h"
#include "srnic_transport.h"

/* RNR NAK timer encodings of the IB spec (table 45), in microseconds. */
static const u32 srnic_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* The wait an RNR NAK's timer code @code asks for, in microseconds. */
u32 srnic_rnr_code_usec(u8 code)
{
	return srnic_rnr_usec[code & 31];
}

/* How long an RNR NAK of @dst asks the requester to wait: its min_rnr_timer. */
u32 srnic_resp_rnr_usec(const struct srnic_qp *dst)
{
	return srnic_rnr_usec[READ_ONCE(dst->attr.min_rnr_timer) & 31];
}

/*
 * An XRC initiator's message names an XRC SRQ of the target QP's domain;
 * @m holds it (referenced) for the responder.  -EINVAL if there is none.
 */
int srnic_resp_xrc_srq(struct srnic_qp *dst, u32 srqn, struct srnic_msg *m)
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
 * The SRQ a message to @qp takes its receive WQE from: the XRC SRQ it
 * names, the QP's SRQ, or NULL for the QP's own receive queue.
 */
static struct srnic_srq *srnic_recv_srq(struct srnic_qp *qp,
					const struct srnic_msg *m)
{
	if (m->xrc_srq)
		return m->xrc_srq;
	return qp->ibqp.srq ? to_ssrq(qp->ibqp.srq) : NULL;
}

/* The PD a message to @qp is checked against (XRC: its SRQ's). */
static struct srnic_pd *srnic_recv_pd(struct srnic_qp *qp,
				      const struct srnic_msg *m)
{
	return to_spd(m->xrc_srq ? m->xrc_srq->ibsrq.pd : qp->ibqp.pd);
}

/*
 * Copies the receive WQE at *@cons of ring @wq into @rwqe and consumes it,
 * with the ring's lock held.  @prod_p and @cons_p are the producer and
 * consumer counters in the user's doorbell record.  Returns how many WQEs
 * were posted (>= 1) with one taken, 0 if none is, -EPROTO if the producer
 * is impossible.
 */
int srnic_ring_take(const struct srnic_wq *wq, u32 *cons, const u32 *prod_p,
		    u32 *cons_p, void *rwqe)
{
	u32 n = 1U << wq->log_entries, prod = READ_ONCE(*prod_p);
	u32 avail = prod - *cons;

	if (!avail || avail > n)
		return avail ? -EPROTO : 0;
	/* Pairs with the provider's release store of the producer. */
	smp_rmb();
	memcpy(rwqe, wq->ring.kva + ((*cons & (n - 1)) << wq->log_stride),
	       1U << wq->log_stride);
	++*cons;
	smp_store_release(cons_p, *cons);
	return avail;
}

/*
 * Takes the next receive WQE of @qp (from @srq or its RQ) into @rwqe.
 * Returns 1 with a WQE, 0 if none is posted, -EPROTO if the owner's
 * producer counter is impossible (the QP is then put in error).
 */
/*
 * The receive WQE @qp holds (taken by an earlier piece of the message, or
 * for a message that faulted) into @rwqe: 1, or 0 if it holds none.  With
 * @m, a later piece of the message, its tag matching state too.
 */
static int srnic_recv_take_held(struct srnic_qp *qp, struct srnic_srq *srq,
				void *rwqe, u32 *max_sge, struct srnic_msg *m)
{
	int ret = 0;

	if (!READ_ONCE(qp->rwqe_held))
		return 0;
	spin_lock(&qp->rq_lock);
	if (qp->rwqe_held && (!srq || qp->held_srqn == srq->srqn)) {
		qp->rwqe_held = false;
		memcpy(rwqe, qp->held_rwqe, SRNIC_RECV_WQE_MAX);
		*max_sge = qp->held_max_sge;
		if (m)
			m->tm = qp->held_tm;
		ret = 1;
	}
	spin_unlock(&qp->rq_lock);
	return ret;
}

static int srnic_recv_take(struct srnic_qp *qp, struct srnic_srq *srq,
			   void *rwqe, u32 *max_sge, bool fresh)
{
	u32 limit = 0;
	int ret;

	/* A WQE taken earlier for a message that faulted comes first. */
	if (!fresh && srnic_recv_take_held(qp, srq, rwqe, max_sge, NULL))
		return 1;
	if (srq) {
		struct srnic_srq_db *db = srq->db.kva;

		spin_lock(&srq->rq_lock);
		ret = srnic_ring_take(&srq->wq, &srq->cons, &db->producer,
				      &db->consumer, rwqe);
		if (ret <= 0) {
			spin_unlock(&srq->rq_lock);
			return ret;
		}
		*max_sge = srq->max_sge;
		if (srq->limit && ret - 1 < srq->limit) {
			limit = srq->limit;
			srq->limit = 0;	/* fires once per arming */
		}
		spin_unlock(&srq->rq_lock);
		if (limit && srq->ibsrq.event_handler) {
			struct ib_event ev = {
				.device = srq->ibsrq.device,
				.event = IB_EVENT_SRQ_LIMIT_REACHED,
				.element.srq = &srq->ibsrq,
			};

			srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
		}
		return 1;
	}

	if (!qp->cap.max_recv_wr)
		return 0;
	spin_lock(&qp->rq_lock);
	ret = srnic_ring_take(&qp->rq, &qp->rq_cons,
			      &((struct srnic_qp_db *)qp->db.kva)->rq_producer,
			      &((struct srnic_qp_db *)qp->db.kva)->rq_consumer,
			      rwqe);
	*max_sge = qp->cap.max_recv_sge;
	spin_unlock(&qp->rq_lock);
	if (ret < 0)
		srnic_qp_set_error(qp);
	return ret < 0 ? ret : !!ret;
}

/*
 * Gives @rwqe back to @qp, with @m's tag matching state: the message's
 * next piece, or its retry after an ODP fault, takes it.  The slot holds
 * one: false if it holds another already (a WQE of another XRC SRQ, say),
 * which must not be lost.
 */
bool srnic_recv_hold(struct srnic_qp *qp, struct srnic_srq *srq,
		     const void *rwqe, u32 max_sge, const struct srnic_msg *m)
{
	bool held;

	spin_lock(&qp->rq_lock);
	held = !qp->rwqe_held;
	if (held) {
		memcpy(qp->held_rwqe, rwqe, SRNIC_RECV_WQE_MAX);
		qp->held_max_sge = max_sge;
		qp->held_srqn = srq ? srq->srqn : 0;
		qp->held_tm = m->tm;
		qp->rwqe_held = true;
	}
	spin_unlock(&qp->rq_lock);
	return held;
}

/* Whether a receive WQE is posted now (a hint: no lock, no copy). */
bool srnic_recv_available(struct srnic_qp *qp, const struct srnic_msg *m)
{
	struct srnic_srq *srq = srnic_recv_srq(qp, m);

	if (READ_ONCE(qp->rwqe_held))
		return true;
	if (srq) {
		return READ_ONCE(((struct srnic_srq_db *)srq->db.kva)->producer) !=
		       READ_ONCE(srq->cons);
	}
	return qp->cap.max_recv_wr &&
	       READ_ONCE(((struct srnic_qp_db *)qp->db.kva)->rq_producer) !=
		       READ_ONCE(qp->rq_cons);
}

/*
 * A receive completion with an error, the destination QP to error with
 * @qp_error.  Under the RQ's lock, which the flush the error brings takes
 * too: this WQE's completion comes before those of the WQEs flushed after
 * it (the QP's engine, woken on another CPU, flushed them first once).
 */
static void srnic_recv_complete_err(struct srnic_qp *dst,
				    struct srnic_srq *srq, u64 wr_id,
				    enum ib_wc_status status, bool qp_error)
{
	struct srnic_cqe cqe = {
		.wr_id = wr_id, .status = status, .opcode = IB_WC_RECV,
		.qp_num = dst->qpn,
	};

	spin_lock(&dst->rq_lock);
	if (qp_error)
		srnic_qp_set_error(dst);
	srnic_qp_recv_cqe(dst, srq, &cqe, false);
	spin_unlock(&dst->rq_lock);
}

/* A receive completion with an error: the destination QP goes to error. */
static void srnic_recv_fail(struct srnic_qp *dst, struct srnic_srq *srq,
			    u64 wr_id, enum ib_wc_status status)
{
	srnic_recv_complete_err(dst, srq, wr_id, status, true);
}

/*
 * The held receive WQE's buffer cannot be faulted in: it fails, in its
 * turn among a UD QP's receives (srnic_resp_recv).
 */
void srnic_recv_fail_held(struct srnic_qp *qp, const struct srnic_msg *m,
			  enum ib_wc_status status)
{
	struct srnic_recv_wqe_hdr *hdr = qp->held_rwqe;
	bool ud = srnic_qpt_ud(qp->ibqp.qp_type);
	bool held;
	u64 wr_id = 0;

	if (!hdr)
		return;
	if (ud)
		spin_lock(&qp->recv_lock);
	spin_lock(&qp->rq_lock);
	held = qp->rwqe_held;
	if (held)
		wr_id = hdr->wr_id;
	qp->rwqe_held = false;
	spin_unlock(&qp->rq_lock);
	if (held)
		srnic_recv_fail(qp, srnic_recv_srq(qp, m), wr_id, status);
	if (ud)
		spin_unlock(&qp->recv_lock);
}

/*
 * Waits for a UD receive in flight (srnic_resp_recv) before @qp's receive
 * queue is flushed or reset: it took its WQE before the QP left RTS, and
 * completes first; one that starts after finds the QP no longer receiving.
 */
void srnic_recv_wait(struct srnic_qp *qp)
{
	if (srnic_qpt_ud(qp->ibqp.qp_type)) {
		spin_lock(&qp->recv_lock);
		spin_unlock(&qp->recv_lock);
	}
}

/* The 40 bytes a UD receive starts with: an IPv6 header, or IPv4 in the last 20. */
static void srnic_build_grh(u8 *grh, const struct srnic_msg *m)
{
	memset(grh, 0, 40);
	if (ipv6_addr_v4mapped((struct in6_addr *)m->sgid)) {
		struct iphdr *ip = (struct iphdr *)(grh + 20);

		ip->version = 4;
		ip->ihl = 5;
		ip->tos = m->traffic_class;
		ip->tot_len = htons(20 + 8 + 12 + m->len + 4 + 4);
		ip->ttl = m->hop_limit;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, m->sgid + 12, 4);
		memcpy(&ip->daddr, m->dgid + 12, 4);
		ip->check = ip_fast_csum((u8 *)ip, ip->ihl);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)grh;

		ip6_flow_hdr(ip6, m->traffic_class, htonl(m->flow_label));
		ip6->payload_len = htons(8 + 12 + m->len + 4 + 4);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = m->hop_limit;
		memcpy(&ip6->saddr, m->sgid, 16);
		memcpy(&ip6->daddr, m->dgid, 16);
	}
}

/*
 * The receive WQE message @m takes, copied into eng->rwqe (*@max_sge its
 * list's room): a new one, or for a later piece the one its first piece
 * took.  SRNIC_RESP_OK, or the verdict when there is none.
 */
static enum srnic_resp srnic_resp_take_rwqe(struct srnic_engine *eng,
					    struct srnic_qp *dst,
					    struct srnic_srq *srq,
					    struct srnic_msg *m,
					    bool place_data, u32 *max_sge)
{
	int ret = 1;

	if (place_data && m->off) {
		if (!srnic_recv_take_held(dst, srq, eng->rwqe, max_sge, m))
			return SRNIC_RESP_NAK_INV;
	} else {
		ret = srnic_recv_take(dst, srq, eng->rwqe, max_sge,
				      m->fresh_wqe);
	}
	if (ret < 0)
		return SRNIC_RESP_NAK_OP;
	if (!ret)
		return SRNIC_RESP_RNR;
	if (m->tm_unexp)
		srnic_tm_unexpected(srq);
	return SRNIC_RESP_OK;
}

/*
 * Message @m is longer than the buffers of the receive WQE in eng->rwqe
 * (counted).  RC and XRC: the WQE completes with a local length error, the
 * QP goes to error and the requester gets an invalid-request NAK.  UD (the
 * GSI QP among them) and UC: the message is dropped and the QP goes on, as
 * the IBTA's responder classes D and E have it and rxe does (Linux 6.12
 * rxe_resp.c, RESPST_ERR_LENGTH): any host may send a datagram, and one
 * too long for QP1's buffers would otherwise stop rdma_cm on the device;
 * UC has no answer to give the requester.  The WQE, as rxe: one of the
 * QP's own receive queue is not consumed (held back, the QP's next message
 * takes it: class D); one of an SRQ, taken from a queue other QPs share,
 * completes with IB_WC_LOC_LEN_ERR (class E; rxe says
 * IB_WC_REM_INV_REQ_ERR, the requester's status for it).
 */
static enum srnic_resp srnic_resp_too_long(struct srnic_engine *eng,
					   struct srnic_qp *dst,
					   struct srnic_srq *srq,
					   const struct srnic_msg *m, u32 max_sge)
{
	struct srnic_recv_wqe_hdr *hdr = eng->rwqe;

	srnic_count(to_sdev(dst->ibqp.device), SRNIC_PC_RESP_LEN_ERRORS);
	/* Raw packet QPs keep their own rule (srnic_raw.c): the QP to error. */
	if (srnic_qpt_acked(dst->ibqp.qp_type) ||
	    dst->ibqp.qp_type == IB_QPT_RAW_PACKET) {
		srnic_recv_fail(dst, srq, hdr->wr_id, IB_WC_LOC_LEN_ERR);
		return SRNIC_RESP_NAK_INV;
	}
	/* A slot that holds another WQE already: this one completes. */
	if (srq || !dst->held_rwqe ||
	    !srnic_recv_hold(dst, NULL, eng->rwqe, max_sge, m))
		srnic_recv_complete_err(dst, srq, hdr->wr_id,
					IB_WC_LOC_LEN_ERR, false);
	return SRNIC_RESP_DROP;
}

/*
 * Piece @m's payload into the list of the receive WQE in eng->rwqe, after
 * a UD GRH (written with the first piece), less a matched TMH.  With more
 * pieces to come the WQE is held for the next (*@held).  SRNIC_RESP_OK, or
 * the verdict: the WQE completed in error, held for an ODP fault, or the
 * message dropped (srnic_resp_too_long).
 */
static enum srnic_resp srnic_resp_place(struct srnic_engine *eng,
					struct srnic_qp *dst,
					struct srnic_srq *srq,
					struct srnic_msg *m, u32 max_sge,
					bool *held)
{
	struct srnic_dev *ddev = to_sdev(dst->ibqp.device);
	struct srnic_recv_wqe_hdr *hdr = eng->rwqe;
	bool ud = srnic_qpt_ud(dst->ibqp.qp_type);
	u32 grh = ud ? 40 : 0;
	u64 at = grh + m->off - m->tm.skip;
	struct srnic_pd *pd;
	int err;

	/* A tag's buffer is the SRQ's PD's, as for its first piece. */
	pd = m->tm.skip && srq ? to_spd(srq->ibsrq.pd) : srnic_recv_pd(dst, m);
	/* ODP pages where this piece lands (a UD GRH with the first). */
	err = srnic_sg_resolve_window(ddev, pd,
				      (struct srnic_wqe_data *)(hdr + 1),
				      hdr->num_sge, IB_ACCESS_LOCAL_WRITE,
				      &eng->remote, NULL, m->off ? at : 0,
				      m->off ? m->plen : at + m->plen);
	if (err == -EAGAIN) {
		/* Held for the fault, which then runs for the WQE. */
		if (dst->held_rwqe &&
		    srnic_recv_hold(dst, srq, eng->rwqe, max_sge, m))
			return SRNIC_RESP_FAULT;
		/* A fault no one waits for: raw QPs, or a slot in use. */
		srnic_sg_drop_fault(&eng->remote);
		srnic_recv_fail(dst, srq, hdr->wr_id, dst->held_rwqe ?
				IB_WC_LOC_QP_OP_ERR : IB_WC_LOC_PROT_ERR);
		return SRNIC_RESP_NAK_OP;
	}
	if (err) {
		srnic_recv_fail(dst, srq, hdr->wr_id, IB_WC_LOC_PROT_ERR);
		return SRNIC_RESP_NAK_OP;
	}
	if (eng->remote.total < grh + m->len - m->tm.skip) {
		srnic_sg_release(&eng->remote);
		return srnic_resp_too_long(eng, dst, srq, m, max_sge);
	}
	if (ud) {
		u8 buf[40];

		srnic_build_grh(buf, m);
		srnic_sg_write(&eng->remote, 0, buf, 40);
	}
	srnic_sg_copy(&eng->remote, at, m->payload, m->off - m->pbase, m->plen);
	srnic_sg_release(&eng->remote);
	*held = m->off + m->plen < m->len;
	/*
	 * Only raw QPs have no slot, and they get no pieces; a slot holding
	 * another WQE is not overwritten.
	 */
	if (*held && (WARN_ON_ONCE(!dst->held_rwqe) ||
		      !srnic_recv_hold(dst, srq, eng->rwqe, max_sge, m))) {
		srnic_recv_fail(dst, srq, hdr->wr_id, IB_WC_LOC_QP_OP_ERR);
		return SRNIC_RESP_NAK_OP;
	}
	return SRNIC_RESP_OK;
}

/*
 * The completion of message @m, received whole into @dst's receive WQE
 * @wr_id (@place_data false: the immediate of a WRITE_WITH_IMM).
 */
static void srnic_resp_recv_cqe(struct srnic_qp *dst, struct srnic_srq *srq,
				const struct srnic_msg *m, u64 wr_id,
				bool place_data)
{
	bool ud = srnic_qpt_ud(dst->ibqp.qp_type);
	struct srnic_cqe cqe = {
		.wr_id = wr_id, .status = IB_WC_SUCCESS, .qp_num = dst->qpn,
		.opcode = place_data ? IB_WC_RECV : IB_WC_RECV_RDMA_WITH_IMM,
		.byte_len = (ud ? 40 : 0) + m->len - m->tm.skip,
	};

	if (m->tm.wc)
		cqe.opcode = m->tm.wc;
	/* A matched tag's message: its data went to the tag's buffer. */
	if (m->tm.skip) {
		srnic_tm_cqe_match(&cqe, &m->tm);
		cqe.wc_flags |= SRNIC_CQE_TM_DATA_VALID;
	}
	if (m->has_imm) {
		cqe.imm_data = m->imm;
		cqe.wc_flags |= SRNIC_CQE_WITH_IMM;
	}
	if (m->has_inv) {
		cqe.imm_data = m->imm;
		cqe.wc_flags |= SRNIC_CQE_WITH_INV;
	}
	if (ud) {
		cqe.wc_flags |= SRNIC_CQE_GRH;
		if (ipv6_addr_v4mapped((struct in6_addr *)m->sgid))
			cqe.wc_flags |= SRNIC_CQE_GRH_IPV4;
		cqe.src_qp = m->src_qpn;
	}
	srnic_qp_recv_cqe(dst, srq, &cqe, m->solicited);
}

/*
 * SEND (and the receive half of WRITE_WITH_IMM, @place_data false): takes a
 * receive WQE and places the payload.  Returns the responder's verdict.
 */
static enum srnic_resp srnic_resp_recv_msg(struct srnic_engine *eng,
					   struct srnic_qp *dst,
					   struct srnic_msg *m, bool place_data)
{
	struct srnic_srq *srq = srnic_recv_srq(dst, m);
	struct srnic_recv_wqe_hdr *hdr = eng->rwqe;
	bool held = false;
	enum srnic_resp r;
	u32 max_sge;

	if (!srnic_qp_receives(READ_ONCE(dst->state)))
		return SRNIC_RESP_DROP;
	/*
	 * On a tag matching SRQ the match, made on a message's first bytes,
	 * decides both the buffer and the completion.  The loopback's
	 * payload holds the message whole: it goes at once.  From the wire
	 * the first packet decides, the QP's held WQE takes the others.
	 */
	if (srq && srq->tm.tags && place_data && !m->off &&
	    dst->ibqp.qp_type == IB_QPT_RC) {
		if (m->payload->total >= m->len) {
			m->plen = m->len;
			m->whole = true;
		}
		if (srnic_tm_recv(eng, dst, srq, m, &r))
			return r;
	}
	r = srnic_resp_take_rwqe(eng, dst, srq, m, place_data, &max_sge);
	if (r != SRNIC_RESP_OK)
		return r;
	if (hdr->num_sge > max_sge) {
		srnic_recv_fail(dst, srq, hdr->wr_id, IB_WC_LOC_QP_OP_ERR);
		return SRNIC_RESP_NAK_OP;
	}
	if (place_data) {
		r = srnic_resp_place(eng, dst, srq, m, max_sge, &held);
		if (r != SRNIC_RESP_OK || held)
			return r;
	}
	/* After the data, as the IB spec orders it; a bad rkey fails both. */
	if (m->has_inv && srnic_invalidate(dst, m->imm, true)) {
		srnic_recv_fail(dst, srq, hdr->wr_id, IB_WC_REM_INV_REQ_ERR);
		return SRNIC_RESP_NAK_INV;
	}
	srnic_resp_recv_cqe(dst, srq, m, hdr->wr_id, place_data);
	return SRNIC_RESP_OK;
}

/*
 * A message for @dst's receive queue (srnic_resp_recv_msg).  A connected
 * QP's come one at a time, from its one peer.  A UD QP's come from senders
 * on any engine at once: each is received whole under @dst's recv_lock,
 * from taking its WQE to completing it (or holding it back for the next,
 * srnic_resp_too_long), so that the WQEs complete in the order of the
 * queue, as the spec has it and rxe's one responder task gives it.
 */
enum srnic_resp srnic_resp_recv(struct srnic_engine *eng, struct srnic_qp *dst,
				struct srnic_msg *m, bool place_data)
{
	enum srnic_resp r;

	if (!srnic_qpt_ud(dst->ibqp.qp_type))
		return srnic_resp_recv_msg(eng, dst, m, place_data);
	spin_lock(&dst->recv_lock);
	r = srnic_resp_recv_msg(eng, dst, m, place_data);
	spin_unlock(&dst->recv_lock);
	return r;
}

/*
 * The key of @m, its rights @access and its bounds, for @len bytes from
 * @off of the message: 0 with @sg holding the MR there, or -EACCES.
 */
static int srnic_resp_range(struct srnic_qp *dst, const struct srnic_msg *m,
			    int access, u64 off, u64 len, struct srnic_sg *sg)
{
	if (len && srnic_mkey_is_mw(m->rkey))
		return srnic_mw_range(dst, m->rkey, m->raddr + off, len,
				      access, sg);
	return srnic_sg_range(to_sdev(dst->ibqp.device), srnic_recv_pd(dst, m),
			      m->rkey, m->raddr + off, len, access, sg,
			      m->rkey_cache);
}

/*
 * Checks the target of an RDMA/atomic operation: QP state, QP access, rkey
 * and bounds.  A message in pieces has its whole range checked at its
 * first, as rxe's check_rkey() checks a RETH's whole length at the first
 * packet: a READ or WRITE that runs past its MR is refused (remote access
 * NAK) before a byte of it is read or written, not answered up to the
 * MR's end and then left silent.  Then the piece's range, resolved.
 */
enum srnic_resp srnic_resp_target(struct srnic_qp *dst,
				  const struct srnic_msg *m, int access,
				  struct srnic_sg *sg)
{
	u64 end;

	if (!srnic_qp_receives(READ_ONCE(dst->state)))
		return SRNIC_RESP_DROP;
	if (!(dst->attr.qp_access_flags & access) ||
	    check_add_overflow(m->raddr, m->len, &end))
		return SRNIC_RESP_NAK_ACCESS;
	if (!m->off && m->plen < m->len) {
		if (srnic_resp_range(dst, m, access, 0, m->len, sg))
			return SRNIC_RESP_NAK_ACCESS;
		srnic_sg_release(sg);
	}
	if (srnic_resp_range(dst, m, access, m->off, m->plen, sg))
		return SRNIC_RESP_NAK_ACCESS;
	if (srnic_sg_odp_check(sg, access != IB_ACCESS_REMOTE_READ))
		return SRNIC_RESP_FAULT;
	return SRNIC_RESP_OK;
}

enum srnic_resp srnic_resp_write(struct srnic_engine *eng, struct srnic_qp *dst,
				 struct srnic_msg *m)
{
	enum srnic_resp r;

	r = srnic_resp_target(dst, m, IB_ACCESS_REMOTE_WRITE, &eng->remote);
	if (r != SRNIC_RESP_OK)
		return r;
	srnic_sg_copy(&eng->remote, 0, m->payload, m->off - m->pbase, m->plen);
	srnic_sg_release(&eng->remote);
	return SRNIC_RESP_OK;
}

/*
 * READ: the piece's range, resolved into eng->remote, is the answer's data;
 * the transport releases it once the requester has taken it.
 */
enum srnic_resp srnic_resp_read(struct srnic_engine *eng, struct srnic_qp *dst,
				struct srnic_msg *m)
{
	if (!dst->attr.max_dest_rd_atomic)
		return SRNIC_RESP_NAK_INV;
	return srnic_resp_target(dst, m, IB_ACCESS_REMOTE_READ, &eng->remote);
}

/*
 * 64-bit atomics: atomic against each other and against the CPU.  ATOMIC
 * WRITE stores compare_add as one 8-byte store; like an RDMA WRITE it needs
 * remote write access and no responder resources.
 */
enum srnic_resp srnic_resp_atomic(struct srnic_engine *eng, struct srnic_qp *dst,
				  struct srnic_msg *m, u64 *orig)
{
	bool write = m->opcode == SRNIC_WR_ATOMIC_WRITE;
	enum srnic_resp r;
	size_t contig;
	u64 *p;

	if ((!write && !dst->attr.max_dest_rd_atomic) || m->raddr & 7)
		return SRNIC_RESP_NAK_INV;
	m->len = 8;
	m->off = 0;
	m->plen = 8;
	r = srnic_resp_target(dst, m, write ? IB_ACCESS_REMOTE_WRITE :
					      IB_ACCESS_REMOTE_ATOMIC,
			      &eng->remote);
	if (r != SRNIC_RESP_OK)
		return r;
	p = (u64 *)srnic_mr_kva(eng->remote.e[0].mr, eng->remote.e[0].iova,
				&contig);
	/* A fast-registration MR invalidated meanwhile translates nothing. */
	if (!p) {
		srnic_sg_release(&eng->remote);
		return SRNIC_RESP_NAK_ACCESS;
	}
	/*
	 * Aligned: the MR's iova (a window may translate the remote address)
	 * and the word itself, which a DM MR's offset may split (a locked
	 * instruction across two lines: a split lock, elsewhere a fault).
	 */
	if ((eng->remote.e[0].iova | (uintptr_t)p) & 7) {
		srnic_sg_release(&eng->remote);
		return SRNIC_RESP_NAK_INV;
	}
	if (write)
		WRITE_ONCE(*p, m->compare_add);
	else if (m->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP)
		*orig = cmpxchg64(p, m->compare_add, m->swap);
	else
		*orig = atomic64_fetch_add(m->compare_add, (atomic64_t *)p);
	srnic_sg_release(&eng->remote);
	return SRNIC_RESP_OK;
}

/*
 * The key of a FLUSH: an MR of the QP's PD with every right @access names,
 * and for a range the range within it.  Windows give no FLUSH right (a
 * bind takes the remote read, write and atomic rights only).
 */
static enum srnic_resp srnic_resp_flush_key(struct srnic_qp *dst,
					    const struct srnic_msg *m,
					    int access)
{
	struct srnic_dev *ddev = to_sdev(dst->ibqp.device);
	bool range = m->flush_level == SRNIC_FLUSH_RANGE;
	struct srnic_mr *mr;
	int err;

	if (srnic_mkey_is_mw(m->rkey))
		return SRNIC_RESP_NAK_ACCESS;
	mr = srnic_mr_get(ddev, m->rkey);
	if (!mr)
		return SRNIC_RESP_NAK_ACCESS;
	err = srnic_mr_check(mr, srnic_recv_pd(dst, m), access,
			     range ? m->raddr : mr->iova, range ? m->flush_len : 0);
	srnic_mr_put(mr);
	return err ? SRNIC_RESP_NAK_ACCESS : SRNIC_RESP_OK;
}

/*
 * FLUSH: what the QP's requester wrote before it is visible to every CPU
 * and device once the answer goes (global visibility: the engine's own
 * stores, ordered).  Persistence needs persistent memory, which no srnic
 * MR is (the device does not offer the right), so a FLUSH that asks for
 * it is a remote access error, as one for a key without the right.  Like
 * a READ it takes a responder resource.
 */
enum srnic_resp srnic_resp_flush(struct srnic_qp *dst, const struct srnic_msg *m)
{
	enum srnic_resp r;

	if (!srnic_qp_receives(READ_ONCE(dst->state)))
		return SRNIC_RESP_DROP;
	if (!dst->attr.max_dest_rd_atomic ||
	    !srnic_flush_valid(m->flush_type, m->flush_level))
		return SRNIC_RESP_NAK_INV;
	if (!SRNIC_ACCESS_FLUSH_GLOBAL || (m->flush_type & SRNIC_FLUSH_PERSISTENT) ||
	    !(dst->attr.qp_access_flags & SRNIC_ACCESS_FLUSH_GLOBAL))
		return SRNIC_RESP_NAK_ACCESS;
	r = srnic_resp_flush_key(dst, m, SRNIC_ACCESS_FLUSH_GLOBAL);
	if (r == SRNIC_RESP_OK)
		wmb();
	return r;
}
