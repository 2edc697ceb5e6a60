// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: completion queues, queue pairs, SRQs and address handles.  The
 * provider allocates every ring and doorbell record in this process's
 * memory; the kernel pins them when the queue is created.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "srnic.h"

/* ---- context-wide tables: doorbell records and UAR mappings ---- */

int srnic_queues_init(struct srnic_context *ctx, uint64_t uar0_offset,
		      void *uar0)
{
	if (pthread_mutex_init(&ctx->lock, NULL))
		return ENOMEM;
	ctx->uar_maps[0].mmap_offset = uar0_offset;
	ctx->uar_maps[0].addr = uar0;
	return 0;
}

void srnic_queues_cleanup(struct srnic_context *ctx)
{
	struct srnic_dbrec_page *p, *next;
	unsigned int i;

	for (i = 0; i < SRNIC_MAX_UARS; i++)
		if (ctx->uar_maps[i].addr)
			munmap(ctx->uar_maps[i].addr, SRNIC_PAGE_SIZE);
	for (i = 0; i < SRNIC_MAX_ENGINES; i++)
		if (ctx->bell_maps[i].addr)
			munmap(ctx->bell_maps[i].addr, SRNIC_PAGE_SIZE);
	memset(ctx->uar_maps, 0, sizeof(ctx->uar_maps));
	memset(ctx->bell_maps, 0, sizeof(ctx->bell_maps));
	for (p = ctx->dbrec_pages; p; p = next) {
		next = p->next;
		free(p->mem);
		free(p);
	}
	ctx->dbrec_pages = NULL;
	pthread_mutex_destroy(&ctx->lock);
}

/* A zeroed 64-byte doorbell record that does not cross a page. */
void *srnic_dbrec_alloc(struct srnic_context *ctx)
{
	struct srnic_dbrec_page *p;
	void *rec = NULL;
	unsigned int i;

	pthread_mutex_lock(&ctx->lock);
	for (p = ctx->dbrec_pages; p; p = p->next)
		if (~p->used)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || posix_memalign(&p->mem, SRNIC_PAGE_SIZE,
					 SRNIC_PAGE_SIZE)) {
			free(p);
			goto out;
		}
		p->next = ctx->dbrec_pages;
		ctx->dbrec_pages = p;
	}
	i = __builtin_ctzll(~p->used);
	p->used |= 1ull << i;
	rec = (char *)p->mem + i * SRNIC_DBREC_SLOT;
	memset(rec, 0, SRNIC_DBREC_SLOT);
out:
	pthread_mutex_unlock(&ctx->lock);
	return rec;
}

