// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The wire responder: RC, UC and XRC request packets for a QP connected
 * across the wire, run by the QP's engine thread in PSN order.  An XRC
 * target answers as RC does; its requests name an SRQ of its domain
 * (XRCETH), which receives and whose PD the memory they reach is checked
 * against.
 *
 * A packet with the expected PSN is a piece of its message for the
 * responder (srnic_resp.c), which places it and answers; the answer goes
 * back as an ACK (when the packet asks for one), an RNR NAK with the QP's
 * min_rnr_timer (an ODP page to fault in answers RNR too, as mlx5 does),
 * an error NAK, READ response packets or an atomic acknowledgement.  A
 * packet ahead of the expected PSN gets one sequence NAK; a packet behind
 * it is a duplicate: acknowledged again, a READ answered again from
 * memory within what the READ kept for it first asked, an atomic from the
 * result kept for it.  UC answers nothing: a gap loses the message in
 * progress.
 *
 * A READ's responses go out a visit's bytes at a time (the thread's
 * other QPs have their turn between), and the QP's request packets that
 * come meanwhile wait behind it (srnic_net.c): requests execute in order.
 */
#include "srnic_net.h"
#include "srnic_transport.h"

/* The service bits of @qp's answers: XRC's for a target, else RC's. */
static u8 srnic_wresp_svc(const struct srnic_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_TGT ? SRNIC_OP_XRC : SRNIC_OP_RC;
}

/* An answer without payload: @opcode for PSN @psn, its headers @ext. */
static void srnic_wresp_send(struct srnic_qp *qp, u8 opcode, u32 psn,
			     const void *ext, u32 ext_len)
{
	struct srnic_txp t = {};

	srnic_net_txp_path(qp, &t);
	t.opcode = opcode | srnic_wresp_svc(qp);
	t.psn = psn;
	t.ext = ext;
	t.ext_len = ext_len;
	srnic_net_xmit(to_sdev(qp->ibqp.device), &t);
}

/* The success ACK @qp holds back (srnic_wresp_ack_later), if any, now. */
static void srnic_wresp_ack_held(struct srnic_qp *qp)
{
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_aeth aeth;

	if (!w->ack_held)
		return;
	w->ack_held = false;
	srnic_aeth_set(&aeth, SRNIC_AETH_ACK | SRNIC_AETH_NO_CREDITS,
		       w->ack_msn);
	srnic_wresp_send(qp, SRNIC_OP_ACK, w->ack_psn, &aeth, sizeof(aeth));
}

/* Any other answer: after the held ACK, as answers leave in PSN order. */
static void srnic_wresp_answer(struct srnic_qp *qp, u8 opcode, u32 psn,
			       const void *ext, u32 ext_len)
{
	srnic_wresp_ack_held(qp);
	srnic_wresp_send(qp, opcode, psn, ext, ext_len);
}

/* An ACKNOWLEDGE with @syndrome for PSN @psn. */
static void srnic_wresp_ack(struct srnic_qp *qp, u8 syndrome, u32 psn)
{
	struct srnic_aeth aeth;

	srnic_aeth_set(&aeth, syndrome, qp->w.msn);
	srnic_wresp_answer(qp, SRNIC_OP_ACK, psn, &aeth, sizeof(aeth));
}

/*
 * A success ACK for @psn, held until the thread's batch of packets ends
 * (srnic_net_ack_flush) or another answer of @qp goes: an ACK covers every
 * request before its PSN, so one answers all a batch brought (coalesced,
 * as the spec allows) rather than each small message its own.  One QP's
 * at a time: another QP's held ACK goes once this QP's lock is dropped
 * (@ack_prev, srnic_net_ack_prev()), as one responder's lock is held at a
 * time.
 */
static void srnic_wresp_ack_later(struct srnic_engine *eng,
				  struct srnic_qp *qp, u32 psn)
{
	if (eng->ack_qp != qp) {
		eng->ack_prev = eng->ack_qp;
		refcount_inc(&qp->ref);
		eng->ack_qp = qp;
	}
	qp->w.ack_held = true;
	qp->w.ack_psn = psn;
	qp->w.ack_msn = qp->w.msn;
}

/* The ACK @qp holds, sent under its responder's lock; the reference dropped. */
static void srnic_wresp_ack_release(struct srnic_qp *qp)
{
	spin_lock(&qp->w.rx_lock);
	/* A QP in error or reset meanwhile answers nothing. */
	if (srnic_qp_receives(READ_ONCE(qp->state)))
		srnic_wresp_ack_held(qp);
	qp->w.ack_held = false;
	spin_unlock(&qp->w.rx_lock);
	srnic_qp_put(qp);
}

