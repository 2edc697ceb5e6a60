// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: the ibv_wr_* send API (ibv_qp_ex).  Each builder writes a WQE
 * into the next send slot with the segment helpers ibv_post_send uses
 * (srnic_post.c); the setters fill the WQE begun last.  Nothing reaches the
 * engine before ibv_wr_complete(), which rings the doorbell once for the
 * whole batch; an error anywhere makes ibv_wr_complete() return it and
 * drop the batch, as ibv_wr_abort() does.
 */
#include <errno.h>

#include "srnic.h"

static inline struct srnic_qp *to_sqpx(struct ibv_qp_ex *qpx)
{
	return (struct srnic_qp *)qpx;
}

/* IBV_QP_EX_WITH_<op> of IBV_WR_<op>: 1 << op, except ATOMIC_WRITE's. */
static uint64_t srnic_send_op_flag(enum ibv_wr_opcode op)
{
	if (op == IBV_WR_ATOMIC_WRITE)
		return IBV_QP_EX_WITH_ATOMIC_WRITE;
	return op <= IBV_WR_TSO ? 1ull << op : 0;
}

/* The ibv_qp_ex flags of the opcodes a QP of @type can post. */
uint64_t srnic_send_ops(enum ibv_qp_type type)
{
	uint64_t ops = 0;
	int op;

	for (op = IBV_WR_RDMA_WRITE; op <= IBV_WR_ATOMIC_WRITE; op++)
		if (srnic_send_opcode_ok(type, op))
			ops |= srnic_send_op_flag(op);
	return ops;
}

/* The first error of a batch is the one ibv_wr_complete() returns. */
static inline void srnic_wr_fail(struct srnic_qp *qp, int err)
{
	if (!qp->wr.err)
		qp->wr.err = err;
}

/* Closes the WQE begun last: a UD send must have had its address set. */
static void srnic_wr_close(struct srnic_qp *qp)
{
	if (qp->wr.cur && qp->vqp.qp.qp_type == IBV_QPT_UD && !qp->wr.ud_set)
		srnic_wr_fail(qp, EINVAL);
	qp->wr.cur = NULL;
}

/*
 * Begins a WQE of @op in the next send slot, with the wr_id and wr_flags
 * the caller set in the ibv_qp_ex; NULL once the batch has failed.
 */
static struct srnic_wqe_ctrl *srnic_wr_begin(struct ibv_qp_ex *qpx,
					     enum ibv_wr_opcode op, uint32_t imm)
{
	struct srnic_qp *qp = to_sqpx(qpx);
	struct srnic_wqe_ctrl *ctrl;

	srnic_wr_close(qp);
	if (!(qp->wr.ops & srnic_send_op_flag(op)))
		srnic_wr_fail(qp, EOPNOTSUPP);
	if (qp->wr.err)
		return NULL;
	ctrl = srnic_sq_next(qp);
	if (!ctrl) {
		srnic_wr_fail(qp, ENOMEM);
		return NULL;
	}
	/* Inline data comes from the inline setters only. */
	qp->wr.err = srnic_wqe_begin(qp, ctrl, qpx->wr_id, op,
				     qpx->wr_flags & ~IBV_SEND_INLINE, imm);
	if (qp->wr.err)
		return NULL;
	qp->sq_head++;
	qp->wr.cur = ctrl;
	qp->wr.ud_set = false;
	return ctrl;
}

static void srnic_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			  uint32_t rkey, uint64_t addr, uint32_t imm,
			  uint64_t compare_add, uint64_t swap)
{
	struct srnic_wqe_ctrl *ctrl = srnic_wr_begin(qpx, op, imm);

	if (ctrl)
		srnic_wqe_set_raddr(ctrl, addr, rkey, compare_add, swap);
}

static void srnic_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t addr, uint64_t compare,
				    uint64_t swap)
{
	srnic_wr_rdma(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, 0, compare,
		      swap);
}

static void srnic_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t addr, uint64_t add)
{
	srnic_wr_rdma(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, 0, add, 0);
}