void srnic_dbrec_free(struct srnic_context *ctx, void *rec)
{
	struct srnic_dbrec_page *p;

	pthread_mutex_lock(&ctx->lock);
	for (p = ctx->dbrec_pages; p; p = p->next) {
		uintptr_t off = (uintptr_t)rec - (uintptr_t)p->mem;

		if (off < SRNIC_PAGE_SIZE) {
			p->used &= ~(1ull << (off / SRNIC_DBREC_SLOT));
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * The page at @offset, writable, through @map: mapped the first time.
 * Caller holds ctx->lock.  A page the kernel moved (another offset for the
 * same place) is refused: the kernel never does.
 */
static void *srnic_map_once(struct srnic_context *ctx,
			    struct srnic_uar_map *map, uint64_t offset)
{
	void *addr;

	if (map->addr)
		return map->mmap_offset == offset ? map->addr : NULL;
	addr = srnic_map_device(ctx->vctx.context.cmd_fd, SRNIC_PAGE_SIZE,
				PROT_READ | PROT_WRITE, offset);
	if (!addr)
		return NULL;
	map->mmap_offset = offset;
	map->addr = addr;
	return addr;
}

/* The doorbell register the kernel assigned, mapping its UAR page once. */
static struct srnic_db_slot *srnic_doorbell(struct srnic_context *ctx,
					    const struct srnic_db_loc *loc)
{
	void *page = NULL;

	if (loc->slot >= ctx->dbs_per_uar || loc->uar_index >= SRNIC_MAX_UARS)
		return NULL;
	pthread_mutex_lock(&ctx->lock);
	page = srnic_map_once(ctx, &ctx->uar_maps[loc->uar_index],
			      loc->uar_mmap_offset);
	pthread_mutex_unlock(&ctx->lock);
	return page ? (struct srnic_db_slot *)page + loc->slot : NULL;
}

/* Where the marks of the doorbell at @loc go, for engine thread @t. */
static int srnic_marks_init(struct srnic_context *ctx, struct srnic_marks *m,
			    const struct srnic_db_loc *loc, uint32_t t,
			    uint64_t bells_offset)
{
	struct srnic_bells *bells;

	pthread_mutex_lock(&ctx->lock);
	bells = srnic_map_once(ctx, &ctx->bell_maps[t], bells_offset);
	pthread_mutex_unlock(&ctx->lock);
	if (!bells)
		return ENOMEM;
	m->rung = &((struct srnic_uar_summary *)
		    ((char *)ctx->uar_maps[loc->uar_index].addr +
		     SRNIC_UAR_SUMMARY_OFFSET))->rung;
	m->rung_bit = 1ull << loc->slot;
	m->page = &bells->pages[loc->uar_index / 64];
	m->page_bit = 1ull << loc->uar_index % 64;
	m->top = &bells->top;
	m->top_bit = 1ull << loc->uar_index / 64;
	return 0;
}

/*
 * A zeroed, page-aligned ring of 1 << log bytes; from the allocator of @pd
 * if it is a parent domain with one (*@owner says so, for the free).
 */
void *srnic_ring_alloc(struct ibv_pd *pd, uint64_t type, uint32_t log,
		       size_t *len, struct srnic_pd **owner)
{
	struct srnic_pd *parent = pd ? to_spd(pd) : NULL;
	void *ring = IBV_ALLOCATOR_USE_DEFAULT;

	*owner = NULL;
	*len = (size_t)1 << log;
	if (*len < SRNIC_PAGE_SIZE)
		*len = SRNIC_PAGE_SIZE;
	if (parent && parent->alloc) {
		ring = parent->alloc(pd, parent->pd_context, *len,
				     SRNIC_PAGE_SIZE, type);
		if (!ring)
			return NULL;
		/* The kernel pins whole pages of it: it must be aligned. */
		if (ring != IBV_ALLOCATOR_USE_DEFAULT &&
		    ((uintptr_t)ring & (SRNIC_PAGE_SIZE - 1))) {
			parent->free(pd, parent->pd_context, ring, type);
			return NULL;
		}
		if (ring != IBV_ALLOCATOR_USE_DEFAULT)
			*owner = parent;
	}
	if (ring == IBV_ALLOCATOR_USE_DEFAULT &&
	    posix_memalign(&ring, SRNIC_PAGE_SIZE, *len))
		return NULL;
	memset(ring, 0, *len);
	return ring;
}

void srnic_ring_free(void *ring, struct srnic_pd *owner, uint64_t type)
{
	if (!ring)
		return;
	if (owner)
		owner->free(&owner->ibpd, owner->pd_context, ring, type);
	else
		free(ring);
}

uint32_t srnic_log2_ceil(uint32_t v)
{
	return v <= 1 ? 0 : 32 - __builtin_clz(v - 1);
}

/* ---- completion queues ---- */

static inline struct srnic_cq *to_scq(struct ibv_cq *ibcq)
{
	return (struct srnic_cq *)ibcq;
}

/*
 * Creates a CQ with its ring: through the extended command when @ex (an
 * ibv_cq_ex with the wc_flags of @attr), else the legacy one.
 */
static struct srnic_cq *srnic_cq_create(struct ibv_context *ibctx,
					const struct ibv_cq_init_attr_ex *attr,
					bool ex)
{
	struct srnic_context *ctx = to_sctx(ibctx);
	struct srnic_create_cq_ex_cmd cmd_ex = {};
	struct srnic_create_cq_ex_cmd_resp resp_ex = {};
	struct srnic_create_cq_cmd cmd = {};
	struct srnic_create_cq_cmd_resp resp = {};
	struct srnic_create_cq_req *req = ex ? &cmd_ex.drv_payload :
					       &cmd.drv_payload;
	struct srnic_create_cq_resp *dresp = ex ? &resp_ex.drv_payload :
						  &resp.drv_payload;
	struct srnic_cq *cq;
	int err;

	if (attr->cqe < 1 || attr->cqe >= (1u << 22)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	/* One entry stays free: a full ring is told from an empty one. */
	cq->log_entries = srnic_log2_ceil(attr->cqe + 1);
	if (cq->log_entries < 1)
		cq->log_entries = 1;
	cq->ring = srnic_ring_alloc((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ?
				    attr->parent_domain : NULL,
				    SRNIC_RES_CQ, cq->log_entries + 6,
				    &cq->ring_len, &cq->owner);
	cq->db = srnic_dbrec_alloc(ctx);
	if (!cq->ring || !cq->db || srnic_lock_init(&cq->lock)) {
		err = ENOMEM;
		goto err;
	}
	req->buf_addr = (uintptr_t)cq->ring;
	req->db_addr = (uintptr_t)cq->db;
	req->log_entries = cq->log_entries;
	if (attr->wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK))
		req->flags |= SRNIC_CQ_FLAG_TIMESTAMP;
	if (ex)
		err = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd_ex.ibv_cmd,
					   sizeof(cmd_ex), &resp_ex.ibv_resp,
					   sizeof(resp_ex), 0);
	else
		err = ibv_cmd_create_cq(ibctx, attr->cqe, attr->channel,
					attr->comp_vector, &cq->vcq.cq,
					&cmd.ibv_cmd, sizeof(cmd),
					&resp.ibv_resp, sizeof(resp));
	if (err)
		goto err;
	cq->cqn = dresp->cqn;
	cq->doorbell = srnic_doorbell(ctx, &dresp->db);
	if (!cq->doorbell) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		err = ENOMEM;
		goto err;
	}
	return cq;

err:
	if (cq->db)
		srnic_dbrec_free(ctx, cq->db);
	srnic_ring_free(cq->ring, cq->owner, SRNIC_RES_CQ);
	free(cq);
	errno = err;
	return NULL;
}

static struct ibv_cq *srnic_create_cq(struct ibv_context *ibctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe < 0 ? 0 : cqe,
		.channel = channel,
		.comp_vector = comp_vector,
	};
	struct srnic_cq *cq = srnic_cq_create(ibctx, &attr, false);

	return cq ? &cq->vcq.cq : NULL;
}

static struct ibv_cq_ex *srnic_create_cq_ex(struct ibv_context *ibctx,
					    struct ibv_cq_init_attr_ex *attr)
{
	struct srnic_cq *cq;
	int err;

	err = srnic_cqex_check(attr);
	if (err) {
		errno = err;
		return NULL;
	}
	cq = srnic_cq_create(ibctx, attr, true);
	if (!cq)
		return NULL;
	srnic_cqex_init(cq, attr->wc_flags);
	/*
	 * ibv_cmd_create_cq_ex() has set the context, the channel (with its
	 * reference) and cq_context: doing it again would count the channel
	 * twice and ibv_destroy_comp_channel() would never succeed.
	 */
	return &cq->vcq.cq_ex;
}

static int srnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct srnic_cq *cq = to_scq(ibcq);
	int err = ibv_cmd_destroy_cq(ibcq);

	if (err)
		return err;
	srnic_dbrec_free(to_sctx(ibcq->context), cq->db);
	srnic_ring_free(cq->ring, cq->owner, SRNIC_RES_CQ);
	free(cq);
	return 0;
}

