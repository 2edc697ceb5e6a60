/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The transport interface: what carries a requester's message (one piece of
 * it, struct srnic_msg) to the responder of its destination QP, and brings
 * the responder's answer (struct srnic_reply) back.  The pipeline around it:
 *
 *   srnic_req.c   requester: fetches a send WQE out of the user ring, checks
 *                 it, resolves its local SGEs, does local operations, builds
 *                 the message and hands each piece to qp->xport;
 *   transport     carries it; srnic_loop.c, the device's internal loopback,
 *                 reaches destination QPs on any srnic device of this host;
 *   srnic_resp.c  responder: the destination's half, under the destination's
 *                 own locks; it accepts only its connected peer, answers ACK,
 *                 RNR (with its own timer), a NAK with its syndrome, READ data
 *                 or an atomic's original value, and moves only its own QP
 *                 to error;
 *   srnic_comp.c  completer: turns the answer into the next piece, a retry
 *                 (RNR, no answer) or the WQE's completion.
 *
 * No code outside a transport looks at the destination QP.  A RoCEv2
 * transport (packets on the netdev) is another struct srnic_transport.
 *
 * Contract of request(): called with the requester QP's lock held, inside
 * srnic_engine_srcu, for one QP's batch; never sleeps in reclaim (allocations
 * use SRNIC_ENGINE_GFP); fills every field of @rep it answers with.  What
 * @rep holds (READ data, rep->data) stays valid until reply_done(), which
 * is called only for an answer with data.  batch_end() ends
 * the batch: what the transport kept for it (a peer found once) is dropped.
 * ahead_pos() and ahead() are called as request() is.
 */
#ifndef SRNIC_TRANSPORT_H
#define SRNIC_TRANSPORT_H

#include "srnic_loc.h"

struct srnic_reply {
	enum srnic_resp r;		/* OK is the ACK */
	u32 rnr_usec;			/* RNR: the wait the responder asks for */
	u64 orig;			/* CMP_AND_SWP, FETCH_AND_ADD */
	const struct srnic_sg *data;	/* READ: this piece's bytes ... */
	u32 data_off;			/* ... from this one on (the rest are placed) */
	/* PENDING: the requester waits until then, or the answer comes. */
	unsigned long until;
	/* DROP: the transport waited its timer already; retry at once. */
	bool waited;
	/* DROP, RNR: part of the request was received; retries count anew. */
	bool progress;
};

struct srnic_transport {
	const char *name;
	void (*request)(struct srnic_engine *eng, struct srnic_qp *qp,
			struct srnic_msg *m, struct srnic_reply *rep);
	void (*reply_done)(struct srnic_engine *eng, struct srnic_reply *rep);
	void (*batch_end)(struct srnic_engine *eng);
	/*
	 * Optional, for a transport with a window: while the piece at the
	 * send queue's head waits for its answer (request() said PENDING),
	 * the pieces after it go ahead.  ahead_pos() names the next one (its
	 * WQE's index and offset), or says false when none may go now;
	 * ahead() sends it, @m the piece of WQE @idx; false if it did not go.
	 */
	bool (*ahead_pos)(struct srnic_qp *qp, u32 *idx, u64 *off);
	bool (*ahead)(struct srnic_engine *eng, struct srnic_qp *qp, u32 idx,
		      struct srnic_msg *m);
	/* Optional: the QP is in error; what went ahead is forgotten. */
	void (*forget)(struct srnic_qp *qp);
	/*
	 * Optional: whether the piece at the send queue's head (qp->sq_cons,
	 * qp->msg_off) has its good answer already: acknowledged, its READ
	 * data or atomic value in.  A QP gone to error completes such pieces
	 * before its flush; request() then gives their answers and sends
	 * nothing.
	 */
	bool (*answered)(struct srnic_qp *qp);
};

/* srnic_loop.c: the internal loopback, to srnic QPs of this host. */
extern const struct srnic_transport srnic_loopback;
/* Its request(), reply_done() and batch_end(), called directly (no retpoline). */
void srnic_loop_request(struct srnic_engine *eng, struct srnic_qp *qp,
			struct srnic_msg *m, struct srnic_reply *rep);
void srnic_loop_reply_done(struct srnic_engine *eng, struct srnic_reply *rep);
void srnic_loop_batch_end(struct srnic_engine *eng);
/* srnic_net.c: RoCEv2 packets through the device's netdev. */
extern const struct srnic_transport srnic_wire;

/*
 * srnic_net_req.c: nothing in flight (a rendezvous's READ may take the
 * PSNs); the head forgotten, its PSNs taken back (a FIN lost).
 */
bool srnic_net_req_quiet(struct srnic_qp *qp);
void srnic_net_req_unsend(struct srnic_qp *qp);
/*
 * srnic_req.c: where a READ's response bytes go, for a transport that
 * places them: a WQE's buffers, or a rendezvous's tag's.
 */
int srnic_req_read_dest(struct srnic_engine *eng, struct srnic_qp *qp,
			u32 idx, u64 off, u32 len, struct srnic_sg *sg);
int srnic_req_rndv_dest(struct srnic_qp *qp, u64 off, u32 len,
			struct srnic_sg *sg);

/*
 * The responder @dst executes the piece @m of a connected QP's message,
 * whichever transport carried it; READ data and an atomic's value go into
 * @rep.  Inline: every message of every transport comes through here.
 */
static inline enum srnic_resp srnic_resp_execute(struct srnic_engine *eng,
						 struct srnic_qp *dst,
						 struct srnic_msg *m,
						 struct srnic_reply *rep)
{
	enum srnic_resp r;

	switch (m->opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
		return srnic_resp_recv(eng, dst, m, true);
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		/*
		 * The immediate needs a receive WQE with the last piece:
		 * without one, RNR before that piece's data is placed.
		 * (Should a racing SRQ consumer take it meanwhile, the retry
		 * rewrites the same data.)
		 */
		if (srnic_msg_last(m) && !srnic_recv_available(dst, m))
			return SRNIC_RESP_RNR;
		r = srnic_resp_write(eng, dst, m);
		if (r == SRNIC_RESP_OK && srnic_msg_last(m))
			r = srnic_resp_recv(eng, dst, m, false);
		return r;
	case IB_UVERBS_WR_RDMA_WRITE:
		return srnic_resp_write(eng, dst, m);
	case IB_UVERBS_WR_RDMA_READ:
		r = srnic_resp_read(eng, dst, m);
		if (r == SRNIC_RESP_OK)
			rep->data = &eng->remote;
		return r;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
	case SRNIC_WR_ATOMIC_WRITE:
		return srnic_resp_atomic(eng, dst, m, &rep->orig);
	case SRNIC_WR_FLUSH:
		return srnic_resp_flush(dst, m);
	}
	return SRNIC_RESP_NAK_INV;
}

/*
 * What the answer @rep to the piece @m of @qp's send WQE means
 * (srnic_comp.c): 1 when the next piece goes next, -EAGAIN when this piece
 * goes again at qp->rnr_until, 0 when the WQE is done, with its status in
 * *@status.  The usual answer, the last piece acknowledged, inline; the
 * retry policy in srnic_comp_retry().
 */
static inline int srnic_comp_answer(struct srnic_qp *qp,
				    const struct srnic_msg *m,
				    const struct srnic_reply *rep,
				    enum ib_wc_status *status)
{
	*status = IB_WC_SUCCESS;
	if (likely(rep->r == SRNIC_RESP_OK && srnic_msg_last(m)))
		return 0;
	return srnic_comp_retry(qp, m, rep, status);
}

#endif /* SRNIC_TRANSPORT_H */
