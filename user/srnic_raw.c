// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: what raw packet QPs add.  Flows (the core serialises the specs,
 * no driver data), receive WQs (a ring and doorbell record like an SRQ's),
 * indirection tables, and RSS QPs, whose hash configuration travels as
 * driver data since the core command has no room for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srnic.h"

/* The kernel takes our rx_hash_* values as libibverbs defines them. */
static_assert((unsigned int)IBV_RX_HASH_FUNC_TOEPLITZ == SRNIC_RX_HASH_FUNC_TOEPLITZ,
	      "hash function");
static_assert((unsigned int)IBV_RX_HASH_SRC_IPV4 == SRNIC_RX_HASH_SRC_IPV4 &&
	      (unsigned int)IBV_RX_HASH_DST_IPV4 == SRNIC_RX_HASH_DST_IPV4 &&
	      (unsigned int)IBV_RX_HASH_SRC_IPV6 == SRNIC_RX_HASH_SRC_IPV6 &&
	      (unsigned int)IBV_RX_HASH_DST_IPV6 == SRNIC_RX_HASH_DST_IPV6 &&
	      (unsigned int)IBV_RX_HASH_SRC_PORT_TCP == SRNIC_RX_HASH_SRC_PORT_TCP &&
	      (unsigned int)IBV_RX_HASH_DST_PORT_TCP == SRNIC_RX_HASH_DST_PORT_TCP &&
	      (unsigned int)IBV_RX_HASH_SRC_PORT_UDP == SRNIC_RX_HASH_SRC_PORT_UDP &&
	      (unsigned int)IBV_RX_HASH_DST_PORT_UDP == SRNIC_RX_HASH_DST_PORT_UDP,
	      "hash fields");

struct ibv_qp *srnic_create_rss_qp(struct ibv_context *ibctx,
				   struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;
	struct srnic_create_qp_rss_cmd cmd = {};
	struct srnic_create_qp_rss_cmd_resp resp = {};
	struct srnic_create_qp_rss_req *req = &cmd.drv_payload;
	struct srnic_qp *qp;
	int err;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    h->rx_hash_key_len > SRNIC_RSS_KEY_LEN ||
	    (h->rx_hash_key_len && !h->rx_hash_key)) {
		errno = EINVAL;
		return NULL;
	}
	req->rx_hash_fields_mask = h->rx_hash_fields_mask;
	req->rx_hash_function = h->rx_hash_function;
	req->rx_hash_key_len = h->rx_hash_key_len;
	if (h->rx_hash_key_len)
		memcpy(req->rx_hash_key, h->rx_hash_key, h->rx_hash_key_len);
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	/* No queue here: sends are refused, receives go to the table's WQs. */
	err = ibv_cmd_create_qp_ex2(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	return srnic_queueless_qp(qp, err);
}

/* ---- flows ---- */

static struct ibv_flow *srnic_create_flow(struct ibv_qp *qp,
					  struct ibv_flow_attr *attr)
{
	struct ibv_flow *flow = calloc(1, sizeof(*flow));
	int err;

	if (!flow) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_flow(qp, flow, attr, NULL, 0);
	if (err) {
		free(flow);
		errno = err;
		return NULL;
	}
	return flow;
}

static int srnic_destroy_flow(struct ibv_flow *flow)
{
	int err = ibv_cmd_destroy_flow(flow);

	if (err)
		return err;
	free(flow);
	return 0;
}

/* ---- receive WQs ---- */

static inline struct srnic_rwq *to_srwq(struct ibv_wq *ibwq)
{
	return (struct srnic_rwq *)ibwq;
}

static int srnic_post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	struct srnic_rwq *rwq = to_srwq(ibwq);
	int err;

	srnic_lock(&rwq->lock);
	err = srnic_post_ring_recv(&rwq->wq, &rwq->head, rwq->max_sge, rwq->db,
				   wr, bad_wr);
	srnic_unlock(&rwq->lock);
	return err;
}

