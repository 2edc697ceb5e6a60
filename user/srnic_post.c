// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic fast path: posting work requests.  No system call: WQEs go into
 * the rings in this process's memory, the producer counter into the
 * doorbell record, and the doorbell value into the QP's UAR slot; only an
 * engine that announced NEED_WAKEUP gets a wake-up call.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "srnic.h"

/* Orders the WQE stores before the counter that publishes them. */
#define srnic_publish(ptr, val) \
	atomic_store_explicit((_Atomic uint32_t *)(ptr), (val), memory_order_release)
#define srnic_load_acquire(ptr) \
	atomic_load_explicit((_Atomic uint32_t *)(ptr), memory_order_acquire)

bool srnic_send_opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	/* A raw packet QP sends frames, nothing else. */
	if (type == IBV_QPT_RAW_PACKET)
		return op == IBV_WR_SEND;
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type != IBV_QPT_UD;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_WRITE:
	case IBV_WR_SEND_WITH_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	default:
		return false;
	}
}

/*
 * The doorbell system call: a zero-WR post_send wakes the engine (or runs
 * the QP's work, see kernel/srnic_engine.c).  It is written straight to
 * the uverbs command file: ibv_cmd_post_send() would send it through the
 * ioctl form of write commands (UVERBS_METHOD_INVOKE_WRITE), whose extra
 * parsing and lookups cost more than the work the call then does.  Should
 * the write form be refused, the library's form is used.
 */
static void srnic_wake(struct ibv_qp *ibqp)
{
	struct ib_uverbs_post_send_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req = {
		.hdr = { .command = IB_USER_VERBS_CMD_POST_SEND,
			 .in_words = sizeof(req) / 4,
			 .out_words = sizeof(resp) / 4 },
		.cmd = { .response = (uintptr_t)&resp,
			 .qp_handle = ibqp->handle,
			 .wqe_size = sizeof(struct ib_uverbs_send_wr) },
	};
	struct ibv_send_wr *bad;

	if (write(ibqp->context->cmd_fd, &req, sizeof(req)) != sizeof(req))
		ibv_cmd_post_send(ibqp, NULL, &bad);
}

/* ---- send WQE segments, shared by ibv_post_send and ibv_wr_* ---- */

static inline uint32_t srnic_qp_send_hdr(const struct srnic_qp *qp)
{
	return srnic_send_hdr(qp->vqp.qp.qp_type);
}

/*
 * The next free send slot, or NULL when the ring is full (by the consumer
 * counter the engine last published).  The counter is read only when the
 * value last read says the ring is full: the engine writes it after every
 * WQE, so reading it on every post would move its cache line from the
 * engine's CPU to the poster's each time.  Called with sq_lock held.
 */
struct srnic_wqe_ctrl *srnic_sq_next(struct srnic_qp *qp)
{
	uint32_t n = 1u << qp->sq.log_entries;

	if (qp->sq_head - qp->sq_tail >= n) {
		qp->sq_tail = srnic_load_acquire(&qp->db->sq_consumer);
		if (qp->sq_head - qp->sq_tail >= n)
			return NULL;
	}
	return (struct srnic_wqe_ctrl *)((uint8_t *)qp->sq.ring +
		((size_t)(qp->sq_head & (n - 1)) << qp->sq.log_stride));
}

/*
 * Starts a WQE in @ctrl: a zeroed header and the control segment.  EINVAL
 * for an opcode the QP's type cannot post.
 */
int srnic_wqe_begin(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
		    uint64_t wr_id, enum ibv_wr_opcode op,
		    unsigned int send_flags, uint32_t imm)
{
	if (!srnic_send_opcode_ok(qp->vqp.qp.qp_type, op))
		return EINVAL;
	memset(ctrl, 0, srnic_qp_send_hdr(qp));
	ctrl->wr_id = wr_id;
	ctrl->opcode = op;
	if (send_flags & IBV_SEND_SIGNALED)
		ctrl->flags |= SRNIC_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		ctrl->flags |= SRNIC_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		ctrl->flags |= SRNIC_WQE_FENCE;
	/* Immediate data (network order), or the rkey to invalidate. */
	ctrl->imm_data = imm;
	return 0;
}

/* Remote address (RDMA and atomics), and the atomic operands. */
void srnic_wqe_set_raddr(struct srnic_wqe_ctrl *ctrl, uint64_t addr,
			 uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct srnic_wqe_raddr *ra = (struct srnic_wqe_raddr *)(ctrl + 1);
	struct srnic_wqe_atomic *at = (struct srnic_wqe_atomic *)(ra + 1);

	ra->remote_addr = addr;
	ra->rkey = rkey;
	at->compare_add = compare_add;
	at->swap = swap;
}

