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
 * @rep holds (READ data) stays valid until reply_done().  batch_end() ends
 * the batch: what the transport kept for it (a peer found once) is dropped.
 * ahead_pos() and ahead() are called as request() is.
 */
#ifndef SRNIC_TRANSPORT_H
#define SRNIC_TRANSPORT_H

#include "srnic.h"

struct srnic_reply {
	enum srnic_resp r;		/* OK is the ACK */
	u32 rnr_usec;			/* RNR: the wait the responder asks for */
	u64 orig;			/* CMP_AND_SWP, FETCH_AND_ADD */
	const struct srnic_sg *data;	/* READ: this piece's bytes */
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
};

/* srnic_loop.c: the internal loopback, to srnic QPs of this host. */
extern const struct srnic_transport srnic_loopback;
/* Its request() and reply_done(), called directly on the per-message path. */
void srnic_loop_request(struct srnic_engine *eng, struct srnic_qp *qp,
			struct srnic_msg *m, struct srnic_reply *rep);
void srnic_loop_reply_done(struct srnic_engine *eng, struct srnic_reply *rep);
/* srnic_net.c: RoCEv2 packets through the device's netdev. */
extern const struct srnic_transport srnic_wire;

/* The responder's execution of a connected message's piece (srnic_resp.c). */
enum srnic_resp srnic_resp_execute(struct srnic_engine *eng,
				   struct srnic_qp *dst, struct srnic_msg *m,
				   struct srnic_reply *rep);

#endif /* SRNIC_TRANSPORT_H */
