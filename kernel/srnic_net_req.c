// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The wire requester: an RC or UC QP's pieces as RoCEv2 packets, and the
 * answers that come back for them.
 *
 * A piece (srnic_req.c, at most SRNIC_PIECE bytes) leaves as its packets,
 * each of at most the path MTU, the last one asking for an acknowledgement
 * (RC); the requester then waits for the answer (srnic_transport.h:
 * PENDING).  The WQE stays in the user ring meanwhile, so when the answer
 * arrives, or the timer runs out, the requester fetches and checks it again
 * and asks again: the answer recorded here is handed over (an ACK, an RNR
 * or error NAK, READ data placed, an atomic's original value), or
 * the piece goes again from its first PSN.  A PSN sequence NAK ends the
 * wait at once.  The retry policy is the completer's (srnic_comp_answer),
 * as for the loopback.
 *
 * The window: while the piece at the head waits, the pieces after it go
 * ahead (srnic_send_ahead), SRNIC_WIRE_WINDOW pieces and
 * SRNIC_WIRE_WINDOW_BYTES at most; READs and atomics too, as many in
 * flight as max_rd_atomic allows (SRNIC_WIRE_READS at most, the head's
 * included), a READ's responses placed in its buffers as they come (a stage
 * of its own for what cannot be), and none
 * with FENCE while one is in flight.  Each is recorded (struct
 * srnic_wire_piece); when the head's WQE is done and the requester asks
 * for the next piece, the first one ahead becomes the head with what is
 * known of it: received (a later ACK covers it; a READ or atomic only by
 * its own responses), or a NAK that named it.  Go-back-N: a NAK or a
 * timeout forgets the pieces after the one it names; they go again, same
 * PSNs.
 *
 * Answers arrive on the QP's engine thread (srnic_net.c queues a packet by
 * its destination QP), while the requester may run in a doorbell call: the
 * record is under qp->w.lock.
 */
#include "srnic_net.h"
#include "srnic_transport.h"

/*
 * How long a piece waits for its answer: the QP's Local ACK Timeout
 * (4.096 us << timeout; 0 waits for ever), at least SRNIC_WIRE_MIN_TIMEOUT,
 * doubled @backoff times.
 */
static unsigned long srnic_req_timeout(const struct srnic_qp *qp, u8 backoff)
{
	u8 timeout = qp->attr.timeout;

	if (!timeout)
		return MAX_JIFFY_OFFSET;
	timeout = max_t(u8, timeout, SRNIC_WIRE_MIN_TIMEOUT) + backoff;
	return usecs_to_jiffies((4096ULL << min_t(u8, timeout, 31)) /
				NSEC_PER_USEC);
}

/* The wire opcode of a SEND or WRITE packet: its place in the message. */
static u8 srnic_req_opcode(const struct srnic_msg *m, bool first, bool last)
{
	bool write = m->opcode == IB_UVERBS_WR_RDMA_WRITE ||
		     m->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM;

	if (write) {
		if (first && last)
			return m->has_imm ? SRNIC_OP_WRITE_ONLY_IMM : SRNIC_OP_WRITE_ONLY;
		if (last)
			return m->has_imm ? SRNIC_OP_WRITE_LAST_IMM : SRNIC_OP_WRITE_LAST;
		return first ? SRNIC_OP_WRITE_FIRST : SRNIC_OP_WRITE_MIDDLE;
	}
	if (first && last)
		return m->has_inv ? SRNIC_OP_SEND_ONLY_INV :
		       m->has_imm ? SRNIC_OP_SEND_ONLY_IMM : SRNIC_OP_SEND_ONLY;
	if (last)
		return m->has_inv ? SRNIC_OP_SEND_LAST_INV :
		       m->has_imm ? SRNIC_OP_SEND_LAST_IMM : SRNIC_OP_SEND_LAST;
	return first ? SRNIC_OP_SEND_FIRST : SRNIC_OP_SEND_MIDDLE;
}

/* The service bits of @qp's request opcodes. */
static u8 srnic_req_svc(const struct srnic_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_UC:
		return SRNIC_OP_UC;
	case IB_QPT_XRC_INI:
		return SRNIC_OP_XRC;
	default:
		return SRNIC_OP_RC;
	}
}

/*
 * An XRC request's first extension header into @ext: the XRCETH naming
 * the target's SRQ.  Its length; 0 for the other services.
 */
static u32 srnic_req_xrceth(const struct srnic_qp *qp,
			    const struct srnic_msg *m, u8 *ext)
{
	struct srnic_xrceth x = {
		.srqn = cpu_to_be32(m->xrc_srqn & SRNIC_QPN_MASK),
	};

	if (qp->ibqp.qp_type != IB_QPT_XRC_INI)
		return 0;
	memcpy(ext, &x, sizeof(x));
	return sizeof(x);
}

/*
 * The extension headers of a SEND or WRITE packet @op into @ext, by the
 * opcode table: XRCETH (XRC), RETH (the whole message's), then immediate
 * or IETH.
 */
static u32 srnic_req_ext(const struct srnic_qp *qp, const struct srnic_msg *m,
			 u8 op, u8 *ext)
{
	u32 f = srnic_opcode[op].flags;
	u32 n = srnic_req_xrceth(qp, m, ext);

	if (f & SRNIC_OPF_RETH) {
		struct srnic_reth reth = {
			.va = cpu_to_be64(m->raddr),
			.rkey = cpu_to_be32(m->rkey),
			.len = cpu_to_be32(m->len),
		};

		memcpy(ext + n, &reth, sizeof(reth));
		n += sizeof(reth);
	}
	if (f & (SRNIC_OPF_IMM | SRNIC_OPF_IETH)) {
		/* imm is in network order already; an IETH's rkey is not. */
		__be32 v = (f & SRNIC_OPF_IETH) ? cpu_to_be32(m->imm) : m->imm;

		memcpy(ext + n, &v, 4);
		n += 4;
	}
	return n;
}

/*
 * The packets of a SEND or WRITE piece, a PSN each from the piece's first,
 * @psn; those before @from were received already.  False when the netdev's
 * queue refused one, whose PSN goes to *@stop: the rest are not built (they
 * would be refused too).
 */
static bool srnic_req_send_data(struct srnic_qp *qp, const struct srnic_msg *m,
			       struct srnic_txp *t, u32 psn, u32 from,
			       u32 *stop)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	u32 n = srnic_psn_diff(from, psn), mtu = qp->w.mtu;
	u64 off = m->off + (u64)n * mtu, end = m->off + m->plen;
	u8 ext[sizeof(struct srnic_xrceth) + sizeof(struct srnic_reth) + 4];
	bool last;

	t->payload = m->payload;
	t->ext = ext;
	/* UC completes once its packets are built: copied (srnic_net.h). */
	if (!srnic_qpt_acked(qp->ibqp.qp_type))
		t->zc = NULL;
	do {
		t->len = min_t(u64, mtu, end - off);
		last = off + t->len >= end;
		t->opcode = srnic_req_opcode(m, !off, off + t->len >= m->len);
		t->ext_len = srnic_req_ext(qp, m, t->opcode, ext);
		t->opcode |= srnic_req_svc(qp);
		t->off = off;
		t->psn = psn + n++;
		t->se = m->solicited && off + t->len >= m->len;
		t->ackreq = last && srnic_qpt_acked(qp->ibqp.qp_type);
		if (srnic_net_xmit(sdev, t)) {
			*stop = t->psn;
			return false;
		}
		off += t->len;
	} while (!last);
	return true;
}