static struct ibv_wq *srnic_create_wq(struct ibv_context *ibctx,
				      struct ibv_wq_init_attr *attr)
{
	struct srnic_context *ctx = to_sctx(ibctx);
	struct srnic_create_wq_cmd cmd = {};
	struct ib_uverbs_ex_create_wq_resp resp = {};
	struct srnic_rwq *rwq;
	int err;

	if (attr->wq_type != IBV_WQT_RQ ||
	    (attr->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS) ||
	    ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	rwq = calloc(1, sizeof(*rwq));
	if (!rwq) {
		errno = ENOMEM;
		return NULL;
	}
	err = srnic_recv_ring_alloc(attr->pd, SRNIC_RES_RQ, attr->max_wr,
				    attr->max_sge, &rwq->wq);
	rwq->db = srnic_dbrec_alloc(ctx);
	if (!err && (!rwq->db || srnic_lock_init(&rwq->lock)))
		err = ENOMEM;
	if (err)
		goto err;
	cmd.drv_payload.buf_addr = (uintptr_t)rwq->wq.ring;
	cmd.drv_payload.db_addr = (uintptr_t)rwq->db;
	cmd.drv_payload.log_entries = rwq->wq.log_entries;
	cmd.drv_payload.log_stride = rwq->wq.log_stride;
	err = ibv_cmd_create_wq(ibctx, attr, &rwq->ibwq, &cmd.ibv_cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err)
		goto err;
	rwq->max_sge = attr->max_sge;
	rwq->ibwq.post_recv = srnic_post_wq_recv;
	return &rwq->ibwq;

err:
	if (rwq->db)
		srnic_dbrec_free(ctx, rwq->db);
	srnic_ring_free(rwq->wq.ring, rwq->wq.owner, SRNIC_RES_RQ);
	free(rwq);
	errno = err;
	return NULL;
}

static int srnic_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct srnic_rwq *rwq = to_srwq(ibwq);
	struct ibv_modify_wq cmd = {};
	int err = ibv_cmd_modify_wq(ibwq, attr, &cmd, sizeof(cmd));

	if (err || !(attr->attr_mask & IBV_WQ_ATTR_STATE) ||
	    attr->wq_state != IBV_WQS_RESET)
		return err;
	/* Empty, as the kernel's consumer now is. */
	srnic_lock(&rwq->lock);
	rwq->head = 0;
	rwq->db->producer = 0;
	srnic_unlock(&rwq->lock);
	return 0;
}

static int srnic_destroy_wq(struct ibv_wq *ibwq)
{
	struct srnic_rwq *rwq = to_srwq(ibwq);
	int err = ibv_cmd_destroy_wq(ibwq);

	if (err)
		return err;
	srnic_dbrec_free(to_sctx(ibwq->context), rwq->db);
	srnic_ring_free(rwq->wq.ring, rwq->wq.owner, SRNIC_RES_RQ);
	free(rwq);
	return 0;
}

/* ---- indirection tables ---- */

static struct ibv_rwq_ind_table *
srnic_create_rwq_ind_table(struct ibv_context *ibctx,
			   struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *tbl = calloc(1, sizeof(*tbl));
	int err;

	if (!tbl) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_rwq_ind_table(ibctx, attr, tbl, &resp,
					   sizeof(resp));
	if (err) {
		free(tbl);
		errno = err;
		return NULL;
	}
	return tbl;
}

static int srnic_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	int err = ibv_cmd_destroy_rwq_ind_table(tbl);

	if (err)
		return err;
	free(tbl);
	return 0;
}

const struct verbs_context_ops srnic_raw_ops = {
	.create_flow = srnic_create_flow,
	.destroy_flow = srnic_destroy_flow,
	.create_wq = srnic_create_wq,
	.modify_wq = srnic_modify_wq,
	.destroy_wq = srnic_destroy_wq,
	.create_rwq_ind_table = srnic_create_rwq_ind_table,
	.destroy_rwq_ind_table = srnic_destroy_rwq_ind_table,
};