void srnic_net_ack_flush(struct srnic_engine *eng)
{
	struct srnic_qp *qp = eng->ack_qp;

	srnic_net_ack_prev(eng);
	if (!qp)
		return;
	eng->ack_qp = NULL;
	srnic_wresp_ack_release(qp);
}

/* The held ACK another QP's took the place of, with no responder's lock held. */
void srnic_net_ack_prev(struct srnic_engine *eng)
{
	struct srnic_qp *qp = eng->ack_prev;

	if (!qp)
		return;
	eng->ack_prev = NULL;
	srnic_wresp_ack_release(qp);
}

/*
 * The responder of @qp starts anew, expecting @epsn (modify_qp: RTR, or
 * RESET): no READ going out, none kept for duplicates, nothing held, no
 * ACK held.  Under the responder's lock, so that the engine is not inside
 * a packet or a visit of the QP meanwhile, and finds nothing of it after.
 */
void srnic_net_resp_forget(struct srnic_qp *qp, u32 epsn)
{
	struct srnic_wire_qp *w = &qp->w;

	spin_lock(&w->rx_lock);
	w->rx_gen = atomic64_inc_return(&to_sdev(qp->ibqp.device)->rx_gen);
	w->epsn = epsn;
	w->msn = 0;
	w->nak_sent = false;
	w->ack_held = false;
	w->rx_kind = 0;
	w->rd.active = false;
	w->rd_excess = false;
	w->held_owed = 0;
	xa_clear_mark(&to_sdev(qp->ibqp.device)->qps, qp->qpn, SRNIC_QP_READING);
	if (w->res)
		memset(w->res, 0, SRNIC_MAX_QP_RD_ATOM * sizeof(*w->res));
	w->res_next = 0;
	skb_queue_purge(&w->held);
	spin_unlock(&w->rx_lock);
}

/* The NAK code of a responder's refusal. */
static u8 srnic_wresp_nak_code(enum srnic_resp r)
{
	switch (r) {
	case SRNIC_RESP_NAK_INV:
		return SRNIC_NAK_INV_REQ;
	case SRNIC_RESP_NAK_ACCESS:
		return SRNIC_NAK_REM_ACCESS;
	default:
		return SRNIC_NAK_REM_OP;
	}
}

/*
 * The answer @r to the request packet @p, when it is not a success: RNR
 * (also for an ODP fault, whose page is faulted in meanwhile) or an error
 * NAK (RC), nothing at all for UC or a QP that does not receive.
 */
static void srnic_wresp_refuse(struct srnic_engine *eng, struct srnic_qp *qp,
			      const struct srnic_pkt *p, enum srnic_resp r)
{
	if (r == SRNIC_RESP_FAULT) {
		srnic_odp_fault_async(&eng->remote.fault,
				      !(p->flags & SRNIC_OPF_READ));
		r = SRNIC_RESP_RNR;
	}
	if (!srnic_qpt_acked(qp->ibqp.qp_type) || r == SRNIC_RESP_DROP)
		return;
	if (r == SRNIC_RESP_RNR)
		srnic_wresp_ack(qp, SRNIC_AETH_RNR |
			       (READ_ONCE(qp->attr.min_rnr_timer) & 31), p->psn);
	else
		srnic_wresp_ack(qp, SRNIC_AETH_NAK | srnic_wresp_nak_code(r),
			       p->psn);
	srnic_resp_nak(qp, r);
}

/*
 * What every message of @qp's connection says of its requester: the
 * connected peer, the only one whose packets reach the responder.
 */
static void srnic_wresp_msg_init(struct srnic_qp *qp, struct srnic_msg *m)
{
	m->src_qpn = READ_ONCE(qp->attr.dest_qp_num);
	m->src_dev = -1;
	m->sgid = qp->w.dgid;
	m->dgid = qp->sgid;
	m->xrc_srq = qp->w.rx_srq;
}

/*
 * A SEND or WRITE packet as the piece @m of its message: where it falls
 * in the message the QP is receiving, and how long that message is known
 * to be (a SEND's length is known at its last packet only).  False for a
 * packet out of its message's order.
 */