/*
 * A READ REQUEST for what the piece still lacks, from PSN @psn, @done
 * bytes in: from the first response that has not come (hardware asks
 * again the same way).  It takes a PSN per response packet.
 */
static bool srnic_req_send_read(struct srnic_qp *qp, const struct srnic_msg *m,
			       struct srnic_txp *t, u32 psn, u32 done)
{
	struct srnic_reth reth = {
		.va = cpu_to_be64(m->raddr + m->off + done),
		.rkey = cpu_to_be32(m->rkey),
		.len = cpu_to_be32(m->plen - done),
	};
	u8 ext[sizeof(struct srnic_xrceth) + sizeof(reth)];
	u32 n = srnic_req_xrceth(qp, m, ext);

	memcpy(ext + n, &reth, sizeof(reth));
	t->opcode = SRNIC_OP_READ_REQUEST | srnic_req_svc(qp);
	t->ext = ext;
	t->ext_len = n + sizeof(reth);
	t->psn = psn;
	t->ackreq = true;
	return !srnic_net_xmit(to_sdev(qp->ibqp.device), t);
}

/*
 * A request of one packet: an atomic's AtomicETH, ATOMIC WRITE's RETH and
 * 8 bytes of payload, or FLUSH's FETH and RETH (the range, no payload).
 */
static bool srnic_req_send_one_packet(struct srnic_qp *qp,
				      const struct srnic_msg *m,
				      struct srnic_txp *t, u32 psn)
{
	struct srnic_feth feth;
	struct srnic_atmeth atm = {
		.va = cpu_to_be64(m->raddr),
		.rkey = cpu_to_be32(m->rkey),
	};
	struct srnic_reth reth = {
		.va = cpu_to_be64(m->raddr),
		.rkey = cpu_to_be32(m->rkey),
		.len = cpu_to_be32(8),
	};
	u8 ext[sizeof(struct srnic_xrceth) + sizeof(atm)];
	u32 n = srnic_req_xrceth(qp, m, ext);

	if (m->opcode == SRNIC_WR_FLUSH) {
		srnic_feth_set(&feth, m->flush_type, m->flush_level);
		reth.len = cpu_to_be32(m->flush_len);
		t->opcode = SRNIC_OP_FLUSH;
		memcpy(ext + n, &feth, sizeof(feth));
		memcpy(ext + n + sizeof(feth), &reth, sizeof(reth));
		n += sizeof(feth) + sizeof(reth);
	} else if (m->opcode == SRNIC_WR_ATOMIC_WRITE) {
		/* The 8 bytes as the WQE holds them, as rxe sends them. */
		t->opcode = SRNIC_OP_ATOMIC_WRITE;
		memcpy(ext + n, &reth, sizeof(reth));
		n += sizeof(reth);
		t->kdata = &m->compare_add;
		t->len = 8;
	} else {
		bool cs = m->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP;

		atm.swap_add = cpu_to_be64(cs ? m->swap : m->compare_add);
		atm.compare = cpu_to_be64(cs ? m->compare_add : 0);
		t->opcode = cs ? SRNIC_OP_CMP_SWAP : SRNIC_OP_FETCH_ADD;
		memcpy(ext + n, &atm, sizeof(atm));
		n += sizeof(atm);
	}
	t->opcode |= srnic_req_svc(qp);
	t->ext = ext;
	t->ext_len = n;
	t->psn = psn;
	t->ackreq = true;
	return !srnic_net_xmit(to_sdev(qp->ibqp.device), t);
}

/*
 * A piece sent ahead counts in its QP's window until it becomes the head
 * or is forgotten, and in its engine thread's until it is known received
 * too.  Under w->lock.
 */
static void srnic_req_charge(struct srnic_qp *qp, struct srnic_wire_piece *p)
{
	qp->w.ahead_bytes += p->len;
	p->charged = true;
	atomic_add(p->len, &srnic_qp_thread(qp)->wire_ahead);
}

static void srnic_req_uncharge(struct srnic_qp *qp, struct srnic_wire_piece *p)
{
	if (!p->charged)
		return;
	p->charged = false;
	atomic_sub(p->len, &srnic_qp_thread(qp)->wire_ahead);
}

/* ... the piece leaves the window: the head now, or forgotten. */
static void srnic_req_unwindow(struct srnic_qp *qp, struct srnic_wire_piece *p)
{
	qp->w.ahead_bytes -= p->len;
	srnic_req_uncharge(qp, p);
}

/* The @i-th piece sent ahead, oldest first. */
static struct srnic_wire_piece *srnic_req_ahead_at(struct srnic_wire_qp *w,
						   u32 i)
{
	return &w->ahead[(w->ahead_head + i) % SRNIC_WIRE_WINDOW];
}

/* The piece ahead whose PSNs hold @psn, or -1.  Under w->lock. */
static int srnic_req_ahead_find(struct srnic_wire_qp *w, u32 psn)
{
	u32 i;

	for (i = 0; i < w->ahead_n; i++) {
		const struct srnic_wire_piece *p = srnic_req_ahead_at(w, i);

		if (srnic_psn_in(psn, p->first, p->last))
			return i;
	}
	return -1;
}

/*
 * Forgets the pieces sent ahead from the @i-th on: they go again, with the
 * same PSNs, from the first of them.  Under w->lock.
 */
static void srnic_req_cut(struct srnic_wire_qp *w, u32 i)
{
	struct srnic_qp *qp = container_of(w, struct srnic_qp, w);
	struct srnic_wire_piece *p;

	if (i >= w->ahead_n)
		return;
	p = srnic_req_ahead_at(w, i);
	w->psn = p->first;
	w->next_idx = p->idx;
	w->next_off = p->off;
	while (w->ahead_n > i)
		srnic_req_unwindow(qp, srnic_req_ahead_at(w, --w->ahead_n));
}

/*
 * Every PSN up to @psn was received (an ACK, or a NAK for the next): the
 * pieces ahead it covers leave the thread's window.
 */
static void srnic_req_acked(struct srnic_wire_qp *w, u32 psn)
{
	struct srnic_qp *qp = container_of(w, struct srnic_qp, w);
	u32 next = srnic_psn_add(psn, 1), i;

	if (srnic_psn_diff(next, w->una) > 0 &&
	    srnic_psn_diff(next, w->psn_top) <= 0)
		w->una = next;
	for (i = 0; i < w->ahead_n; i++) {
		struct srnic_wire_piece *p = srnic_req_ahead_at(w, i);

		if (srnic_psn_diff(p->last, w->una) >= 0)
			break;
		srnic_req_uncharge(qp, p);
	}
}

