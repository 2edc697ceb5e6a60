// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The requester: walks the send queue of a QP.  Each WQE is copied out of
 * the user ring into the engine's scratch buffer before any field is read,
 * validated, its local SGEs resolved; local operations (bind, local
 * invalidate) are done here, every other message goes to the QP's
 * transport (srnic_transport.h) piece by piece, and the completer
 * (srnic_comp.c) turns each answer into the next piece, a retry or the
 * WQE's completion.  Nothing here looks at the destination QP.
 */
#include <linux/indirect_call_wrapper.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "srnic_loc.h"
#include "srnic_trace.h"
#include "srnic_transport.h"

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
		return !srnic_qpt_ud(type);
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
	case SRNIC_WR_ATOMIC_WRITE:
	case SRNIC_WR_FLUSH:
	case IB_UVERBS_WR_SEND_WITH_INV:	/* only RC and XRC have the IETH */
		return type == IB_QPT_RC || type == IB_QPT_XRC_INI;
	case IB_UVERBS_WR_BIND_MW:
	case IB_UVERBS_WR_LOCAL_INV:
		return type == IB_QPT_RC || type == IB_QPT_UC;
	default:
		return false;
	}
}

/*
 * Copies the send WQE at index @idx out of the user ring into eng->wqe:
 * only what it uses (a stride sized for inline data is mostly unused), the
 * header first, then as many data bytes as the copied control segment
 * announces.  Only the copy is read afterwards.  The usual sizes (a
 * connected QP's header, one SGE) are copied by inline moves rather than a
 * call.
 */
static __always_inline void srnic_wqe_fetch(struct srnic_engine *eng,
					    struct srnic_qp *qp,
					    u32 idx)
{
	u32 stride = 1U << qp->sq.log_stride;
	u32 hdr = srnic_qpt_send_hdr(qp->ibqp.qp_type);
	struct srnic_wqe_ctrl *ctrl = eng->wqe;
	const u8 *slot = qp->sq.ring.kva +
		((idx & ((1U << qp->sq.log_entries) - 1)) << qp->sq.log_stride);
	u64 len;

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
	trace_srnic_wqe(qp, idx, ctrl->opcode, ctrl->flags, ctrl->num_sge);
}

/* Whether the copied WQE's opcode and lengths fit @qp: all that sizes memory. */
static __always_inline bool srnic_wqe_ok(const struct srnic_qp *qp,
					 const struct srnic_wqe_ctrl *ctrl)
{
	u32 stride = 1U << qp->sq.log_stride;
	u32 hdr = srnic_qpt_send_hdr(qp->ibqp.qp_type);

	/* REG_MR names an MR by index: kernel consumers' rings only. */
	if (ctrl->opcode == SRNIC_WR_REG_MR)
		return qp->db.kernel && !ctrl->num_sge &&
		       !(ctrl->flags & SRNIC_WQE_INLINE);
	if (!srnic_opcode_ok(qp->ibqp.qp_type, ctrl->opcode))
		return false;
	if (ctrl->flags & SRNIC_WQE_INLINE)
		return ctrl->inline_len <= qp->cap.max_inline_data &&
		       hdr + ctrl->inline_len <= stride && !ctrl->num_sge;
	return ctrl->num_sge <= qp->cap.max_send_sge &&
	       hdr + ctrl->num_sge * sizeof(struct srnic_wqe_data) <= stride;
}

/* BIND_MW, LOCAL_INV and REG_MR: done at once, no peer involved. */
static enum ib_wc_status srnic_local_op(struct srnic_qp *qp,
					const struct srnic_wqe_ctrl *ctrl)
{
	if (ctrl->opcode == IB_UVERBS_WR_BIND_MW)
		return srnic_mw_bind(qp, ctrl, (const void *)(ctrl + 1)) ?
			       IB_WC_MW_BIND_ERR : IB_WC_SUCCESS;
	if (ctrl->opcode == SRNIC_WR_REG_MR)
		return srnic_fr_register(qp, (const void *)(ctrl + 1)) ?
			       IB_WC_MW_BIND_ERR : IB_WC_SUCCESS;
	return srnic_invalidate(qp, ctrl->imm_data, false) ?
		       IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
}