static bool srnic_wresp_piece(struct srnic_engine *eng, struct srnic_qp *qp,
			     const struct srnic_pkt *p, struct srnic_msg *m)
{
	struct srnic_wire_qp *w = &qp->w;
	u16 kind = p->flags & (SRNIC_OPF_SEND | SRNIC_OPF_WRITE);
	bool first = p->flags & SRNIC_OPF_FIRST, last = p->flags & SRNIC_OPF_LAST;

	/*
	 * Packets of the path MTU, but a message's last: at most that, and
	 * not empty unless it is the only one.
	 */
	if (p->plen > w->mtu || (!last && p->plen != w->mtu) ||
	    (last && !first && !p->plen))
		return false;
	if (first) {
		/* UC: a new message ends the one a lost packet left open. */
		if (w->rx_kind && srnic_qpt_acked(qp->ibqp.qp_type))
			return false;
		w->rx_kind = kind;
		w->rx_off = 0;
		if (p->flags & SRNIC_OPF_RETH) {
			const struct srnic_reth *reth = (const void *)p->next;

			w->rx_va = be64_to_cpu(reth->va);
			w->rx_rkey = be32_to_cpu(reth->rkey);
			w->rx_len = be32_to_cpu(reth->len);
		}
	} else if (w->rx_kind != kind) {
		return false;
	}
	m->off = w->rx_off;
	m->plen = p->plen;
	if (kind == SRNIC_OPF_WRITE) {
		/* Every packet within the RETH's length, the last at its end. */
		if (m->off + m->plen > w->rx_len ||
		    last != (m->off + m->plen == w->rx_len))
			return false;
		m->opcode = (p->flags & SRNIC_OPF_IMM) ?
			IB_UVERBS_WR_RDMA_WRITE_WITH_IMM : IB_UVERBS_WR_RDMA_WRITE;
		m->raddr = w->rx_va;
		m->rkey = w->rx_rkey;
		m->len = w->rx_len;
	} else {
		m->opcode = IB_UVERBS_WR_SEND;
		m->len = m->off + m->plen + !last;
		m->has_inv = p->flags & SRNIC_OPF_IETH;
	}
	m->has_imm = p->flags & SRNIC_OPF_IMM;
	if (p->flags & (SRNIC_OPF_IMM | SRNIC_OPF_IETH)) {
		__be32 v = get_unaligned((const __be32 *)(p->hdr_end - 4));

		m->imm = m->has_inv ? be32_to_cpu(v) : v;
	}
	/* The packet holds this piece only. */
	srnic_sg_init_skb(&eng->wire, p->skb, p->poff, p->plen);
	m->payload = &eng->wire;
	m->pbase = m->off;
	srnic_wresp_msg_init(qp, m);
	m->solicited = srnic_bth_se(p->bth);
	return true;
}

/* A SEND or WRITE packet with the expected PSN. */
static void srnic_wresp_data(struct srnic_engine *eng, struct srnic_qp *qp,
			    const struct srnic_pkt *p)
{
	bool acked = srnic_qpt_acked(qp->ibqp.qp_type);
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_reply rep = {};
	struct srnic_msg m = {};
	enum srnic_resp r;

	if (!srnic_wresp_piece(eng, qp, p, &m)) {
		w->rx_kind = 0;
		r = acked ? SRNIC_RESP_NAK_INV : SRNIC_RESP_DROP;
	} else {
		r = srnic_resp_execute(eng, qp, &m, &rep);
	}
	srnic_resp_account(qp, &m, r);
	if (r != SRNIC_RESP_OK) {
		/*
		 * Refused at its first packet: the message has not begun.  UC
		 * loses a message it refuses a packet of (out of order, too
		 * long for its receive WQE, none posted): its other packets
		 * are dropped, the next message's first is taken.
		 */
		if ((p->flags & SRNIC_OPF_FIRST) || !acked)
			w->rx_kind = 0;
		if (!acked)
			w->epsn = srnic_psn_add(p->psn, 1);
		srnic_wresp_refuse(eng, qp, p, r);
		return;
	}
	w->rx_off += p->plen;
	if (p->flags & SRNIC_OPF_LAST) {
		w->rx_kind = 0;
		w->msn = (w->msn + 1) & SRNIC_MSN_MASK;
	}
	w->epsn = srnic_psn_add(p->psn, 1);
	if (srnic_bth_ackreq(p->bth) && srnic_qpt_acked(qp->ibqp.qp_type))
		srnic_wresp_ack_later(eng, qp, p->psn);
}

/*
 * The READ response packets of one window of @m, resolved in eng->remote.
 * Returns the offset in the READ it reached: short of the window's end when
 * the netdev's queue refused a packet; the rest are not built then (they
 * would be refused too).
 */
static u64 srnic_wresp_read_window(struct srnic_engine *eng,
				   struct srnic_qp *qp, const struct srnic_msg *m)
{
	const struct srnic_wire_read *rd = &qp->w.rd;
	u64 off = m->off, end = m->off + m->plen;
	u32 mtu = qp->w.mtu;
	struct srnic_aeth aeth;
	struct srnic_txp t = {};