/* @w's PSNs now go up to w->psn: the furthest sent, if it is further. */
static void srnic_req_psn_sent(struct srnic_wire_qp *w)
{
	if (srnic_psn_diff(w->psn, w->psn_top) > 0)
		w->psn_top = w->psn;
}

/*
 * READ, atomics and FLUSH: a response answers them, not an ACK (a READ's
 * data lands in a stage; ATOMIC WRITE's and FLUSH's is empty), and they
 * take the responder's resources.
 */
static bool srnic_req_is_reply_op(u8 op)
{
	return op == IB_UVERBS_WR_RDMA_READ || srnic_opcode_one_packet(op);
}

/*
 * Whether a piece may go ahead now: the head waits for its answer (none
 * came yet), the window has room, and the netdev's queue took the head's
 * packets and the last piece sent ahead (a piece past a gap would only
 * draw a sequence NAK), and so has the thread's.  Under w->lock.
 */
static bool srnic_req_room(struct srnic_qp *qp)
{
	const struct srnic_wire_qp *w = &qp->w;

	return w->ahead && w->out && !w->answered && !w->tx_full &&
	       !w->tx_stalled &&
	       w->ahead_n < SRNIC_WIRE_WINDOW &&
	       w->ahead_bytes < SRNIC_WIRE_WINDOW_BYTES &&
	       atomic_read(&srnic_qp_thread(qp)->wire_ahead) <
		       SRNIC_WIRE_WINDOW_BYTES;
}

/*
 * The READs and atomics in flight (the head's and those ahead), and a
 * stage no READ holds (SRNIC_WIRE_NO_STAGE if none).  Under w->lock.
 */
static u32 srnic_req_replies(struct srnic_wire_qp *w, u8 *free_stage)
{
	u32 i, n = 0, busy = 0;

	if ((w->out || w->resume) && srnic_req_is_reply_op(w->out_op)) {
		n++;
		if (w->out_op == IB_UVERBS_WR_RDMA_READ)
			busy |= BIT(w->out_stage);
	}
	for (i = 0; i < w->ahead_n; i++) {
		const struct srnic_wire_piece *p = srnic_req_ahead_at(w, i);

		if (!srnic_req_is_reply_op(p->op))
			continue;
		n++;
		if (p->op == IB_UVERBS_WR_RDMA_READ)
			busy |= BIT(p->stage);
	}
	*free_stage = SRNIC_WIRE_NO_STAGE;
	for (i = 0; i < w->nstages; i++)
		if (!(busy & BIT(i))) {
			*free_stage = i;
			break;
		}
	return n;
}

/*
 * Whether @m, a READ or atomic or one with FENCE, may go ahead now: within
 * max_rd_atomic (a READ also needs a stage), and a fenced one only when no
 * READ or atomic is in flight.  *@stage: a READ's.  Under w->lock.
 */
static bool srnic_req_may_go(struct srnic_qp *qp, const struct srnic_msg *m,
			     u8 *stage)
{
	struct srnic_wire_qp *w = &qp->w;
	u32 limit = clamp_t(u32, qp->attr.max_rd_atomic, 1, w->nstages);
	u32 n = srnic_req_replies(w, stage);

	if (m->fence && n)
		return false;
	if (!srnic_req_is_reply_op(m->opcode))
		return true;
	return n < limit && (m->opcode != IB_UVERBS_WR_RDMA_READ ||
			     *stage != SRNIC_WIRE_NO_STAGE);
}

/*
 * The packets of the head's piece @m from PSN @from on.  When the netdev's
 * queue refuses one, the rest go from it a tick later (the request that
 * finds it stalled): a piece larger than the queue goes in parts, and no
 * part costs a retry, within the piece's timeout; a queue that refuses
 * longer is a lost transmission, which the timer sends again and counts.
 */
static void srnic_req_send_from(struct srnic_qp *qp, const struct srnic_msg *m,
				u32 from)
{
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_txp t = {};
	u32 stop = from, rd_next, rd_bytes;
	bool ok;

	srnic_net_txp_path(qp, &t);
	t.rxe_flush_icrc = w->out_rxe_form;
	/* Zero-copy on its first transmission only: a copy sent again is copied. */
	t.zc = w->out_tries == 1 ? qp : NULL;
	if (m->opcode == IB_UVERBS_WR_RDMA_READ) {
		/* One view of where the READ is: a response may land meanwhile. */
		spin_lock(&w->lock);
		rd_next = w->rd_next;
		rd_bytes = w->rd_bytes;
		spin_unlock(&w->lock);
		ok = srnic_req_send_read(qp, m, &t, rd_next, rd_bytes);
	}
	else if (srnic_opcode_one_packet(m->opcode))
		ok = srnic_req_send_one_packet(qp, m, &t, w->out_first);
	else
		ok = srnic_req_send_data(qp, m, &t, w->out_first, from, &stop);
	spin_lock(&w->lock);
	w->tx_stalled = !ok;
	w->stall_psn = stop;
	/* The timer runs from the last packet: a part that went is progress. */
	if (ok) {
		w->out_until = jiffies + srnic_req_timeout(qp, w->backoff);
		w->expired = false;
	}
	spin_unlock(&w->lock);
}

/*
 * When the requester looks at its head piece again: a tick on while the
 * netdev's queue holds part of it back (within its timeout), else when its
 * timer runs out.
 */
static unsigned long srnic_req_until(const struct srnic_wire_qp *w)
{
	if (w->tx_stalled && time_before(jiffies + 1, w->out_until))
		return jiffies + 1;
	return w->out_until;
}

/*
 * Sends the piece @m of @qp's WQE: its packets from PSN qp->w.psn on, and
 * the record of what now waits for an answer.
 */