/* Local operations: the engine executes them without the transport. */
static inline bool srnic_opcode_local(u8 op)
{
	return op == IB_UVERBS_WR_BIND_MW || op == IB_UVERBS_WR_LOCAL_INV ||
	       op == SRNIC_WR_REG_MR;
}

/* Fills the UD part of @m from the WQE's address vector; @sgid holds our GID. */
static int srnic_ud_av(struct srnic_dev *sdev, struct srnic_qp *qp,
		       const struct srnic_wqe_ud *ud, struct srnic_msg *m,
		       u8 *sgid)
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
	m->dqpn = ud->remote_qpn & 0xffffff;
	/* A Q_Key with its high bit set stands for the QP's own (IB 10.2.5). */
	m->qkey = ud->remote_qkey & 0x80000000 ? READ_ONCE(qp->attr.qkey) :
						 ud->remote_qkey;
	return 0;
}

/* What every message of the WQE @ctrl says; its data, resolved in eng->local. */
static __always_inline void srnic_msg_init(struct srnic_dev *sdev,
					   struct srnic_engine *eng,
					   struct srnic_qp *qp,
					   const struct srnic_wqe_ctrl *ctrl,
					   struct srnic_msg *m)
{
	m->opcode = ctrl->opcode;
	m->len = eng->local.total;
	m->plen = m->len;
	m->payload = &eng->local;
	m->solicited = ctrl->flags & SRNIC_WQE_SOLICITED;
	m->has_imm = ctrl->opcode == IB_UVERBS_WR_SEND_WITH_IMM ||
		     ctrl->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM;
	m->has_inv = ctrl->opcode == IB_UVERBS_WR_SEND_WITH_INV;
	m->imm = ctrl->imm_data;
	m->src_qpn = qp->qpn;
	m->src_dev = sdev->id;
	m->sgid = qp->sgid;
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
 * Counts a request @qp sent (to QP @dqpn) and the answer @r it got.  Bytes
 * are counted by piece, a message with its first piece.  The responder
 * counts its own side (srnic_resp_account).
 */
static void srnic_req_account(struct srnic_qp *qp, u32 dqpn,
			      const struct srnic_msg *m, enum srnic_resp r)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);

	trace_srnic_msg(qp, dqpn, m->opcode, m->plen, r);
	srnic_count_n(sdev, SRNIC_PC_TX_BYTES, m->plen);
	srnic_qp_count(qp, SRNIC_QC_TX_BYTES, m->plen);
	if (!m->off) {
		srnic_count(sdev, SRNIC_PC_TX_MSGS);
		srnic_qp_count(qp, SRNIC_QC_TX_MSGS, 1);
	}
	if (r == SRNIC_RESP_RNR) {
		srnic_count(sdev, SRNIC_PC_RNR_NAKS_RCVD);
		srnic_qp_count(qp, SRNIC_QC_RNR_NAKS_RCVD, 1);
	} else if (r == SRNIC_RESP_NAK_INV || r == SRNIC_RESP_NAK_ACCESS ||
		   r == SRNIC_RESP_NAK_OP) {
		srnic_count(sdev, SRNIC_PC_NAKS_RCVD);
		srnic_qp_count(qp, SRNIC_QC_NAKS_RCVD, 1);
	}
}

/* A FLUSH's segment into @m; one no responder could carry out fails the WQE. */
static enum ib_wc_status srnic_msg_flush(const struct srnic_wqe_flush *f,
					 struct srnic_msg *m)
{
	if (!srnic_flush_valid(f->type, f->level))
		return IB_WC_LOC_QP_OP_ERR;
	m->flush_len = f->length;
	m->flush_type = f->type;
	m->flush_level = f->level;
	return IB_WC_SUCCESS;
}

/*
 * The remote part of @m, from the WQE @ctrl: the XRC SRQ, the remote
 * address, the atomic's operands or the FLUSH's.  A WQE status when the
 * WQE cannot go.
 */
static enum ib_wc_status srnic_msg_remote(struct srnic_engine *eng,
					  const struct srnic_wqe_ctrl *ctrl,
					  struct srnic_msg *m)
{
	const struct srnic_wqe_raddr *raddr = (const void *)(ctrl + 1);
	const struct srnic_wqe_atomic *atomic = (const void *)(raddr + 1);
	u8 op = ctrl->opcode;