	srnic_wresp_ack_held(qp);
	srnic_net_txp_path(qp, &t);
	t.payload = &eng->remote;
	do {
		bool first = !off, last;

		t.len = min_t(u64, mtu, end - off);
		last = off + t.len >= m->len;
		t.opcode = first && last ? SRNIC_OP_READ_RESP_ONLY :
			   first ? SRNIC_OP_READ_RESP_FIRST :
			   last ? SRNIC_OP_READ_RESP_LAST :
				  SRNIC_OP_READ_RESP_MIDDLE;
		/* The AETH of the last packet counts the READ as done. */
		srnic_aeth_set(&aeth, SRNIC_AETH_ACK | SRNIC_AETH_NO_CREDITS,
			       (rd->msn - !last) & SRNIC_MSN_MASK);
		t.ext = &aeth;
		t.ext_len = (srnic_opcode[t.opcode].flags & SRNIC_OPF_AETH) ?
			    sizeof(aeth) : 0;
		t.opcode |= srnic_wresp_svc(qp);
		t.off = off - m->off;
		t.psn = srnic_psn_add(rd->psn, off / mtu);
		if (srnic_net_xmit(to_sdev(qp->ibqp.device), &t))
			return off;
		off += t.len;
	} while (off < end);
	return end;
}

/*
 * How long the READ responder waits for a netdev's queue that refuses
 * every packet before its READ ends as if lost (the requester asks again
 * for what it lacks): a queue that never drains holds no READ for ever.
 */
#define SRNIC_WRESP_READ_STALL	(HZ / 4)

/*
 * The netdev's queue refused the READ @rd's response at @sent (its window
 * went from @off): the rest go a tick later, as a NIC's full ring holds
 * them back, unless no packet went for SRNIC_WRESP_READ_STALL.  Returns
 * where the READ goes on from (@len: it is over).
 */
static u64 srnic_wresp_read_refused(struct srnic_wire_read *rd, u64 off,
				    u64 sent, u64 len)
{
	if (sent > off || !rd->stalled)
		rd->stalled = jiffies;
	else if (time_after(jiffies, rd->stalled + SRNIC_WRESP_READ_STALL))
		return len;
	rd->until = jiffies + 1;
	return sent;
}

/*
 * The next responses of the READ going out (qp->w.rd), SRNIC_PIECE of
 * memory resolved at a time, until @budget bytes went.  An error or fault
 * stops them; the READ is no longer active.
 */
static enum srnic_resp srnic_wresp_read_more(struct srnic_engine *eng,
					    struct srnic_qp *qp, u32 budget)
{
	struct srnic_wire_read *rd = &qp->w.rd;
	u64 end = min_t(u64, rd->len, (u64)rd->off + budget);
	struct srnic_reply rep = {};
	struct srnic_msg m = {
		.opcode = IB_UVERBS_WR_RDMA_READ,
		.raddr = rd->va,
		.rkey = rd->rkey,
		.len = rd->len,
		.off = rd->off,
	};
	enum srnic_resp r;
	u64 sent;

	srnic_wresp_msg_init(qp, &m);
	rd->until = 0;
	do {
		m.plen = min_t(u64, m.len - m.off, SRNIC_PIECE);
		r = srnic_resp_execute(eng, qp, &m, &rep);
		srnic_resp_account(qp, &m, r);
		if (r != SRNIC_RESP_OK)
			break;
		sent = srnic_wresp_read_window(eng, qp, &m);
		srnic_sg_release(&eng->remote);
		if (sent < m.off + m.plen) {
			m.off = srnic_wresp_read_refused(rd, m.off, sent, m.len);
			break;
		}
		rd->stalled = 0;
		m.off += m.plen;
	} while (m.off < end);
	rd->off = m.off;
	rd->active = r == SRNIC_RESP_OK && m.off < m.len;
	return r;
}

/*
 * @qp's responder resources: max_dest_rd_atomic, rounded up to a power of
 * two as rxe and mlx5 size theirs (their requesters round max_rd_atomic
 * up the same way: one set to 3 has 4 in flight).
 */
static u32 srnic_wresp_resources(const struct srnic_qp *qp)
{
	u32 n = READ_ONCE(qp->attr.max_dest_rd_atomic);

	return n ? min_t(u32, roundup_pow_of_two(n), SRNIC_MAX_QP_RD_ATOM) : 0;
}

/*
 * Whether the requester counts @p against its max_rd_atomic: a READ or
 * an atomic.  rxe's requester counts neither ATOMIC WRITE nor FLUSH, so
 * those are never too many.
 */
static bool srnic_wresp_counted(const struct srnic_pkt *p)
{
	return p->op == SRNIC_OP_READ_REQUEST || p->op == SRNIC_OP_CMP_SWAP ||
	       p->op == SRNIC_OP_FETCH_ADD;
}

/* Keeps the READ or atomic @res, in place of the oldest one kept. */
static void srnic_wresp_keep(struct srnic_wire_qp *w,
			    const struct srnic_wire_res *res)
{
	if (w->res)
		w->res[w->res_next++ % SRNIC_MAX_QP_RD_ATOM] = *res;
}