static void srnic_req_send(struct srnic_qp *qp, const struct srnic_msg *m)
{
	struct srnic_wire_qp *w = &qp->w;
	u32 n;

	/* Recorded first: its answer may come before the last packet has gone. */
	spin_lock(&w->lock);
	if (!w->resume) {
		/* Its PSNs: one per packet (a READ: per response packet). */
		n = srnic_opcode_one_packet(m->opcode) ? 1 :
		    srnic_psn_count(m->plen, w->mtu);
		w->out_first = w->psn;
		w->out_last = srnic_psn_add(w->psn, n - 1);
		w->out_off = m->off;
		w->out_len = m->plen;
		w->out_op = m->opcode;
		w->out_idx = qp->sq_cons;
		w->out_rndv = m->rndv;
		w->rd_next = w->psn;
		w->rd_bytes = 0;
		w->rd_staged = m->plen;
		/* Nothing is ahead of a piece sent anew: every stage is free. */
		w->out_stage = 0;
		w->resume_psn = w->psn;
		w->got = w->psn;
		w->backoff = 0;
		w->out_tries = 0;
		w->psn = srnic_psn_add(w->psn, n);
		srnic_req_psn_sent(w);
		/*
		 * What may go ahead of its answer starts after it; after a
		 * rendezvous's, at the send queue's head (none go meanwhile).
		 */
		if (m->rndv) {
			w->next_idx = qp->sq_cons;
			w->next_off = 0;
		} else {
			w->next_idx = qp->sq_cons + srnic_msg_last(m);
			w->next_off = srnic_msg_last(m) ? 0 : m->off + m->plen;
		}
	}
	w->resume = false;
	/* A FLUSH: the form its peer answered last, the other every second time. */
	w->out_rxe_form = m->opcode == SRNIC_WR_FLUSH &&
			  (w->flush_rxe ^ (w->out_tries & 1));
	w->out_tries++;
	w->out = srnic_qpt_acked(qp->ibqp.qp_type);
	w->answered = false;
	w->sent_from = m->opcode == IB_UVERBS_WR_RDMA_READ ? w->rd_next :
		       w->resume_psn;
	w->out_until = jiffies + srnic_req_timeout(qp, w->backoff);
	w->expired = false;
	spin_unlock(&w->lock);
	srnic_req_send_from(qp, m, w->sent_from);
}

/*
 * The piece goes again, from PSN @from: what the responder lacks (a READ:
 * the responses that have not come).  Progress when that is further than
 * known before: the completer's retries count anew.  Timeouts without
 * progress double the timer, SRNIC_WIRE_MAX_BACKOFF times at most: a
 * loaded peer is not flooded with copies.
 */
static void srnic_req_again(struct srnic_wire_qp *w, u32 from, bool timeout,
			    struct srnic_reply *rep)
{
	bool read = w->out_op == IB_UVERBS_WR_RDMA_READ;

	/*
	 * A READ asks again from its next PSN, which its responses keep
	 * within its own (srnic_req_resp_fits); were it not, it asks for all
	 * of it again rather than take a PSN of the WQE after it.
	 */
	if (read && !srnic_psn_in(w->rd_next, w->out_first, w->out_last)) {
		w->rd_next = w->out_first;
		w->rd_bytes = 0;
		w->rd_staged = w->out_len;
	}
	if (read)
		from = w->rd_next;
	if (!srnic_psn_in(from, w->out_first, w->out_last))
		from = w->out_first;
	rep->progress = srnic_psn_diff(from, w->got) > 0;
	if (rep->progress) {
		w->got = from;
		w->backoff = 0;
	} else if (timeout && w->backoff < SRNIC_WIRE_MAX_BACKOFF) {
		w->backoff++;
	}
	w->resume = true;
	w->resume_psn = from;
	w->out = false;
	/* Go-back-N: what went after it goes again too. */
	srnic_req_cut(w, 0);
}

/*
 * Whether packets that were queued for @qp's thread when the head's timer
 * ran out are still queued: its answer may be among them.  A thread busy
 * sending (a millisecond a packet on a debug kernel) reads its queue late,
 * and a timeout believed then sends again what was received.  Only those
 * packets are waited for: a flood arriving later cannot hold the timer.
 */
static bool srnic_req_answers_queued(struct srnic_qp *qp)
{
	struct srnic_thread *t = srnic_qp_thread(qp);
	unsigned long taken = READ_ONCE(t->rx_taken);
	struct srnic_wire_qp *w = &qp->w;

	if (!w->expired) {
		w->expired = true;
		w->expired_mark = taken + skb_queue_len_lockless(&t->rxq);
	}
	return (long)(w->expired_mark - taken) > 0;
}

/* What the head's piece lacks: from its first PSN no ACK covers. */
static u32 srnic_req_resume_from(const struct srnic_wire_qp *w)
{
	if (srnic_psn_diff(w->una, w->got) > 0 &&
	    srnic_psn_diff(w->una, w->out_last) <= 0)
		return w->una;
	return w->got;
}

/*
 * The piece at the head, and what went after it, are forgotten and their
 * PSNs taken back: the next piece takes them (a rewritten WQE's, or what
 * follows a FIN the peer never took).
 */
void srnic_net_req_unsend(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;

	spin_lock(&w->lock);
	srnic_req_cut(w, 0);
	w->out = false;
	w->answered = false;
	w->resume = false;
	w->psn = w->out_first;
	/* What went after it carried other data: no ACK covers it now. */
	w->psn_top = w->psn;
	if (srnic_psn_diff(w->una, w->psn) > 0)
		w->una = w->psn;
	spin_unlock(&w->lock);
}

/*
 * Whether the piece @m is the one on the wire: false when its WQE was
 * rewritten meanwhile; the outstanding piece is then forgotten, and @m
 * takes its PSNs as a new piece.
 */
static bool srnic_req_same(struct srnic_wire_qp *w, const struct srnic_msg *m)
{
	if (w->out_off == m->off && w->out_op == m->opcode &&
	    w->out_len == m->plen)
		return true;
	srnic_net_req_unsend(container_of(w, struct srnic_qp, w));
	return false;
}

/*
 * The answer to the outstanding piece @m into @rep: what arrived, PENDING
 * while the timer runs, DROP once it has run out (the piece goes again).
 */
static void srnic_req_answer(struct srnic_engine *eng, struct srnic_qp *qp,
			     const struct srnic_msg *m, struct srnic_reply *rep)
{
	struct srnic_wire_qp *w = &qp->w;

	spin_lock(&w->lock);
	if (w->answered && w->ans == SRNIC_RESP_OK &&
	    !srnic_zc_released(qp, w->out_last) &&
	    time_before(jiffies, w->out_until)) {
		/* Acknowledged, but the stack still reads its pages (srnic_zc.c). */
		rep->r = SRNIC_RESP_PENDING;
		rep->until = w->out_until;
	} else if (w->answered && w->ans == SRNIC_RESP_OK &&
		   !srnic_zc_released(qp, w->out_last)) {
		/*
		 * ... past its timer: as if unanswered, it goes again (copied),
		 * each time a retry, until its retries run out.
		 */
		w->answered = false;
		srnic_req_again(w, srnic_req_resume_from(w), true, rep);
		rep->r = SRNIC_RESP_DROP;
		rep->waited = true;
	} else if (w->answered) {
		/* Answers flow again: the window may open. */
		w->tx_full = false;
		rep->r = w->ans;
		rep->rnr_usec = w->rnr_usec;
		rep->orig = w->orig;
		w->answered = false;
		w->out = false;
		/* RNR, a sequence NAK: again from the PSN the NAK names. */
		if (rep->r != SRNIC_RESP_OK)
			srnic_req_again(w, w->nak_psn, false, rep);
		/* A sequence NAK: at once, as after the timer. */
		rep->waited = rep->r == SRNIC_RESP_DROP;
		/* READ data not placed as they came: from the stage. */
		if (rep->r == SRNIC_RESP_OK && m->opcode == IB_UVERBS_WR_RDMA_READ &&
		    w->rd_staged < m->plen) {
			srnic_sg_init(&eng->wire,
				      w->stage[w->out_stage] + w->rd_staged,
				      m->plen - w->rd_staged);
			rep->data = &eng->wire;
			rep->data_off = w->rd_staged;
		}
	} else if (time_before(jiffies, w->out_until)) {
		rep->r = SRNIC_RESP_PENDING;
		rep->until = w->out_until;
	} else if (srnic_req_answers_queued(qp)) {
		rep->r = SRNIC_RESP_PENDING;
		rep->until = jiffies + 1;
	} else {
		/* No answer: all goes again from what is known received. */
		srnic_req_again(w, srnic_req_resume_from(w), true, rep);
		rep->r = SRNIC_RESP_DROP;
		rep->waited = true;
	}
	spin_unlock(&w->lock);
}