/*
 * ATOMIC WRITE through ibv_post_send: the 8 bytes its gather list names
 * (the process's own memory, read now as for inline data) travel in the
 * WQE; any other length is refused.
 */
int srnic_wqe_set_atomic_write(struct srnic_wqe_ctrl *ctrl,
			       const struct ibv_send_wr *wr)
{
	uint64_t val;
	size_t got = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > sizeof(val) - got)
			return EINVAL;
		memcpy((uint8_t *)&val + got,
		       (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		got += wr->sg_list[i].length;
	}
	if (got != sizeof(val))
		return EINVAL;
	srnic_wqe_set_raddr(ctrl, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey,
			    val, 0);
	return 0;
}

/*
 * A bind: type 2 windows through ibv_post_send() and ibv_wr_bind_mw(),
 * type 1 only through ibv_bind_mw() (@type1).  The engine checks everything
 * against the window itself; this only fills the segment.
 */
int srnic_wqe_set_bind(struct srnic_wqe_ctrl *ctrl, const struct ibv_mw *mw,
		       uint32_t new_rkey, const struct ibv_mw_bind_info *bi,
		       bool type1)
{
	struct srnic_wqe_bind *b = (struct srnic_wqe_bind *)(ctrl + 1);

	if (!mw || !bi || (mw->type == IBV_MW_TYPE_1) != type1)
		return EINVAL;
	if (bi->length && !bi->mr)
		return EINVAL;
	if (type1)
		ctrl->flags |= SRNIC_WQE_BIND_TYPE1;
	b->addr = bi->addr;
	b->length = bi->length;
	b->mw_rkey = mw->rkey;
	b->new_rkey = new_rkey;
	b->mr_lkey = bi->length ? bi->mr->lkey : 0;
	b->access = bi->mw_access_flags;
	return 0;
}

/* UD destination: the AH's address vector, remote QPN and Q_Key. */
int srnic_wqe_set_ud(struct srnic_wqe_ctrl *ctrl, const struct ibv_ah *ibah,
		     uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct srnic_wqe_ud *ud = (struct srnic_wqe_ud *)(ctrl + 1);
	const struct srnic_ah *ah = (const struct srnic_ah *)ibah;

	if (!ah)
		return EINVAL;
	ud->av = ah->av;
	ud->remote_qpn = remote_qpn;
	ud->remote_qkey = remote_qkey;
	return 0;
}

/* The gather (or, for READ and atomics, scatter) list. */
int srnic_wqe_set_sges(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
		       const struct ibv_sge *sg, size_t num_sge)
{
	struct srnic_wqe_data *d = (struct srnic_wqe_data *)
		((uint8_t *)ctrl + srnic_qp_send_hdr(qp));
	size_t i;

	if (num_sge > qp->max_send_sge)
		return EINVAL;
	for (i = 0; i < num_sge; i++) {
		d[i].length = sg[i].length;
		d[i].lkey = sg[i].lkey;
		d[i].addr = sg[i].addr;
	}
	ctrl->flags &= ~SRNIC_WQE_INLINE;
	ctrl->inline_len = 0;
	ctrl->num_sge = num_sge;
	return 0;
}

/* Starts inline data in place of a gather list (empty so far). */
void srnic_wqe_inline_begin(struct srnic_wqe_ctrl *ctrl)
{
	ctrl->flags |= SRNIC_WQE_INLINE;
	ctrl->inline_len = 0;
	ctrl->num_sge = 0;
}

/* Appends @len bytes of inline data; EINVAL beyond the QP's inline limit. */
int srnic_wqe_inline_add(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
			 const void *addr, size_t len)
{
	if (len > qp->max_inline_data - ctrl->inline_len)
		return EINVAL;
	memcpy((uint8_t *)ctrl + srnic_qp_send_hdr(qp) + ctrl->inline_len, addr,
	       len);
	ctrl->inline_len += len;
	return 0;
}

/* Sets @bit in @word; returns whether it was set already. */
static inline bool srnic_mark(__u64 *word, __u64 bit)
{
	return atomic_fetch_or_explicit((_Atomic __u64 *)word, bit,
					memory_order_seq_cst) & bit;
}