/* The READ (@read) or atomic kept whose PSNs include @psn, or NULL. */
static const struct srnic_wire_res *
srnic_wresp_kept(const struct srnic_wire_qp *w, u32 psn, bool read)
{
	unsigned int i;

	for (i = 0; w->res && i < SRNIC_MAX_QP_RD_ATOM; i++) {
		const struct srnic_wire_res *res = &w->res[i];
		if (res->valid && res->read == read &&
		    srnic_psn_in_window(psn, res->psn, read ? res->npsn : 1))
			return res;
	}
	return NULL;
}

/* What the READ REQUEST @p asks for. */
static struct srnic_wire_read srnic_wresp_read_asked(const struct srnic_pkt *p)
{
	const struct srnic_reth *reth = (const void *)p->next;

	return (struct srnic_wire_read){
		.psn = p->psn,
		.va = be64_to_cpu(reth->va),
		.rkey = be32_to_cpu(reth->rkey),
		.len = be32_to_cpu(reth->len),
		.srqn = p->xrc_srqn,
	};
}

/*
 * Whether the duplicate READ @p asks for what a kept READ asked, from
 * one of its response PSNs on: the requester asking again for what it
 * lacks.  Nothing else is answered again: a peer's one packet may not
 * have the responder read and send what no READ asked for.
 */
static bool srnic_wresp_read_dup_ok(const struct srnic_wire_qp *w,
				   const struct srnic_pkt *p)
{
	const struct srnic_wire_read rd = srnic_wresp_read_asked(p);
	const struct srnic_wire_res *res = srnic_wresp_kept(w, rd.psn, true);
	u64 skip;

	if (!res || rd.rkey != res->rkey)
		return false;
	/* Within the kept READ, should the MTU have changed since (a new AV). */
	skip = (u64)srnic_psn_diff(rd.psn, res->psn) * w->mtu;
	return skip <= res->len && rd.va == res->va + skip &&
	       rd.len <= res->len - skip;
}

/*
 * Whether @p, come while a READ's responses go out, asks again for a
 * kept READ: its requester went back to it (go-back-N), after a timeout
 * or a gap in the responses, and will send again all it sent after it.
 * So what was held behind the READ going out comes again, and answered
 * now it would only be answered twice, and before what the requester
 * waits for.  At or before the READ going out (SRNIC_AGAIN_NOW), the
 * duplicate is answered at once in its place (a requester slower than
 * its timeout would otherwise ask again and again, each copy queued
 * behind the last, until its retries ran out).  Past it (SRNIC_AGAIN_
 * AFTER), it waits its turn in place of what was held: answered at
 * once, it would cut the replay its requester still waits for, which
 * would go back to it again, forever.
 */
enum srnic_again srnic_net_resp_read_again(const struct srnic_qp *qp,
					   const struct srnic_pkt *p)
{
	const struct srnic_wire_read *rd = &qp->w.rd;
	u32 last = srnic_psn_add(rd->psn, srnic_psn_count(rd->len, qp->w.mtu) - 1);

	if (p->op != SRNIC_OP_READ_REQUEST ||
	    srnic_psn_diff(p->psn, qp->w.epsn) >= 0 ||
	    !srnic_wresp_read_dup_ok(&qp->w, p))
		return SRNIC_AGAIN_NO;
	return srnic_psn_diff(p->psn, last) <= 0 ? SRNIC_AGAIN_NOW :
						   SRNIC_AGAIN_AFTER;
}

/*
 * The request @p is held behind the READ going out (srnic_net.c): what it
 * is, counted at its arrival.  The spec's too many RDMA READ or atomic
 * requests (an invalid request) are more received and not answered than
 * the responder resources: the READ going out (not a replay: that one
 * was answered before), the READs and atomics held in sequence behind it,
 * then this one.  Their requester has had the answer of none, so it had
 * them all outstanding.  Only those in sequence count (a copy, or one past
 * a gap, does not).  One beyond is refused in its turn, after the answers
 * before it (srnic_wresp_rx).
 */
enum srnic_held srnic_net_resp_hold(struct srnic_qp *qp,
				    const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;
	u32 npsn = 1;

	if (skb_queue_empty(&w->held)) {
		w->held_psn = w->epsn;
		w->held_owed = 0;
	}
	if (p->psn != w->held_psn)
		return SRNIC_HELD_OTHER;
	if (p->op == SRNIC_OP_READ_REQUEST)
		npsn = srnic_psn_count(srnic_wresp_read_asked(p).len, w->mtu);
	w->held_psn = srnic_psn_add(p->psn, npsn);
	if (!srnic_wresp_counted(p))
		return SRNIC_HELD_OTHER;
	if (w->held_owed + w->rd_counted + 1 > srnic_wresp_resources(qp))
		return SRNIC_HELD_EXCESS;
	w->held_owed++;
	return SRNIC_HELD_OWED;
}