	m->xrc_srqn = ctrl->xrc_srqn;
	m->fence = ctrl->flags & SRNIC_WQE_FENCE;
	if (op == IB_UVERBS_WR_RDMA_WRITE || op == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM ||
	    op == IB_UVERBS_WR_RDMA_READ || srnic_opcode_one_packet(op)) {
		m->rkey = raddr->rkey;
		m->raddr = raddr->remote_addr;
	}
	if (op == SRNIC_WR_FLUSH)
		return srnic_msg_flush((const void *)(raddr + 1), m);
	if (srnic_opcode_is_atomic(op)) {
		m->compare_add = atomic->compare_add;
		m->swap = atomic->swap;
	}
	/* The original value of a CMP_AND_SWP or FETCH_AND_ADD: 8 bytes. */
	if (srnic_opcode_is_atomic(op) && op != SRNIC_WR_ATOMIC_WRITE &&
	    eng->local.total != 8)
		return IB_WC_LOC_LEN_ERR;
	return IB_WC_SUCCESS;
}

/* The connected part of @m: its piece, then its remote part. */
static enum ib_wc_status srnic_msg_connected(struct srnic_engine *eng,
					     struct srnic_qp *qp,
					     const struct srnic_wqe_ctrl *ctrl,
					     struct srnic_msg *m)
{
	if (srnic_msg_piece(qp, m))
		return IB_WC_LOC_QP_OP_ERR;
	return srnic_msg_remote(eng, ctrl, m);
}

/* READ and the atomics but ATOMIC WRITE: the local list is written into. */
static bool srnic_opcode_into(u8 op)
{
	return op == IB_UVERBS_WR_RDMA_READ ||
	       op == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
}

/* An answer's payload into the WQE's own buffers: READ data, an atomic's value. */
static void srnic_req_take_answer(struct srnic_engine *eng,
				  const struct srnic_msg *m,
				  const struct srnic_reply *rep)
{
	if (m->opcode == IB_UVERBS_WR_RDMA_READ && rep->data)
		srnic_sg_copy(&eng->local, m->off + rep->data_off, rep->data, 0,
			      m->plen - rep->data_off);
	else if (m->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
		 m->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD)
		srnic_sg_put_u64(&eng->local, rep->orig);
}

/*
 * The answer @rep to the piece @m (srnic_comp_answer): 0 when the WQE is
 * done, its status in *@status; else the next piece goes next (1), or
 * this one again later, and the WQE stays: its list is released.  An
 * acknowledged piece's bytes count in *@bytes.
 */
