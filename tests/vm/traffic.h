/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers of the traffic suites (traffic_test, mw_test): a device and PD,
 * connected QP pairs with a registered buffer each, posting, completions
 * with deadlines, and data patterns.  Include after kselftest_harness.h.
 */
#ifndef SRNIC_TRAFFIC_H
#define SRNIC_TRAFFIC_H

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "srnic_test.h"

/* Deadline of any expected completion or event (TCG is slow). */
#define WC_MS 10000
#define BUF_LEN (2u << 20)
#define QKEY 0x11111111u
#define KiB 1024u
#define MiB (1024u * 1024u)

/* ---- environment: the device, a PD, the port and the GID ---- */

static inline int test_gid_index(void)
{
	const char *s = getenv("SRNIC_GID");

	return s && *s ? atoi(s) : 0;
}


struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_idx;
	/*
	 * With $SRNIC_PEER_DEV: that device, where pair_make() puts the
	 * second QP of each pair (the two-device oracle of the transport);
	 * else NULL, and pairs live on this device.
	 */
	struct env *peer;
};

static inline int env_open_one(struct env *e, const char *dev)
{
	memset(e, 0, sizeof(*e));
	e->gid_idx = test_gid_index();
	e->ctx = open_named(dev);
	if (!e->ctx)
		return -1;
	if (ibv_query_device(e->ctx, &e->dev) ||
	    ibv_query_port(e->ctx, 1, &e->port) ||
	    ibv_query_gid(e->ctx, 1, e->gid_idx, &e->gid))
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	return e->pd ? 0 : -1;
}

static inline void env_close(struct env *e)
{
	if (e->peer) {
		env_close(e->peer);
		free(e->peer);
	}
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

static inline int env_open(struct env *e)
{
	const char *peer = getenv("SRNIC_PEER_DEV");

	if (env_open_one(e, srnic_test_dev()))
		return -1;
	if (!peer || !*peer)
		return 0;
	e->peer = calloc(1, sizeof(*e->peer));
	return e->peer ? env_open_one(e->peer, peer) : -1;
}

/* Where the second QP of a pair lives (see struct env). */
static inline struct env *env_of_peer(struct env *e)
{
	return e->peer ? e->peer : e;
}

/* env_open() on device @dev, which becomes the suite's SRNIC_DEV. */
static inline int env_open_dev(struct env *e, const char *dev)
{
	setenv("SRNIC_DEV", dev, 1);
	return env_open(e);
}

static inline int has_atomics(const struct env *e)
{
	return e->dev.atomic_cap != IBV_ATOMIC_NONE;
}

static inline uint32_t mtu_bytes(enum ibv_mtu m)
{
	return 128u << m; /* IBV_MTU_256 = 1 */
}

/* ---- one QP end: CQ (send and receive), buffer, MR, QP ---- */

struct qp_opts {
	enum ibv_qp_type type;
	uint32_t send_wr, recv_wr, send_sge, recv_sge, inline_data;
	int sig_all;
	int cqe;
	int mr_access;
	int qp_access;
	uint8_t rnr_retry, min_rnr_timer, retry_cnt, timeout;
	uint8_t max_rd_atomic;	/* non-zero: the RC requester's, else the device's (16 at most) */
	struct ibv_srq *srq;
	struct ibv_comp_channel *ch;
	int comp_vector;	/* of the QP's CQ */
	size_t buf_len;
	uint64_t send_ops;	/* non-zero: ibv_create_qp_ex with these ops */
	uint32_t create_flags;	/* non-zero: ibv_create_qp_ex with these */
	int cq_ex;		/* ibv_create_cq_ex with wc_flags */
	uint64_t wc_flags;
};

static inline struct qp_opts qp_defaults(const struct env *e, enum ibv_qp_type t)
{
	int remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     (has_atomics(e) ? IBV_ACCESS_REMOTE_ATOMIC : 0);

	return (struct qp_opts){
		.type = t, .send_wr = 64, .recv_wr = 64, .send_sge = 4,
		.recv_sge = 4, .inline_data = 64, .cqe = 256,
		.mr_access = IBV_ACCESS_LOCAL_WRITE | remote,
		.qp_access = t == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE : remote,
		.rnr_retry = 7, .min_rnr_timer = 1, .retry_cnt = 7,
		.timeout = 14, .buf_len = BUF_LEN,
	};
}

struct ep {
	struct env *e;
	struct qp_opts o;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx;	/* with o.cq_ex: cq is its ibv_cq */
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;	/* with o.send_ops */
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_qp_cap cap;
	struct ibv_ah *ah;	/* UD: to the peer */
	uint32_t peer_qpn;
	const union ibv_gid *dgid; /* the peer's device's GID; NULL: x->e's */
};

static inline void ep_destroy(struct ep *x)
{
	if (x->qp)
		ibv_destroy_qp(x->qp);
	if (x->ah)
		ibv_destroy_ah(x->ah);
	if (x->mr)
		ibv_dereg_mr(x->mr);
	if (x->cq)
		ibv_destroy_cq(x->cq);
	if (x->buf)
		munmap(x->buf, x->o.buf_len);
	memset(x, 0, sizeof(*x));
}

/* A tag matching SRQ of @tags tags on @e's PD; its list operations complete on @cq. */
static inline struct ibv_srq *tm_srq_create(struct env *e, struct ibv_cq *cq, uint32_t tags)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 64, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM, .pd = e->pd, .cq = cq,
		.tm_cap = { .max_num_tags = tags, .max_ops = 16 },
	};

	return ibv_create_srq_ex(e->ctx, &sa);
}