static void srnic_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t addr)
{
	srnic_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, addr, 0, 0, 0);
}

static void srnic_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t addr)
{
	srnic_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, addr, 0, 0, 0);
}

static void srnic_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t addr, __be32 imm)
{
	srnic_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm, 0, 0);
}

static void srnic_wr_send(struct ibv_qp_ex *qpx)
{
	srnic_wr_begin(qpx, IBV_WR_SEND, 0);
}

static void srnic_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	srnic_wr_begin(qpx, IBV_WR_SEND_WITH_IMM, imm);
}

static void srnic_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	srnic_wr_begin(qpx, IBV_WR_SEND_WITH_INV, rkey);
}

static void srnic_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	srnic_wr_begin(qpx, IBV_WR_LOCAL_INV, rkey);
}

/* A type 2 window (type 1 windows are bound by ibv_bind_mw()). */
static void srnic_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			     uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct srnic_wqe_ctrl *ctrl = srnic_wr_begin(qpx, IBV_WR_BIND_MW, 0);

	if (ctrl)
		srnic_wr_fail(to_sqpx(qpx),
			      srnic_wqe_set_bind(ctrl, mw, rkey, bi, false));
}

/* What the device does not offer: the batch fails. */
static void srnic_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr,
			      uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	srnic_wr_begin(qpx, IBV_WR_TSO, 0);
}

/* ATOMIC WRITE: the 8 bytes at @atomic_wr travel in the WQE. */
static void srnic_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t addr, const void *atomic_wr)
{
	uint64_t val;

	memcpy(&val, atomic_wr, sizeof(val));
	srnic_wr_rdma(qpx, IBV_WR_ATOMIC_WRITE, rkey, addr, 0, val, 0);
}

/* XRC: the target's SRQ of the WQE begun last. */
static void srnic_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	struct srnic_qp *qp = to_sqpx(qpx);

	if (!qp->wr.cur || qp->vqp.qp.qp_type != IBV_QPT_XRC_SEND) {
		srnic_wr_fail(qp, EINVAL);
		return;
	}
	qp->wr.cur->xrc_srqn = srqn;
}

/*
 * The WQE a setter may fill: the one begun last, if the batch is still
 * good and the opcode carries data (@data) or is a UD send (!@data).
 */
static struct srnic_wqe_ctrl *srnic_wr_cur(struct srnic_qp *qp, bool data)
{
	struct srnic_wqe_ctrl *ctrl = qp->wr.cur;

	if (qp->wr.err)
		return NULL;
	if (!ctrl || (data ? ctrl->opcode == IBV_WR_BIND_MW ||
				     ctrl->opcode == IBV_WR_LOCAL_INV ||
				     ctrl->opcode == IBV_WR_ATOMIC_WRITE :
			     qp->vqp.qp.qp_type != IBV_QPT_UD)) {
		srnic_wr_fail(qp, EINVAL);
		return NULL;
	}
	return ctrl;
}

static void srnic_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct srnic_qp *qp = to_sqpx(qpx);
	struct srnic_wqe_ctrl *ctrl = srnic_wr_cur(qp, false);

	if (!ctrl)
		return;
	srnic_wr_fail(qp, srnic_wqe_set_ud(ctrl, ah, remote_qpn, remote_qkey));
	qp->wr.ud_set = true;
}

static void srnic_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg)
{
	struct srnic_qp *qp = to_sqpx(qpx);
	struct srnic_wqe_ctrl *ctrl = srnic_wr_cur(qp, true);

	if (ctrl)
		srnic_wr_fail(qp, srnic_wqe_set_sges(qp, ctrl, sg, num_sge));
}

static void srnic_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	srnic_wr_set_sge_list(qpx, 1, &sge);
}