static int srnic_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct srnic_cq *cq = to_scq(ibcq);
	struct srnic_resize_cq_cmd cmd = {};
	struct srnic_resize_cq_cmd_resp resp = {};
	uint32_t log;
	struct srnic_pd *owner;
	size_t len;
	void *ring;
	int err;

	if (cqe < 1 || (unsigned int)cqe >= (1u << 22))
		return EINVAL;
	log = srnic_log2_ceil(cqe + 1);
	if (log < 1)
		log = 1;
	/* From the same allocator as the ring it replaces. */
	ring = srnic_ring_alloc(cq->owner ? &cq->owner->ibpd : NULL,
				SRNIC_RES_CQ, log + 6, &len, &owner);
	if (!ring)
		return ENOMEM;
	srnic_lock(&cq->lock);
	/* The kernel reads the consumer counter from the doorbell record. */
	srnic_cq_publish(cq);
	cmd.drv_payload.buf_addr = (uintptr_t)ring;
	cmd.drv_payload.log_entries = log;
	err = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err) {
		srnic_unlock(&cq->lock);
		srnic_ring_free(ring, owner, SRNIC_RES_CQ);
		return err;
	}
	srnic_ring_free(cq->ring, cq->owner, SRNIC_RES_CQ);
	cq->ring = ring;
	cq->owner = owner;
	cq->ring_len = len;
	cq->log_entries = log;
	cq->consumer = resp.drv_payload.consumer;
	srnic_unlock(&cq->lock);
	return 0;
}