static inline int ep_create(struct env *e, const struct qp_opts *o, struct ep *x)
{
	struct ibv_qp_init_attr init = {
		.srq = o->srq,
		.cap = { .max_send_wr = o->send_wr,
			 .max_recv_wr = o->srq ? 0 : o->recv_wr,
			 .max_send_sge = o->send_sge,
			 .max_recv_sge = o->srq ? 0 : o->recv_sge,
			 .max_inline_data = o->inline_data },
		.qp_type = o->type, .sq_sig_all = o->sig_all,
	};

	memset(x, 0, sizeof(*x));
	x->e = e;
	x->o = *o;
	if (o->cq_ex) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = o->cqe, .channel = o->ch, .wc_flags = o->wc_flags,
			.comp_vector = o->comp_vector,
		};

		x->cqx = ibv_create_cq_ex(e->ctx, &ca);
		x->cq = x->cqx ? ibv_cq_ex_to_cq(x->cqx) : NULL;
	} else {
		x->cq = ibv_create_cq(e->ctx, o->cqe, NULL, o->ch, o->comp_vector);
	}
	if (!x->cq)
		goto err;
	x->buf = mmap(NULL, o->buf_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->buf == MAP_FAILED) {
		x->buf = NULL;
		goto err;
	}
	x->mr = ibv_reg_mr(e->pd, x->buf, o->buf_len, o->mr_access);
	if (!x->mr)
		goto err;
	init.send_cq = x->cq;
	init.recv_cq = x->cq;
	if (o->send_ops || o->create_flags) {
		struct ibv_qp_init_attr_ex ia = {
			.send_cq = x->cq, .recv_cq = x->cq, .srq = init.srq,
			.cap = init.cap, .qp_type = init.qp_type,
			.sq_sig_all = init.sq_sig_all, .pd = e->pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     (o->send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0) |
				     (o->create_flags ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0),
			.send_ops_flags = o->send_ops,
			.create_flags = o->create_flags,
		};

		x->qp = ibv_create_qp_ex(e->ctx, &ia);
		init.cap = ia.cap;
		x->qpx = x->qp && o->send_ops ? ibv_qp_to_qp_ex(x->qp) : NULL;
		if (x->qp && o->send_ops && !x->qpx)
			goto err;
	} else {
		x->qp = ibv_create_qp(e->pd, &init);
	}
	if (!x->qp)
		goto err;
	x->cap = init.cap;
	return 0;
err:
	ep_destroy(x);
	return -1;
}

static inline int ep_to_init(struct ep *x)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = x->o.qp_access, .qkey = QKEY,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= x->o.type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(x->qp, &a, mask);
}

static inline struct ibv_ah_attr ah_to_self(const struct env *e)
{
	struct ibv_ah_attr ah = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = e->gid, .sgid_index = e->gid_idx,
			 .hop_limit = 64 },
	};

	return ah;
}

/* An address vector to @x's peer device: its own unless pair_make() said. */
static inline struct ibv_ah_attr ah_to_peer(const struct ep *x)
{
	struct ibv_ah_attr ah = ah_to_self(x->e);

	if (x->dgid)
		ah.grh.dgid = *x->dgid;
	return ah;
}