/* Records answer @r for the outstanding piece and wakes its QP. */
static void srnic_req_answered(struct srnic_qp *qp, enum srnic_resp r)
{
	qp->w.ans = r;
	WRITE_ONCE(qp->w.answered, true);
}

/*
 * The head is a READ or atomic, and an answer just said that a later
 * request came: the responder answers in order, so the head's response went
 * before that answer and was lost (the spec's implied NAK).  It goes
 * again now, from what of it arrived, rather than at its timer.  Only when
 * the answer is news (it moved w->una past the head): a late or repeated
 * one after the head went again names nothing lost.
 */
static void srnic_req_implied_nak(struct srnic_qp *qp)
{
	qp->w.nak_psn = qp->w.out_first;
	srnic_count(to_sdev(qp->ibqp.device), SRNIC_PC_IMPLIED_NAKS);
	srnic_req_answered(qp, SRNIC_RESP_DROP);
}

/*
 * The head's WQE is done, and @m is the next piece: the first one sent
 * ahead becomes the head, with what is known of it (received, or a NAK
 * that named it), if it is @m; else everything ahead goes again.
 */
static void srnic_req_promote(struct srnic_qp *qp, const struct srnic_msg *m)
{
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_wire_piece *p;

	spin_lock(&w->lock);
	p = srnic_req_ahead_at(w, 0);
	if (p->idx != qp->sq_cons || p->off != m->off || p->op != m->opcode ||
	    p->len != m->plen) {
		srnic_req_cut(w, 0);
		spin_unlock(&w->lock);
		return;
	}
	w->out_first = p->first;
	w->out_last = p->last;
	w->out_off = p->off;
	w->out_len = p->len;
	w->out_op = p->op;
	w->out_idx = p->idx;
	w->out_rndv = false;
	w->sent_from = p->first;
	w->resume_psn = p->first;
	/* A READ or atomic got as far as its responses, whatever ACKs say. */
	if (srnic_req_is_reply_op(p->op))
		w->got = p->rd_next;
	else
		w->got = srnic_psn_diff(w->una, p->first) > 0 ? w->una : p->first;
	w->backoff = 0;
	/*
	 * A READ's or atomic's timer runs from when it reaches the head: the
	 * responder answers them in order, each READ's responses after the
	 * one before, so one sent ahead may wait its turn there for longer
	 * than a timeout (four 64 KiB READs through a 16-packet queue did).
	 */
	w->out_until = (srnic_req_is_reply_op(p->op) ? jiffies : p->sent) +
		       srnic_req_timeout(qp, 0);
	w->expired = false;
	w->answered = p->answered;
	w->ans = p->ans;
	w->nak_psn = p->nak_psn;
	w->rnr_usec = p->rnr_usec;
	w->out_stage = p->stage;
	w->rd_next = p->rd_next;
	w->rd_bytes = p->rd_bytes;
	w->rd_staged = p->rd_staged;
	w->orig = p->orig;
	/* A FLUSH went ahead once, in the form its peer answered last. */
	w->out_rxe_form = p->op == SRNIC_WR_FLUSH && w->flush_rxe;
	w->out_tries = 1;
	w->out = true;
	/* Known received: a WRITE or SEND is done; a READ's response lost. */
	if (!w->answered && srnic_psn_diff(w->una, p->last) > 0) {
		if (srnic_req_is_reply_op(p->op))
			srnic_req_implied_nak(qp);
		else
			srnic_req_answered(qp, SRNIC_RESP_OK);
	}
	w->ahead_head = (w->ahead_head + 1) % SRNIC_WIRE_WINDOW;
	w->ahead_n--;
	srnic_req_unwindow(qp, p);
	spin_unlock(&w->lock);
}

/*
 * The transport's request() for RC and UC QPs across the wire: the answer
 * to the piece on the wire, or the piece sent (again).
 */
void srnic_net_req_request(struct srnic_engine *eng, struct srnic_qp *qp,
			   struct srnic_msg *m, struct srnic_reply *rep)
{
	struct srnic_wire_qp *w = &qp->w;

	if (!w->out && !w->resume && w->ahead_n)
		srnic_req_promote(qp, m);
	if ((w->out || w->resume) && srnic_req_same(w, m) && w->out) {
		/* Refused by the netdev's queue: the rest of it, a tick on. */
		if (w->tx_stalled && !READ_ONCE(w->answered) &&
		    time_before(jiffies, w->out_until)) {
			srnic_req_send_from(qp, m, w->stall_psn);
			rep->r = SRNIC_RESP_PENDING;
			rep->until = srnic_req_until(w);
			return;
		}
		srnic_req_answer(eng, qp, m, rep);
		return;
	}
	/* In error, only answers that came are taken: nothing goes. */
	if (unlikely(READ_ONCE(qp->state) == IB_QPS_ERR)) {
		rep->r = SRNIC_RESP_PENDING;
		rep->until = jiffies;
		return;
	}
	srnic_req_send(qp, m);
	/* UC: gone is done, nothing answers. */
	if (qp->ibqp.qp_type == IB_QPT_UC) {
		rep->r = SRNIC_RESP_OK;
		return;
	}
	rep->r = SRNIC_RESP_PENDING;
	rep->until = srnic_req_until(w);
}

/*
 * The transport's forget(), and the QP's when it is reset or goes: the
 * piece at the head and those sent ahead are forgotten, so that a QP in
 * error holds none of its thread's window, and a late answer, the QP back
 * at RTR, finds nothing to place READ data for: their WQEs are flushed.
 */
void srnic_net_req_forget(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;

	spin_lock(&w->lock);
	srnic_req_cut(w, 0);
	w->out = false;
	w->resume = false;
	w->answered = false;
	spin_unlock(&w->lock);
}

/*
 * The requester's connection begins (RTS): what it had is forgotten, and an
 * answer taken from the netdev before now is of an earlier connection.  Not
 * in forget(), which a QP in error runs at every visit.
 */