static __always_inline int srnic_req_piece_done(struct srnic_engine *eng,
						struct srnic_qp *qp,
						const struct srnic_msg *m,
						const struct srnic_reply *rep,
						enum ib_wc_status *status,
						u64 *bytes)
{
	int err;

	if (rep->r == SRNIC_RESP_OK)
		*bytes += m->plen;
	err = srnic_comp_answer(qp, m, rep, status);
	if (err) {
		if (err > 0)
			qp->msg_off += m->plen;
		srnic_sg_release(&eng->local);
	}
	return err;
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

/*
 * What may go ahead of an answer, on a transport with a window: every
 * message but local operations.  (Whether a READ or atomic may go is the
 * transport's to say: max_rd_atomic, FENCE.)
 */
static bool srnic_opcode_ahead(u8 op)
{
	return srnic_opcode_pieces(op) || srnic_opcode_one_packet(op);
}

/*
 * The local side of the copied WQE @ctrl into eng->local: its inline bytes,
 * or its list resolved, ODP pages checked only in the piece at @off of a
 * message in pieces, with local write access where an answer lands (READ
 * data, an atomic's value).  0; -EINVAL for a WQE its opcode does not take
 * in that shape (inline bytes where an answer is to land, any data with
 * ATOMIC WRITE or FLUSH, which carry theirs in their segment); -EMSGSIZE;
 * -EAGAIN for an ODP page (eng->local.fault); -EACCES for a key.
 */
static __always_inline int srnic_wqe_local(struct srnic_dev *sdev,
					   struct srnic_engine *eng,
					   struct srnic_qp *qp,
					   const struct srnic_wqe_ctrl *ctrl,
					   u64 off)
{
	u32 hdr = srnic_qpt_send_hdr(qp->ibqp.qp_type);
	bool into = srnic_opcode_into(ctrl->opcode);
	bool pieces = srnic_opcode_pieces(ctrl->opcode);

	if (srnic_opcode_remote_only(ctrl->opcode) &&
	    (ctrl->num_sge || (ctrl->flags & SRNIC_WQE_INLINE)))
		return -EINVAL;
	if (ctrl->flags & SRNIC_WQE_INLINE) {
		if (into)
			return -EINVAL;
		srnic_sg_init(&eng->local, eng->wqe + hdr, ctrl->inline_len);
		return 0;
	}
	return srnic_sg_resolve_window(sdev, to_spd(qp->ibqp.pd),
				       eng->wqe + hdr, ctrl->num_sge,
				       into ? IB_ACCESS_LOCAL_WRITE : 0,
				       &eng->local, &qp->lkey_cache,
				       pieces ? off : 0,
				       pieces ? SRNIC_PIECE : U64_MAX);
}

/* The completion status of srnic_wqe_local()'s error @err. */
static enum ib_wc_status srnic_wqe_local_status(int err)
{
	if (err == -EINVAL)
		return IB_WC_LOC_QP_OP_ERR;
	return err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR;
}

/*
 * The piece at @off of the WQE at @idx into @m, fetched, checked and
 * resolved as srnic_send_one() does.  False when it cannot go ahead (an
 * opcode that waits for the head, a WQE that fails its checks, an ODP page
 * to fault in): it goes when it reaches the head, where its errors are its
 * completion's.  eng->local is the caller's to release.
 */
static bool srnic_piece_ahead(struct srnic_dev *sdev, struct srnic_engine *eng,
			      struct srnic_qp *qp, u32 idx, u64 off,
			      struct srnic_msg *m)
{
	const struct srnic_wqe_ctrl *ctrl = eng->wqe;
	int err;

	srnic_wqe_fetch(eng, qp, idx);
	if (!srnic_wqe_ok(qp, ctrl) || !srnic_opcode_ahead(ctrl->opcode))
		return false;
	err = srnic_wqe_local(sdev, eng, qp, ctrl, off);
	/* Its page is faulted in when it is the head; nothing is held. */
	if (err == -EAGAIN)
		srnic_sg_drop_fault(&eng->local);
	if (err)
		return false;
	srnic_msg_init(sdev, eng, qp, ctrl, m);
	if (off && off >= m->len)
		return false;
	m->off = off;
	m->plen = srnic_opcode_pieces(ctrl->opcode) ?
		  min_t(u64, m->len - off, SRNIC_PIECE) : m->len;
	return srnic_msg_remote(eng, ctrl, m) == IB_WC_SUCCESS;
}

/*
 * @r, from resolving a READ response's destination [@off, @off + @len)
 * into @sg: 0 if the bytes can go there now, else -EAGAIN with nothing
 * held.
 */
static int srnic_req_dest_resolved(struct srnic_sg *sg, u64 off, u32 len,
				   int r)
{
	if (r == -EAGAIN) {
		/* An ODP page: the answer faults it in, in process context. */
		srnic_sg_drop_fault(sg);
	}
	if (r)
		return -EAGAIN;
	if (off > sg->total || len > sg->total - off) {
		srnic_sg_release(sg);
		return -EAGAIN;
	}
	return 0;
}

/*
 * Bytes [@off, @off + @len) of the READ at @idx of @qp's send queue, for
 * its responses as they arrive (a transport that places them directly):
 * the WQE fetched and checked again, as the ring is the user's, and its
 * list resolved with local write access into @sg, nothing held past the
 * caller's copy.  -EAGAIN when they cannot be placed now (a WQE rewritten,
 * a key gone, an ODP page not there): the caller keeps them for the
 * answer, where such errors are the completion's.  Uses eng->wqe; under
 * srnic_engine_srcu, in atomic context.
 */
int srnic_req_read_dest(struct srnic_engine *eng, struct srnic_qp *qp,
			u32 idx, u64 off, u32 len, struct srnic_sg *sg)
{
	const struct srnic_wqe_ctrl *ctrl = eng->wqe;
	u32 hdr = srnic_qpt_send_hdr(qp->ibqp.qp_type);

	srnic_wqe_fetch(eng, qp, idx);
	if (!srnic_wqe_ok(qp, ctrl) || ctrl->opcode != IB_UVERBS_WR_RDMA_READ ||
	    (ctrl->flags & SRNIC_WQE_INLINE))
		return -EAGAIN;
	return srnic_req_dest_resolved(sg, off, len,
		srnic_sg_resolve_window(to_sdev(qp->ibqp.device),
					to_spd(qp->ibqp.pd), eng->wqe + hdr,
					ctrl->num_sge, IB_ACCESS_LOCAL_WRITE,
					sg, NULL, off, len));
}

/*
 * Bytes [@off, @off + @len) of the READ of the rendezvous at the head of
 * @qp's ring, in its tag's buffer, as srnic_req_read_dest() finds a WQE's.
 */
int srnic_req_rndv_dest(struct srnic_qp *qp, u64 off, u32 len,
			struct srnic_sg *sg)
{
	struct srnic_rndv *rv = srnic_tm_rndv_head(qp);

	if (!rv)
		return -EAGAIN;
	return srnic_req_dest_resolved(sg, off, len,
				       srnic_tm_rndv_dest(qp, rv, off, len, sg));
}

/*
 * While the piece at the head of @qp's send queue waits for its answer,
 * the pieces after it go, as far as the transport's window and @budget
 * bytes allow (added to *@bytes).
 */
static void srnic_send_ahead(struct srnic_dev *sdev, struct srnic_engine *eng,
			     struct srnic_qp *qp, u64 *bytes, u64 budget)
{
	const struct srnic_transport *x = qp->xport;
	unsigned long held = jiffies;
	struct srnic_msg m;
	u64 off, sent = 0;
	u32 prod, idx;
	bool went;

	/* The loopback has no window: not even the doorbell's line is read. */
	if (!x->ahead_pos || READ_ONCE(qp->state) != IB_QPS_RTS)
		return;
	/* A rendezvous waits for the window to empty: nothing more goes. */
	if (READ_ONCE(qp->w.rndv_tail) != qp->w.rndv_head)
		return;
	prod = READ_ONCE(qp->dbr.kva->value);
	if (prod - qp->sq_cons > (1U << qp->sq.log_entries))
		return;
	/* The WQEs are read after the doorbell that announced them. */
	smp_rmb();
	while (sent < budget && x->ahead_pos(qp, &idx, &off) &&
	       idx - qp->sq_cons < prod - qp->sq_cons) {
		memset(&m, 0, sizeof(m));
		went = srnic_piece_ahead(sdev, eng, qp, idx, off, &m) &&
		       x->ahead(eng, qp, idx, &m);
		srnic_sg_release(&eng->local);
		if (!went)
			break;
		sent += m.plen;
		/* A window of packets is seconds where each costs milliseconds. */
		srnic_offer_cpu(&held);
	}
	*bytes += sent;
}

/*
 * The checks of the copied WQE @ctrl at the head that need nothing
 * resolved: its status.
 */
static enum ib_wc_status srnic_send_check(const struct srnic_qp *qp,
					  const struct srnic_wqe_ctrl *ctrl)
{
	if (!srnic_wqe_ok(qp, ctrl))
		return IB_WC_LOC_QP_OP_ERR;
	/* Rewritten while its pieces go (into a local operation, say). */
	if (qp->msg_off && ctrl->opcode != qp->msg_opcode)
		return IB_WC_LOC_QP_OP_ERR;
	return IB_WC_SUCCESS;
}

/*
 * Where message @m goes.  A raw packet leaves here, a datagram above the
 * path MTU is dropped, and for either the WQE is done (false, *@status
 * its completion's); a datagram's address is its WQE's, a connected
 * message's its QP's, and it goes to the transport (true) unless its WQE
 * fails (false, *@status).  @sgid holds a datagram's source GID.
 */
static __always_inline bool srnic_send_route(struct srnic_dev *sdev,
					     struct srnic_engine *eng,
					     struct srnic_qp *qp,
					     const struct srnic_wqe_ctrl *ctrl,
					     struct srnic_msg *m, u8 *sgid,
					     enum ib_wc_status *status)
{
	enum ib_qp_type type = qp->ibqp.qp_type;

	if (type == IB_QPT_RAW_PACKET) {
		*status = srnic_raw_send(sdev, eng, &eng->local);
		m->len = eng->local.total;
		return false;
	}
	if (srnic_qpt_ud(type)) {
		u32 mtu = ib_mtu_enum_to_int(iboe_get_mtu(READ_ONCE(sdev->ndev->mtu)));

		/* Larger than the path MTU: not sent, and no error (C10-93.1.1). */
		if (m->len > mtu)
			return false;
		if (srnic_ud_av(sdev, qp, eng->wqe + sizeof(*ctrl), m, sgid))
			*status = IB_WC_LOC_QP_OP_ERR;
	} else {
		*status = srnic_msg_connected(eng, qp, ctrl, m);
	}
	return *status == IB_WC_SUCCESS;
}

/*
 * Message @m to @qp's transport, and what its answer means for the WQE:
 * srnic_send_one()'s returns, *@status the WQE's when it is done.
 */
static __always_inline int srnic_send_exchange(struct srnic_dev *sdev,
					       struct srnic_engine *eng,
					       struct srnic_qp *qp,
					       struct srnic_msg *m,
					       enum ib_wc_status *status,
					       u64 *bytes)
{
	bool ud = srnic_qpt_ud(qp->ibqp.qp_type);
	struct srnic_reply rep = {};

	/* Direct for the loopback: a retpoline per message shows. */
	INDIRECT_CALL_1(qp->xport->request, srnic_loop_request, eng, qp, m,
			&rep);
	if (rep.r == SRNIC_RESP_PENDING) {
		/* Gone; its answer wakes the QP, or its timer resends it. */
		srnic_sg_release(&eng->local);
		qp->rnr_until = rep.until;
		qp->rnr_wait = true;
		srnic_send_ahead(sdev, eng, qp, bytes, SRNIC_VISIT_BYTES);
		return -EAGAIN;
	}
	/* A datagram waiting for the receiver's page has not gone yet. */
	if (!ud || rep.r != SRNIC_RESP_FAULT)
		srnic_req_account(qp, ud ? m->dqpn : qp->attr.dest_qp_num, m,
				  rep.r);
	if (rep.r == SRNIC_RESP_FAULT) {
		/* The responder's page: the requester waits, as for a NAK. */
		srnic_sg_release(&eng->local);
		return -EINPROGRESS;
	}
	if (rep.r == SRNIC_RESP_OK)
		srnic_req_take_answer(eng, m, &rep);
	if (rep.data)
		INDIRECT_CALL_1(qp->xport->reply_done, srnic_loop_reply_done,
				eng, &rep);
	/* UD is unacknowledged: whatever became of the datagram, it went. */
	if (ud)
		return 0;
	return srnic_req_piece_done(eng, qp, m, &rep, status, bytes);
}

/*
 * The WQE at the head is done with @status: its slot is free, its
 * completion out, its references gone; an error moves the QP to error.
 */
static __always_inline void srnic_send_retire(struct srnic_engine *eng,
					      struct srnic_qp *qp,
					      const struct srnic_wqe_ctrl *ctrl,
					      const struct srnic_msg *m,
					      enum ib_wc_status status)
{
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
			    status == IB_WC_SUCCESS ? (u32)m->len : 0);
	/*
	 * The WQE's references go once its completion is out, not before:
	 * the poller waits for nothing it does not need.  Whoever destroys
	 * what they name on seeing the completion waits for them.
	 */
	srnic_sg_release(&eng->local);
	if (status != IB_WC_SUCCESS)
		srnic_qp_set_error(qp);
	else if (m->tm_fin)
		srnic_tm_fin(eng, qp, m->tm_fin_tag);
	eng->wqes++;
}