/* @x from INIT to RTR, receiving from @dest_qpn (ep_connect's first half). */
static inline int ep_to_rtr(struct ep *x, uint32_t dest_qpn)
{
	struct env *e = x->e;
	struct ibv_qp_attr a;
	int rd = e->dev.max_qp_rd_atom < 16 ? e->dev.max_qp_rd_atom : 16;
	int mask;

	x->peer_qpn = dest_qpn;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (x->o.type != IBV_QPT_UD) {
		a.path_mtu = e->port.active_mtu;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = 0x100;
		a.ah_attr = ah_to_peer(x);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (x->o.type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = rd ? rd : 1;
			a.min_rnr_timer = x->o.min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	return ibv_modify_qp(x->qp, &a, mask);
}

static inline int ep_connect(struct ep *x, uint32_t dest_qpn)
{
	struct env *e = x->e;
	struct ibv_qp_attr a;
	int ird = e->dev.max_qp_init_rd_atom < 16 ? e->dev.max_qp_init_rd_atom : 16;
	int mask;

	if (ep_to_init(x) || ep_to_rtr(x, dest_qpn))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (x->o.type == IBV_QPT_RC) {
		a.timeout = x->o.timeout;
		a.retry_cnt = x->o.retry_cnt;
		a.rnr_retry = x->o.rnr_retry;
		a.max_rd_atomic = x->o.max_rd_atomic ? x->o.max_rd_atomic : ird ? ird : 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(x->qp, &a, mask))
		return -1;
	if (x->o.type == IBV_QPT_UD) {
		struct ibv_ah_attr ah = ah_to_peer(x);

		x->ah = ibv_create_ah(e->pd, &ah);
		if (!x->ah)
			return -1;
	}
	return 0;
}

/* Two QPs connected to each other: @a on @e, @b on env_of_peer(@e). */
static inline int pair_make(struct env *e, const struct qp_opts *oa,
		     const struct qp_opts *ob, struct ep *a, struct ep *b)
{
	if (ep_create(e, oa, a))
		return -1;
	if (ep_create(env_of_peer(e), ob, b)) {
		ep_destroy(a);
		return -1;
	}
	a->dgid = &b->e->gid;
	b->dgid = &a->e->gid;
	if (ep_connect(a, b->qp->qp_num) || ep_connect(b, a->qp->qp_num)) {
		ep_destroy(a);
		ep_destroy(b);
		return -1;
	}
	return 0;
}

static inline enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/*
 * Waits (bounded) for @qp to reach @want: an error completion and the
 * state change it causes need not be atomic to an observer.
 */
static inline int wait_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms)
{
	uint64_t end = now_ms() + ms;

	while (qp_state(qp) != want) {
		if (now_ms() > end)
			return 0;
		usleep(1000);
	}
	return 1;
}

static inline int to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* ---- posting ---- */

static inline int post_recv(struct ep *x, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)x->buf + off, len, x->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (x->o.srq)
		return ibv_post_srq_recv(x->o.srq, &wr, &bad);
	return ibv_post_recv(x->qp, &wr, &bad);
}

/* A send WR from x's buffer at @off; remote address in @peer's buffer. */
static inline void wr_init(struct ibv_send_wr *wr, struct ibv_sge *s, struct ep *x,
		    enum ibv_wr_opcode op, uint64_t wr_id, size_t off,
		    uint32_t len, unsigned int flags, struct ep *peer,
		    size_t roff, uint32_t imm)
{
	*s = (struct ibv_sge){ (uintptr_t)x->buf + off, len, x->mr->lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = wr_id, .sg_list = s, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = flags, .imm_data = htonl(imm),
	};
	if (x->o.type == IBV_QPT_UD) {
		wr->wr.ud.ah = x->ah;
		wr->wr.ud.remote_qpn = x->peer_qpn;
		wr->wr.ud.remote_qkey = QKEY;
	} else if (peer) {
		wr->wr.rdma.remote_addr = (uintptr_t)peer->buf + roff;
		wr->wr.rdma.rkey = peer->mr->rkey;
	}
}

static inline int post_send1(struct ep *x, enum ibv_wr_opcode op, uint64_t wr_id,
		      size_t off, uint32_t len, unsigned int flags,
		      struct ep *peer, size_t roff, uint32_t imm)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;

	wr_init(&wr, &s, x, op, wr_id, off, len, flags, peer, roff, imm);
	return ibv_post_send(x->qp, &wr, &bad);
}

/*
 * One signaled RDMA op of @len bytes at x's buffer offset @off against
 * @raddr/@rkey (FETCH_AND_ADD adds @add), waited for: its status, or -1.
 */
static inline int rdma_op(struct ep *x, enum ibv_wr_opcode op, size_t off,
			  uint32_t len, uint64_t raddr, uint32_t rkey,
			  uint64_t add);

/* ---- completions ---- */