void srnic_net_req_begin(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;

	srnic_net_req_forget(qp);
	spin_lock(&w->lock);
	w->ans_gen = atomic64_inc_return(&to_sdev(qp->ibqp.device)->rx_gen);
	spin_unlock(&w->lock);
}

/*
 * The transport's answered(): the piece at the send queue's head is the
 * one on the wire and answered well, or the first sent ahead and known
 * received (an ACK past it, its responses in).  The WQE's own opcode and
 * length are checked again when it is taken (srnic_req_same()).
 */
bool srnic_net_req_answered(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_wire_piece *p;
	bool ok = false;

	spin_lock(&w->lock);
	if (w->out) {
		ok = !w->out_rndv && w->out_idx == qp->sq_cons &&
		     w->out_off == qp->msg_off && w->answered &&
		     w->ans == SRNIC_RESP_OK &&
		     srnic_zc_released(qp, w->out_last);
	} else if (!w->resume && w->ahead_n) {
		p = srnic_req_ahead_at(w, 0);
		ok = p->idx == qp->sq_cons && p->off == qp->msg_off &&
		     (p->answered ? p->ans == SRNIC_RESP_OK :
		      !srnic_req_is_reply_op(p->op) &&
		      srnic_psn_diff(w->una, p->last) > 0) &&
		     srnic_zc_released(qp, p->last);
	}
	spin_unlock(&w->lock);
	return ok;
}

/*
 * Whether nothing of @qp's is on the wire: no piece waits for an answer or
 * goes again, none went ahead, and the pieces go-back-N forgot went again
 * (@psn is back at @psn_top).  A rendezvous's READ or FIN takes the next
 * PSNs only then: with a PSN the responder already had, a READ is a
 * duplicate it asked nothing for, dropped unanswered every time.
 */
bool srnic_net_req_quiet(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;
	bool quiet;

	spin_lock(&w->lock);
	quiet = !w->out && !w->resume && !w->ahead_n && w->psn == w->psn_top;
	spin_unlock(&w->lock);
	return quiet;
}

/* The transport's ahead_pos(): where the next piece ahead goes from. */
bool srnic_net_req_ahead_pos(struct srnic_qp *qp, u32 *idx, u64 *off)
{
	struct srnic_wire_qp *w = &qp->w;
	bool room;

	spin_lock(&w->lock);
	room = srnic_req_room(qp);
	*idx = w->next_idx;
	*off = w->next_off;
	spin_unlock(&w->lock);
	return room;
}

/* The packets of a piece sent ahead, from its first PSN; false if refused. */
static bool srnic_req_send_ahead(struct srnic_qp *qp, const struct srnic_msg *m,
				 u32 first)
{
	struct srnic_txp t = {};
	u32 stop;

	srnic_net_txp_path(qp, &t);
	t.rxe_flush_icrc = m->opcode == SRNIC_WR_FLUSH && READ_ONCE(qp->w.flush_rxe);
	t.zc = qp;			/* its first transmission */
	if (m->opcode == IB_UVERBS_WR_RDMA_READ)
		return srnic_req_send_read(qp, m, &t, first, 0);
	if (srnic_opcode_one_packet(m->opcode))
		return srnic_req_send_one_packet(qp, m, &t, first);
	return srnic_req_send_data(qp, m, &t, first, first, &stop);
}

/*
 * The transport's ahead(): the piece @m of WQE @idx goes ahead, recorded,
 * if it is still the next one (an answer may have moved the window), there
 * is room, and (a READ, an atomic, a fenced one) srnic_req_may_go().
 */
bool srnic_net_req_ahead(struct srnic_engine *eng, struct srnic_qp *qp,
			 u32 idx, struct srnic_msg *m)
{
	struct srnic_wire_qp *w = &qp->w;
	u32 n = srnic_psn_count(m->plen, w->mtu);
	struct srnic_wire_piece *p;
	u8 stage;
	u32 first;
	int i;

	spin_lock(&w->lock);
	if (!srnic_req_room(qp) || w->next_idx != idx || w->next_off != m->off ||
	    !srnic_req_may_go(qp, m, &stage)) {
		spin_unlock(&w->lock);
		return false;
	}
	first = w->psn;
	p = srnic_req_ahead_at(w, w->ahead_n++);
	*p = (struct srnic_wire_piece){
		.idx = idx, .off = m->off, .len = m->plen, .op = m->opcode,
		.first = first, .last = srnic_psn_add(first, n - 1),
		.sent = jiffies, .stage = stage, .rd_next = first,
		.rd_staged = m->plen,
	};
	srnic_req_charge(qp, p);
	w->psn = srnic_psn_add(first, n);
	srnic_req_psn_sent(w);
	w->next_idx = idx + srnic_msg_last(m);
	w->next_off = srnic_msg_last(m) ? 0 : m->off + m->plen;
	spin_unlock(&w->lock);

	if (srnic_req_send_ahead(qp, m, first)) {
		/*
		 * Its timer runs from its last packet, as the head's does: on
		 * a slow host sending 64 packets takes about a timeout.
		 */
		spin_lock(&w->lock);
		i = srnic_req_ahead_find(w, first);
		if (i >= 0)
			srnic_req_ahead_at(w, i)->sent = jiffies;
		spin_unlock(&w->lock);
		return true;
	}
	/*
	 * The netdev's queue is full: blasting more at it loses them all.
	 * The piece goes again later, and nothing goes ahead until the head's
	 * answer comes (a NIC's full send ring stops it the same way).
	 */
	spin_lock(&w->lock);
	i = srnic_req_ahead_find(w, first);
	if (i >= 0)
		srnic_req_cut(w, i);
	w->tx_full = true;
	spin_unlock(&w->lock);
	return false;
}

/* ---- answers from the wire ---- */

static enum srnic_resp srnic_req_nak(u8 code)
{
	switch (code) {
	case SRNIC_NAK_INV_REQ:
		return SRNIC_RESP_NAK_INV;
	case SRNIC_NAK_REM_ACCESS:
		return SRNIC_RESP_NAK_ACCESS;
	default:
		return SRNIC_RESP_NAK_OP;
	}
}

/*
 * An AETH in an ACKNOWLEDGE for PSN @d (from the piece's first): the
 * piece's ACK when it covers its last packet (an ACK covers every packet
 * up to its PSN), RNR, a sequence NAK (the piece goes again now) or an
 * error NAK.  READ and atomics are answered by their responses instead.
 */