/*
 * Executes the WQE at qp->sq_cons, or its next piece: fetched and checked
 * (srnic_send_check), a local operation done at once, else its local side
 * resolved (srnic_wqe_local), routed (srnic_send_route) and handed to the
 * transport (srnic_send_exchange); once done, retired.  Returns 0 when the
 * WQE is finished (whatever its status), 1 when a piece went and more
 * follow, -EAGAIN when the piece waits to be sent again at qp->rnr_until
 * (RNR, no answer, an injected delay), -EINPROGRESS when it waits for an
 * ODP page fault (qp->fault_wait).  Adds the bytes that went to *@bytes.
 * Runs inside srnic_engine_srcu: ODP pages it found mapped stay so.
 */
static int srnic_send_one(struct srnic_dev *sdev, struct srnic_engine *eng,
			  struct srnic_qp *qp, u64 *bytes)
{
	struct srnic_wqe_ctrl *ctrl = eng->wqe;
	enum ib_wc_status status;
	struct srnic_msg m = {};
	u8 sgid[16];
	int err;

	srnic_wqe_fetch(eng, qp, qp->sq_cons);
	if (!qp->in_progress) {
		qp->in_progress = true;
		qp->rnr_left = qp->attr.rnr_retry;
		qp->retry_left = qp->attr.retry_cnt;
	}
	status = srnic_send_check(qp, ctrl);
	if (status != IB_WC_SUCCESS)
		goto retire;
	if (srnic_opcode_local(ctrl->opcode)) {
		status = srnic_local_op(qp, ctrl);
		goto retire;
	}
	err = srnic_wqe_local(sdev, eng, qp, ctrl, qp->msg_off);
	if (err == -EAGAIN && srnic_qp_fault(qp, &eng->local.fault))
		return -EINPROGRESS;
	if (err) {
		status = srnic_wqe_local_status(err);
		goto retire;
	}
	if (qp->ibqp.qp_type != IB_QPT_RAW_PACKET &&
	    srnic_fault_delay(sdev, qp)) {
		srnic_sg_release(&eng->local);
		return -EAGAIN;
	}
	srnic_msg_init(sdev, eng, qp, ctrl, &m);
	if (srnic_send_route(sdev, eng, qp, ctrl, &m, sgid, &status)) {
		err = srnic_send_exchange(sdev, eng, qp, &m, &status, bytes);
		if (err)
			return err;
	}
retire:
	srnic_send_retire(eng, qp, ctrl, &m, status);
	return 0;
}