/*
 * Hands the WQEs up to qp->sq_head to the engine: the doorbell register,
 * a full barrier, then its marks from the bottom up (srnic-abi.h: a mark
 * already there is the engine's to take, with the ones above it, and a
 * rung bit the engine left set is a hot QP's, whose doorbell it reads
 * anyway), then (after a full barrier) one wake-up call if the QP's engine
 * announced NEED_WAKEUP.  Called with sq_lock held, once per batch.
 */
void srnic_sq_ring(struct srnic_qp *qp)
{
	struct srnic_marks *m = &qp->marks;

	/*
	 * Only the doorbell slot: the engine reads the producer counter
	 * there, and the record's sq_producer shares its cache line with the
	 * consumer counter the engine writes after every WQE.
	 */
	srnic_publish(&qp->doorbell->value, qp->sq_head);
	/* The doorbell before the look at its mark: the engine clears it, then reads. */
	atomic_thread_fence(memory_order_seq_cst);
	if (!(atomic_load_explicit((_Atomic __u64 *)m->rung, memory_order_relaxed) &
	      m->rung_bit)) {
		if (!srnic_mark(m->rung, m->rung_bit) &&
		    !srnic_mark(m->page, m->page_bit))
			srnic_mark(m->top, m->top_bit);
		/* Marks before the engine's flag: see srnic_engine.c. */
		atomic_thread_fence(memory_order_seq_cst);
	}
	if (qp->engine->flags & SRNIC_ENGINE_NEED_WAKEUP)
		srnic_wake(&qp->vqp.qp);
}

/* Writes one ibv_send_wr into @ctrl; returns an errno for what post time rejects. */
static int srnic_build_send(struct srnic_qp *qp, const struct ibv_send_wr *wr,
			    bool type1_bind, struct srnic_wqe_ctrl *ctrl)
{
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	int err, i;

	if (wr->num_sge < 0)
		return EINVAL;
	/* imm_data and invalidate_rkey share their bits. */
	err = srnic_wqe_begin(qp, ctrl, wr->wr_id, wr->opcode, wr->send_flags,
			      wr->imm_data);
	if (err)
		return err;

	/* XRC: the target's SRQ, in the control segment. */
	if (type == IBV_QPT_XRC_SEND)
		ctrl->xrc_srqn = wr->qp_type.xrc.remote_srqn;

	switch (wr->opcode) {
	case IBV_WR_BIND_MW:
		return srnic_wqe_set_bind(ctrl, wr->bind_mw.mw, wr->bind_mw.rkey,
					  &wr->bind_mw.bind_info, type1_bind);
	case IBV_WR_LOCAL_INV:
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		srnic_wqe_set_raddr(ctrl, wr->wr.atomic.remote_addr,
				    wr->wr.atomic.rkey, wr->wr.atomic.compare_add,
				    wr->wr.atomic.swap);
		break;
	case IBV_WR_ATOMIC_WRITE:
		return srnic_wqe_set_atomic_write(ctrl, wr);
	default:
		if (type == IBV_QPT_UD) {
			err = srnic_wqe_set_ud(ctrl, wr->wr.ud.ah,
					       wr->wr.ud.remote_qpn,
					       wr->wr.ud.remote_qkey);
			if (err)
				return err;
		} else if (type != IBV_QPT_RAW_PACKET) {
			srnic_wqe_set_raddr(ctrl, wr->wr.rdma.remote_addr,
					    wr->wr.rdma.rkey, 0, 0);
		}
	}

	if (!(wr->send_flags & IBV_SEND_INLINE))
		return srnic_wqe_set_sges(qp, ctrl, wr->sg_list, wr->num_sge);
	if ((uint32_t)wr->num_sge > qp->max_send_sge ||
	    srnic_op_lands_answer(wr->opcode))
		return EINVAL;
	srnic_wqe_inline_begin(ctrl);
	for (i = 0; i < wr->num_sge; i++) {
		err = srnic_wqe_inline_add(qp, ctrl,
					   (void *)(uintptr_t)wr->sg_list[i].addr,
					   wr->sg_list[i].length);
		if (err)
			return err;
	}
	return 0;
}