/* The request held as @h is taken from the queue, to run now. */
void srnic_net_resp_unhold(struct srnic_qp *qp, enum srnic_held h)
{
	struct srnic_wire_qp *w = &qp->w;

	if (h == SRNIC_HELD_OWED && w->held_owed)
		w->held_owed--;
	w->rd_excess = h == SRNIC_HELD_EXCESS;
}

/*
 * A READ REQUEST with the expected PSN, or a duplicate (@dup): its first
 * responses now, the rest by srnic_net_resp_reads(), SRNIC_VISIT_BYTES per
 * visit, so that a READ of any length holds the engine no longer than
 * that.  A refusal at the first byte is the answer (NAK, RNR); later, the
 * requester's timer asks again.
 */
static void srnic_wresp_read(struct srnic_engine *eng, struct srnic_qp *qp,
			    const struct srnic_pkt *p, bool dup)
{
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_wire_read *rd = &w->rd;
	enum srnic_resp r;
	u32 npsn;

	if (dup && !srnic_wresp_read_dup_ok(w, p))
		return;
	*rd = srnic_wresp_read_asked(p);
	rd->msn = dup ? w->msn : (w->msn + 1) & SRNIC_MSN_MASK;
	w->rd_counted = !dup;
	/* Longer than a message may be: its PSNs would pass half the space. */
	if (rd->len > SRNIC_MAX_MSG_SIZE) {
		srnic_wresp_refuse(eng, qp, p, SRNIC_RESP_NAK_INV);
		return;
	}
	r = srnic_wresp_read_more(eng, qp, SRNIC_VISIT_BYTES);
	if (r != SRNIC_RESP_OK && !rd->off) {
		srnic_wresp_refuse(eng, qp, p, r);
		return;
	}
	if (r == SRNIC_RESP_FAULT)
		srnic_odp_fault_async(&eng->remote.fault, false);
	if (!dup) {
		npsn = srnic_psn_count(rd->len, w->mtu);
		srnic_wresp_keep(w, &(struct srnic_wire_res){
			.valid = true, .read = true, .psn = p->psn,
			.npsn = npsn, .va = rd->va, .rkey = rd->rkey,
			.len = rd->len });
		w->epsn = srnic_psn_add(p->psn, npsn);
		w->msn = rd->msn;
	}
	if (rd->active)
		xa_set_mark(&to_sdev(qp->ibqp.device)->qps, qp->qpn,
			    SRNIC_QP_READING);
}

/*
 * Whether the READ of @qp going out waits for the netdev's queue (it
 * refused a response): its time then goes to the engine's @timer.
 */
bool srnic_net_resp_read_waits(struct srnic_qp *qp, unsigned long *timer)
{
	const struct srnic_wire_read *rd = &qp->w.rd;

	if (!rd->active || !rd->until || !time_before(jiffies, rd->until))
		return false;
	srnic_timer_min(timer, rd->until);
	return true;
}

/*
 * The SRQ an XRC target's request names, held in qp->w.rx_srq while the
 * request runs: one of the target's domain, else the request is invalid
 * (NAK when it is the one expected; anything else is dropped).
 */
static bool srnic_wresp_xrc_begin(struct srnic_engine *eng, struct srnic_qp *qp,
				  const struct srnic_pkt *p, u32 srqn)
{
	struct srnic_msg m = {};

	if (!srnic_resp_xrc_srq(qp, srqn, &m)) {
		qp->w.rx_srq = m.xrc_srq;
		return true;
	}
	if (p && p->psn == qp->w.epsn)
		srnic_wresp_refuse(eng, qp, p, SRNIC_RESP_NAK_INV);
	return false;
}

static void srnic_wresp_xrc_end(struct srnic_qp *qp)
{
	srnic_srq_put(qp->w.rx_srq);
	qp->w.rx_srq = NULL;
}

/*
 * The READ of @qp going out: its next SRNIC_VISIT_BYTES.  False once it
 * is over (sent, or stopped by an error), or the QP no longer answers.
 */