/*
 * Before a QP's error flushes its send queue, the WQEs whose answers came
 * (an ACK, READ data, an atomic's value) complete as they went, in order:
 * the peer has them, and a NIC completes a WQE when its answer arrives.
 * The answer and the error may reach the engine together.
 */
static int srnic_complete_answered(struct srnic_dev *sdev,
				   struct srnic_engine *eng,
				   struct srnic_qp *qp)
{
	bool (*answered)(struct srnic_qp *qp) = qp->xport->answered;
	u64 bytes = 0;
	int done = 0, ret;

	/* Each turn takes a piece's answer, so the window bounds the loop. */
	while (answered && srnic_qp_has_sq(qp) && answered(qp)) {
		/* The WQE is read after the answer that named it. */
		smp_rmb();
		ret = srnic_send_one(sdev, eng, qp, &bytes);
		if (ret < 0)
			break;
		done += !ret;
	}
	return done;
}

/*
 * Whether the requester's next work is the rendezvous at the head of the
 * QP's own ring (struct srnic_rndv) rather than the WQE at sq_cons: once
 * it has begun, or between WQEs with nothing in flight, so that its
 * requests take the next PSNs.
 */
static bool srnic_rndv_turn(struct srnic_qp *qp)
{
	if (likely(READ_ONCE(qp->w.rndv_tail) == qp->w.rndv_head))
		return false;
	return qp->w.rndv_on ||
	       (!qp->in_progress && srnic_net_req_quiet(qp));
}