/* One completion from @cq within @ms: 1, 0 on timeout, -1 on poll error. */
static inline int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = now_ms() + ms;
	unsigned int spins = 0;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n > 0 ? 1 : -1;
		if (now_ms() > end)
			return 0;
		if (++spins < 64)
			sched_yield();
		else
			usleep(50);
	}
}

/* Up to @want completions into @wc within @ms; returns how many. */
static inline int drain(struct ibv_cq *cq, struct ibv_wc *wc, int want, int ms)
{
	uint64_t end = now_ms() + ms;
	int got = 0;

	while (got < want) {
		int left = (int)(end - now_ms());

		if (left < 0 || poll_one(cq, &wc[got], left) != 1)
			break;
		got++;
	}
	return got;
}

#define WAIT_WC(cq, wc) \
	ASSERT_EQ(1, poll_one((cq), &(wc), WC_MS)) \
		TH_LOG("no completion within %d ms", WC_MS)

#define ASSERT_WC(wc, st, op) do { \
	ASSERT_EQ((st), (wc).status) TH_LOG("status %s, wr_id %llu", \
		ibv_wc_status_str((wc).status), \
		(unsigned long long)(wc).wr_id); \
	if ((st) == IBV_WC_SUCCESS) \
		EXPECT_EQ((op), (wc).opcode); \
} while (0)

/*
 * Nothing completes on @cq for quiet_ms(): the last resort, where no
 * sentinel (expect_quiet_pair) can follow what must not complete.
 */
#define ASSERT_QUIET(cq) do { \
	struct ibv_wc __q; \
	ASSERT_EQ(0, poll_one((cq), &__q, quiet_ms())) \
		TH_LOG("unexpected completion: wr_id %llu status %s", \
		       (unsigned long long)__q.wr_id, \
		       ibv_wc_status_str(__q.status)); \
} while (0)

/* The wr_id and immediate of a sentinel: no test uses them for anything else. */
#define SENTINEL_ID 0x5e5e5e5eu

/*
 * Nothing more completes on @x's CQ, nor on @y's: a sentinel, not a wait.
 * After all that must not complete, a signaled zero-length SEND_WITH_IMM
 * from @x to @y, which must be the next completion of each: a send queue
 * completes in order, RC and UC deliver a QP's messages in order (as srnic
 * does one UD QP's datagrams to another).  Its receive is posted here, at
 * the end of @y's buffer; a receive @y had posted before may take it: the
 * immediate says which message came.
 */
static inline void expect_quiet_pair(struct __test_metadata *_metadata, struct ep *x,
				     struct ep *y)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(y, SENTINEL_ID, y->o.buf_len - 64, 64));
	ASSERT_EQ(0, post_send1(x, IBV_WR_SEND_WITH_IMM, SENTINEL_ID, 0, 0,
				IBV_SEND_SIGNALED, NULL, 0, SENTINEL_ID));
	WAIT_WC(x->cq, wc);
	ASSERT_TRUE(wc.wr_id == SENTINEL_ID && wc.status == IBV_WC_SUCCESS)
		TH_LOG("QP %u: before the sentinel's send, wr_id %llu (%s)", x->qp->qp_num,
		       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	WAIT_WC(y->cq, wc);
	ASSERT_TRUE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		    (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == SENTINEL_ID)
		TH_LOG("QP %u: before the sentinel's receive, wr_id %llu (%s, opcode %d)",
		       y->qp->qp_num, (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), wc.opcode);
}

/* The 40 bytes before a UD message: the GRH, for RoCEv2 an IP header. */
static inline void check_grh(struct __test_metadata *_metadata, const uint8_t *g,
		      const union ibv_gid *sgid, const union ibv_gid *dgid)
{
	const uint8_t *r = sgid->raw, *d = dgid->raw;
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!memcmp(r, v4, 12)) {
		/* IPv4: the header in the last 20 bytes. */
		EXPECT_EQ(0x45, g[20]);
		EXPECT_EQ(0, memcmp(g + 32, r + 12, 4));	/* source */
		EXPECT_EQ(0, memcmp(g + 36, d + 12, 4));	/* destination */
	} else {
		EXPECT_EQ(6, g[0] >> 4);
		EXPECT_EQ(0, memcmp(g + 8, r, 16));		/* SGID */
		EXPECT_EQ(0, memcmp(g + 24, d, 16));		/* DGID */
	}
}

/* ---- data patterns ---- */

static inline void fill(void *p, size_t n, unsigned int seed)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131 + seed * 29 + (i >> 9) + 1);
}

/* Offset of the first byte that is not fill(seed), or -1. */
static inline long verify(const void *p, size_t n, unsigned int seed)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(i * 131 + seed * 29 + (i >> 9) + 1))
			return (long)i;
	return -1;
}