static int srnic_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct srnic_cq *cq = to_scq(ibcq);
	const struct srnic_cqe *cqe;
	int n;

	srnic_lock(&cq->lock);
	for (n = 0; n < ne && (cqe = srnic_cqe_peek(cq)); n++) {
		wc[n] = (struct ibv_wc){
			.wr_id = cqe->wr_id,
			.status = cqe->status,
			.opcode = cqe->opcode,
			.vendor_err = cqe->vendor_err,
			.byte_len = cqe->byte_len,
			.imm_data = cqe->imm_data,
			.qp_num = cqe->qp_num,
			.src_qp = cqe->src_qp,
			.wc_flags = srnic_wc_flags(cqe->wc_flags),
			.pkey_index = cqe->pkey_index,
			.sl = srnic_wc_sl(cqe->sl, cqe->wc_flags),
		};
		cq->consumer++;
	}
	if (n)
		srnic_cq_publish(cq);
	srnic_unlock(&cq->lock);
	return n;
}

static int srnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct srnic_cq *cq = to_scq(ibcq);
	uint32_t arm;

	srnic_lock(&cq->lock);
	arm = (solicited_only ? SRNIC_CQ_ARM_SOLICITED : SRNIC_CQ_ARM_NEXT) |
	      (++cq->arm_sn << 8);
	/* The record first, then the doorbell that tells the engine to look. */
	atomic_store_explicit((_Atomic uint32_t *)&cq->db->arm, arm,
			      memory_order_release);
	atomic_store_explicit((_Atomic uint32_t *)&cq->doorbell->value, arm,
			      memory_order_release);
	/*
	 * The arm word is visible before the caller polls again: the engine
	 * publishes an entry, then (full barrier) reads the arm word, so
	 * either the poll sees the entry or the engine sees the arm.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	srnic_unlock(&cq->lock);
	return 0;
}

/* ---- queue pairs ---- */

static inline struct srnic_qp *to_sqp(struct ibv_qp *ibqp)
{
	return (struct srnic_qp *)ibqp;
}