/* The head rendezvous's next request: its READ's piece at qp->msg_off, or its FIN. */
static int srnic_rndv_msg(struct srnic_engine *eng, struct srnic_qp *qp,
			  struct srnic_rndv *rv, struct srnic_msg *m)
{
	int err;

	m->rndv = true;
	m->src_qpn = qp->qpn;
	m->payload = &eng->local;
	if (rv->read_done) {
		srnic_sg_init(&eng->local, rv->fin, sizeof(rv->fin));
		m->opcode = IB_UVERBS_WR_SEND;
		m->len = sizeof(rv->fin);
		m->plen = m->len;
		return 0;
	}
	err = srnic_tm_rndv_dest(qp, rv, qp->msg_off, SRNIC_PIECE,
				 &eng->local);
	if (err)
		return err;
	m->opcode = IB_UVERBS_WR_RDMA_READ;
	m->raddr = rv->raddr;
	m->rkey = rv->rkey;
	m->len = rv->len;
	m->off = qp->msg_off;
	m->plen = min_t(u64, m->len - m->off, SRNIC_PIECE);
	return 0;
}

/*
 * The rendezvous at the head of @qp's ring, as srnic_send_one() runs a
 * WQE, with its returns: its READ a piece at a time into the tag's buffer,
 * then its FIN.  The READ's outcome is the tag's second completion; an
 * error moves the QP to error, as a READ's does.  The FIN is a SEND: the
 * sender's receive queue takes it, or answers RNR, retried a bounded number
 * of times.
 */