/* Inline data: SEND and RDMA WRITE only. */
static void srnic_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf)
{
	struct srnic_qp *qp = to_sqpx(qpx);
	struct srnic_wqe_ctrl *ctrl = srnic_wr_cur(qp, true);
	size_t i;

	if (!ctrl)
		return;
	if (srnic_op_lands_answer(ctrl->opcode)) {
		srnic_wr_fail(qp, EINVAL);
		return;
	}
	srnic_wqe_inline_begin(ctrl);
	for (i = 0; i < num_buf && !qp->wr.err; i++)
		srnic_wr_fail(qp, srnic_wqe_inline_add(qp, ctrl, buf[i].addr,
						       buf[i].length));
}

static void srnic_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	srnic_wr_set_inline_data_list(qpx, 1, &buf);
}

/*
 * The critical section of ibv_wr_start() .. ibv_wr_complete()/abort() is
 * the send queue's lock, as for ibv_post_send.
 */
static void srnic_wr_start(struct ibv_qp_ex *qpx)
{
	struct srnic_qp *qp = to_sqpx(qpx);

	srnic_lock(&qp->sq_lock);
	qp->wr.start = qp->sq_head;
	qp->wr.cur = NULL;
	/* The send queue works from RTS on (and in error, to be flushed). */
	qp->wr.err = qp->vqp.qp.state < IBV_QPS_RTS ? EINVAL : 0;
}

static int srnic_wr_complete(struct ibv_qp_ex *qpx)
{
	struct srnic_qp *qp = to_sqpx(qpx);
	int err;

	srnic_wr_close(qp);
	err = qp->wr.err;
	if (err)
		qp->sq_head = qp->wr.start;
	else if (qp->sq_head != qp->wr.start)
		srnic_sq_ring(qp);
	srnic_unlock(&qp->sq_lock);
	return err;
}

static void srnic_wr_abort(struct ibv_qp_ex *qpx)
{
	struct srnic_qp *qp = to_sqpx(qpx);

	/* The slots written since wr_start were never published. */
	qp->sq_head = qp->wr.start;
	qp->wr.cur = NULL;
	srnic_unlock(&qp->sq_lock);
}

/*
 * Checks the send_ops_flags of a QP being created: EOPNOTSUPP for an
 * opcode its type cannot post.
 */
int srnic_qpex_check(const struct ibv_qp_init_attr_ex *attr)
{
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	return attr->send_ops_flags & ~srnic_send_ops(attr->qp_type) ?
		       EOPNOTSUPP : 0;
}

/* Gives a QP created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS its ibv_qp_ex. */
void srnic_qpex_init(struct srnic_qp *qp, const struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return;
	qp->wr.ops = attr->send_ops_flags;
	qpx->wr_atomic_cmp_swp = srnic_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = srnic_wr_atomic_fetch_add;
	qpx->wr_bind_mw = srnic_wr_bind_mw;
	qpx->wr_local_inv = srnic_wr_local_inv;
	qpx->wr_rdma_read = srnic_wr_rdma_read;
	qpx->wr_rdma_write = srnic_wr_rdma_write;
	qpx->wr_rdma_write_imm = srnic_wr_rdma_write_imm;
	qpx->wr_send = srnic_wr_send;
	qpx->wr_send_imm = srnic_wr_send_imm;
	qpx->wr_send_inv = srnic_wr_send_inv;
	qpx->wr_send_tso = srnic_wr_send_tso;
	qpx->wr_set_ud_addr = srnic_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = srnic_wr_set_xrc_srqn;
	qpx->wr_set_inline_data = srnic_wr_set_inline_data;
	qpx->wr_set_inline_data_list = srnic_wr_set_inline_data_list;
	qpx->wr_set_sge = srnic_wr_set_sge;
	qpx->wr_set_sge_list = srnic_wr_set_sge_list;
	qpx->wr_start = srnic_wr_start;
	qpx->wr_complete = srnic_wr_complete;
	qpx->wr_abort = srnic_wr_abort;
	qpx->wr_atomic_write = srnic_wr_atomic_write;
	qp->vqp.comp_mask |= VERBS_QP_EX;
}