/* Ring geometry for the requested capabilities, as the kernel checks it. */
static int srnic_qp_geometry(const struct ibv_qp_init_attr_ex *attr,
			     struct srnic_create_qp_req *req)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	uint32_t hdr = srnic_send_hdr(attr->qp_type);
	uint32_t need, sge;

	/* No send WRs (a receive-only QP) still gets a one-entry ring. */
	if (cap->max_send_wr > SRNIC_MAX_QP_WR ||
	    cap->max_send_sge > SRNIC_MAX_SGE ||
	    cap->max_recv_sge > SRNIC_MAX_SGE ||
	    cap->max_recv_wr > SRNIC_MAX_QP_WR ||
	    cap->max_inline_data > SRNIC_MAX_INLINE_DATA)
		return EINVAL;
	sge = cap->max_send_sge ? cap->max_send_sge : 1;
	need = hdr + sge * sizeof(struct srnic_wqe_data);
	if (need < hdr + cap->max_inline_data)
		need = hdr + cap->max_inline_data;
	req->sq_log_stride = srnic_log2_ceil(need < SRNIC_SEND_WQE_MIN ?
					     SRNIC_SEND_WQE_MIN : need);
	req->sq_log_entries = srnic_log2_ceil(cap->max_send_wr);
	/*
	 * A send queue of a few entries (latency tests ask for one) would
	 * have every post read the engine's consumer counter, a cache line
	 * the engine has just written: room for more spares most posts that
	 * transfer (see srnic_sq_next).  The caps report what the ring holds.
	 */
	if (cap->max_send_wr && req->sq_log_entries < SRNIC_SQ_MIN_LOG_ENTRIES)
		req->sq_log_entries = SRNIC_SQ_MIN_LOG_ENTRIES;
	if (attr->srq || !cap->max_recv_wr)
		return 0;
	sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	need = sizeof(struct srnic_recv_wqe_hdr) +
	       sge * sizeof(struct srnic_wqe_data);
	req->rq_log_stride = srnic_log2_ceil(need < SRNIC_RECV_WQE_MIN ?
					     SRNIC_RECV_WQE_MIN : need);
	req->rq_log_entries = srnic_log2_ceil(cap->max_recv_wr);
	return 0;
}

static void srnic_qp_free(struct srnic_context *ctx, struct srnic_qp *qp)
{
	if (qp->db)
		srnic_dbrec_free(ctx, qp->db);
	srnic_ring_free(qp->sq.ring, qp->sq.owner, SRNIC_RES_SQ);
	srnic_ring_free(qp->rq.ring, qp->rq.owner, SRNIC_RES_RQ);
	free(qp);
}

/*
 * Finishes a QP with no queue in this process (XRC target, RSS) once its
 * create command returned @err: its locks, or it is undone.
 */
struct ibv_qp *srnic_queueless_qp(struct srnic_qp *qp, int err)
{
	if (!err && (srnic_lock_init(&qp->sq_lock) ||
		     srnic_lock_init(&qp->rq_lock))) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		err = ENOMEM;
	}
	if (err) {
		free(qp);
		errno = err;
		return NULL;
	}
	return &qp->vqp.qp;
}

/*
 * An XRC target QP: the kernel's own object, no queues here (its messages
 * go to XRC SRQs), so no driver data either.
 */
static struct ibv_qp *srnic_create_xrc_recv(struct ibv_context *ibctx,
					    struct ibv_qp_init_attr_ex *attr)
{
	struct srnic_create_qp_cmd cmd = {};
	struct srnic_create_qp_cmd_resp resp = {};
	struct srnic_qp *qp;
	int err;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_XRCD |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	return srnic_queueless_qp(qp, err);
}

static uint32_t srnic_qp_create_flags(enum ibv_qp_type type)
{
	return type == IBV_QPT_UD ? IBV_QP_CREATE_BLOCK_SELF_MCAST_LB : 0;
}