static int srnic_send_rndv(struct srnic_engine *eng, struct srnic_qp *qp,
			   u64 *bytes)
{
	struct srnic_rndv *rv = srnic_tm_rndv_head(qp);
	enum ib_wc_status status = IB_WC_SUCCESS;
	struct srnic_reply rep = {};
	struct srnic_msg m = {};
	int err;

	if (!qp->in_progress) {
		qp->in_progress = true;
		qp->w.rndv_on = true;
		qp->rnr_left = qp->attr.rnr_retry;
		/* A FIN the sender never takes must not hold the queue for ever. */
		if (rv->read_done)
			qp->rnr_left = min_t(u8, qp->rnr_left, 6);
		qp->retry_left = qp->attr.retry_cnt;
	}
	err = srnic_rndv_msg(eng, qp, rv, &m);
	if (err == -EAGAIN && srnic_qp_fault(qp, &eng->local.fault))
		return -EINPROGRESS;
	if (err) {
		status = IB_WC_LOC_PROT_ERR;
		goto complete;
	}
	qp->xport->request(eng, qp, &m, &rep);
	if (rep.r == SRNIC_RESP_PENDING) {
		srnic_sg_release(&eng->local);
		qp->rnr_until = rep.until;
		qp->rnr_wait = true;
		return -EAGAIN;
	}
	srnic_req_account(qp, qp->attr.dest_qp_num, &m, rep.r);
	if (rep.r == SRNIC_RESP_OK)
		srnic_req_take_answer(eng, &m, &rep);
	if (rep.data)
		qp->xport->reply_done(eng, &rep);
	err = srnic_req_piece_done(eng, qp, &m, &rep, &status, bytes);
	if (err)
		return err;
complete:
	srnic_sg_release(&eng->local);
	qp->in_progress = false;
	qp->msg_off = 0;
	qp->fault_err = 0;
	/*
	 * A FIN the sender had no receive WQE for is lost, as on one host,
	 * and its PSN is the next request's; other failures have no
	 * completion to report them.
	 */
	if (rv->read_done && status == IB_WC_RNR_RETRY_EXC_ERR) {
		srnic_net_req_unsend(qp);
		status = IB_WC_SUCCESS;
	}
	if (rv->read_done && status != IB_WC_SUCCESS)
		srnic_qp_event(qp, IB_EVENT_QP_FATAL);
	srnic_tm_rndv_done(qp, rv, status);
	if (status != IB_WC_SUCCESS)
		srnic_qp_set_error(qp);
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
	/*
	 * Waiting for an ODP page fault, in any state: srnic_fault_work()
	 * kicks us.  In error too, an answered WQE whose pages are being
	 * faulted in completes once they are, before the flush.
	 */
	if (smp_load_acquire(&qp->fault_wait))
		goto out;
	state = READ_ONCE(qp->state);
	if (state == IB_QPS_ERR) {
		done = srnic_complete_answered(sdev, eng, qp);
		if (qp->fault_wait)
			goto out;
		if (qp->xport->forget)
			qp->xport->forget(qp);
		done += srnic_qp_flush(qp);
		goto out;
	}
	/* XRC target QPs have no send queue. */
	if (state != IB_QPS_RTS || !srnic_qp_has_sq(qp))
		goto out;
	if (qp->rnr_wait) {
		/* A wire answer ends the wait for it early. */
		if (time_before(jiffies, qp->rnr_until) &&
		    !READ_ONCE(qp->w.answered)) {
			srnic_timer_min(timer, qp->rnr_until);
			/* What was posted meanwhile goes ahead of the answer. */
			srnic_send_ahead(sdev, eng, qp, &bytes, max_bytes);
			goto out;
		}
		qp->rnr_wait = false;
	}
	while (done < budget) {
		if (srnic_rndv_turn(qp)) {
			ret = srnic_send_rndv(eng, qp, &bytes);
		} else {
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
		}
		if (ret == -EINPROGRESS)
			break;
		if (ret == -EAGAIN) {
			srnic_timer_min(timer, qp->rnr_until);
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
	INDIRECT_CALL_1(qp->xport->batch_end, srnic_loop_batch_end, eng);
out:
	mutex_unlock(&qp->lock);
	return done;
}