bool srnic_net_resp_read_next(struct srnic_engine *eng, struct srnic_qp *qp)
{
	struct srnic_wire_read *rd = &qp->w.rd;
	int state = READ_ONCE(qp->state);

	if (!rd->active)
		return false;
	/* SQD and SQE drain the send queue only: the responder goes on. */
	if (!srnic_qp_receives(state)) {
		rd->active = false;
		return false;
	}
	/* An XRC target's READ reads through its SRQ's PD, found again. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT &&
	    !srnic_wresp_xrc_begin(eng, qp, NULL, rd->srqn)) {
		rd->active = false;
		return false;
	}
	if (srnic_wresp_read_more(eng, qp, SRNIC_VISIT_BYTES) ==
	    SRNIC_RESP_FAULT)
		srnic_odp_fault_async(&eng->remote.fault, false);
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		srnic_wresp_xrc_end(qp);
	return rd->active;
}

/* ATOMIC WRITE's and FLUSH's answer: an empty READ RESPONSE ONLY, as rxe sends. */
static void srnic_wresp_empty_read(struct srnic_qp *qp, u32 psn)
{
	struct srnic_aeth aeth;

	srnic_aeth_set(&aeth, SRNIC_AETH_ACK | SRNIC_AETH_NO_CREDITS, qp->w.msn);
	srnic_wresp_answer(qp, SRNIC_OP_READ_RESP_ONLY, psn, &aeth, sizeof(aeth));
}

/* An atomic's acknowledgement: the original value. */
static void srnic_wresp_atomic_ack(struct srnic_qp *qp, u32 psn, u64 orig)
{
	struct {
		struct srnic_aeth aeth;
		struct srnic_atmack ack;
	} __packed ext;

	srnic_aeth_set(&ext.aeth, SRNIC_AETH_ACK | SRNIC_AETH_NO_CREDITS,
		       qp->w.msn);
	ext.ack.orig = cpu_to_be64(orig);
	srnic_wresp_answer(qp, SRNIC_OP_ATOMIC_ACK, psn, &ext, sizeof(ext));
}

/*
 * A request of one packet with the expected PSN, @m (an atomic, ATOMIC
 * WRITE or FLUSH): executed once, its answer kept for its duplicates and
 * sent.
 */
static void srnic_wresp_one_packet(struct srnic_engine *eng, struct srnic_qp *qp,
				   const struct srnic_pkt *p, struct srnic_msg *m)
{
	bool empty = srnic_opcode_remote_only(m->opcode);
	struct srnic_wire_qp *w = &qp->w;
	struct srnic_reply rep = {};
	enum srnic_resp r;

	srnic_wresp_msg_init(qp, m);
	r = srnic_resp_execute(eng, qp, m, &rep);
	srnic_resp_account(qp, m, r);
	if (r != SRNIC_RESP_OK) {
		srnic_wresp_refuse(eng, qp, p, r);
		return;
	}
	w->msn = (w->msn + 1) & SRNIC_MSN_MASK;
	w->epsn = srnic_psn_add(p->psn, 1);
	srnic_wresp_keep(w, &(struct srnic_wire_res){
		.valid = true, .psn = p->psn, .npsn = 1, .orig = rep.orig,
		.empty = empty });
	if (empty)
		srnic_wresp_empty_read(qp, p->psn);
	else
		srnic_wresp_atomic_ack(qp, p->psn, rep.orig);
}

/* An atomic request with the expected PSN. */
static void srnic_wresp_atomic(struct srnic_engine *eng, struct srnic_qp *qp,
			      const struct srnic_pkt *p)
{
	struct srnic_msg m = { .len = 8, .plen = 8 };

	if (p->op == SRNIC_OP_ATOMIC_WRITE) {
		const struct srnic_reth *reth = (const void *)p->next;

		m.opcode = SRNIC_WR_ATOMIC_WRITE;
		m.raddr = be64_to_cpu(reth->va);
		m.rkey = be32_to_cpu(reth->rkey);
		if (p->plen != 8 || be32_to_cpu(reth->len) != 8) {
			srnic_wresp_refuse(eng, qp, p, SRNIC_RESP_NAK_INV);
			return;
		}
		srnic_pkt_copy(p, 0, &m.compare_add, 8);
	} else {
		const struct srnic_atmeth *atm = (const void *)p->next;
		bool cs = p->op == SRNIC_OP_CMP_SWAP;

		m.opcode = cs ? IB_UVERBS_WR_ATOMIC_CMP_AND_SWP :
				IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
		m.raddr = be64_to_cpu(get_unaligned(&atm->va));
		m.rkey = be32_to_cpu(atm->rkey);
		m.swap = be64_to_cpu(get_unaligned(&atm->swap_add));
		m.compare_add = cs ? be64_to_cpu(get_unaligned(&atm->compare)) :
				     m.swap;
	}
	srnic_wresp_one_packet(eng, qp, p, &m);
}

/* A FLUSH request with the expected PSN: its FETH, then its range's RETH. */
static void srnic_wresp_flush(struct srnic_engine *eng, struct srnic_qp *qp,
			      const struct srnic_pkt *p)
{
	const struct srnic_feth *feth = (const void *)p->next;
	const struct srnic_reth *reth = (const void *)(p->next + sizeof(*feth));
	struct srnic_msg m = {
		.opcode = SRNIC_WR_FLUSH,
		.raddr = be64_to_cpu(reth->va),
		.rkey = be32_to_cpu(reth->rkey),
		.flush_len = be32_to_cpu(reth->len),
		.flush_type = srnic_feth_type(feth),
		.flush_level = srnic_feth_level(feth),
	};

	srnic_wresp_one_packet(eng, qp, p, &m);
}

/*
 * A duplicate atomic, ATOMIC WRITE or FLUSH: its kept answer again,
 * nothing executed twice.  One older than the kept results is not
 * answered; its requester's retries run out.
 */
static void srnic_wresp_one_packet_again(struct srnic_qp *qp, u32 psn)
{
	const struct srnic_wire_res *res = srnic_wresp_kept(&qp->w, psn, false);

	if (!res)
		return;
	if (res->empty)
		srnic_wresp_empty_read(qp, psn);
	else
		srnic_wresp_atomic_ack(qp, psn, res->orig);
}

/*
 * A request that came before (its PSN is behind the expected one): the
 * answer again, nothing executed twice.  UC drops it.
 */
static void srnic_wresp_duplicate(struct srnic_engine *eng, struct srnic_qp *qp,
				 const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;

	srnic_count(to_sdev(qp->ibqp.device), SRNIC_PC_DUP_REQUESTS);
	if (!srnic_qpt_acked(qp->ibqp.qp_type))
		return;
	if (p->op == SRNIC_OP_READ_REQUEST) {
		srnic_wresp_read(eng, qp, p, true);
	} else if (p->flags & (SRNIC_OPF_ATOMIC | SRNIC_OPF_FETH)) {
		srnic_wresp_one_packet_again(qp, p->psn);
	} else if (srnic_bth_ackreq(p->bth)) {
		srnic_wresp_ack(qp, SRNIC_AETH_ACK | SRNIC_AETH_NO_CREDITS,
				srnic_psn_add(w->epsn, -1));
	}
}

/*
 * A packet ahead of the expected PSN: one before it was lost.  RC asks
 * for the rest again with one sequence NAK (until the expected packet
 * comes); UC loses the message in progress and goes on from here.
 */
static bool srnic_wresp_ahead(struct srnic_qp *qp, const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;

	if (qp->ibqp.qp_type == IB_QPT_UC) {
		w->rx_kind = 0;
		w->epsn = p->psn;
		return true;
	}
	/* Once per gap: more would each send the rest again. */
	if (!w->nak_sent) {
		w->nak_sent = true;
		srnic_count(to_sdev(qp->ibqp.device), SRNIC_PC_SEQ_NAKS_SENT);
		srnic_wresp_ack(qp, SRNIC_AETH_NAK | SRNIC_NAK_PSN_SEQ, w->epsn);
	}
	return false;
}

/* A request packet for @qp (its SRQ found, for XRC). */
static void srnic_wresp_rx(struct srnic_engine *eng, struct srnic_qp *qp,
			   const struct srnic_pkt *p)
{
	struct srnic_wire_qp *w = &qp->w;
	s32 d = srnic_psn_diff(p->psn, w->epsn);

	if (d < 0) {
		srnic_wresp_duplicate(eng, qp, p);
		return;
	}
	if (d > 0 && !srnic_wresp_ahead(qp, p))
		return;
	w->nak_sent = false;
	/* Beyond the responder resources when it came (srnic_net_resp_hold). */
	if (w->rd_excess && srnic_wresp_counted(p)) {
		srnic_wresp_refuse(eng, qp, p, SRNIC_RESP_NAK_INV);
		return;
	}
	if (p->op == SRNIC_OP_READ_REQUEST)
		srnic_wresp_read(eng, qp, p, false);
	else if (p->flags & SRNIC_OPF_ATOMIC)
		srnic_wresp_atomic(eng, qp, p);
	else if (p->flags & SRNIC_OPF_FETH)
		srnic_wresp_flush(eng, qp, p);
	else
		srnic_wresp_data(eng, qp, p);
}

/* A request packet for @qp, in the QP's engine thread. */
void srnic_net_resp_rx(struct srnic_engine *eng, struct srnic_qp *qp,
		       const struct srnic_pkt *p)
{
	if (qp->ibqp.qp_type != IB_QPT_XRC_TGT) {
		srnic_wresp_rx(eng, qp, p);
		return;
	}
	if (!srnic_wresp_xrc_begin(eng, qp, p, p->xrc_srqn))
		return;
	srnic_wresp_rx(eng, qp, p);
	srnic_wresp_xrc_end(qp);
}
