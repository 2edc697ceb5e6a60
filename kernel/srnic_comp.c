// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The completer: the answer to each piece of a send WQE becomes the next
 * piece, a retry (RNR, no answer) or the WQE's completion; and completions
 * themselves: CQEs into user rings, completion and CQ-error events, and
 * moving a QP to the error state with its outstanding WQEs flushed.
 */
#include "srnic_loc.h"
#include "srnic_trace.h"
#include "srnic_transport.h"

/* The CQ's completion handler, on this CPU, counted. */
static void srnic_cq_deliver(struct srnic_cq *cq)
{
	this_cpu_inc(*to_sdev(cq->ibcq.device)->cq_events);
	cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/* On the vector's CPU; the call's data is free again already (async). */
static void srnic_cq_event_call(void *arg)
{
	struct srnic_cq *cq = arg;

	srnic_cq_deliver(cq);
	/* The last touch of @cq: srnic_cq_event_sync() may free it now. */
	atomic_dec_return_release(&cq->event_pending);
}

/*
 * A completion event of @cq on the CPU of its vector: at once if the
 * engine runs there (or that CPU is offline), else by a function call in
 * hard interrupt context there, as a NIC's interrupt of that vector would
 * run.  One raised while another is on its way is that one (-EBUSY): an
 * arming gets one event.
 */
static void srnic_cq_event(struct srnic_cq *cq)
{
	int cpu = get_cpu(), err = -ENXIO;

	if (cpu != cq->event_cpu) {
		atomic_inc(&cq->event_pending);
		err = smp_call_function_single_async(cq->event_cpu, &cq->event);
		if (err)
			atomic_dec(&cq->event_pending);
	}
	/* -EBUSY: one is on its way; -ENXIO: here, or its CPU is offline. */
	if (err && err != -EBUSY)
		srnic_cq_deliver(cq);
	put_cpu();
}

/* The CPU of completion vector @vector: the vector-th online one. */
void srnic_cq_event_init(struct srnic_cq *cq, u32 vector)
{
	INIT_CSD(&cq->event, srnic_cq_event_call, cq);
	cq->event_cpu = cpumask_local_spread(vector, NUMA_NO_NODE);
	atomic_set(&cq->event_pending, 0);
}

/* Waits for the event on its way to another CPU, if any (CQ destroy). */
void srnic_cq_event_sync(struct srnic_cq *cq)
{
	while (atomic_read_acquire(&cq->event_pending))
		cpu_relax();
}

/*
 * Appends @src to @cq.  A ring that holds no free entry by the consumer
 * counter in user memory (or a counter that makes no sense) is an overrun:
 * the CQ goes to error, IB_EVENT_CQ_ERR is raised, and nothing more is
 * written to it.
 */
static __always_inline bool srnic_cq_put(struct srnic_cq *cq,
					 const struct srnic_cqe *src,
					 bool solicited)
{
	struct srnic_cq_db *db = cq->db.kva;
	bool fire = false, overrun = false;
	struct srnic_cqe *cqe;
	u32 arm, n;

	/*
	 * Every poster runs in process context (the engine thread, doorbell
	 * calls, ODP fault work, verbs): no need to mask interrupts, which
	 * costs the polling engine on every completion.
	 */
	spin_lock(&cq->lock);
	if (cq->overrun) {
		spin_unlock(&cq->lock);
		return false;
	}
	/*
	 * The consumer counter is read only when the value last read says
	 * the ring is full: the provider writes it on every poll, and reading
	 * it for every CQE would move its cache line to the engine each time.
	 */
	n = 1U << cq->log_entries;
	if (srnic_should_fail(to_sdev(cq->ibcq.device), SRNIC_FAULT_CQ_OVERRUN,
			      src->qp_num)) {
		cq->overrun = true;
		overrun = true;
		goto out;
	}
	if (cq->producer - cq->consumer_seen >= n) {
		cq->consumer_seen = READ_ONCE(db->consumer);
		if (cq->producer - cq->consumer_seen >= n) {
			cq->overrun = true;
			overrun = true;
			goto out;
		}
	}
	cqe = (struct srnic_cqe *)cq->ring.kva + (cq->producer & (n - 1));
	memcpy(cqe, src, offsetof(struct srnic_cqe, owner));
	/* The device clock: CLOCK_MONOTONIC in ns (hca_core_clock 1 GHz). */
	if (cq->timestamp)
		cqe->timestamp = ktime_get_ns();
	/* Every field before the owner byte that hands the entry over. */
	smp_store_release(&cqe->owner,
			  srnic_cqe_owner(cq->producer, cq->log_entries));
	cq->producer++;

	/*
	 * The arm word from the doorbell slot, which holds the same value
	 * (docs/abi.md): the record's line also holds the consumer counter
	 * the provider writes on every poll.  The entry is visible before
	 * the arm word is read, as the arming side stores the arm word
	 * before it looks for entries: one of the two sees the other, so an
	 * arm that races with this entry is not left waiting for an event
	 * (IB_CQ_REPORT_MISSED_EVENTS depends on it).
	 */
	smp_mb();
	arm = READ_ONCE(cq->dbr.kva->value);
	if ((arm & 0xff) != SRNIC_CQ_ARM_NONE && arm != cq->fired_arm &&
	    ((arm & 0xff) == SRNIC_CQ_ARM_NEXT || solicited)) {
		cq->fired_arm = arm;
		fire = true;
	}
out:
	spin_unlock(&cq->lock);
	trace_srnic_cqe(cq, src, !overrun);
	if (overrun)
		srnic_count(to_sdev(cq->ibcq.device), SRNIC_PC_CQ_OVERRUNS);
	if (overrun && cq->ibcq.event_handler) {
		struct ib_event ev = {
			.device = cq->ibcq.device,
			.event = IB_EVENT_CQ_ERR,
			.element.cq = &cq->ibcq,
		};

		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
	if (fire && cq->ibcq.comp_handler)
		srnic_cq_event(cq);
	return !overrun;
}

bool srnic_cq_post(struct srnic_cq *cq, const struct srnic_cqe *src,
		   bool solicited)
{
	return srnic_cq_put(cq, src, solicited);
}

/*
 * A completion of @qp's that its CQ could not take: the CQ is in error, and
 * so is the QP, with IB_EVENT_QP_FATAL (no completion will ever tell).
 */
static __always_inline void srnic_qp_post(struct srnic_qp *qp,
					  struct ib_cq *ibcq,
					  const struct srnic_cqe *cqe,
					  bool solicited)
{
	/* Inline: a completion per WQE, and TCG pays for every call. */
	if (srnic_cq_put(to_scq(ibcq), cqe, solicited))
		return;
	if (READ_ONCE(qp->state) != IB_QPS_ERR) {
		srnic_qp_set_error(qp);
		srnic_qp_event(qp, IB_EVENT_QP_FATAL);
	}
}

void srnic_qp_send_cqe(struct srnic_qp *qp, const struct srnic_cqe *cqe)
{
	srnic_qp_post(qp, qp->ibqp.send_cq, cqe, false);
}

/*
 * A receive completion of @qp for a WQE of @srq (NULL: its RQ or SRQ): on
 * its receive CQ, or for an XRC target QP on the XRC SRQ's CQ.
 */
void srnic_qp_recv_cqe(struct srnic_qp *qp, struct srnic_srq *srq,
		       const struct srnic_cqe *cqe, bool solicited)
{
	struct ib_cq *cq = qp->ibqp.recv_cq;

	if (srq && srq->ibsrq.srq_type == IB_SRQT_XRC)
		cq = srq->ibsrq.ext.cq;
	if (cq)
		srnic_qp_post(qp, cq, cqe, solicited);
}

void srnic_qp_event(struct srnic_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.event = type,
		.element.qp = &qp->ibqp,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * Moves @qp to the error state.  Safe from any engine: the owner engine
 * sees the state on its next scan (kicked here) and flushes the queues.
 */
void srnic_qp_set_error(struct srnic_qp *qp)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);

	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		return;
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	/* Tells the provider to wake the engine for what it posts now. */
	if (qp->db.kva)
		WRITE_ONCE(((struct srnic_qp_db *)qp->db.kva)->error, 1);
	srnic_qp_set_active(sdev, qp->qpn, true);
	srnic_engine_kick(qp);
}

static enum ib_wc_opcode srnic_wc_opcode(u8 wr_opcode)
{
	switch (wr_opcode) {
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_UVERBS_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case SRNIC_WR_ATOMIC_WRITE:
		return (enum ib_wc_opcode)SRNIC_WC_ATOMIC_WRITE;
	case SRNIC_WR_FLUSH:
		return (enum ib_wc_opcode)SRNIC_WC_FLUSH;
	case IB_UVERBS_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_UVERBS_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case SRNIC_WR_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

/* Completes the send WQE whose copy is @ctrl (always, on error). */
void srnic_send_complete(struct srnic_qp *qp, const struct srnic_wqe_ctrl *ctrl,
			 enum ib_wc_status status, u32 byte_len)
{
	struct srnic_cqe cqe = {};

	if (status == IB_WC_SUCCESS && !qp->sq_sig_all &&
	    !(ctrl->flags & SRNIC_WQE_SIGNALED))
		return;
	cqe.wr_id = ctrl->wr_id;
	cqe.status = status;
	cqe.opcode = srnic_wc_opcode(ctrl->opcode);
	cqe.byte_len = byte_len;
	cqe.qp_num = qp->qpn;
	srnic_qp_send_cqe(qp, &cqe);
}

/*
 * Flushes what the owner posted and nothing executed: every send WQE and,
 * without an SRQ, every receive WQE, each with IB_WC_WR_FLUSH_ERR.  Called
 * by the owner engine with qp->lock held.  The producer counters come from
 * user memory and are bounded by the ring size.
 */
int srnic_qp_flush(struct srnic_qp *qp)
{
	struct srnic_qp_db *db = qp->db.kva;
	struct srnic_cqe cqe = {};
	u32 prod, n, mask;
	int done = 0;

	cqe.status = IB_WC_WR_FLUSH_ERR;
	cqe.qp_num = qp->qpn;

	prod = srnic_qp_has_sq(qp) ? READ_ONCE(qp->dbr.kva->value) : 0;
	n = 1U << qp->sq.log_entries;
	mask = n - 1;
	if (prod - qp->sq_cons > n)
		prod = qp->sq_cons + n;
	while (srnic_qp_has_sq(qp) && qp->sq_cons != prod) {
		const struct srnic_wqe_ctrl *ctrl = qp->sq.ring.kva +
			((qp->sq_cons & mask) << qp->sq.log_stride);

		cqe.wr_id = READ_ONCE(ctrl->wr_id);
		cqe.opcode = srnic_wc_opcode(READ_ONCE(ctrl->opcode));
		/* The slot is free before its completion is visible. */
		qp->sq_cons++;
		smp_store_release(&db->sq_consumer, qp->sq_cons);
		srnic_qp_send_cqe(qp, &cqe);
		done++;
	}

	srnic_recv_wait(qp);
	/* A receive WQE held for a faulting message is the QP's own. */
	spin_lock(&qp->rq_lock);
	if (qp->rwqe_held) {
		const struct srnic_recv_wqe_hdr *hdr = qp->held_rwqe;
		struct srnic_srq *srq = NULL;

		qp->rwqe_held = false;
		cqe.wr_id = hdr->wr_id;
		cqe.opcode = qp->held_tm.wc ?: IB_WC_RECV;
		spin_unlock(&qp->rq_lock);
		/* An XRC SRQ's WQE completes on its CQ, if it still exists. */
		if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
			srq = srnic_xrc_srq_get(to_sdev(qp->ibqp.device),
						qp->held_srqn);
		if (srq || qp->ibqp.qp_type != IB_QPT_XRC_TGT)
			srnic_qp_recv_cqe(qp, srq, &cqe, false);
		if (srq)
			srnic_srq_put(srq);
		done++;
	} else {
		spin_unlock(&qp->rq_lock);
	}

	/* Rendezvous matched from the wire, whose data had not come. */
	if (READ_ONCE(qp->w.rndv_tail) != qp->w.rndv_head)
		srnic_tm_rndv_flush(qp);
	if (qp->ibqp.srq && !qp->last_wqe_sent) {
		/* Nothing of the SRQ's is ours to flush; say we are done. */
		qp->last_wqe_sent = true;
		srnic_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	}
	if (qp->ibqp.srq || !qp->cap.max_recv_wr)
		return done;
	spin_lock(&qp->rq_lock);
	prod = READ_ONCE(db->rq_producer);
	n = 1U << qp->rq.log_entries;
	mask = n - 1;
	if (prod - qp->rq_cons > n)
		prod = qp->rq_cons + n;
	cqe.opcode = IB_WC_RECV;
	while (qp->rq_cons != prod) {
		const struct srnic_recv_wqe_hdr *hdr = qp->rq.ring.kva +
			((qp->rq_cons & mask) << qp->rq.log_stride);

		cqe.wr_id = READ_ONCE(hdr->wr_id);
		qp->rq_cons++;
		smp_store_release(&db->rq_consumer, qp->rq_cons);
		srnic_qp_recv_cqe(qp, NULL, &cqe, false);
		done++;
	}
	spin_unlock(&qp->rq_lock);
	return done;
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

/*
 * srnic_comp_answer() but for the last piece acknowledged: 1 when the next
 * piece goes next, -EAGAIN when this piece goes again at qp->rnr_until (an
 * RNR NAK, or no answer within the transport timer), 0 when the WQE is
 * done, with its status in *@status.  The retry policy lives here alone.
 */
int srnic_comp_retry(struct srnic_qp *qp, const struct srnic_msg *m,
		     const struct srnic_reply *rep, enum ib_wc_status *status)
{
	enum srnic_resp r = rep->r;

	*status = IB_WC_SUCCESS;
	if (r == SRNIC_RESP_OK) {
		if (srnic_msg_last(m))
			return 0;
		/* An acknowledged piece is progress: retries count anew. */
		qp->rnr_left = qp->attr.rnr_retry;
		qp->retry_left = qp->attr.retry_cnt;
		return 1;
	}
	if (qp->ibqp.qp_type == IB_QPT_UC)
		return 0;	/* UC has no acknowledgements: lost */
	/* Part of the piece was received: progress, as an ACK would be. */
	if (rep->progress) {
		qp->rnr_left = qp->attr.rnr_retry;
		qp->retry_left = qp->attr.retry_cnt;
	}
	if (r == SRNIC_RESP_RNR && qp->rnr_left) {
		/* rnr_retry 7 means retry for ever. */
		if (qp->rnr_left != 7)
			qp->rnr_left--;
		srnic_retry_later(qp, true, qp->rnr_left, rep->rnr_usec);
		return -EAGAIN;
	}
	/*
	 * No answer (the destination does not receive, e.g. not yet in RTR):
	 * the request is sent again after the transport timer, 4.096 us <<
	 * timeout (0: never), retry_cnt times.
	 */
	if (r == SRNIC_RESP_DROP && qp->retry_left && qp->attr.timeout) {
		qp->retry_left--;
		srnic_retry_later(qp, false, qp->retry_left, rep->waited ? 0 :
				  (4096ULL << qp->attr.timeout) / NSEC_PER_USEC);
		return -EAGAIN;
	}
	*status = srnic_nak_status(r);
	if (r == SRNIC_RESP_RNR || r == SRNIC_RESP_DROP)
		srnic_count(to_sdev(qp->ibqp.device),
			    r == SRNIC_RESP_RNR ? SRNIC_PC_RNR_RETRY_EXCEEDED :
						  SRNIC_PC_RETRY_EXCEEDED);
	return 0;
}
