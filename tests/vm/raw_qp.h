/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A QP whose rings, doorbell records and CQ ring the test owns: made through
 * the raw uverbs interface (uverbs_qp_raw.h) rather than the provider, so a
 * test can write anything into them, as a hostile process can.  RC,
 * connected to itself.  Include after traffic.h.
 */
#ifndef SRNIC_RAW_QP_H
#define SRNIC_RAW_QP_H

#include <stdatomic.h>

#include "uverbs_qp_raw.h"
#include "provider_of.h"

#define RAW_QP_LOG_CQ 8
#define RAW_QP_LOG_SQ 6
#define RAW_QP_LOG_STRIDE 7
#define RAW_QP_LOG_RQ 4
#define RAW_QP_LOG_RQ_STRIDE 5

struct raw_qp {
	int fd;
	struct srnic_raw_ctx c;
	struct srnic_raw_pd pd;
	struct srnic_raw_cq cq;
	struct srnic_raw_qp qp;
	void *cq_ring, *sq_ring, *rq_ring, *dbpage;
	struct srnic_cq_db *cq_db;
	struct srnic_qp_db *qp_db;
	void *uar;
	struct srnic_bells *bells;	/* the bell page of the QP's engine thread */
	uint32_t cq_cons;	/* CQEs consumed (raw_qp_wait) */
};

#define RAW_QP_SQ_LEN ((size_t)1 << (RAW_QP_LOG_SQ + RAW_QP_LOG_STRIDE))
#define RAW_QP_RQ_LEN ((size_t)1 << (RAW_QP_LOG_RQ + RAW_QP_LOG_RQ_STRIDE))
#define RAW_QP_CQ_LEN ((size_t)SRNIC_CQE_SIZE << RAW_QP_LOG_CQ)