/* Offset of the first byte that is not @v, or -1. */
static inline long all_eq(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return (long)i;
	return -1;
}

/*
 * After an error completion: the QP is in ERR, and the WRs listed (those
 * still outstanding on both queues) complete with IBV_WC_WR_FLUSH_ERR, in
 * any order between the queues.  (WRs posted once in ERR: post_in_err.)
 */
static inline void check_flushed(struct __test_metadata *_metadata, struct ep *x,
			  const uint64_t *ids, int n)
{
	struct ibv_wc wc[64];
	int seen[64] = {};
	int got;

	ASSERT_LE(n, 62);
	ASSERT_TRUE(wait_state(x->qp, IBV_QPS_ERR, WC_MS))
		TH_LOG("QP in state %d, not ERR", qp_state(x->qp));
	got = drain(x->cq, wc, n, WC_MS);
	ASSERT_EQ(n, got) TH_LOG("%d of %d outstanding WRs flushed", got, n);
	for (int i = 0; i < got; i++) {
		int k;

		for (k = 0; k < n; k++)
			if (ids[k] == wc[i].wr_id && !seen[k])
				break;
		ASSERT_LT(k, n) TH_LOG("unexpected wr_id %llu",
				       (unsigned long long)wc[i].wr_id);
		seen[k] = 1;
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status)
			TH_LOG("wr_id %llu: %s", (unsigned long long)wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status));
		EXPECT_EQ(x->qp->qp_num, wc[i].qp_num);
	}
}

/* ---- port counters ---- */

/* Port counter @name of device @dev (its hw_counters), or -1. */
static inline long long dev_counter(const char *dev, const char *name)
{
	char path[256], *s;
	long long v;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
		 dev, name);
	s = slurp(path);
	v = s ? atoll(s) : -1;
	free(s);
	return v;
}

/*
 * dev_counter() as the device has it now, for a count that must not have
 * moved: read once the core's copy of an earlier read has expired (the
 * port's hw_counters/lifespan, in ms, kept in jiffies: 20 ms more covers
 * any HZ).
 */
static inline long long dev_counter_now(const char *dev, const char *name)
{
	char path[256], *s;
	long ms;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/lifespan",
		 dev);
	s = slurp(path);
	ms = s ? atol(s) : 0;
	free(s);
	usleep((ms + 20) * 1000);
	return dev_counter(dev, name);
}

/*
 * dev_counter() once it has reached @want, or its value after a second:
 * the core keeps what it read for a few milliseconds (the port's
 * hw_counters/lifespan), so a read soon after another may be stale.
 */
static inline long long dev_counter_reaching(const char *dev, const char *name,
					     long long want)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	long long v = dev_counter(dev, name);

	for (int i = 0; i < 200 && v < want; i++) {
		nanosleep(&ts, NULL);
		v = dev_counter(dev, name);
	}
	return v;
}

/* ---- the engine ---- */

/* Whether debugfs "engine" shows the engine announcing NEED_WAKEUP. */
static inline int engine_asleep(const char *unused)
{
	char *s = slurp(dbg_path("engine")), *f;
	int asleep = 0;

	(void)unused;
	f = s ? strstr(s, " flags ") : NULL;
	if (f)
		asleep = strtoul(f + 7, NULL, 16) & 1;
	free(s);
	return asleep;
}

/* Waits (bounded) until the engine sleeps: the next post must wake it. */
static inline int wait_engine_asleep(int ms)
{
	return wait_until(engine_asleep, NULL, 1, ms);
}

/* rdma_op() with the local side given as @s (any buffer and lkey). */
static inline int rdma_op_sge(struct ep *x, enum ibv_wr_opcode op,
			      const struct ibv_sge *s, uint64_t raddr,
			      uint32_t rkey, uint64_t add)
{
	struct ibv_sge sge = *s;
	struct ibv_send_wr wr = {
		.wr_id = 0x0d, .sg_list = &sge, .num_sge = s->length ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(x->qp, &wr, &bad))
		return -1;
	return poll_one(x->cq, &wc, WC_MS) == 1 ? (int)wc.status : -1;
}

static inline int rdma_op(struct ep *x, enum ibv_wr_opcode op, size_t off,
			  uint32_t len, uint64_t raddr, uint32_t rkey,
			  uint64_t add)
{
	struct ibv_sge s = { (uintptr_t)x->buf + off, len, x->mr->lkey };

	return rdma_op_sge(x, op, &s, raddr, rkey, add);
}

#endif /* SRNIC_TRAFFIC_H */