static void srnic_req_aeth(struct srnic_qp *qp, const struct srnic_pkt *p,
			   s32 d, s32 n)
{
	u8 syn = srnic_aeth_syndrome((const struct srnic_aeth *)p->next);
	struct srnic_wire_qp *w = &qp->w;
	u8 value = syn & SRNIC_AETH_VALUE;

	switch (syn & SRNIC_AETH_KIND) {
	case SRNIC_AETH_ACK:
		if (srnic_req_is_reply_op(w->out_op))
			break;
		/* Part of it: where a timeout sends it again from. */
		srnic_req_acked(w, p->psn);
		if (d == n)
			srnic_req_answered(qp, SRNIC_RESP_OK);
		break;
	case SRNIC_AETH_RNR:
		w->nak_psn = p->psn;
		w->rnr_usec = srnic_rnr_code_usec(value);
		srnic_req_answered(qp, SRNIC_RESP_RNR);
		break;
	case SRNIC_AETH_NAK:
		/*
		 * A sequence NAK for a PSN before this transmission's first
		 * answers an earlier one (the packets it asks for went again).
		 */
		if (value == SRNIC_NAK_PSN_SEQ &&
		    srnic_psn_diff(p->psn, w->sent_from) < 0)
			break;
		w->nak_psn = p->psn;
		srnic_req_answered(qp, value == SRNIC_NAK_PSN_SEQ ?
					       SRNIC_RESP_DROP : srnic_req_nak(value));
		break;
	}
}

/*
 * A READ response's shape: a packet of the path MTU but the last, which
 * has at most that (each stands for one PSN of the READ's, so a shorter
 * or longer one would move the next PSN expected off the READ's own), and
 * its AETH, where it has one, acknowledges.
 */
static bool srnic_req_resp_ok(const struct srnic_wire_qp *w,
			      const struct srnic_pkt *p)
{
	if (p->plen > w->mtu ||
	    (!(p->flags & SRNIC_OPF_LAST) && p->plen != w->mtu))
		return false;
	return !(p->flags & SRNIC_OPF_AETH) ||
	       (srnic_aeth_syndrome((const struct srnic_aeth *)p->next) &
		SRNIC_AETH_KIND) == SRNIC_AETH_ACK;
}

/*
 * Whether the READ response @p for the next PSN of a READ with @left bytes
 * to come, @last if that PSN is the READ's last, has its shape and fits:
 * a LAST or ONLY at the READ's last PSN only, with exactly the bytes left,
 * a FIRST or MIDDLE of the path MTU before it.  So a READ's responses
 * never move its next PSN past its own last, each PSN's bytes are at
 * their offset in the READ (MTU times the PSN's place in it), and none
 * lands outside the READ.  If not, it is dropped and counted: for that
 * PSN the READ lacks its response as if it was lost, and asks again.
 */
static bool srnic_req_resp_fits(struct srnic_qp *qp, u32 left, bool last,
				const struct srnic_pkt *p)
{
	if (srnic_req_resp_ok(&qp->w, p) &&
	    !(p->flags & SRNIC_OPF_LAST) == !last &&
	    (last ? p->plen == left : p->plen < left))
		return true;
	srnic_count(to_sdev(qp->ibqp.device), SRNIC_PC_RX_DROPPED);
	return false;
}

/*
 * Whether @p is the empty READ RESPONSE ONLY that answers the ATOMIC WRITE
 * or FLUSH @op whose PSN is @psn.
 */
static bool srnic_req_empty_resp(const struct srnic_wire_qp *w, u8 op, u32 psn,
				 const struct srnic_pkt *p)
{
	return srnic_opcode_remote_only(op) && p->op == SRNIC_OP_READ_RESP_ONLY &&
	       p->psn == psn && !p->plen && srnic_req_resp_ok(w, p);
}

/*
 * Where byte @off of the READ message of WQE @idx goes, or, for @rndv, of
 * the rendezvous being read (the ring's head: its READ is never sent ahead).
 */
static int srnic_req_place_dest(struct srnic_engine *eng, struct srnic_qp *qp,
				bool rndv, u32 idx, u64 off, u32 len)
{
	if (rndv)
		return srnic_req_rndv_dest(qp, off, len, &eng->local);
	return srnic_req_read_dest(eng, qp, idx, off, len, &eng->local);
}

/*
 * A READ response's payload, byte @at of its piece (WQE @idx or the
 * rendezvous, @off in its message): straight into the WQE's or tag's
 * buffers, found again for each packet (srnic_req_place_dest), so nothing
 * is held while the peer takes its time.  One that cannot be placed goes
 * to the piece's @stage, and so do the rest of its bytes (*@staged, where
 * the stage begins): the requester copies them at the answer.  Under
 * w->lock, on the QP's engine thread.
 */
static void srnic_req_read_place(struct srnic_engine *eng,
				 struct srnic_qp *qp, bool rndv, u32 idx,
				 u64 off, u32 at, u32 *staged, u8 *stage,
				 const struct srnic_pkt *p)
{
	if (!p->plen)
		return;
	if (at < *staged &&
	    !srnic_req_place_dest(eng, qp, rndv, idx, off + at, p->plen)) {
		srnic_sg_init_skb(&eng->wire, p->skb, p->poff, p->plen);
		srnic_sg_copy(&eng->local, off + at, &eng->wire, 0, p->plen);
		srnic_sg_release(&eng->local);
		return;
	}
	*staged = min(*staged, at);
	srnic_count(to_sdev(qp->ibqp.device), SRNIC_PC_RX_READ_STAGED);
	srnic_pkt_copy(p, 0, stage + at, p->plen);
}

/*
 * An answer came from the peer while the head waits: the head's timer
 * starts again, as rxe's does on every response.  The peer answers in
 * order, so the head's answer may come after what it is sending now: its
 * READ's responses a packet at a time, or its answers to the copies a
 * go-back-N sent, each of which it answers in full (a READ's again).  The
 * head is asked for again only after a timeout with nothing from the peer:
 * a timeout for each stale answer flooded a slow responder with more
 * copies, each retry adding a window of READs to answer.  A peer can hold
 * a QP of its own connection so, no other.
 */
static void srnic_req_progress(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;

	w->out_until = jiffies + srnic_req_timeout(qp, w->backoff);
	w->expired = false;
}

/*
 * A READ response packet: its payload placed, in PSN order (a gap
 * leaves the rest to the timer, which asks again).  Its last packet
 * answers the piece if every byte came.  An empty one answers an ATOMIC
 * WRITE or FLUSH.
 */
static void srnic_req_read_resp(struct srnic_engine *eng, struct srnic_qp *qp,
				const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;

	if (srnic_req_empty_resp(w, w->out_op, w->out_first, p)) {
		/* The ICRC form this peer takes a FLUSH in. */
		if (w->out_op == SRNIC_WR_FLUSH)
			WRITE_ONCE(w->flush_rxe, w->out_rxe_form);
		srnic_req_answered(qp, SRNIC_RESP_OK);
		return;
	}
	if (w->out_op != IB_UVERBS_WR_RDMA_READ || p->psn != w->rd_next ||
	    !srnic_req_resp_fits(qp, w->out_len - w->rd_bytes,
				 p->psn == w->out_last, p))
		return;
	srnic_req_read_place(eng, qp, w->out_rndv, w->out_idx, w->out_off,
			     w->rd_bytes, &w->rd_staged, w->stage[w->out_stage],
			     p);
	w->rd_bytes += p->plen;
	w->rd_next = srnic_psn_add(w->rd_next, 1);
	if ((p->flags & SRNIC_OPF_LAST) && w->rd_bytes == w->out_len)
		srnic_req_answered(qp, SRNIC_RESP_OK);
}