static int srnic_post_sends(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			    struct ibv_send_wr **bad_wr, bool type1_bind)
{
	struct srnic_qp *qp = (struct srnic_qp *)ibqp;
	struct srnic_wqe_ctrl *ctrl;
	uint32_t start;
	int err = 0;

	srnic_lock(&qp->sq_lock);
	/* The send queue works from RTS on (and in error, to be flushed). */
	if (ibqp->state < IBV_QPS_RTS || !qp->sq.ring) {
		err = EINVAL;
		*bad_wr = wr;
		goto out;
	}
	start = qp->sq_head;
	for (; wr; wr = wr->next) {
		ctrl = srnic_sq_next(qp);
		err = ctrl ? srnic_build_send(qp, wr, type1_bind, ctrl) : ENOMEM;
		if (err) {
			*bad_wr = wr;
			break;
		}
		qp->sq_head++;
	}
	if (qp->sq_head != start)
		srnic_sq_ring(qp);
out:
	srnic_unlock(&qp->sq_lock);
	return err;
}

int srnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	return srnic_post_sends(ibqp, wr, bad_wr, false);
}

/*
 * ibv_bind_mw() of a type 1 window: a BIND_MW request with the window's
 * next rkey, which the window carries from now on (as with other
 * providers, an error completion leaves the caller to restore it).
 */
int srnic_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	}, *bad;
	int err;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	err = srnic_post_sends(ibqp, &wr, &bad, true);
	if (err)
		return errno = err;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/* One receive WQE: header, then the scatter entries. */
static void srnic_build_recv(const struct ibv_recv_wr *wr, uint8_t *slot)
{
	struct srnic_recv_wqe_hdr *hdr = (struct srnic_recv_wqe_hdr *)slot;
	struct srnic_wqe_data *d = (struct srnic_wqe_data *)(hdr + 1);
	int i;

	hdr->wr_id = wr->wr_id;
	hdr->num_sge = wr->num_sge;
	hdr->reserved = 0;
	for (i = 0; i < wr->num_sge; i++) {
		d[i].length = wr->sg_list[i].length;
		d[i].lkey = wr->sg_list[i].lkey;
		d[i].addr = wr->sg_list[i].addr;
	}
}

int srnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct srnic_qp *qp = (struct srnic_qp *)ibqp;
	uint32_t n = 1u << qp->rq.log_entries, cons, start;
	int err = 0;

	srnic_lock(&qp->rq_lock);
	if (ibqp->srq || !qp->rq.ring || ibqp->state == IBV_QPS_RESET) {
		err = EINVAL;
		*bad_wr = wr;
		goto out;
	}
	start = qp->rq_head;
	cons = srnic_load_acquire(&qp->db->rq_consumer);
	for (; wr; wr = wr->next) {
		if (qp->rq_head - cons >= n) {
			err = ENOMEM;
			*bad_wr = wr;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_recv_sge) {
			err = EINVAL;
			*bad_wr = wr;
			break;
		}
		srnic_build_recv(wr, (uint8_t *)qp->rq.ring +
				 ((size_t)(qp->rq_head & (n - 1)) << qp->rq.log_stride));
		qp->rq_head++;
	}
	/*
	 * No doorbell: the engine reads the producer when a message arrives;
	 * but receives posted to a QP in error are the engine's to flush.
	 */
	if (qp->rq_head != start) {
		srnic_publish(&qp->db->rq_producer, qp->rq_head);
		if (srnic_load_acquire(&qp->db->error))
			srnic_wake(ibqp);
	}
out:
	srnic_unlock(&qp->rq_lock);
	return err;
}

/*
 * Posts receive WQEs to a ring of its own (SRQ or WQ): the caller holds its
 * lock.  No doorbell: the engine reads the producer when a message arrives.
 */
int srnic_post_ring_recv(struct srnic_wq *wq, uint32_t *head, uint32_t max_sge,
			 struct srnic_srq_db *db, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	uint32_t n = 1u << wq->log_entries, cons, start = *head;
	int err = 0;

	cons = srnic_load_acquire(&db->consumer);
	for (; wr; wr = wr->next) {
		if (*head - cons >= n) {
			err = ENOMEM;
			*bad_wr = wr;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			err = EINVAL;
			*bad_wr = wr;
			break;
		}
		srnic_build_recv(wr, (uint8_t *)wq->ring +
				 ((size_t)(*head & (n - 1)) << wq->log_stride));
		++*head;
	}
	if (*head != start)
		srnic_publish(&db->producer, *head);
	return err;
}

int srnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct srnic_srq *srq = (struct srnic_srq *)ibsrq;
	int err;

	srnic_lock(&srq->lock);
	err = srnic_post_ring_recv(&srq->wq, &srq->head, srq->max_sge, srq->db,
				   wr, bad_wr);
	srnic_unlock(&srq->lock);
	return err;
}