static struct ibv_qp *srnic_create_qp_ex(struct ibv_context *ibctx,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct srnic_context *ctx = to_sctx(ibctx);
	struct srnic_create_qp_ex_cmd cmd = {};
	struct srnic_create_qp_ex_cmd_resp resp = {};
	struct srnic_create_qp_req *req = &cmd.drv_payload;
	struct ibv_pd *qp_pd = NULL;
	struct srnic_qp *qp;
	uint32_t t;
	int err;

	switch (attr->qp_type) {
	case IBV_QPT_RAW_PACKET:
		if (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)
			return srnic_create_rss_qp(ibctx, attr);
		break;
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		break;
	case IBV_QPT_XRC_RECV:
		return srnic_create_xrc_recv(ibctx, attr);
	default:
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The one creation flag: a UD QP's multicasts skip itself. */
	if ((attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
					   IBV_QP_INIT_ATTR_CREATE_FLAGS |
					   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     (attr->create_flags & ~srnic_qp_create_flags(attr->qp_type)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	err = srnic_qpex_check(attr);
	if (!err)
		err = srnic_qp_geometry(attr, req);
	if (err) {
		errno = err;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->sq.log_entries = req->sq_log_entries;
	qp->sq.log_stride = req->sq_log_stride;
	/* A parent domain's allocator, if the QP was made with one. */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_PD)
		qp_pd = attr->pd;
	qp->sq.ring = srnic_ring_alloc(qp_pd, SRNIC_RES_SQ,
				       req->sq_log_entries + req->sq_log_stride,
				       &qp->sq.ring_len, &qp->sq.owner);
	err = ENOMEM;
	if (!qp->sq.ring)
		goto err;
	if (req->rq_log_stride) {
		qp->rq.log_entries = req->rq_log_entries;
		qp->rq.log_stride = req->rq_log_stride;
		qp->rq.ring = srnic_ring_alloc(qp_pd, SRNIC_RES_RQ,
					       req->rq_log_entries +
					       req->rq_log_stride,
					       &qp->rq.ring_len, &qp->rq.owner);
		if (!qp->rq.ring)
			goto err;
		req->rq_buf_addr = (uintptr_t)qp->rq.ring;
	}
	qp->db = srnic_dbrec_alloc(ctx);
	if (!qp->db)
		goto err;
	req->sq_buf_addr = (uintptr_t)qp->sq.ring;
	req->db_addr = (uintptr_t)qp->db;
	err = ibv_cmd_create_qp_ex2(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err;
	qp->max_inline_data = resp.drv_payload.max_inline_data;
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge;
	qp->doorbell = srnic_doorbell(ctx, &resp.drv_payload.db);
	t = srnic_qp_engine(qp->vqp.qp.qp_num, ctx->num_engines);
	qp->engine = &ctx->status[t];
	if (!qp->doorbell ||
	    srnic_marks_init(ctx, &qp->marks, &resp.drv_payload.db, t,
			     resp.drv_payload.bells_mmap_offset) ||
	    srnic_lock_init(&qp->sq_lock) || srnic_lock_init(&qp->rq_lock)) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		err = ENOMEM;
		goto err;
	}
	srnic_qpex_init(qp, attr);
	return &qp->vqp.qp;

err:
	srnic_qp_free(ctx, qp);
	errno = err;
	return NULL;
}

static struct ibv_qp *srnic_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = srnic_create_qp_ex(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/*
 * Drops the unpolled completions of QP @qpn from @cq, as a QP moved to RESET
 * must leave none behind.  The engine only ever writes at or beyond the
 * first invalid entry, so the valid entries are compacted towards it (each
 * rewritten with its new slot's owner bit) and the consumer advances past
 * the freed ones.
 */
static void srnic_cq_clean(struct srnic_cq *cq, uint32_t qpn)
{
	uint32_t mask = (1u << cq->log_entries) - 1, prod, i, freed = 0;

	srnic_lock(&cq->lock);
	for (prod = cq->consumer; prod - cq->consumer <= mask; prod++) {
		struct srnic_cqe *cqe = &cq->ring[prod & mask];

		if (atomic_load_explicit((_Atomic uint8_t *)&cqe->owner,
					 memory_order_acquire) !=
		    srnic_cqe_owner(prod, cq->log_entries))
			break;
	}
	for (i = prod; i-- != cq->consumer;) {
		struct srnic_cqe *cqe = &cq->ring[i & mask];

		if (cqe->qp_num == qpn) {
			freed++;
		} else if (freed) {
			struct srnic_cqe *dst = &cq->ring[(i + freed) & mask];

			memcpy(dst, cqe, offsetof(struct srnic_cqe, owner));
			dst->owner = srnic_cqe_owner(i + freed, cq->log_entries);
		}
	}
	if (freed) {
		cq->consumer += freed;
		srnic_cq_publish(cq);
	}
	srnic_unlock(&cq->lock);
}

static int srnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			   int mask)
{
	struct srnic_qp *qp = to_sqp(ibqp);
	struct ibv_modify_qp cmd;
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (err || !(mask & IBV_QP_STATE) || attr->qp_state != IBV_QPS_RESET)
		return err;
	/* XRC target QPs have no queues (nor CQs) here. */
	if (!qp->db)
		return 0;
	if (ibqp->recv_cq)
		srnic_cq_clean(to_scq(ibqp->recv_cq), ibqp->qp_num);
	if (ibqp->send_cq && ibqp->send_cq != ibqp->recv_cq)
		srnic_cq_clean(to_scq(ibqp->send_cq), ibqp->qp_num);
	/* Empty queues, as the kernel's consumers now are. */
	srnic_lock(&qp->sq_lock);
	srnic_lock(&qp->rq_lock);
	qp->sq_head = 0;
	qp->sq_tail = 0;
	qp->rq_head = 0;
	qp->db->rq_producer = 0;
	qp->doorbell->value = 0;
	srnic_unlock(&qp->rq_lock);
	srnic_unlock(&qp->sq_lock);
	return 0;
}

static int srnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

static int srnic_destroy_qp(struct ibv_qp *ibqp)
{
	struct srnic_qp *qp = to_sqp(ibqp);
	int err = ibv_cmd_destroy_qp(ibqp);

	if (err)
		return err;
	srnic_qp_free(to_sctx(ibqp->context), qp);
	return 0;
}

/* ---- shared receive queues ---- */

static inline struct srnic_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return (struct srnic_srq *)ibsrq;
}

static int srnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

static int srnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int srnic_destroy_srq(struct ibv_srq *ibsrq)
{
	struct srnic_srq *srq = to_ssrq(ibsrq);
	int err = ibv_cmd_destroy_srq(ibsrq);

	if (err)
		return err;
	srnic_dbrec_free(to_sctx(ibsrq->context), srq->db);
	srnic_ring_free(srq->wq.ring, srq->wq.owner, SRNIC_RES_SRQ);
	free(srq);
	return 0;
}

/* ---- address handles ---- */

static struct ibv_ah *srnic_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct srnic_create_ah_cmd_resp resp = {};
	struct srnic_ah *ah;
	int err;

	/* RoCEv2 addresses by GID. */
	if (!attr->is_global) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_ah(pd, &ah->ibah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	memcpy(ah->av.dmac, resp.drv_payload.dmac, sizeof(ah->av.dmac));
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.flow_label = attr->grh.flow_label;
	ah->av.traffic_class = attr->grh.traffic_class;
	ah->av.sl = attr->sl;
	return &ah->ibah;
}

static int srnic_destroy_ah(struct ibv_ah *ibah)
{
	int err = ibv_cmd_destroy_ah(ibah);

	if (err)
		return err;
	free((struct srnic_ah *)ibah);
	return 0;
}

const struct verbs_context_ops srnic_queue_ops = {
	.create_cq = srnic_create_cq,
	.create_cq_ex = srnic_create_cq_ex,
	.destroy_cq = srnic_destroy_cq,
	.resize_cq = srnic_resize_cq,
	.poll_cq = srnic_poll_cq,
	.req_notify_cq = srnic_req_notify_cq,
	.create_qp = srnic_create_qp,
	.create_qp_ex = srnic_create_qp_ex,
	.modify_qp = srnic_modify_qp,
	.query_qp = srnic_query_qp,
	.destroy_qp = srnic_destroy_qp,
	.post_send = srnic_post_send,
	.post_recv = srnic_post_recv,
	.post_srq_recv = srnic_post_srq_recv,
	.create_srq = srnic_create_srq,
	.create_srq_ex = srnic_create_srq_ex,
	.get_srq_num = srnic_get_srq_num,
	.post_srq_ops = srnic_post_srq_ops,
	.open_xrcd = srnic_open_xrcd,
	.close_xrcd = srnic_close_xrcd,
	.open_qp = srnic_open_qp,
	.modify_srq = srnic_modify_srq,
	.query_srq = srnic_query_srq,
	.destroy_srq = srnic_destroy_srq,
	.create_ah = srnic_create_ah,
	.destroy_ah = srnic_destroy_ah,
	.attach_mcast = ibv_cmd_attach_mcast,
	.detach_mcast = ibv_cmd_detach_mcast,
};