/*
 * A response for a READ, atomic or FLUSH sent ahead (@pc): a READ's
 * payload placed, in PSN order (a gap leaves the rest to its timer
 * once it is the head); an atomic's original value; ATOMIC WRITE's and
 * FLUSH's empty READ response.  Any says that every request before it
 * came.  Under w->lock.
 */
static void srnic_req_resp_ahead(struct srnic_engine *eng,
				 struct srnic_qp *qp,
				 struct srnic_wire_piece *pc,
				 const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;

	if (pc->answered)
		return;
	if (p->op == SRNIC_OP_ATOMIC_ACK) {
		if (p->psn != pc->first ||
		    (pc->op != IB_UVERBS_WR_ATOMIC_CMP_AND_SWP &&
		     pc->op != IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD))
			return;
		pc->orig = be64_to_cpu(((const struct srnic_atmack *)
					(p->next + 4))->orig);
	} else if (srnic_opcode_remote_only(pc->op)) {
		if (!srnic_req_empty_resp(w, pc->op, pc->first, p))
			return;
	} else {
		if (pc->op != IB_UVERBS_WR_RDMA_READ || p->psn != pc->rd_next ||
		    pc->stage >= w->nstages ||
		    !srnic_req_resp_fits(qp, pc->len - pc->rd_bytes,
					 p->psn == pc->last, p))
			return;
		srnic_req_read_place(eng, qp, false, pc->idx, pc->off,
				     pc->rd_bytes, &pc->rd_staged,
				     w->stage[pc->stage], p);
		pc->rd_bytes += p->plen;
		pc->rd_next = srnic_psn_add(pc->rd_next, 1);
		srnic_req_acked(w, srnic_psn_add(pc->first, -1));
		if (!(p->flags & SRNIC_OPF_LAST) || pc->rd_bytes != pc->len)
			return;
	}
	pc->answered = true;
	pc->ans = SRNIC_RESP_OK;
	srnic_req_acked(w, pc->last);
}

/*
 * An answer for a PSN after the head's, in a piece sent ahead.  A READ
 * response or an atomic's is its piece's (srnic_req_resp_ahead).  An ACK
 * says that everything up to it came; a NAK, that everything before it
 * came, and is kept for its piece (the first answer each piece gets), the
 * pieces after which go again.  Either way, the head was received, unless
 * it is a READ or atomic, which only its own responses answer.
 */
static void srnic_req_rx_ahead(struct srnic_engine *eng, struct srnic_qp *qp,
			       const struct srnic_pkt *p)
{
	/* A READ MIDDLE has no AETH: its payload may not even be linear. */
	u8 syn = (p->flags & SRNIC_OPF_AETH) ?
		 srnic_aeth_syndrome((const struct srnic_aeth *)p->next) : 0;
	struct srnic_wire_qp *w = &qp->w;
	u8 value = syn & SRNIC_AETH_VALUE;
	struct srnic_wire_piece *pc;
	u32 una = w->una;
	int i;

	if (srnic_psn_diff(p->psn, w->psn_top) >= 0)
		return;
	if (p->op != SRNIC_OP_ACK) {
		i = srnic_req_ahead_find(w, p->psn);
		if (i >= 0 && ((p->flags & SRNIC_OPF_READ) ||
			       p->op == SRNIC_OP_ATOMIC_ACK))
			srnic_req_resp_ahead(eng, qp, srnic_req_ahead_at(w, i), p);
	} else if ((syn & SRNIC_AETH_KIND) == SRNIC_AETH_ACK) {
		srnic_req_acked(w, p->psn);
	} else {
		i = srnic_req_ahead_find(w, p->psn);
		if (i < 0)
			return;
		pc = srnic_req_ahead_at(w, i);
		if (!pc->answered) {
			pc->answered = true;
			pc->nak_psn = p->psn;
			pc->rnr_usec = srnic_rnr_code_usec(value);
			pc->ans = (syn & SRNIC_AETH_KIND) == SRNIC_AETH_RNR ?
					  SRNIC_RESP_RNR :
				  value == SRNIC_NAK_PSN_SEQ ? SRNIC_RESP_DROP :
							       srnic_req_nak(value);
			srnic_req_cut(w, i + 1);
		}
		srnic_req_acked(w, srnic_psn_add(p->psn, -1));
	}
	if (!w->out || w->answered || srnic_psn_diff(w->una, w->out_last) <= 0)
		return;
	if (!srnic_req_is_reply_op(w->out_op))
		srnic_req_answered(qp, SRNIC_RESP_OK);
	else if (srnic_psn_diff(una, w->out_last) <= 0)
		srnic_req_implied_nak(qp);
}

/*
 * An answer from the wire for @qp's requester: for the piece that waits or
 * one sent ahead (a late or repeated answer to an earlier one is dropped).
 */
void srnic_net_req_rx(struct srnic_engine *eng, struct srnic_qp *qp,
		      const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;
	bool kick;
	s32 d, n;

	spin_lock(&w->lock);
	if (!srnic_pkt_since(p, w->ans_gen)) {
		spin_unlock(&w->lock);
		return;
	}
	if (w->out && !w->answered)
		srnic_req_progress(qp);
	d = srnic_psn_diff(p->psn, w->out_first);
	n = srnic_psn_diff(w->out_last, w->out_first);
	/* Also while the head's WQE completes and the next is not yet the head. */
	if (w->ahead_n && (!w->out || d > n)) {
		srnic_req_rx_ahead(eng, qp, p);
		goto out;
	}
	if (!w->out || w->answered || d < 0) {
		spin_unlock(&w->lock);
		return;
	}
	/*
	 * Past the head, with nothing ahead: go-back-N forgot what went
	 * after it, which the responder may have had all along (rxe answers
	 * each copy it gets again with its furthest PSN): an ACK is
	 * cumulative.  A READ or atomic wants its response: such an answer,
	 * if it is news, says the response was lost (an implied NAK).
	 */
	if (d > n) {
		srnic_req_rx_ahead(eng, qp, p);
		goto out;
	}
	if (p->flags & SRNIC_OPF_READ)
		srnic_req_read_resp(eng, qp, p);
	else if (p->op == SRNIC_OP_ATOMIC_ACK) {
		if (d == 0 && (w->out_op == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
			       w->out_op == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD)) {
			w->orig = be64_to_cpu(((const struct srnic_atmack *)
					       (p->next + 4))->orig);
			srnic_req_answered(qp, SRNIC_RESP_OK);
		}
	} else {
		srnic_req_aeth(qp, p, d, n);
	}
out:
	kick = w->answered;
	spin_unlock(&w->lock);
	if (kick)
		srnic_engine_kick(qp);
}
