// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: shared receive queues (basic and XRC), XRC domains, and opening
 * an XRC target QP of a domain.  XRC target QPs have no queues in this
 * process: they receive into the XRC SRQs the initiator's messages name.
 */
#include <errno.h>
#include <stdlib.h>

#include "srnic.h"

struct ibv_xrcd *srnic_open_xrcd(struct ibv_context *ctx,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct verbs_xrcd *xrcd;
	struct ibv_open_xrcd cmd;
	int err;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_xrcd(ctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(xrcd);
		errno = err;
		return NULL;
	}
	return &xrcd->xrcd;
}

int srnic_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = (struct verbs_xrcd *)ibxrcd;
	int err = ibv_cmd_close_xrcd(xrcd);

	if (err)
		return errno = err;
	free(xrcd);
	return 0;
}

/*
 * The ring of a receive queue of its own (SRQ, WQ) for @max_wr x @max_sge:
 * 0, EINVAL beyond the device's limits, or ENOMEM.
 */
int srnic_recv_ring_alloc(struct ibv_pd *pd, uint64_t type, uint32_t max_wr,
			  uint32_t max_sge, struct srnic_wq *wq)
{
	uint32_t need = sizeof(struct srnic_recv_wqe_hdr) +
			max_sge * sizeof(struct srnic_wqe_data);

	if (!max_wr || max_wr > SRNIC_MAX_SRQ_WR || !max_sge ||
	    max_sge > SRNIC_MAX_SGE)
		return EINVAL;

	wq->log_stride = srnic_log2_ceil(need < SRNIC_RECV_WQE_MIN ?
					 SRNIC_RECV_WQE_MIN : need);
	wq->log_entries = srnic_log2_ceil(max_wr);
	wq->ring = srnic_ring_alloc(pd, type, wq->log_entries + wq->log_stride,
				    &wq->ring_len, &wq->owner);
	return wq->ring ? 0 : ENOMEM;
}

struct ibv_srq *srnic_create_srq_ex(struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct srnic_context *ctx = to_sctx(ibctx);
	struct srnic_create_xsrq_cmd cmd = {};
	struct srnic_create_xsrq_cmd_resp resp = {};
	struct srnic_srq *srq;
	int err;

	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE |
					  IBV_SRQ_INIT_ATTR_PD |
					  IBV_SRQ_INIT_ATTR_XRCD |
					  IBV_SRQ_INIT_ATTR_CQ |
					  IBV_SRQ_INIT_ATTR_TM)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type != IBV_SRQT_BASIC && attr->srq_type != IBV_SRQT_XRC &&
	    attr->srq_type != IBV_SRQT_TM) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = srnic_recv_ring_alloc((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ?
				    attr->pd : NULL, SRNIC_RES_SRQ,
				    attr->attr.max_wr, attr->attr.max_sge,
				    &srq->wq);
	srq->db = srnic_dbrec_alloc(ctx);
	if (!err && !srq->db)
		err = ENOMEM;
	if (err)
		goto err;
	cmd.drv_payload.buf_addr = (uintptr_t)srq->wq.ring;
	cmd.drv_payload.db_addr = (uintptr_t)srq->db;
	cmd.drv_payload.log_entries = srq->wq.log_entries;
	cmd.drv_payload.log_stride = srq->wq.log_stride;
	err = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err;
	srq->srqn = resp.drv_payload.srqn;
	srq->max_sge = attr->attr.max_sge;
	srq->tm = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
		  attr->srq_type == IBV_SRQT_TM;
	if (srnic_lock_init(&srq->lock)) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		err = ENOMEM;
		goto err;
	}
	return &srq->vsrq.srq;

err:
	if (srq->db)
		srnic_dbrec_free(ctx, srq->db);
	srnic_ring_free(srq->wq.ring, srq->wq.owner, SRNIC_RES_SRQ);
	free(srq);
	errno = err;
	return NULL;
}

struct ibv_srq *srnic_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC,
		.pd = pd,
	};
	struct ibv_srq *srq = srnic_create_srq_ex(pd->context, &ex);

	if (srq)
		attr->attr = ex.attr;
	return srq;
}

int srnic_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct srnic_srq *srq = (struct srnic_srq *)ibsrq;

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/*
 * Tag list operations: each is one modify_srq command whose driver data
 * the kernel executes at once (docs/design.md, "Tag matching").
 */
static int srnic_srq_op(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr)
{
	struct {
		struct ibv_modify_srq ibv_cmd;
		struct srnic_tm_op drv;
	} cmd = {};
	struct ibv_srq_attr attr = {};

	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		if (wr->tm.add.num_sge < 0 || wr->tm.add.num_sge > 1 ||
		    (wr->tm.add.num_sge && !wr->tm.add.sg_list))
			return EINVAL;
		cmd.drv.opcode = SRNIC_TM_OP_ADD;
		cmd.drv.recv_wr_id = wr->tm.add.recv_wr_id;
		cmd.drv.tag = wr->tm.add.tag;
		cmd.drv.mask = wr->tm.add.mask;
		cmd.drv.handle_addr = (uintptr_t)&wr->tm.handle;
		cmd.drv.num_sge = wr->tm.add.num_sge;
		if (cmd.drv.num_sge) {
			cmd.drv.sge.addr = wr->tm.add.sg_list[0].addr;
			cmd.drv.sge.length = wr->tm.add.sg_list[0].length;
			cmd.drv.sge.lkey = wr->tm.add.sg_list[0].lkey;
		}
		break;
	case IBV_WR_TAG_DEL:
		cmd.drv.opcode = SRNIC_TM_OP_DEL;
		cmd.drv.handle = wr->tm.handle;
		break;
	case IBV_WR_TAG_SYNC:
		cmd.drv.opcode = SRNIC_TM_OP_SYNC;
		break;
	default:
		return EINVAL;
	}
	if (wr->flags & ~(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC))
		return EINVAL;
	cmd.drv.wr_id = wr->wr_id;
	cmd.drv.flags = wr->flags;
	cmd.drv.unexpected_cnt = wr->tm.unexpected_cnt;
	return ibv_cmd_modify_srq(ibsrq, &attr, 0, &cmd.ibv_cmd, sizeof(cmd));
}

int srnic_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
		       struct ibv_ops_wr **bad_wr)
{
	struct srnic_srq *srq = (struct srnic_srq *)ibsrq;
	int err = 0;

	for (; wr; wr = wr->next) {
		err = srq->tm ? srnic_srq_op(ibsrq, wr) : EOPNOTSUPP;
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	return err;
}

/* Another process's XRC target QP of a shared domain, or this one's. */
struct ibv_qp *srnic_open_qp(struct ibv_context *ctx,
			     struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;
	struct srnic_qp *qp;
	int err;

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_qp(ctx, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (err || srnic_lock_init(&qp->sq_lock) ||
	    srnic_lock_init(&qp->rq_lock)) {
		if (!err)
			ibv_cmd_destroy_qp(&qp->vqp.qp);
		free(qp);
		errno = err ? err : ENOMEM;
		return NULL;
	}
	return &qp->vqp.qp;
}