static inline void *raw_qp_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* 0, or -errno with *step naming what failed. */
static inline int raw_qp_make(struct raw_qp *g, const struct env *e,
			      const char **step)
{
	struct srnic_create_cq_req cr = {};
	struct srnic_create_qp_req qr = {};
	struct srnic_raw_qp_caps caps = {
		.max_send_wr = 1u << RAW_QP_LOG_SQ,
		.max_recv_wr = 1u << RAW_QP_LOG_RQ,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	int err;

	memset(g, 0, sizeof(*g));
	*step = "open";
	g->fd = uverbs_open(srnic_test_dev());
	if (g->fd < 0)
		return g->fd;
	*step = "get_context";
	err = uverbs_get_context(g->fd, &g->c, NULL, 0);
	if (err)
		return err;
	*step = "alloc_pd";
	err = uverbs_alloc_pd(g->fd, &g->pd);
	if (err)
		return err;
	*step = "mmap";
	g->cq_ring = raw_qp_anon(RAW_QP_CQ_LEN);
	g->sq_ring = raw_qp_anon(RAW_QP_SQ_LEN);
	g->rq_ring = raw_qp_anon(RAW_QP_RQ_LEN);
	g->dbpage = raw_qp_anon(4096);
	if (!g->cq_ring || !g->sq_ring || !g->rq_ring || !g->dbpage)
		return -ENOMEM;
	g->cq_db = g->dbpage;
	g->qp_db = (struct srnic_qp_db *)((char *)g->dbpage + 64);
	cr.buf_addr = (uintptr_t)g->cq_ring;
	cr.db_addr = (uintptr_t)g->cq_db;
	cr.log_entries = RAW_QP_LOG_CQ;
	*step = "create_cq";
	err = uverbs_create_cq(g->fd, (1 << RAW_QP_LOG_CQ) - 1, &cr, sizeof(cr),
			       &g->cq);
	if (err)
		return err;
	qr.sq_buf_addr = (uintptr_t)g->sq_ring;
	qr.rq_buf_addr = (uintptr_t)g->rq_ring;
	qr.db_addr = (uintptr_t)g->qp_db;
	qr.sq_log_entries = RAW_QP_LOG_SQ;
	qr.sq_log_stride = RAW_QP_LOG_STRIDE;
	qr.rq_log_entries = RAW_QP_LOG_RQ;
	qr.rq_log_stride = RAW_QP_LOG_RQ_STRIDE;
	*step = "create_qp";
	err = uverbs_create_qp(g->fd, g->pd.core.pd_handle, g->cq.core.cq_handle,
			       g->cq.core.cq_handle, IB_UVERBS_QPT_RC, &caps, &qr,
			       &g->qp);
	if (err)
		return err;
	*step = "mmap UAR";
	g->uar = srnic_raw_map_uar(g->fd, g->qp.drv.db.uar_mmap_offset);
	if (!g->uar)
		return -errno;
	*step = "mmap bell page";
	g->bells = srnic_raw_map_uar(g->fd, g->qp.drv.bells_mmap_offset);
	if (!g->bells)
		return -errno;
	*step = "modify_qp to RTS";
	/* Connected to itself: whatever the WQEs ask, they ask itself. */
	return uverbs_rc_to_rts(g->fd, g->qp.core.qp_handle, g->qp.core.qpn,
				e->gid.raw, e->gid_idx);
}

/* Closing the file releases everything the raw context made. */
static inline void raw_qp_free(struct raw_qp *g)
{
	if (g->fd >= 0) {
		if (g->c.core.async_fd > 0)
			close(g->c.core.async_fd);
		close(g->fd);
	}
	munmap(g->cq_ring, RAW_QP_CQ_LEN);
	munmap(g->sq_ring, RAW_QP_SQ_LEN);
	munmap(g->rq_ring, RAW_QP_RQ_LEN);
	munmap(g->dbpage, 4096);
	if (g->uar)
		munmap(g->uar, SRNIC_PAGE_SIZE);
	if (g->bells)
		munmap(g->bells, SRNIC_PAGE_SIZE);
	g->fd = -1;
}

static inline volatile struct srnic_db_slot *raw_qp_sq_slot(struct raw_qp *g)
{
	return (struct srnic_db_slot *)g->uar + g->qp.drv.db.slot;
}

/*
 * The send WQE at ring position @prod, cleared: a signaled @opcode with
 * wr_id 100 + @prod; the caller fills the rest.
 */
static inline struct srnic_wqe_ctrl *raw_qp_wqe(struct raw_qp *g, uint32_t prod,
						uint8_t opcode)
{
	uint8_t *slot = (uint8_t *)g->sq_ring +
			((size_t)(prod & ((1u << RAW_QP_LOG_SQ) - 1)) << RAW_QP_LOG_STRIDE);
	struct srnic_wqe_ctrl *c = (struct srnic_wqe_ctrl *)slot;

	memset(slot, 0, (size_t)1 << RAW_QP_LOG_STRIDE);
	c->opcode = opcode;
	c->flags = SRNIC_WQE_SIGNALED;
	c->wr_id = 100 + prod;
	return c;
}

/*
 * raw_qp_wqe() with a remote address segment (@raddr, @rkey): the segment
 * after it (an atomic's or a FLUSH's) is returned for the caller to fill.
 */
static inline void *raw_qp_wqe_remote(struct raw_qp *g, uint32_t prod, uint8_t opcode,
				      uint64_t raddr, uint32_t rkey)
{
	struct srnic_wqe_raddr *ra =
		(struct srnic_wqe_raddr *)(raw_qp_wqe(g, prod, opcode) + 1);

	ra->remote_addr = raddr;
	ra->rkey = rkey;
	return ra + 1;
}

/* A FLUSH of @len bytes at @raddr (@type, @level: the FETH's) at ring position @prod. */
static inline void raw_qp_flush(struct raw_qp *g, uint32_t prod, uint64_t raddr,
				uint32_t rkey, uint32_t len, uint8_t type, uint8_t level)
{
	struct srnic_wqe_flush *f = (struct srnic_wqe_flush *)
		raw_qp_wqe_remote(g, prod, SRNIC_WR_FLUSH, raddr, rkey);

	f->length = len;
	f->type = type;
	f->level = level;
}

/* Rings the send doorbell: the WQEs before @producer may go. */
static inline int raw_qp_ring(struct raw_qp *g, uint32_t producer)
{
	return srnic_raw_ring_sq(g->fd, g->qp.core.qp_handle, g->qp_db,
				 raw_qp_sq_slot(g), producer);
}

/* The summary of which slots of the QP's UAR page rang. */
static inline struct srnic_uar_summary *raw_qp_summary(struct raw_qp *g)
{
	return (struct srnic_uar_summary *)((char *)g->uar + SRNIC_UAR_SUMMARY_OFFSET);
}

/* Consumes the CQEs the engine has written; counts them and the errors. */
static inline void raw_qp_reap(struct raw_qp *g, int *cqes, int *errors)
{
	const uint32_t log = RAW_QP_LOG_CQ, mask = (1u << log) - 1;
	struct srnic_cqe *ring = g->cq_ring;

	for (;;) {
		struct srnic_cqe *cqe = &ring[g->cq_cons & mask];
		uint8_t owner = atomic_load_explicit((_Atomic uint8_t *)&cqe->owner,
						     memory_order_acquire);

		if ((owner & SRNIC_CQE_OWNER_BIT) != (((g->cq_cons >> log) & 1) ^ 1))
			return;
		(*cqes)++;
		if (cqe->status != IBV_WC_SUCCESS)
			(*errors)++;
		g->cq_cons++;
		atomic_store_explicit((_Atomic uint32_t *)&g->cq_db->consumer,
				      g->cq_cons, memory_order_release);
	}
}

/* The status of the CQE raw_qp_reap() counted last. */
static inline unsigned int raw_qp_last_status(const struct raw_qp *g)
{
	const struct srnic_cqe *ring = g->cq_ring;

	return ring[(g->cq_cons - 1) & ((1u << RAW_QP_LOG_CQ) - 1)].status;
}

/* 1 once the CQ ring holds an error CQE or the QP is in ERR, 0 at @ms. */
static inline int raw_qp_wait(struct raw_qp *g, int ms, int *errors, int *cqes)
{
	uint64_t end = now_ms() + ms;

	*errors = *cqes = 0;
	while (now_ms() < end) {
		raw_qp_reap(g, cqes, errors);
		if (*errors ||
		    uverbs_query_qp_state(g->fd, g->qp.core.qp_handle) == IBV_QPS_ERR)
			return 1;
		usleep(1000);
	}
	return 0;
}

#endif /* SRNIC_RAW_QP_H */
