// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srnic's kernel verbs as kernel consumers (ib_cm, nvme-rdma, NFS over RDMA)
 * use them, through the RDMA core's kernel API only.
 *
 * Loaded with dev=<ib device>, the module runs every case in order while it
 * loads and prints, as TAP in the kernel log:
 *   srnic_kverbs: 1..N
 *   srnic_kverbs: ok N name            or   srnic_kverbs: not ok N name: reason
 *   srnic_kverbs: N passed, N failed
 * and, between them, notes of what a case saw ("srnic_kverbs: # ...").
 * The load succeeds whatever the results (tests/vm/kverbs.sh reads the
 * log); only a missing device fails it, with -EINVAL.  Every wait is
 * bounded: 5 s times the timescale parameter.  Everything a case makes is
 * freed before the next case, so the module unloads with nothing left.
 *
 * The device is used as srnic's users meet it: one port with RoCEv2 GIDs,
 * GID 0 the netdev's fe80 address; both QPs of a pair on this device, as
 * rdma_cm's loopback tests have them.  Buffers are kmalloc'd and mapped with
 * ib_dma_map_single(); soft devices use virtual DMA, so no sync is needed
 * between the CPU and the "device".
 */
#define pr_fmt(fmt) "srnic_kverbs: " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/timer.h>
#include <linux/hrtimer.h>
#include <linux/workqueue.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/restrack.h>

static char *dev;
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the ib device to test, e.g. srnic0");

static uint timescale = 1;
module_param(timescale, uint, 0444);
MODULE_PARM_DESC(timescale, "multiplies every time limit (5 s each); 8 on debug kernels");

#define KV_PORT		1
#define KV_CQE		128	/* entries of each CQ */
#define KV_QP_WR	32	/* send and receive WRs asked of each QP */
#define KV_QP_SGE	4
#define KV_INLINE	64
#define KV_PSN		0x1234
#define KV_QKEY		0x11110000
#define KV_GRH		40	/* a UD receive's GRH (RoCEv2: the IP header) */
#define KV_GUARD	0x5a	/* receive buffers start so: bytes past a message keep it */

struct kv_test {
	struct ib_device *dev;
	unsigned long timeout;		/* jiffies one wait may take */
	bool ready;			/* GID 0 is usable */
	union ib_gid gid;		/* port 1, GID index 0 */
	u8 mac[ETH_ALEN];		/* its netdev's address */
	enum rdma_network_type net_type;
	int res[RDMA_RESTRACK_MAX];	/* the core's object counts at load */
	bool stuck;			/* a drain never returned: keep the module */
	char why[200];			/* the running case's first failure */
};

static DEFINE_SPINLOCK(kv_lock);	/* an atomic section for posting */

/* ---- failures ---------------------------------------------------------- */

static __printf(2, 3) int kv_fail(struct kv_test *t, const char *fmt, ...)
{
	va_list ap;

	/* The first failure is the one worth reading; later ones follow. */
	if (!t->why[0]) {
		va_start(ap, fmt);
		vsnprintf(t->why, sizeof(t->why), fmt, ap);
		va_end(ap);
	}
	return -EIO;
}

/* Adds context to the reason already recorded. */
static __printf(2, 3) void kv_note(struct kv_test *t, const char *fmt, ...)
{
	size_t len = strlen(t->why);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why + len, sizeof(t->why) - len, fmt, ap);
	va_end(ap);
}

/* For functions with an int err and an out: label doing their cleanup. */
#define KV_CHECK(t, cond, fmt, ...)					\
	do {								\
		if (!(cond)) {						\
			err = kv_fail(t, "line %d: " fmt, __LINE__,	\
				      ##__VA_ARGS__);			\
			goto out;					\
		}							\
	} while (0)

/*
 * @expr gives 0 or -errno.  The reason of a helper that failed stays, with
 * the line that called it added (nested calls add theirs: a backtrace).
 */
#define KV_TRY(t, expr)							\
	do {								\
		err = (expr);						\
		if (err) {						\
			if ((t)->why[0])				\
				kv_note(t, " [line %d]", __LINE__);	\
			else						\
				kv_fail(t, "line %d: %s: %d", __LINE__,	\
					#expr, err);			\
			goto out;					\
		}							\
	} while (0)

/* ---- buffers ------------------------------------------------------------ */

struct kv_buf {
	void *va;
	u64 dma;
	size_t len;
};

/* A kmalloc'd buffer of @len bytes of KV_GUARD, mapped for the device. */
static int kv_buf_alloc(struct kv_test *t, struct kv_buf *b, size_t len)
{
	b->len = len;
	b->va = kmalloc(len ?: 1, GFP_KERNEL);
	if (!b->va)
		return kv_fail(t, "kmalloc(%zu) failed", len);
	memset(b->va, KV_GUARD, len);
	b->dma = ib_dma_map_single(t->dev, b->va, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(t->dev, b->dma)) {
		kfree(b->va);
		b->va = NULL;
		return kv_fail(t, "ib_dma_map_single(%zu) failed", len);
	}
	return 0;
}

static void kv_buf_free(struct kv_test *t, struct kv_buf *b)
{
	if (!b->va)
		return;
	ib_dma_unmap_single(t->dev, b->dma, b->len, DMA_BIDIRECTIONAL);
	kfree(b->va);
	b->va = NULL;
}

/* A pattern that differs per @seed and has no long run of one byte. */
static void kv_fill(struct kv_buf *b, size_t off, size_t len, u8 seed)
{
	u8 *p = b->va + off;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(seed + i * 13 + (i >> 8)) | 1;
}

static struct ib_sge kv_sge(const struct kv_buf *b, size_t off, u32 len,
			    u32 lkey)
{
	return (struct ib_sge){ .addr = b->dma + off, .length = len,
				.lkey = lkey };
}

/* @len bytes at @got equal those at @want; else the first that differs. */
static int kv_same(struct kv_test *t, const void *got, const void *want,
		   size_t len, const char *what)
{
	const u8 *g = got, *w = want;
	size_t i;

	for (i = 0; i < len; i++)
		if (g[i] != w[i])
			return kv_fail(t, "%s: byte %zu of %zu is 0x%02x, want 0x%02x",
				       what, i, len, g[i], w[i]);
	return 0;
}

/* Nothing was written to [@off, @off + @len) of @b. */
static int kv_untouched(struct kv_test *t, const struct kv_buf *b, size_t off,
			size_t len, const char *what)
{
	const u8 *p = b->va + off;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != KV_GUARD)
			return kv_fail(t, "%s: byte %zu written (0x%02x)", what,
				       off + i, p[i]);
	return 0;
}

/* ---- PDs, QPs and connections -------------------------------------------- */

static int kv_pd_alloc(struct kv_test *t, struct ib_pd **pd, unsigned int flags)
{
	*pd = ib_alloc_pd(t->dev, flags);
	if (IS_ERR(*pd)) {
		int err = PTR_ERR(*pd);

		*pd = NULL;
		return kv_fail(t, "ib_alloc_pd(0x%x): %d", flags, err);
	}
	return 0;
}

static void kv_pd_free(struct ib_pd **pd)
{
	if (*pd)
		ib_dealloc_pd(*pd);
	*pd = NULL;
}

/* An address vector to this port's GID 0, as kernel users give it: resolved. */
static void kv_av(struct kv_test *t, struct rdma_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah, KV_PORT);
	rdma_ah_set_grh(ah, &t->gid, 0, 0, 64, 0);
	memcpy(ah->roce.dmac, t->mac, ETH_ALEN);
}

/*
 * Two QPs of one type on the device, connected to each other (RC) or ready
 * to send (UD).  The caller sets type, PDs and optionally the CQs (else each
 * QP gets an IB_POLL_DIRECT CQ for both its queues) and the signalling
 * (default IB_SIGNAL_ALL_WR).
 */
struct kv_pair {
	enum ib_qp_type type;
	enum ib_sig_type sig;
	struct ib_pd *pd[2];
	struct ib_cq *cq[2];
	struct ib_qp *qp[2];
	struct ib_qp_cap cap[2];	/* what each QP got */
	bool init_only;			/* RC: leave both QPs in INIT */
	bool own_cq;
};

static int kv_qp_create(struct kv_test *t, struct kv_pair *p, int i)
{
	struct ib_qp_init_attr init = {
		.send_cq = p->cq[i],
		.recv_cq = p->cq[i],
		.cap = {
			.max_send_wr = KV_QP_WR,
			.max_recv_wr = KV_QP_WR,
			.max_send_sge = KV_QP_SGE,
			.max_recv_sge = KV_QP_SGE,
			.max_inline_data = KV_INLINE,
		},
		.sq_sig_type = p->sig,
		.qp_type = p->type,
		.port_num = KV_PORT,
	};
	struct ib_qp *qp = ib_create_qp(p->pd[i], &init);

	if (IS_ERR(qp))
		return kv_fail(t, "ib_create_qp(type %d): %ld", p->type,
			       PTR_ERR(qp));
	p->qp[i] = qp;
	p->cap[i] = init.cap;
	/* The core hands back what the QP got: at least what was asked. */
	if (init.cap.max_send_wr < KV_QP_WR || init.cap.max_recv_wr < KV_QP_WR ||
	    init.cap.max_send_sge < KV_QP_SGE ||
	    init.cap.max_recv_sge < KV_QP_SGE ||
	    init.cap.max_inline_data < KV_INLINE)
		return kv_fail(t, "QP %u got less than asked: wr %u/%u sge %u/%u inline %u",
			       qp->qp_num, init.cap.max_send_wr,
			       init.cap.max_recv_wr, init.cap.max_send_sge,
			       init.cap.max_recv_sge, init.cap.max_inline_data);
	return 0;
}

static int kv_modify(struct kv_test *t, struct ib_qp *qp,
		     struct ib_qp_attr *a, int mask)
{
	int err = ib_modify_qp(qp, a, mask);

	if (err)
		return kv_fail(t, "ib_modify_qp(QP %u to state %d): %d",
			       qp->qp_num, a->qp_state, err);
	return 0;
}

static int kv_rc_init(struct kv_test *t, struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = KV_PORT,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE |
				   IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_ATOMIC,
	};

	return kv_modify(t, qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			 IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * INIT to RTR toward QP @dqpn on this port's GID 0.  The responder asks for
 * RNR retries every 10 us (min_rnr_timer 1).
 */
static int kv_rc_rtr(struct kv_test *t, struct ib_qp *qp, u32 dqpn)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_RTR,
		.path_mtu = IB_MTU_1024,
		.dest_qp_num = dqpn,
		.rq_psn = KV_PSN,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 1,
	};

	kv_av(t, &a.ah_attr);
	return kv_modify(t, qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			 IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
}

/* RTR to RTS; RNR NAKs are retried for ever, so a SEND waits for its receive. */
static int kv_rc_rts(struct kv_test *t, struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = KV_PSN,
		.max_rd_atomic = 4,
	};

	return kv_modify(t, qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			 IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			 IB_QP_MAX_QP_RD_ATOMIC);
}

static int kv_rc_connect(struct kv_test *t, struct ib_qp *qp, u32 dqpn)
{
	return kv_rc_init(t, qp) ?: kv_rc_rtr(t, qp, dqpn) ?: kv_rc_rts(t, qp);
}

static int kv_ud_ready(struct kv_test *t, struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = KV_PORT,
		.qkey = KV_QKEY,
	};
	int err = 0;

	err = kv_modify(t, qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			IB_QP_PORT | IB_QP_QKEY);
	if (err)
		return err;
	a.qp_state = IB_QPS_RTR;
	err = kv_modify(t, qp, &a, IB_QP_STATE);
	if (err)
		return err;
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = KV_PSN;
	return kv_modify(t, qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
}

static void kv_pair_destroy(struct kv_test *t, struct kv_pair *p)
{
	int i, err;

	for (i = 0; i < 2; i++) {
		if (!p->qp[i])
			continue;
		err = ib_destroy_qp(p->qp[i]);
		if (err)
			kv_fail(t, "ib_destroy_qp: %d", err);
		p->qp[i] = NULL;
	}
	for (i = 0; p->own_cq && i < 2; i++) {
		if (p->cq[i])
			ib_free_cq(p->cq[i]);
		p->cq[i] = NULL;
	}
}

/* On failure the caller's cleanup still calls kv_pair_destroy(). */
static int kv_pair_create(struct kv_test *t, struct kv_pair *p)
{
	int i, err;

	if (!p->cq[0]) {
		p->own_cq = true;
		for (i = 0; i < 2; i++) {
			p->cq[i] = ib_alloc_cq(t->dev, NULL, KV_CQE, 0,
					       IB_POLL_DIRECT);
			if (IS_ERR(p->cq[i])) {
				err = PTR_ERR(p->cq[i]);
				p->cq[i] = NULL;
				return kv_fail(t, "ib_alloc_cq: %d", err);
			}
		}
	}
	for (i = 0; i < 2; i++) {
		err = kv_qp_create(t, p, i);
		if (err)
			return err;
	}
	for (i = 0; i < 2; i++) {
		if (p->type == IB_QPT_UD)
			err = kv_ud_ready(t, p->qp[i]);
		else if (p->init_only)
			err = kv_rc_init(t, p->qp[i]);
		else
			err = kv_rc_connect(t, p->qp[i], p->qp[!i]->qp_num);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The RC pair most cases use: QP 0 and QP 1 (the remote side) on PDs of
 * their own; with KV_GLOBAL_RKEY QP 1's PD has the unsafe global rkey, which
 * makes its memory a target for RDMA READ and WRITE (and the core log a
 * warning, hence not always).
 */
#define KV_GLOBAL_RKEY	IB_PD_UNSAFE_GLOBAL_RKEY

struct kv_rc {
	struct ib_pd *pd, *rpd;
	struct kv_pair p;
};

static int kv_rc_setup(struct kv_test *t, struct kv_rc *rc,
		       unsigned int remote_pd_flags)
{
	int err;

	memset(rc, 0, sizeof(*rc));
	err = kv_pd_alloc(t, &rc->pd, 0);
	if (!err)
		err = kv_pd_alloc(t, &rc->rpd, remote_pd_flags);
	if (err)
		return err;
	rc->p.type = IB_QPT_RC;
	rc->p.pd[0] = rc->pd;
	rc->p.pd[1] = rc->rpd;
	return kv_pair_create(t, &rc->p);
}

static void kv_rc_teardown(struct kv_test *t, struct kv_rc *rc)
{
	kv_pair_destroy(t, &rc->p);
	kv_pd_free(&rc->rpd);
	kv_pd_free(&rc->pd);
}

/* ---- posting and polling --------------------------------------------------- */

static int kv_post_send(struct kv_test *t, struct ib_qp *qp,
			const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad = NULL;
	int err = ib_post_send(qp, wr, &bad);

	if (err)
		return kv_fail(t, "ib_post_send(QP %u, wr_id %llu): %d",
			       qp->qp_num, wr->wr_id, err);
	return 0;
}

static int kv_post_recv(struct kv_test *t, struct ib_qp *qp,
			const struct ib_recv_wr *wr)
{
	const struct ib_recv_wr *bad = NULL;
	int err = ib_post_recv(qp, wr, &bad);

	if (err)
		return kv_fail(t, "ib_post_recv(QP %u, wr_id %llu): %d",
			       qp->qp_num, wr->wr_id, err);
	return 0;
}

/* Up to @n completions of @cq into @wc, until the deadline: how many came. */
static int kv_poll(struct kv_test *t, struct ib_cq *cq, struct ib_wc *wc, int n)
{
	unsigned long end = jiffies + t->timeout;
	int got = 0, r;

	while (got < n) {
		r = ib_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return kv_fail(t, "ib_poll_cq: %d", r);
		got += r;
		if (got == n || time_after(jiffies, end))
			break;
		usleep_range(20, 100);
	}
	return got;
}

/* Exactly @n completions of @cq within the deadline. */
static int kv_poll_n(struct kv_test *t, struct ib_cq *cq, struct ib_wc *wc,
		     int n, const char *what)
{
	int got = kv_poll(t, cq, wc, n);

	if (got < 0)
		return got;
	if (got < n)
		return kv_fail(t, "%s: %d of %d completions in %u ms", what,
			       got, n, jiffies_to_msecs(t->timeout));
	return 0;
}

/* Nothing (more) on @cq, a late completion given 20 ms to show. */
static int kv_poll_none(struct kv_test *t, struct ib_cq *cq, const char *what)
{
	struct ib_wc wc;
	int r;

	msleep(20 * timescale);
	r = ib_poll_cq(cq, 1, &wc);
	if (r < 0)
		return kv_fail(t, "ib_poll_cq: %d", r);
	/* wc.qp is not looked at: it may name a QP that is gone. */
	if (r)
		return kv_fail(t, "%s: unexpected completion wr_id %llu status %s opcode %d",
			       what, wc.wr_id, ib_wc_status_msg(wc.status),
			       wc.opcode);
	return 0;
}

/*
 * @wc is @qp's completion of @wr_id with @status, and, when successful,
 * @opcode and (unless negative) @byte_len.
 */
static int kv_expect(struct kv_test *t, const struct ib_wc *wc,
		     struct ib_qp *qp, u64 wr_id, enum ib_wc_status status,
		     enum ib_wc_opcode opcode, s64 byte_len)
{
	if (wc->status != status)
		return kv_fail(t, "wr_id %llu: status %s (vendor_err %u), want %s",
			       wc->wr_id, ib_wc_status_msg(wc->status),
			       wc->vendor_err, ib_wc_status_msg(status));
	if (wc->wr_id != wr_id)
		return kv_fail(t, "wr_id %llu, want %llu", wc->wr_id, wr_id);
	if (wc->qp != qp)
		return kv_fail(t, "wr_id %llu: wc->qp is not QP %u", wr_id,
			       qp->qp_num);
	if (status != IB_WC_SUCCESS)
		return 0;
	if (wc->opcode != opcode)
		return kv_fail(t, "wr_id %llu: opcode %d, want %d", wr_id,
			       wc->opcode, opcode);
	if (byte_len >= 0 && wc->byte_len != byte_len)
		return kv_fail(t, "wr_id %llu: byte_len %u, want %lld", wr_id,
			       wc->byte_len, byte_len);
	return 0;
}

/*
 * One message from QP 0 to QP 1 of @p: @rwr (if any) posted on QP 1, @swr
 * on QP 0, then each side's one completion.
 */
static int kv_exchange(struct kv_test *t, struct kv_pair *p,
		       const struct ib_send_wr *swr,
		       const struct ib_recv_wr *rwr, struct ib_wc *swc,
		       struct ib_wc *rwc)
{
	int err = rwr ? kv_post_recv(t, p->qp[1], rwr) : 0;

	if (!err)
		err = kv_post_send(t, p->qp[0], swr);
	if (!err)
		err = kv_poll_n(t, p->cq[0], swc, 1, "sender");
	if (!err && rwr)
		err = kv_poll_n(t, p->cq[1], rwc, 1, "receiver");
	return err;
}

static int kv_qp_state(struct kv_test *t, struct ib_qp *qp,
		       enum ib_qp_state want)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr a;
	int err = ib_query_qp(qp, &a, IB_QP_STATE, &init);

	if (err)
		return kv_fail(t, "ib_query_qp: %d", err);
	if (a.qp_state != want)
		return kv_fail(t, "QP %u in state %d, want %d", qp->qp_num,
			       a.qp_state, want);
	/* SMC-R reads cur_qp_state. */
	if (a.cur_qp_state != want)
		return kv_fail(t, "QP %u: cur_qp_state %d, qp_state %d",
			       qp->qp_num, a.cur_qp_state, a.qp_state);
	return 0;
}

/* ---- completions through wr_cqe (ib_alloc_cq's contexts) -------------------- */

struct kv_cqe {
	struct ib_cqe cqe;
	struct completion done;
	struct ib_wc wc;		/* a copy of the completion */
	bool softirq;			/* where ->done ran */
	bool worker;
	struct task_struct *task;
};

static void kv_cqe_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_cqe *c = container_of(wc->wr_cqe, struct kv_cqe, cqe);

	c->wc = *wc;
	c->softirq = in_serving_softirq();
	c->worker = current->flags & PF_WQ_WORKER;
	c->task = current;
	complete(&c->done);
}

static void kv_cqe_init(struct kv_cqe *c)
{
	memset(c, 0, sizeof(*c));
	c->cqe.done = kv_cqe_done;
	init_completion(&c->done);
}

/* Waits for @c's ->done; an IB_POLL_DIRECT @cq is polled from here. */
static int kv_cqe_wait(struct kv_test *t, struct ib_cq *cq, struct kv_cqe *c,
		       const char *what)
{
	unsigned long end = jiffies + t->timeout;

	if (cq->poll_ctx != IB_POLL_DIRECT) {
		if (!wait_for_completion_timeout(&c->done, t->timeout))
			return kv_fail(t, "%s: no ->done in %u ms", what,
				       jiffies_to_msecs(t->timeout));
		return 0;
	}
	while (!completion_done(&c->done)) {
		ib_process_cq_direct(cq, -1);
		if (completion_done(&c->done))
			break;
		if (time_after(jiffies, end))
			return kv_fail(t, "%s: no ->done in %u ms", what,
				       jiffies_to_msecs(t->timeout));
		usleep_range(20, 100);
	}
	return 0;
}

/* ======== the cases ======================================================= */

/* This port's GID 0: the netdev's fe80 address, RoCEv2, with its MAC. */
static int kv_case_gid(struct kv_test *t)
{
	const struct ib_gid_attr *attr = NULL;
	u16 vlan;
	int err = 0;

	KV_TRY(t, rdma_query_gid(t->dev, KV_PORT, 0, &t->gid));
	attr = rdma_get_gid_attr(t->dev, KV_PORT, 0);
	KV_CHECK(t, !IS_ERR(attr), "rdma_get_gid_attr: %ld", PTR_ERR(attr));
	KV_CHECK(t, t->gid.raw[0] == 0xfe && (t->gid.raw[1] & 0xc0) == 0x80,
		 "GID 0 is %pI6, not link-local", t->gid.raw);
	KV_CHECK(t, attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP,
		 "GID 0 has type %d, not RoCEv2", attr->gid_type);
	KV_CHECK(t, !memcmp(&attr->gid, &t->gid, sizeof(t->gid)),
		 "rdma_get_gid_attr and rdma_query_gid disagree");
	t->net_type = rdma_gid_attr_network_type(attr);
	KV_CHECK(t, t->net_type == RDMA_NETWORK_IPV6,
		 "GID 0's network type is %d", t->net_type);
	KV_TRY(t, rdma_read_gid_l2_fields(attr, &vlan, t->mac));
	t->ready = true;
out:
	if (!IS_ERR_OR_NULL(attr))
		rdma_put_gid_attr(attr);
	return err;
}

/* A PD's local_dma_lkey (and a global rkey when asked): the core's DMA MR. */
static int kv_case_pd(struct kv_test *t)
{
	struct ib_pd *pd = NULL, *gpd = NULL;
	int err = 0;

	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	KV_TRY(t, kv_pd_alloc(t, &gpd, IB_PD_UNSAFE_GLOBAL_RKEY));
	KV_CHECK(t, pd->local_dma_lkey, "local_dma_lkey is 0");
	KV_CHECK(t, !pd->unsafe_global_rkey, "a global rkey not asked for");
	KV_CHECK(t, gpd->local_dma_lkey && gpd->unsafe_global_rkey,
		 "lkey 0x%x, global rkey 0x%x", gpd->local_dma_lkey,
		 gpd->unsafe_global_rkey);
	/*
	 * IBK_LOCAL_DMA_LKEY: every kernel PD has the device's key (kernel
	 * memory, local access), and no MR of the table: the global rkey's
	 * MR is another key.
	 */
	KV_CHECK(t, pd->local_dma_lkey == t->dev->local_dma_lkey &&
		 gpd->local_dma_lkey == t->dev->local_dma_lkey,
		 "lkeys 0x%x and 0x%x, the device's 0x%x", pd->local_dma_lkey,
		 gpd->local_dma_lkey, t->dev->local_dma_lkey);
	KV_CHECK(t, gpd->unsafe_global_rkey != gpd->local_dma_lkey,
		 "the global rkey is the local_dma_lkey 0x%x",
		 gpd->local_dma_lkey);
out:
	kv_pd_free(&gpd);
	kv_pd_free(&pd);
	return err;
}

/*
 * An ib_alloc_cq CQ in @ctx: a SEND's two completions reach wr_cqe->done,
 * in the context the CQ was made for.
 */
static int kv_cq_ctx(struct kv_test *t, enum ib_poll_context ctx)
{
	struct kv_pair p = { .type = IB_QPT_RC };
	struct kv_buf sb = {}, rb = {};
	struct kv_cqe sc, rc;
	struct ib_sge ss, rs;
	struct ib_recv_wr rwr = { .wr_cqe = &rc.cqe, .sg_list = &rs,
				  .num_sge = 1 };
	struct ib_send_wr swr = { .wr_cqe = &sc.cqe, .sg_list = &ss,
				  .num_sge = 1, .opcode = IB_WR_SEND };
	struct ib_pd *pd = NULL;
	struct ib_cq *cq;
	int err = 0;

	kv_cqe_init(&sc);
	kv_cqe_init(&rc);
	cq = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, ctx);
	if (IS_ERR(cq)) {
		err = kv_fail(t, "ib_alloc_cq(ctx %d): %ld", ctx, PTR_ERR(cq));
		cq = NULL;
		goto out;
	}
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	p.cq[0] = p.cq[1] = cq;
	KV_TRY(t, kv_pair_create(t, &p));
	KV_TRY(t, kv_buf_alloc(t, &sb, 100));
	KV_TRY(t, kv_buf_alloc(t, &rb, 100));
	kv_fill(&sb, 0, 100, ctx);
	ss = kv_sge(&sb, 0, 100, pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, 100, pd->local_dma_lkey);
	KV_TRY(t, kv_post_recv(t, p.qp[1], &rwr));
	KV_TRY(t, kv_post_send(t, p.qp[0], &swr));
	KV_TRY(t, kv_cqe_wait(t, cq, &sc, "send"));
	KV_TRY(t, kv_cqe_wait(t, cq, &rc, "receive"));
	KV_TRY(t, kv_expect(t, &sc.wc, p.qp[0], (uintptr_t)&sc.cqe,
			    IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_expect(t, &rc.wc, p.qp[1], (uintptr_t)&rc.cqe,
			    IB_WC_SUCCESS, IB_WC_RECV, 100));
	KV_TRY(t, kv_same(t, rb.va, sb.va, 100, "received"));
	switch (ctx) {
	case IB_POLL_DIRECT:
		KV_CHECK(t, rc.task == current && sc.task == current,
			 "->done ran outside ib_process_cq_direct's caller");
		break;
	case IB_POLL_SOFTIRQ:
		KV_CHECK(t, rc.softirq && sc.softirq, "->done not in softirq");
		break;
	default:
		KV_CHECK(t, rc.worker && sc.worker,
			 "->done not in a workqueue worker");
		break;
	}
out:
	/* QPs first: after that nothing can complete into sc and rc. */
	kv_pair_destroy(t, &p);
	if (cq)
		ib_free_cq(cq);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

static int kv_case_cq_direct(struct kv_test *t)
{
	return kv_cq_ctx(t, IB_POLL_DIRECT);
}

static int kv_case_cq_softirq(struct kv_test *t)
{
	return kv_cq_ctx(t, IB_POLL_SOFTIRQ);
}

static int kv_case_cq_workqueue(struct kv_test *t)
{
	return kv_cq_ctx(t, IB_POLL_WORKQUEUE);
}

static int kv_case_cq_unbound_workqueue(struct kv_test *t)
{
	return kv_cq_ctx(t, IB_POLL_UNBOUND_WORKQUEUE);
}

/*
 * One SEND of @len bytes (no SGE for 0) into a receive buffer 64 bytes
 * larger, with immediate data if @imm; everything about both completions
 * and the bytes checked.
 */
static int kv_rc_send_one(struct kv_test *t, struct kv_rc *rc, u32 len,
			  const __be32 *imm, u64 id)
{
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss, rs;
	struct ib_recv_wr rwr = { .wr_id = id + 1, .sg_list = &rs,
				  .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = id, .sg_list = &ss,
				  .num_sge = len ? 1 : 0,
				  .opcode = imm ? IB_WR_SEND_WITH_IMM :
						  IB_WR_SEND };
	struct ib_wc swc, rwc;
	int err = 0;

	KV_TRY(t, kv_buf_alloc(t, &sb, len));
	KV_TRY(t, kv_buf_alloc(t, &rb, len + 64));
	kv_fill(&sb, 0, len, id);
	ss = kv_sge(&sb, 0, len, rc->pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, len + 64, rc->rpd->local_dma_lkey);
	if (imm)
		swr.ex.imm_data = *imm;
	KV_TRY(t, kv_exchange(t, &rc->p, &swr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &swc, rc->p.qp[0], id, IB_WC_SUCCESS,
			    IB_WC_SEND, -1));
	KV_TRY(t, kv_expect(t, &rwc, rc->p.qp[1], id + 1, IB_WC_SUCCESS,
			    IB_WC_RECV, len));
	if (imm) {
		KV_CHECK(t, rwc.wc_flags & IB_WC_WITH_IMM,
			 "no IB_WC_WITH_IMM (wc_flags 0x%x)", rwc.wc_flags);
		KV_CHECK(t, rwc.ex.imm_data == *imm, "imm 0x%x, want 0x%x",
			 be32_to_cpu(rwc.ex.imm_data), be32_to_cpu(*imm));
	} else {
		KV_CHECK(t, !(rwc.wc_flags & IB_WC_WITH_IMM),
			 "IB_WC_WITH_IMM on a plain SEND");
	}
	KV_TRY(t, kv_same(t, rb.va, sb.va, len, "received"));
	KV_TRY(t, kv_untouched(t, &rb, len, 64, "past the message"));
out:
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	return err;
}

static int kv_case_rc_send_sizes(struct kv_test *t)
{
	static const u32 sizes[] = { 0, 1, 4096, 200000 };
	struct kv_rc rc;
	int err = 0, i;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		err = kv_rc_send_one(t, &rc, sizes[i], NULL, 10 * i + 10);
		if (err) {
			kv_note(t, " (size %u)", sizes[i]);
			goto out;
		}
	}
	KV_TRY(t, kv_poll_none(t, rc.p.cq[0], "sender"));
	KV_TRY(t, kv_poll_none(t, rc.p.cq[1], "receiver"));
out:
	kv_rc_teardown(t, &rc);
	return err;
}

/* Three send SGEs at odd offsets into two receive SGEs that split differently. */
static int kv_case_rc_send_multi_sge(struct kv_test *t)
{
	static const struct { u32 off, len; } seg[] = {
		{ 3, 100 }, { 1000, 1 }, { 4097, 3000 },
	};
	struct kv_buf sb = {}, rb1 = {}, rb2 = {}, want = {};
	struct ib_sge ss[3], rs[2];
	struct ib_recv_wr rwr = { .wr_id = 2, .sg_list = rs, .num_sge = 2 };
	struct ib_send_wr swr = { .wr_id = 1, .sg_list = ss, .num_sge = 3,
				  .opcode = IB_WR_SEND };
	u32 total = 0, i;
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_buf_alloc(t, &sb, 8192));
	KV_TRY(t, kv_buf_alloc(t, &want, 8192));
	KV_TRY(t, kv_buf_alloc(t, &rb1, 2000));
	KV_TRY(t, kv_buf_alloc(t, &rb2, 4000));
	kv_fill(&sb, 0, sb.len, 7);
	for (i = 0; i < ARRAY_SIZE(seg); i++) {
		ss[i] = kv_sge(&sb, seg[i].off, seg[i].len,
			       rc.pd->local_dma_lkey);
		memcpy(want.va + total, sb.va + seg[i].off, seg[i].len);
		total += seg[i].len;
	}
	/* 1,500 bytes land at offset 5 of the first buffer, the rest in the second. */
	rs[0] = kv_sge(&rb1, 5, 1500, rc.rpd->local_dma_lkey);
	rs[1] = kv_sge(&rb2, 0, rb2.len, rc.rpd->local_dma_lkey);
	KV_TRY(t, kv_exchange(t, &rc.p, &swr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND,
			    -1));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 2, IB_WC_SUCCESS, IB_WC_RECV,
			    total));
	KV_TRY(t, kv_untouched(t, &rb1, 0, 5, "first receive SGE, before"));
	KV_TRY(t, kv_same(t, rb1.va + 5, want.va, 1500, "first receive SGE"));
	KV_TRY(t, kv_untouched(t, &rb1, 1505, rb1.len - 1505,
			       "first receive buffer, past its SGE"));
	KV_TRY(t, kv_same(t, rb2.va, want.va + 1500, total - 1500,
			  "second receive SGE"));
	KV_TRY(t, kv_untouched(t, &rb2, total - 1500, rb2.len - (total - 1500),
			       "second receive SGE, past the message"));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &want);
	kv_buf_free(t, &rb1);
	kv_buf_free(t, &rb2);
	return err;
}

static int kv_case_rc_send_with_imm(struct kv_test *t)
{
	static const u32 sizes[] = { 0, 33, 70000 };
	__be32 imm = cpu_to_be32(0xdeadbeef);
	struct kv_rc rc;
	int err = 0, i;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		imm = cpu_to_be32(0xdeadbe00 + i);
		err = kv_rc_send_one(t, &rc, sizes[i], &imm, 10 * i + 10);
		if (err) {
			kv_note(t, " (size %u)", sizes[i]);
			goto out;
		}
	}
out:
	kv_rc_teardown(t, &rc);
	return err;
}

/*
 * IB_SIGNAL_REQ_WR, as most ULPs create their QPs: an unsignaled SEND makes
 * no completion, the signaled one after it does; both are received.
 */
static int kv_case_rc_unsignaled(struct kv_test *t)
{
	struct kv_pair p = { .type = IB_QPT_RC, .sig = IB_SIGNAL_REQ_WR };
	struct ib_recv_wr rwr[2] = {
		{ .wr_id = 11, .next = &rwr[1] }, { .wr_id = 12 },
	};
	struct ib_send_wr swr[2] = {
		{ .wr_id = 1, .opcode = IB_WR_SEND, .next = &swr[1] },
		{ .wr_id = 2, .opcode = IB_WR_SEND,
		  .send_flags = IB_SEND_SIGNALED },
	};
	struct ib_wc wc[2];
	struct ib_pd *pd = NULL;
	int err = 0;

	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	KV_TRY(t, kv_pair_create(t, &p));
	KV_TRY(t, kv_post_recv(t, p.qp[1], rwr));
	KV_TRY(t, kv_post_send(t, p.qp[0], swr));
	KV_TRY(t, kv_poll_n(t, p.cq[1], wc, 2, "receiver"));
	KV_TRY(t, kv_expect(t, &wc[0], p.qp[1], 11, IB_WC_SUCCESS, IB_WC_RECV, 0));
	KV_TRY(t, kv_expect(t, &wc[1], p.qp[1], 12, IB_WC_SUCCESS, IB_WC_RECV, 0));
	KV_TRY(t, kv_poll_n(t, p.cq[0], wc, 1, "sender"));
	KV_TRY(t, kv_expect(t, &wc[0], p.qp[0], 2, IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_poll_none(t, p.cq[0], "sender, after the signaled SEND"));
out:
	kv_pair_destroy(t, &p);
	kv_pd_free(&pd);
	return err;
}

/*
 * As ULPs do through rdma_cm: receives posted while the QP is in INIT, the
 * SEND taken while the receiver is still in RTR (it never goes to RTS).
 */
static int kv_case_rc_recv_before_rts(struct kv_test *t)
{
	struct kv_pair p = { .type = IB_QPT_RC, .init_only = true };
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss, rs;
	struct ib_recv_wr rwr = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 1, .sg_list = &ss, .num_sge = 1,
				  .opcode = IB_WR_SEND };
	struct ib_pd *pd = NULL;
	struct ib_wc swc, rwc;
	int err = 0;

	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	KV_TRY(t, kv_pair_create(t, &p));
	KV_TRY(t, kv_buf_alloc(t, &sb, 256));
	KV_TRY(t, kv_buf_alloc(t, &rb, 256));
	kv_fill(&sb, 0, sb.len, 17);
	ss = kv_sge(&sb, 0, 256, pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, 256, pd->local_dma_lkey);
	KV_TRY(t, kv_post_recv(t, p.qp[1], &rwr));
	KV_TRY(t, kv_rc_rtr(t, p.qp[1], p.qp[0]->qp_num));
	KV_TRY(t, kv_rc_rtr(t, p.qp[0], p.qp[1]->qp_num));
	KV_TRY(t, kv_rc_rts(t, p.qp[0]));
	KV_TRY(t, kv_post_send(t, p.qp[0], &swr));
	KV_TRY(t, kv_poll_n(t, p.cq[0], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, p.cq[1], &rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &swc, p.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_expect(t, &rwc, p.qp[1], 2, IB_WC_SUCCESS, IB_WC_RECV,
			    256));
	KV_TRY(t, kv_same(t, rb.va, sb.va, 256, "received"));
	KV_TRY(t, kv_qp_state(t, p.qp[1], IB_QPS_RTR));
out:
	kv_pair_destroy(t, &p);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

/*
 * Back to RESET and connected again, as rdma_cm's users may do: a receive
 * posted before the reset is gone without a completion, and the rings
 * start over (the next messages use the new receives).
 */
static int kv_case_qp_reset_reconnect(struct kv_test *t)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_RESET };
	struct ib_recv_wr rwr = { .wr_id = 77 };
	struct kv_rc rc;
	int err = 0, i;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_rc_send_one(t, &rc, 100, NULL, 10));
	KV_TRY(t, kv_post_recv(t, rc.p.qp[1], &rwr));
	for (i = 0; i < 2; i++) {
		KV_TRY(t, kv_modify(t, rc.p.qp[i], &a, IB_QP_STATE));
		KV_TRY(t, kv_qp_state(t, rc.p.qp[i], IB_QPS_RESET));
	}
	KV_TRY(t, kv_poll_none(t, rc.p.cq[1], "receiver, after the reset"));
	for (i = 0; i < 2; i++)
		KV_TRY(t, kv_rc_connect(t, rc.p.qp[i], rc.p.qp[!i]->qp_num));
	for (i = 0; i < 3; i++)
		KV_TRY(t, kv_rc_send_one(t, &rc, 300 + i, NULL, 20 + 10 * i));
out:
	kv_rc_teardown(t, &rc);
	return err;
}

/* RDMA WRITE of 10,000 bytes into the remote PD's memory by its global rkey. */
static int kv_case_rc_rdma_write(struct kv_test *t)
{
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss;
	struct ib_rdma_wr w = {
		.wr = { .wr_id = 5, .sg_list = &ss, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE },
	};
	struct ib_wc swc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, KV_GLOBAL_RKEY));
	KV_TRY(t, kv_buf_alloc(t, &sb, 10000));
	KV_TRY(t, kv_buf_alloc(t, &rb, 10016));
	kv_fill(&sb, 0, sb.len, 3);
	ss = kv_sge(&sb, 0, 10000, rc.pd->local_dma_lkey);
	w.remote_addr = rb.dma + 8;
	w.rkey = rc.rpd->unsafe_global_rkey;
	KV_TRY(t, kv_exchange(t, &rc.p, &w.wr, NULL, &swc, NULL));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 5, IB_WC_SUCCESS,
			    IB_WC_RDMA_WRITE, -1));
	KV_TRY(t, kv_untouched(t, &rb, 0, 8, "before the target"));
	KV_TRY(t, kv_same(t, rb.va + 8, sb.va, 10000, "written"));
	KV_TRY(t, kv_untouched(t, &rb, 10008, 8, "past the target"));
	/* A WRITE consumes no receive and completes nothing remotely. */
	KV_TRY(t, kv_poll_none(t, rc.p.cq[1], "target"));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	return err;
}

/* WRITE_WITH_IMM: the data by rkey, the immediate in a receive (no SGE). */
static int kv_case_rc_rdma_write_with_imm(struct kv_test *t)
{
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss;
	struct ib_recv_wr rwr = { .wr_id = 6 };
	struct ib_rdma_wr w = {
		.wr = { .wr_id = 5, .sg_list = &ss, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM,
			.ex.imm_data = cpu_to_be32(0x01020304) },
	};
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, KV_GLOBAL_RKEY));
	KV_TRY(t, kv_buf_alloc(t, &sb, 300));
	KV_TRY(t, kv_buf_alloc(t, &rb, 364));
	kv_fill(&sb, 0, sb.len, 9);
	ss = kv_sge(&sb, 0, 300, rc.pd->local_dma_lkey);
	w.remote_addr = rb.dma;
	w.rkey = rc.rpd->unsafe_global_rkey;
	KV_TRY(t, kv_exchange(t, &rc.p, &w.wr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 5, IB_WC_SUCCESS,
			    IB_WC_RDMA_WRITE, -1));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 6, IB_WC_SUCCESS,
			    IB_WC_RECV_RDMA_WITH_IMM, 300));
	KV_CHECK(t, rwc.wc_flags & IB_WC_WITH_IMM, "no IB_WC_WITH_IMM");
	KV_CHECK(t, rwc.ex.imm_data == cpu_to_be32(0x01020304), "imm 0x%x",
		 be32_to_cpu(rwc.ex.imm_data));
	KV_TRY(t, kv_same(t, rb.va, sb.va, 300, "written"));
	KV_TRY(t, kv_untouched(t, &rb, 300, 64, "past the target"));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	return err;
}

/* RDMA READ of 5,000 bytes of the remote PD's memory into two local SGEs. */
static int kv_case_rc_rdma_read(struct kv_test *t)
{
	struct kv_buf lb = {}, rb = {};
	struct ib_sge ls[2];
	struct ib_rdma_wr r = {
		.wr = { .wr_id = 8, .sg_list = ls, .num_sge = 2,
			.opcode = IB_WR_RDMA_READ },
	};
	struct ib_wc swc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, KV_GLOBAL_RKEY));
	KV_TRY(t, kv_buf_alloc(t, &rb, 5000));
	KV_TRY(t, kv_buf_alloc(t, &lb, 5032));
	kv_fill(&rb, 0, rb.len, 11);
	/* 1,000 bytes at 0, a gap of 16, 4,000 bytes at 1,016. */
	ls[0] = kv_sge(&lb, 0, 1000, rc.pd->local_dma_lkey);
	ls[1] = kv_sge(&lb, 1016, 4000, rc.pd->local_dma_lkey);
	r.remote_addr = rb.dma;
	r.rkey = rc.rpd->unsafe_global_rkey;
	KV_TRY(t, kv_exchange(t, &rc.p, &r.wr, NULL, &swc, NULL));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 8, IB_WC_SUCCESS,
			    IB_WC_RDMA_READ, 5000));
	KV_TRY(t, kv_same(t, lb.va, rb.va, 1000, "read, first SGE"));
	KV_TRY(t, kv_untouched(t, &lb, 1000, 16, "between the SGEs"));
	KV_TRY(t, kv_same(t, lb.va + 1016, rb.va + 1000, 4000,
			  "read, second SGE"));
	KV_TRY(t, kv_untouched(t, &lb, 5016, 16, "past the SGEs"));
	KV_TRY(t, kv_poll_none(t, rc.p.cq[1], "target"));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &lb);
	kv_buf_free(t, &rb);
	return err;
}

/*
 * An MR giving remote atomic access to all of @pd's kernel memory.  The
 * unsafe global rkey grants remote READ and WRITE only (__ib_alloc_pd asks
 * the driver for no more), and kernel verbs have no other way to a DMA MR,
 * so this one is made as __ib_alloc_pd() makes a PD's own.
 */
static struct ib_mr *kv_atomic_mr(struct ib_pd *pd)
{
	struct ib_mr *mr;

	mr = pd->device->ops.get_dma_mr(pd, IB_ACCESS_LOCAL_WRITE |
					IB_ACCESS_REMOTE_READ |
					IB_ACCESS_REMOTE_WRITE |
					IB_ACCESS_REMOTE_ATOMIC);
	if (IS_ERR(mr))
		return mr;
	mr->device = pd->device;
	mr->pd = pd;
	mr->type = IB_MR_TYPE_DMA;
	mr->uobject = NULL;
	mr->need_inval = false;
	return mr;
}

/* One atomic on the u64 at @rb; checks what it returned and left there. */
static int kv_atomic_one(struct kv_test *t, struct kv_rc *rc, u32 rkey,
			 enum ib_wr_opcode op, u64 compare_add, u64 swap,
			 struct kv_buf *lb, struct kv_buf *rb, u64 old, u64 now)
{
	struct ib_sge ls = kv_sge(lb, 0, 8, rc->pd->local_dma_lkey);
	struct ib_atomic_wr a = {
		.wr = { .wr_id = op, .sg_list = &ls, .num_sge = 1,
			.opcode = op },
		.remote_addr = rb->dma,
		.compare_add = compare_add,
		.swap = swap,
		.rkey = rkey,
	};
	enum ib_wc_opcode wop = op == IB_WR_ATOMIC_CMP_AND_SWP ?
					IB_WC_COMP_SWAP : IB_WC_FETCH_ADD;
	struct ib_wc swc;
	int err = 0;

	memset(lb->va, KV_GUARD, lb->len);
	KV_TRY(t, kv_exchange(t, &rc->p, &a.wr, NULL, &swc, NULL));
	KV_TRY(t, kv_expect(t, &swc, rc->p.qp[0], op, IB_WC_SUCCESS, wop, 8));
	KV_CHECK(t, *(u64 *)lb->va == old, "op %d returned 0x%llx, want 0x%llx",
		 op, *(u64 *)lb->va, old);
	KV_CHECK(t, *(u64 *)rb->va == now, "op %d left 0x%llx, want 0x%llx",
		 op, *(u64 *)rb->va, now);
	KV_TRY(t, kv_untouched(t, lb, 8, lb->len - 8, "past the result"));
	KV_TRY(t, kv_untouched(t, rb, 8, rb->len - 8, "past the target"));
out:
	return err;
}

static int kv_case_rc_atomics(struct kv_test *t)
{
	struct kv_buf lb = {}, rb = {};
	struct ib_mr *mr = NULL;
	struct kv_rc rc;
	u32 rkey;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	mr = kv_atomic_mr(rc.rpd);
	if (IS_ERR(mr)) {
		err = kv_fail(t, "get_dma_mr(REMOTE_ATOMIC): %ld", PTR_ERR(mr));
		mr = NULL;
		goto out;
	}
	rkey = mr->rkey;
	KV_TRY(t, kv_buf_alloc(t, &lb, 16));
	KV_TRY(t, kv_buf_alloc(t, &rb, 16));
	*(u64 *)rb.va = 0x1000;
	KV_TRY(t, kv_atomic_one(t, &rc, rkey, IB_WR_ATOMIC_CMP_AND_SWP, 0x1000,
				0x2000, &lb, &rb, 0x1000, 0x2000));
	/* A compare that fails returns the value and swaps nothing. */
	KV_TRY(t, kv_atomic_one(t, &rc, rkey, IB_WR_ATOMIC_CMP_AND_SWP, 0x1,
				0x3, &lb, &rb, 0x2000, 0x2000));
	KV_TRY(t, kv_atomic_one(t, &rc, rkey, IB_WR_ATOMIC_FETCH_AND_ADD, 5, 0,
				&lb, &rb, 0x2000, 0x2005));
	KV_TRY(t, kv_atomic_one(t, &rc, rkey, IB_WR_ATOMIC_FETCH_AND_ADD,
				-0x2006ULL, 0, &lb, &rb, 0x2005, ~0ULL));
	KV_TRY(t, kv_poll_none(t, rc.p.cq[1], "target"));
out:
	/* The QPs that used the MR go first; the MR before its PD. */
	kv_pair_destroy(t, &rc.p);
	if (mr) {
		int derr = mr->device->ops.dereg_mr(mr, NULL);

		if (derr)
			kv_fail(t, "dereg_mr: %d", derr);
	}
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &lb);
	kv_buf_free(t, &rb);
	return err;
}

/*
 * IB_SEND_INLINE: the bytes are taken at post time, so the source may be
 * rewritten at once and needs no lkey (0 here); two SGEs filling exactly
 * max_inline_data; one byte more fails the post with -EINVAL, and so does
 * a READ or a fetching atomic with IB_SEND_INLINE (their answer lands in
 * the list; the engine would have placed it nowhere).
 */
static int kv_case_rc_send_inline(struct kv_test *t)
{
	struct kv_buf sb = {}, orig = {}, rb = {};
	const struct ib_send_wr *bad = NULL;
	struct ib_sge ss[2], rs;
	struct ib_recv_wr rwr = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 1, .sg_list = ss, .num_sge = 2,
				  .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_INLINE };
	struct ib_rdma_wr rd = { .wr = { .wr_id = 3, .num_sge = 1,
					 .opcode = IB_WR_RDMA_READ,
					 .send_flags = IB_SEND_INLINE } };
	struct ib_atomic_wr aw = { .wr = { .wr_id = 4, .num_sge = 1,
					   .opcode = IB_WR_ATOMIC_FETCH_AND_ADD,
					   .send_flags = IB_SEND_INLINE } };
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	u32 max;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	max = rc.p.cap[0].max_inline_data;
	KV_TRY(t, kv_buf_alloc(t, &sb, max + 1));
	KV_TRY(t, kv_buf_alloc(t, &orig, max + 1));
	KV_TRY(t, kv_buf_alloc(t, &rb, max + 64));
	kv_fill(&sb, 0, sb.len, 21);
	memcpy(orig.va, sb.va, sb.len);
	ss[0] = kv_sge(&sb, 0, 10, 0);
	ss[1] = kv_sge(&sb, 10, max - 10, 0);
	rs = kv_sge(&rb, 0, rb.len, rc.rpd->local_dma_lkey);
	KV_TRY(t, kv_post_recv(t, rc.p.qp[1], &rwr));
	KV_TRY(t, kv_post_send(t, rc.p.qp[0], &swr));
	memset(sb.va, 0, sb.len);
	KV_TRY(t, kv_poll_n(t, rc.p.cq[0], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[1], &rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND,
			    -1));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 2, IB_WC_SUCCESS, IB_WC_RECV,
			    max));
	KV_TRY(t, kv_same(t, rb.va, orig.va, max, "received"));
	KV_TRY(t, kv_untouched(t, &rb, max, 64, "past the message"));

	ss[1].length = max - 10 + 1;
	err = ib_post_send(rc.p.qp[0], &swr, &bad);
	KV_CHECK(t, err == -EINVAL && bad == &swr,
		 "%u inline bytes (max %u): %d, bad_wr %s", max + 1, max, err,
		 bad == &swr ? "right" : "wrong");
	ss[0].length = 8;
	rd.wr.sg_list = ss;
	err = ib_post_send(rc.p.qp[0], &rd.wr, &bad);
	KV_CHECK(t, err == -EINVAL && bad == &rd.wr,
		 "READ with IB_SEND_INLINE: %d", err);
	aw.wr.sg_list = ss;
	err = ib_post_send(rc.p.qp[0], &aw.wr, &bad);
	KV_CHECK(t, err == -EINVAL && bad == &aw.wr,
		 "FETCH_AND_ADD with IB_SEND_INLINE: %d", err);
	err = 0;
	KV_TRY(t, kv_poll_none(t, rc.p.cq[0], "sender, after a refused post"));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &orig);
	kv_buf_free(t, &rb);
	return err;
}

/*
 * A UD datagram of @len bytes from QP @from of @p to QP !@from through @ah;
 * the receive holds the 40-byte GRH (here the IPv6 header) then the data.
 * *@rwc and @rb are left for the caller.
 */
static int kv_ud_send_one(struct kv_test *t, struct kv_pair *p, int from,
			  struct ib_ah *ah, u32 len, u8 seed, struct kv_buf *rb,
			  struct ib_wc *rwc)
{
	struct ib_qp *src = p->qp[from], *dst = p->qp[!from];
	struct kv_buf sb = {};
	struct ib_sge ss, rs;
	struct ib_recv_wr rwr = { .wr_id = 100 + seed, .sg_list = &rs,
				  .num_sge = 1 };
	struct ib_ud_wr u = {
		.wr = { .wr_id = seed, .sg_list = &ss, .num_sge = 1,
			.opcode = IB_WR_SEND },
		.ah = ah,
		.remote_qpn = dst->qp_num,
		.remote_qkey = KV_QKEY,
	};
	const struct ipv6hdr *ip6 = rb->va;
	struct ib_wc swc;
	int err = 0;

	KV_TRY(t, kv_buf_alloc(t, &sb, len));
	kv_fill(&sb, 0, len, seed);
	memset(rb->va, KV_GUARD, rb->len);
	ss = kv_sge(&sb, 0, len, p->pd[from]->local_dma_lkey);
	rs = kv_sge(rb, 0, rb->len, p->pd[!from]->local_dma_lkey);
	KV_TRY(t, kv_post_recv(t, dst, &rwr));
	KV_TRY(t, kv_post_send(t, src, &u.wr));
	KV_TRY(t, kv_poll_n(t, p->cq[from], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, p->cq[!from], rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &swc, src, seed, IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_expect(t, rwc, dst, 100 + seed, IB_WC_SUCCESS, IB_WC_RECV,
			    KV_GRH + len));
	KV_CHECK(t, rwc->src_qp == src->qp_num, "src_qp %u, want %u",
		 rwc->src_qp, src->qp_num);
	KV_CHECK(t, (rwc->wc_flags & (IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE)) ==
			    (IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE),
		 "wc_flags 0x%x: no GRH or network header type", rwc->wc_flags);
	KV_CHECK(t, rwc->network_hdr_type == t->net_type,
		 "network_hdr_type %d, want %d (GID 0's)",
		 rwc->network_hdr_type, t->net_type);
	KV_CHECK(t, ip6->version == 6 && ip6->nexthdr == IPPROTO_UDP,
		 "GRH is no IPv6/UDP header (version %d, next %d)",
		 ip6->version, ip6->nexthdr);
	KV_CHECK(t, !memcmp(&ip6->saddr, &t->gid, 16) &&
			    !memcmp(&ip6->daddr, &t->gid, 16),
		 "GRH addresses %pI6 -> %pI6, want GID 0 both", &ip6->saddr,
		 &ip6->daddr);
	KV_TRY(t, kv_same(t, rb->va + KV_GRH, sb.va, len, "received"));
	KV_TRY(t, kv_untouched(t, rb, KV_GRH + len, rb->len - KV_GRH - len,
			       "past the datagram"));
out:
	kv_buf_free(t, &sb);
	return err;
}

static int kv_ud_setup(struct kv_test *t, struct kv_pair *p, struct ib_pd **pd)
{
	int err = kv_pd_alloc(t, pd, 0);

	if (err)
		return err;
	p->type = IB_QPT_UD;
	p->pd[0] = p->pd[1] = *pd;
	return kv_pair_create(t, p);
}

/*
 * UD SEND through an AH made and destroyed in atomic context (as ib_cm and
 * ib_mad do): rdma_create_ah(..., 0) and rdma_destroy_ah(..., 0) under a
 * spinlock with interrupts off.
 */
static int kv_case_ud_send(struct kv_test *t)
{
	struct kv_pair p = {};
	struct ib_pd *pd = NULL;
	struct rdma_ah_attr attr;
	struct kv_buf rb = {};
	struct ib_ah *ah = NULL;
	unsigned long flags;
	struct ib_wc rwc;
	int err = 0;

	KV_TRY(t, kv_ud_setup(t, &p, &pd));
	KV_TRY(t, kv_buf_alloc(t, &rb, KV_GRH + 512 + 64));
	kv_av(t, &attr);
	spin_lock_irqsave(&kv_lock, flags);
	ah = rdma_create_ah(pd, &attr, 0);
	spin_unlock_irqrestore(&kv_lock, flags);
	if (IS_ERR(ah)) {
		err = kv_fail(t, "rdma_create_ah (atomic): %ld", PTR_ERR(ah));
		ah = NULL;
		goto out;
	}
	KV_TRY(t, kv_ud_send_one(t, &p, 0, ah, 512, 1, &rb, &rwc));
	/* And the other way, through the same AH (same GID). */
	KV_TRY(t, kv_ud_send_one(t, &p, 1, ah, 1, 2, &rb, &rwc));
out:
	if (ah) {
		spin_lock_irqsave(&kv_lock, flags);
		rdma_destroy_ah(ah, 0);
		spin_unlock_irqrestore(&kv_lock, flags);
	}
	kv_pair_destroy(t, &p);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

/*
 * What ib_mad and ib_cm do to answer a datagram: an AH from the receive's
 * completion and GRH (ib_create_ah_from_wc), then the reply through it.
 */
static int kv_case_ud_reply_ah_from_wc(struct kv_test *t)
{
	struct ib_ah *ah = NULL, *reply = NULL;
	struct kv_pair p = {};
	struct ib_pd *pd = NULL;
	struct rdma_ah_attr attr;
	struct kv_buf rb = {};
	struct ib_wc rwc;
	int err = 0;

	KV_TRY(t, kv_ud_setup(t, &p, &pd));
	KV_TRY(t, kv_buf_alloc(t, &rb, KV_GRH + 256 + 64));
	kv_av(t, &attr);
	ah = rdma_create_ah(pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		err = kv_fail(t, "rdma_create_ah: %ld", PTR_ERR(ah));
		ah = NULL;
		goto out;
	}
	KV_TRY(t, kv_ud_send_one(t, &p, 0, ah, 256, 3, &rb, &rwc));
	reply = ib_create_ah_from_wc(pd, &rwc, rb.va, KV_PORT);
	if (IS_ERR(reply)) {
		err = kv_fail(t, "ib_create_ah_from_wc: %ld", PTR_ERR(reply));
		reply = NULL;
		goto out;
	}
	KV_TRY(t, kv_ud_send_one(t, &p, 1, reply, 200, 4, &rb, &rwc));
out:
	if (reply)
		rdma_destroy_ah(reply, RDMA_DESTROY_AH_SLEEPABLE);
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	kv_pair_destroy(t, &p);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

/*
 * A datagram with the wrong Q_Key is dropped: the SEND completes, no
 * receive is used up; the next one, with the right Q_Key, takes it.
 */
static int kv_case_ud_wrong_qkey(struct kv_test *t)
{
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss, rs;
	struct ib_recv_wr rwr = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 };
	struct ib_ud_wr u = {
		.wr = { .wr_id = 1, .sg_list = &ss, .num_sge = 1,
			.opcode = IB_WR_SEND },
		.remote_qkey = KV_QKEY + 1,
	};
	struct kv_pair p = {};
	struct ib_pd *pd = NULL;
	struct rdma_ah_attr attr;
	struct ib_ah *ah = NULL;
	struct ib_wc swc, rwc;
	int err = 0;

	KV_TRY(t, kv_ud_setup(t, &p, &pd));
	KV_TRY(t, kv_buf_alloc(t, &sb, 64));
	KV_TRY(t, kv_buf_alloc(t, &rb, KV_GRH + 64));
	kv_fill(&sb, 0, 64, 2);
	ss = kv_sge(&sb, 0, 64, pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, rb.len, pd->local_dma_lkey);
	kv_av(t, &attr);
	ah = rdma_create_ah(pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		err = kv_fail(t, "rdma_create_ah: %ld", PTR_ERR(ah));
		ah = NULL;
		goto out;
	}
	u.ah = ah;
	u.remote_qpn = p.qp[1]->qp_num;
	KV_TRY(t, kv_post_recv(t, p.qp[1], &rwr));
	KV_TRY(t, kv_post_send(t, p.qp[0], &u.wr));
	KV_TRY(t, kv_poll_n(t, p.cq[0], &swc, 1, "sender"));
	KV_TRY(t, kv_expect(t, &swc, p.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_poll_none(t, p.cq[1], "receiver of a wrong Q_Key"));
	u.wr.wr_id = 2;
	u.remote_qkey = KV_QKEY;
	KV_TRY(t, kv_post_send(t, p.qp[0], &u.wr));
	KV_TRY(t, kv_poll_n(t, p.cq[0], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, p.cq[1], &rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &rwc, p.qp[1], 9, IB_WC_SUCCESS, IB_WC_RECV,
			    KV_GRH + 64));
	KV_TRY(t, kv_same(t, rb.va + KV_GRH, sb.va, 64, "received"));
out:
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	kv_pair_destroy(t, &p);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

/*
 * The GSI QP (QP1, which ib_mad runs) end to end, as rdma_cm's CM MADs use
 * it: a Get of a class no agent serves, sent from a UD QP to QPN 1 with
 * the GSI Q_Key, is answered by ib_mad (a GetResp with status "unsupported
 * method/attribute", through an AH made from our datagram's GRH).
 */
static int kv_case_gsi_mad_reply(struct kv_test *t)
{
	struct ib_qp_attr qa = { .qkey = IB_QP1_QKEY };
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss, rs;
	struct ib_recv_wr rwr = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 };
	struct ib_ud_wr u = {
		.wr = { .wr_id = 1, .sg_list = &ss, .num_sge = 1,
			.opcode = IB_WR_SEND },
		.remote_qpn = 1,
		.remote_qkey = IB_QP1_QKEY,
	};
	const struct ib_mad_hdr *resp;
	struct ib_mad_hdr *req;
	struct kv_pair p = {};
	struct ib_pd *pd = NULL;
	struct rdma_ah_attr attr;
	struct ib_ah *ah = NULL;
	struct ib_wc swc, rwc;
	int err = 0;

	KV_TRY(t, kv_ud_setup(t, &p, &pd));
	/* GSI answers come with QP1's Q_Key. */
	KV_TRY(t, kv_modify(t, p.qp[0], &qa, IB_QP_QKEY));
	KV_TRY(t, kv_buf_alloc(t, &sb, sizeof(struct ib_mad)));
	KV_TRY(t, kv_buf_alloc(t, &rb, KV_GRH + sizeof(struct ib_mad)));
	memset(sb.va, 0, sb.len);
	req = sb.va;
	req->base_version = IB_MGMT_BASE_VERSION;
	req->mgmt_class = 0x0a;		/* vendor range 1: no agent here */
	req->class_version = 1;
	req->method = IB_MGMT_METHOD_GET;
	req->tid = cpu_to_be64(0x5352c0ffee000001ULL);
	req->attr_id = cpu_to_be16(0x10);
	ss = kv_sge(&sb, 0, sb.len, pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, rb.len, pd->local_dma_lkey);
	kv_av(t, &attr);
	ah = rdma_create_ah(pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		err = kv_fail(t, "rdma_create_ah: %ld", PTR_ERR(ah));
		ah = NULL;
		goto out;
	}
	u.ah = ah;
	KV_TRY(t, kv_post_recv(t, p.qp[0], &rwr));
	KV_TRY(t, kv_post_send(t, p.qp[0], &u.wr));
	KV_TRY(t, kv_poll_n(t, p.cq[0], &swc, 1, "MAD sent"));
	KV_TRY(t, kv_expect(t, &swc, p.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_poll_n(t, p.cq[0], &rwc, 1, "ib_mad's answer"));
	KV_TRY(t, kv_expect(t, &rwc, p.qp[0], 9, IB_WC_SUCCESS, IB_WC_RECV,
			    KV_GRH + sizeof(struct ib_mad)));
	KV_CHECK(t, rwc.src_qp == 1, "answer from QP %u", rwc.src_qp);
	KV_CHECK(t, rwc.wc_flags & IB_WC_GRH, "no GRH");
	resp = rb.va + KV_GRH;
	KV_CHECK(t, resp->method == IB_MGMT_METHOD_GET_RESP &&
			    resp->tid == req->tid &&
			    resp->mgmt_class == req->mgmt_class &&
			    resp->status == cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB),
		 "answer: method 0x%x class 0x%x status 0x%x tid %llx",
		 resp->method, resp->mgmt_class, be16_to_cpu(resp->status),
		 be64_to_cpu(resp->tid));
out:
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	kv_pair_destroy(t, &p);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

/* ---- posting from atomic context -------------------------------------------- */

/* A SEND of 64 bytes and its receive, prepared for posting from anywhere. */
struct kv_msg {
	struct kv_buf sb, rb;
	struct ib_sge ss, rs;
	struct ib_send_wr swr;
	struct ib_recv_wr rwr;
};

static int kv_msg_init(struct kv_test *t, struct kv_rc *rc, struct kv_msg *m,
		       u64 id)
{
	int err = 0;

	memset(m, 0, sizeof(*m));
	err = kv_buf_alloc(t, &m->sb, 64);
	if (!err)
		err = kv_buf_alloc(t, &m->rb, 64);
	if (err)
		return err;
	kv_fill(&m->sb, 0, 64, id);
	m->ss = kv_sge(&m->sb, 0, 64, rc->pd->local_dma_lkey);
	m->rs = kv_sge(&m->rb, 0, 64, rc->rpd->local_dma_lkey);
	m->swr = (struct ib_send_wr){ .wr_id = id, .sg_list = &m->ss,
				      .num_sge = 1, .opcode = IB_WR_SEND };
	m->rwr = (struct ib_recv_wr){ .wr_id = id + 1, .sg_list = &m->rs,
				      .num_sge = 1 };
	return 0;
}

static void kv_msg_free(struct kv_test *t, struct kv_msg *m)
{
	kv_buf_free(t, &m->sb);
	kv_buf_free(t, &m->rb);
}

/* The message posted (by whoever) arrives whole and both sides complete. */
static int kv_msg_check(struct kv_test *t, struct kv_rc *rc, struct kv_msg *m)
{
	struct ib_wc swc, rwc;
	int err = 0;

	KV_TRY(t, kv_poll_n(t, rc->p.cq[0], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, rc->p.cq[1], &rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &swc, rc->p.qp[0], m->swr.wr_id, IB_WC_SUCCESS,
			    IB_WC_SEND, -1));
	KV_TRY(t, kv_expect(t, &rwc, rc->p.qp[1], m->rwr.wr_id, IB_WC_SUCCESS,
			    IB_WC_RECV, 64));
	KV_TRY(t, kv_same(t, m->rb.va, m->sb.va, 64, "received"));
out:
	return err;
}

/* Posting with interrupts off and a spinlock held; a poll in there too. */
static int kv_case_post_irqs_off(struct kv_test *t)
{
	int rerr, serr, polled;
	unsigned long flags;
	struct kv_msg m = {};
	struct ib_wc wc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_msg_init(t, &rc, &m, 30));
	spin_lock_irqsave(&kv_lock, flags);
	rerr = ib_post_recv(rc.p.qp[1], &m.rwr, NULL);
	serr = ib_post_send(rc.p.qp[0], &m.swr, NULL);
	/* Polling an empty (or not yet full) CQ must be fine here too. */
	polled = ib_poll_cq(rc.p.cq[1], 0, &wc);
	spin_unlock_irqrestore(&kv_lock, flags);
	KV_CHECK(t, !rerr && !serr && !polled,
		 "post_recv %d, post_send %d, poll_cq(0) %d", rerr, serr,
		 polled);
	KV_TRY(t, kv_msg_check(t, &rc, &m));
out:
	kv_rc_teardown(t, &rc);
	kv_msg_free(t, &m);
	return err;
}

/* Posting from a timer (softirq) and from an hrtimer (hard interrupt). */
struct kv_deferred {
	struct timer_list timer;
	struct hrtimer hrtimer;
	struct kv_rc *rc;
	struct kv_msg *m;
	int send_ret, recv_ret, polled;
	bool softirq, hardirq;
	struct completion done;
};

static void kv_deferred_post(struct kv_deferred *d)
{
	struct ib_wc wc;

	d->softirq = in_serving_softirq();
	d->hardirq = in_hardirq();
	d->recv_ret = ib_post_recv(d->rc->p.qp[1], &d->m->rwr, NULL);
	d->send_ret = ib_post_send(d->rc->p.qp[0], &d->m->swr, NULL);
	d->polled = ib_poll_cq(d->rc->p.cq[1], 0, &wc);
	complete(&d->done);
}

static void kv_timer_fn(struct timer_list *tl)
{
	struct kv_deferred *d = from_timer(d, tl, timer);

	kv_deferred_post(d);
}

static enum hrtimer_restart kv_hrtimer_fn(struct hrtimer *h)
{
	kv_deferred_post(container_of(h, struct kv_deferred, hrtimer));
	return HRTIMER_NORESTART;
}

/* The timers are not on the stack, which debugobjects would have annotated. */
static int kv_post_deferred(struct kv_test *t, bool hard)
{
	struct kv_deferred *d;
	struct kv_msg m = {};
	struct kv_rc rc;
	int err = 0;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return kv_fail(t, "no memory");
	init_completion(&d->done);
	d->rc = &rc;
	d->m = &m;
	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_msg_init(t, &rc, &m, 40));
	if (hard) {
		hrtimer_init(&d->hrtimer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
		d->hrtimer.function = kv_hrtimer_fn;
		hrtimer_start(&d->hrtimer, ms_to_ktime(1), HRTIMER_MODE_REL_HARD);
	} else {
		timer_setup(&d->timer, kv_timer_fn, 0);
		mod_timer(&d->timer, jiffies + 1);
	}
	if (!wait_for_completion_timeout(&d->done, t->timeout))
		err = kv_fail(t, "the timer never ran");
	/* The callback may still be returning: wait for it to be done. */
	if (hard)
		hrtimer_cancel(&d->hrtimer);
	else
		del_timer_sync(&d->timer);
	if (err)
		goto out;
	KV_CHECK(t, hard ? d->hardirq : d->softirq && !d->hardirq,
		 "the callback ran in neither the %s context (softirq %d, hardirq %d)",
		 hard ? "hard interrupt" : "softirq", d->softirq, d->hardirq);
	KV_CHECK(t, !d->recv_ret && !d->send_ret && !d->polled,
		 "post_recv %d, post_send %d, poll_cq(0) %d", d->recv_ret,
		 d->send_ret, d->polled);
	KV_TRY(t, kv_msg_check(t, &rc, &m));
out:
	kv_rc_teardown(t, &rc);
	kv_msg_free(t, &m);
	kfree(d);
	return err;
}

static int kv_case_post_from_timer(struct kv_test *t)
{
	return kv_post_deferred(t, false);
}

static int kv_case_post_from_hrtimer(struct kv_test *t)
{
	return kv_post_deferred(t, true);
}


/*
 * A ULP's message loop driven by its completions alone, in softirq: each
 * receive's ->done checks the message (its number in the first 4 bytes)
 * and posts the next receive; each SEND's ->done posts the next SEND.
 */
#define KV_CHAIN	200

struct kv_chain {
	struct ib_cqe scqe, rcqe;
	struct ib_qp *sqp, *rqp;
	struct ib_sge ss, rs;
	struct kv_buf sb, rb;
	atomic_t sent, recvd;
	atomic_t failed;
	char why[120];			/* the first failure, from softirq */
	struct completion done;		/* once per side, or on failure */
};

static __printf(2, 3) void kv_chain_fail(struct kv_chain *c,
					 const char *fmt, ...)
{
	va_list ap;

	if (atomic_cmpxchg(&c->failed, 0, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	complete_all(&c->done);
}

static void kv_chain_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_chain *c = container_of(wc->wr_cqe, struct kv_chain, rcqe);
	struct ib_recv_wr rwr = { .wr_cqe = &c->rcqe, .sg_list = &c->rs,
				  .num_sge = 1 };
	int n = atomic_read(&c->recvd), err;

	if (wc->status || wc->opcode != IB_WC_RECV || wc->byte_len != 64 ||
	    wc->qp != c->rqp || *(u32 *)c->rb.va != n) {
		kv_chain_fail(c, "receive %d: status %s opcode %d len %u number %u",
			      n, ib_wc_status_msg(wc->status), wc->opcode,
			      wc->byte_len, *(u32 *)c->rb.va);
		return;
	}
	if (atomic_inc_return(&c->recvd) == KV_CHAIN) {
		complete(&c->done);
		return;
	}
	err = ib_post_recv(c->rqp, &rwr, NULL);
	if (err)
		kv_chain_fail(c, "ib_post_recv in ->done: %d", err);
}

static void kv_chain_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_chain *c = container_of(wc->wr_cqe, struct kv_chain, scqe);
	struct ib_send_wr swr = { .wr_cqe = &c->scqe, .sg_list = &c->ss,
				  .num_sge = 1, .opcode = IB_WR_SEND };
	int n, err;

	if (wc->status || wc->opcode != IB_WC_SEND || wc->qp != c->sqp) {
		kv_chain_fail(c, "SEND %d: status %s opcode %d",
			      atomic_read(&c->sent),
			      ib_wc_status_msg(wc->status), wc->opcode);
		return;
	}
	n = atomic_inc_return(&c->sent);
	if (n == KV_CHAIN) {
		complete(&c->done);
		return;
	}
	/* The last SEND is complete: its buffer is ours again. */
	*(u32 *)c->sb.va = n;
	err = ib_post_send(c->sqp, &swr, NULL);
	if (err)
		kv_chain_fail(c, "ib_post_send in ->done: %d", err);
}

static int kv_case_chain_softirq(struct kv_test *t)
{
	struct kv_pair p = { .type = IB_QPT_RC };
	struct kv_chain *c = NULL;
	struct ib_pd *pd = NULL;
	struct ib_cq *cq = NULL;
	unsigned long left = t->timeout;
	int err = 0, side;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	KV_CHECK(t, c, "no memory");
	init_completion(&c->done);
	c->scqe.done = kv_chain_send_done;
	c->rcqe.done = kv_chain_recv_done;
	cq = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(cq)) {
		err = kv_fail(t, "ib_alloc_cq: %ld", PTR_ERR(cq));
		cq = NULL;
		goto out;
	}
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	p.cq[0] = p.cq[1] = cq;
	KV_TRY(t, kv_pair_create(t, &p));
	c->sqp = p.qp[0];
	c->rqp = p.qp[1];
	KV_TRY(t, kv_buf_alloc(t, &c->sb, 64));
	KV_TRY(t, kv_buf_alloc(t, &c->rb, 64));
	*(u32 *)c->sb.va = 0;
	c->ss = kv_sge(&c->sb, 0, 64, pd->local_dma_lkey);
	c->rs = kv_sge(&c->rb, 0, 64, pd->local_dma_lkey);
	{
		struct ib_recv_wr rwr = { .wr_cqe = &c->rcqe,
					  .sg_list = &c->rs, .num_sge = 1 };
		struct ib_send_wr swr = { .wr_cqe = &c->scqe,
					  .sg_list = &c->ss, .num_sge = 1,
					  .opcode = IB_WR_SEND };

		KV_TRY(t, kv_post_recv(t, c->rqp, &rwr));
		KV_TRY(t, kv_post_send(t, c->sqp, &swr));
	}
	for (side = 0; side < 2 && left; side++)
		left = wait_for_completion_timeout(&c->done, left);
	KV_CHECK(t, !atomic_read(&c->failed), "%s", c->why);
	KV_CHECK(t, left, "%d SENDs and %d receives of %d in %u ms",
		 atomic_read(&c->sent), atomic_read(&c->recvd), KV_CHAIN,
		 jiffies_to_msecs(t->timeout));
out:
	/* No completion after the QPs, no ->done after ib_free_cq. */
	kv_pair_destroy(t, &p);
	if (cq)
		ib_free_cq(cq);
	if (c) {
		kv_buf_free(t, &c->sb);
		kv_buf_free(t, &c->rb);
	}
	kfree(c);
	kv_pd_free(&pd);
	return err;
}

/*
 * A full send queue refuses more: N = max_send_wr zero-length SENDs wait
 * for receives the peer has not posted (RNR, retried for ever), so nothing
 * completes; a chain of N + 1 posts N and fails the last with -ENOMEM, and
 * so does one more.  A full receive queue likewise.  Once the peer posts
 * its receives, exactly the N accepted SENDs complete, in order.
 */
static int kv_case_queue_full(struct kv_test *t)
{
	const struct ib_send_wr *sbad = NULL;
	const struct ib_recv_wr *rbad = NULL;
	struct ib_send_wr *swr = NULL;
	struct ib_recv_wr *rwr = NULL;
	struct ib_wc *wc = NULL;
	struct kv_rc rc;
	u32 n, m, i;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	n = rc.p.cap[0].max_send_wr;
	m = rc.p.cap[0].max_recv_wr;
	KV_CHECK(t, rc.p.cap[1].max_recv_wr >= n && KV_CQE >= n + 1,
		 "peer RQ %u or CQ %u smaller than the SQ %u",
		 rc.p.cap[1].max_recv_wr, KV_CQE, n);
	swr = kcalloc(n + 2, sizeof(*swr), GFP_KERNEL);
	rwr = kcalloc(m + 1, sizeof(*rwr), GFP_KERNEL);
	wc = kcalloc(n + 1, sizeof(*wc), GFP_KERNEL);
	KV_CHECK(t, swr && rwr && wc, "no memory");
	for (i = 0; i < n + 2; i++) {
		swr[i].wr_id = i;
		swr[i].opcode = IB_WR_SEND;
		swr[i].next = i < n ? &swr[i + 1] : NULL;
	}
	err = ib_post_send(rc.p.qp[0], swr, &sbad);
	KV_CHECK(t, err == -ENOMEM && sbad == &swr[n],
		 "%u SENDs on a queue of %u: %d, bad_wr is WR %ld", n + 1, n,
		 err, sbad ? (long)(sbad - swr) : -1L);
	sbad = NULL;
	err = ib_post_send(rc.p.qp[0], &swr[n + 1], &sbad);
	KV_CHECK(t, err == -ENOMEM && sbad == &swr[n + 1],
		 "a SEND on a full queue: %d", err);

	for (i = 0; i < m + 1; i++) {
		rwr[i].wr_id = 1000 + i;
		rwr[i].next = i < m ? &rwr[i + 1] : NULL;
	}
	err = ib_post_recv(rc.p.qp[0], rwr, &rbad);
	KV_CHECK(t, err == -ENOMEM && rbad == &rwr[m],
		 "%u receives on a queue of %u: %d, bad_wr is WR %ld", m + 1,
		 m, err, rbad ? (long)(rbad - rwr) : -1L);
	err = 0;
	KV_TRY(t, kv_poll_none(t, rc.p.cq[0], "sender, no receive posted yet"));

	/* The peer's receives: rwr[] again, now on QP 1, n of them. */
	for (i = 0; i < n; i++) {
		rwr[i].wr_id = 2000 + i;
		rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
	}
	KV_TRY(t, kv_post_recv(t, rc.p.qp[1], rwr));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[0], wc, n, "sender"));
	for (i = 0; i < n; i++)
		KV_TRY(t, kv_expect(t, &wc[i], rc.p.qp[0], i, IB_WC_SUCCESS,
				    IB_WC_SEND, -1));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[1], wc, n, "receiver"));
	for (i = 0; i < n; i++)
		KV_TRY(t, kv_expect(t, &wc[i], rc.p.qp[1], 2000 + i,
				    IB_WC_SUCCESS, IB_WC_RECV, 0));
	KV_TRY(t, kv_poll_none(t, rc.p.cq[0], "sender, after the N SENDs"));
out:
	kv_rc_teardown(t, &rc);
	kfree(swr);
	kfree(rwr);
	kfree(wc);
	return err;
}

/*
 * More SGEs than the QP has fail the post with -EINVAL, that WR and none
 * before it: in a chain of two, the first is posted and completes.
 */
static int kv_case_sge_over_cap(struct kv_test *t)
{
	const struct ib_send_wr *sbad = NULL;
	const struct ib_recv_wr *rbad = NULL;
	struct ib_sge *sge = NULL;
	struct kv_buf b = {};
	struct ib_send_wr swr[2] = {};
	struct ib_recv_wr rwr = { .wr_id = 9 };
	struct ib_wc swc, rwc;
	u32 ns, nr, i;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	ns = rc.p.cap[0].max_send_sge + 1;
	nr = rc.p.cap[1].max_recv_sge + 1;
	KV_TRY(t, kv_buf_alloc(t, &b, max(ns, nr)));
	sge = kcalloc(max(ns, nr), sizeof(*sge), GFP_KERNEL);
	KV_CHECK(t, sge, "no memory");
	for (i = 0; i < max(ns, nr); i++)
		sge[i] = kv_sge(&b, i, 1, rc.rpd->local_dma_lkey);

	rwr.sg_list = sge;
	rwr.num_sge = nr;
	err = ib_post_recv(rc.p.qp[1], &rwr, &rbad);
	KV_CHECK(t, err == -EINVAL && rbad == &rwr,
		 "a receive with %u SGEs (max %u): %d", nr, nr - 1, err);

	/* QP 0's SGEs name its own PD's memory. */
	for (i = 0; i < ns; i++)
		sge[i].lkey = rc.pd->local_dma_lkey;
	/* A zero-length SEND, then one with too many SGEs. */
	swr[0] = (struct ib_send_wr){ .wr_id = 1, .opcode = IB_WR_SEND,
				      .next = &swr[1] };
	swr[1] = (struct ib_send_wr){ .wr_id = 2, .opcode = IB_WR_SEND,
				      .sg_list = sge, .num_sge = ns };
	rwr = (struct ib_recv_wr){ .wr_id = 9 };
	KV_TRY(t, kv_post_recv(t, rc.p.qp[1], &rwr));
	err = ib_post_send(rc.p.qp[0], swr, &sbad);
	KV_CHECK(t, err == -EINVAL && sbad == &swr[1],
		 "a SEND with %u SGEs (max %u) second in a chain: %d, bad_wr %s",
		 ns, ns - 1, err, sbad == &swr[1] ? "right" : "wrong");
	KV_TRY(t, kv_poll_n(t, rc.p.cq[0], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[1], &rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND,
			    -1));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 9, IB_WC_SUCCESS, IB_WC_RECV,
			    0));
	KV_TRY(t, kv_poll_none(t, rc.p.cq[0], "sender, after the one SEND"));
out:
	kv_rc_teardown(t, &rc);
	kfree(sge);
	kv_buf_free(t, &b);
	return err;
}

/* ---- notification ------------------------------------------------------------- */

struct kv_notify {
	atomic_t events;
	struct completion fired;
};

static void kv_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct kv_notify *n = ctx;

	atomic_inc(&n->events);
	complete(&n->fired);
}

/* A CQ of our own with kv_comp_handler, polled by us (ib_create_cq). */
static int kv_notify_cq(struct kv_test *t, struct kv_notify *n,
			struct ib_cq **cq)
{
	struct ib_cq_init_attr ca = { .cqe = KV_CQE };

	atomic_set(&n->events, 0);
	init_completion(&n->fired);
	*cq = ib_create_cq(t->dev, kv_comp_handler, NULL, n, &ca);
	if (IS_ERR(*cq)) {
		int err = PTR_ERR(*cq);

		*cq = NULL;
		return kv_fail(t, "ib_create_cq: %d", err);
	}
	return 0;
}

/* A zero-length SEND over @p (both QPs on @cq); both completions polled. */
static int kv_ping(struct kv_test *t, struct kv_pair *p, struct ib_cq *cq,
		   int send_flags)
{
	struct ib_recv_wr rwr = { .wr_id = 2 };
	struct ib_send_wr swr = { .wr_id = 1, .opcode = IB_WR_SEND,
				  .send_flags = send_flags };
	struct ib_wc wc[2];
	int err = 0;

	err = kv_post_recv(t, p->qp[1], &rwr);
	if (!err)
		err = kv_post_send(t, p->qp[0], &swr);
	if (!err)
		err = kv_poll_n(t, cq, wc, 2, "ping");
	if (!err && (wc[0].status || wc[1].status))
		err = kv_fail(t, "ping: status %s, %s",
			      ib_wc_status_msg(wc[0].status),
			      ib_wc_status_msg(wc[1].status));
	return err;
}

/* As kv_ping, but the completions are left in the CQ. */
static int kv_ping_post(struct kv_test *t, struct kv_pair *p, int send_flags)
{
	struct ib_recv_wr rwr = { .wr_id = 2 };
	struct ib_send_wr swr = { .wr_id = 1, .opcode = IB_WR_SEND,
				  .send_flags = send_flags };
	int err = kv_post_recv(t, p->qp[1], &rwr);

	return err ?: kv_post_send(t, p->qp[0], &swr);
}

static int kv_wait_event(struct kv_test *t, struct kv_notify *n,
			 const char *what)
{
	if (!wait_for_completion_timeout(&n->fired, t->timeout))
		return kv_fail(t, "%s: no completion event in %u ms", what,
			       jiffies_to_msecs(t->timeout));
	return 0;
}

/*
 * ib_req_notify_cq(NEXT_COMP | REPORT_MISSED_EVENTS): 0 on an empty CQ,
 * > 0 when an entry is there; the comp_handler runs once for the next
 * completion after arming, and again only after the next arm.
 */
static int kv_case_notify(struct kv_test *t)
{
	const int next = IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS;
	struct kv_pair p = { .type = IB_QPT_RC };
	struct ib_pd *pd = NULL;
	struct ib_cq *cq = NULL;
	struct kv_notify n;
	struct ib_wc wc[2];
	int err = 0, r;

	KV_TRY(t, kv_notify_cq(t, &n, &cq));
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	p.cq[0] = p.cq[1] = cq;
	KV_TRY(t, kv_pair_create(t, &p));

	r = ib_req_notify_cq(cq, next);
	KV_CHECK(t, r == 0, "arming an empty CQ returned %d", r);
	KV_TRY(t, kv_ping(t, &p, cq, 0));
	KV_TRY(t, kv_wait_event(t, &n, "first arm"));
	/* Two completions, one arm: one event. */
	msleep(20 * timescale);
	KV_CHECK(t, atomic_read(&n.events) == 1, "%d events for one arm",
		 atomic_read(&n.events));

	/* An entry there when arming: reported, not lost. */
	reinit_completion(&n.fired);
	r = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	KV_CHECK(t, r == 0, "arming (no REPORT_MISSED_EVENTS) returned %d", r);
	KV_TRY(t, kv_ping_post(t, &p, 0));
	KV_TRY(t, kv_wait_event(t, &n, "second arm"));
	r = ib_req_notify_cq(cq, next);
	KV_CHECK(t, r > 0, "arming over an unpolled entry returned %d", r);
	KV_TRY(t, kv_poll_n(t, cq, wc, 2, "second ping"));

	/* Polled empty: arming says so, and the next completion fires. */
	msleep(20 * timescale);
	reinit_completion(&n.fired);
	r = ib_req_notify_cq(cq, next);
	KV_CHECK(t, r == 0, "arming an emptied CQ returned %d", r);
	KV_TRY(t, kv_ping(t, &p, cq, 0));
	KV_TRY(t, kv_wait_event(t, &n, "third arm"));
out:
	kv_pair_destroy(t, &p);
	if (cq)
		ib_destroy_cq(cq);
	kv_pd_free(&pd);
	return err;
}

/* IB_CQ_SOLICITED: an unsolicited message raises no event, a solicited one does. */
static int kv_case_notify_solicited(struct kv_test *t)
{
	struct kv_pair p = { .type = IB_QPT_RC };
	struct ib_pd *pd = NULL;
	struct ib_cq *cq = NULL;
	struct kv_notify n;
	int err = 0, r;

	KV_TRY(t, kv_notify_cq(t, &n, &cq));
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	p.cq[0] = p.cq[1] = cq;
	KV_TRY(t, kv_pair_create(t, &p));

	r = ib_req_notify_cq(cq, IB_CQ_SOLICITED);
	KV_CHECK(t, r == 0, "arming returned %d", r);
	KV_TRY(t, kv_ping(t, &p, cq, 0));
	msleep(20 * timescale);
	KV_CHECK(t, !atomic_read(&n.events),
		 "an event for an unsolicited message");
	KV_TRY(t, kv_ping(t, &p, cq, IB_SEND_SOLICITED));
	KV_TRY(t, kv_wait_event(t, &n, "solicited message"));
out:
	kv_pair_destroy(t, &p);
	if (cq)
		ib_destroy_cq(cq);
	kv_pd_free(&pd);
	return err;
}

/* ---- draining and destroying ------------------------------------------------------ */

struct kv_drain {
	struct work_struct work;
	struct ib_qp *qp;
	struct completion done;
};

static void kv_drain_fn(struct work_struct *w)
{
	struct kv_drain *d = container_of(w, struct kv_drain, work);

	ib_drain_qp(d->qp);
	complete(&d->done);
}

/*
 * ib_drain_qp() waits without a limit: it runs in a work item and is waited
 * for with one.  If it never returns, its QP, CQ and our module stay.
 */
static int kv_drain(struct kv_test *t, struct ib_qp *qp)
{
	struct kv_drain *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return kv_fail(t, "no memory");
	INIT_WORK(&d->work, kv_drain_fn);
	init_completion(&d->done);
	d->qp = qp;
	queue_work(system_unbound_wq, &d->work);
	if (!wait_for_completion_timeout(&d->done, t->timeout)) {
		t->stuck = true;
		__module_get(THIS_MODULE);
		return kv_fail(t, "ib_drain_qp(QP %u) not done in %u ms; module pinned",
			       qp->qp_num, jiffies_to_msecs(t->timeout));
	}
	kfree(d);
	return 0;
}

#define KV_DRAIN_RECV	4
#define KV_DRAIN_SEND	3

/*
 * ib_drain_qp() on an RC QP (IB_SIGNAL_REQ_WR, softirq CQ, as nvme-rdma
 * has them) holding posted receives and SENDs stuck waiting for the peer's
 * receives (one unsignaled): each WR completes with IB_WC_WR_FLUSH_ERR
 * through its wr_cqe, the drain returns, the QP is in ERR; then destroyed.
 */
static int kv_case_drain(struct kv_test *t)
{
	struct kv_pair p = { .type = IB_QPT_RC, .sig = IB_SIGNAL_REQ_WR };
	struct kv_cqe *c = NULL;
	struct ib_pd *pd = NULL;
	struct ib_cq *cq = NULL;
	struct kv_buf b = {};
	struct ib_sge sge;
	int err = 0, i;

	c = kcalloc(KV_DRAIN_RECV + KV_DRAIN_SEND, sizeof(*c), GFP_KERNEL);
	KV_CHECK(t, c, "no memory");
	cq = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(cq)) {
		err = kv_fail(t, "ib_alloc_cq: %ld", PTR_ERR(cq));
		cq = NULL;
		goto out;
	}
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = pd;
	p.cq[0] = p.cq[1] = cq;
	KV_TRY(t, kv_pair_create(t, &p));
	KV_TRY(t, kv_buf_alloc(t, &b, 64));
	sge = kv_sge(&b, 0, 64, pd->local_dma_lkey);
	for (i = 0; i < KV_DRAIN_RECV; i++) {
		struct ib_recv_wr rwr = { .wr_cqe = &c[i].cqe, .sg_list = &sge,
					  .num_sge = 1 };

		kv_cqe_init(&c[i]);
		KV_TRY(t, kv_post_recv(t, p.qp[0], &rwr));
	}
	for (i = KV_DRAIN_RECV; i < KV_DRAIN_RECV + KV_DRAIN_SEND; i++) {
		struct ib_send_wr swr = {
			.wr_cqe = &c[i].cqe, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = i == KV_DRAIN_RECV + 1 ? 0 :
							       IB_SEND_SIGNALED,
		};

		kv_cqe_init(&c[i]);
		KV_TRY(t, kv_post_send(t, p.qp[0], &swr));
	}
	/* The peer has no receive: the SENDs wait (RNR) until the drain. */
	msleep(20 * timescale);
	for (i = 0; i < KV_DRAIN_RECV + KV_DRAIN_SEND; i++)
		KV_CHECK(t, !completion_done(&c[i].done),
			 "WR %d completed before the drain (status %s)", i,
			 ib_wc_status_msg(c[i].wc.status));
	KV_TRY(t, kv_drain(t, p.qp[0]));
	for (i = 0; i < KV_DRAIN_RECV + KV_DRAIN_SEND; i++) {
		KV_CHECK(t, completion_done(&c[i].done),
			 "%s %d not completed by the drain",
			 i < KV_DRAIN_RECV ? "receive" : "send", i);
		KV_TRY(t, kv_expect(t, &c[i].wc, p.qp[0],
				    (uintptr_t)&c[i].cqe, IB_WC_WR_FLUSH_ERR,
				    0, -1));
	}
	KV_TRY(t, kv_qp_state(t, p.qp[0], IB_QPS_ERR));
	KV_TRY(t, kv_drain(t, p.qp[1]));
	KV_TRY(t, kv_qp_state(t, p.qp[1], IB_QPS_ERR));
out:
	/* A drain that never returned still uses all of it: leave it be. */
	if (t->stuck)
		return err;
	kv_pair_destroy(t, &p);
	if (cq)
		ib_free_cq(cq);
	kv_buf_free(t, &b);
	kv_pd_free(&pd);
	kfree(c);
	return err;
}

/*
 * A QP destroyed with its completions unpolled: later polls of its CQs do
 * not return them (they would name a freed QP), and the CQs go on serving
 * other QPs.  Each QP of the pair has a CQ of its own; the completion
 * events tell that the entries are there before the destroy.
 */
static int kv_case_destroy_unpolled(struct kv_test *t)
{
	struct kv_pair p = { .type = IB_QPT_RC }, q = { .type = IB_QPT_RC };
	struct ib_cq *cq[2] = {};
	struct kv_notify n[2];
	struct ib_pd *pd = NULL;
	struct ib_wc wc[2];
	int err = 0, i, r;

	for (i = 0; i < 2; i++)
		KV_TRY(t, kv_notify_cq(t, &n[i], &cq[i]));
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	p.pd[0] = p.pd[1] = q.pd[0] = q.pd[1] = pd;
	p.cq[0] = q.cq[0] = cq[0];
	p.cq[1] = q.cq[1] = cq[1];
	KV_TRY(t, kv_pair_create(t, &p));
	for (i = 0; i < 2; i++)
		KV_CHECK(t, ib_req_notify_cq(cq[i], IB_CQ_NEXT_COMP) == 0,
			 "arming failed");
	for (i = 0; i < 3; i++)
		KV_TRY(t, kv_ping_post(t, &p, 0));
	for (i = 0; i < 2; i++) {
		KV_TRY(t, kv_wait_event(t, &n[i], "unpolled completion"));
		r = ib_req_notify_cq(cq[i],
				     IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
		KV_CHECK(t, r > 0, "CQ %d: no entry reported (%d)", i, r);
	}
	/* Let the rest of the three land too, then destroy with them there. */
	msleep(20 * timescale);
	kv_pair_destroy(t, &p);
	KV_CHECK(t, !t->why[0], "destroying the QPs failed");
	KV_TRY(t, kv_poll_none(t, cq[0], "CQ 0 after its QP was destroyed"));
	KV_TRY(t, kv_poll_none(t, cq[1], "CQ 1 after its QP was destroyed"));

	/* The CQs still work, for new QPs: exactly their entries come. */
	KV_TRY(t, kv_pair_create(t, &q));
	KV_TRY(t, kv_ping_post(t, &q, 0));
	KV_TRY(t, kv_poll_n(t, cq[0], &wc[0], 1, "new sender"));
	KV_TRY(t, kv_poll_n(t, cq[1], &wc[1], 1, "new receiver"));
	KV_TRY(t, kv_expect(t, &wc[0], q.qp[0], 1, IB_WC_SUCCESS, IB_WC_SEND, -1));
	KV_TRY(t, kv_expect(t, &wc[1], q.qp[1], 2, IB_WC_SUCCESS, IB_WC_RECV, 0));
	KV_TRY(t, kv_poll_none(t, cq[0], "CQ 0 after the new QP's entry"));
	KV_TRY(t, kv_poll_none(t, cq[1], "CQ 1 after the new QP's entry"));
out:
	kv_pair_destroy(t, &q);
	kv_pair_destroy(t, &p);
	for (i = 0; i < 2; i++)
		if (cq[i])
			ib_destroy_cq(cq[i]);
	kv_pd_free(&pd);
	return err;
}

/* ---- error completions --------------------------------------------------------- */

/*
 * A 64-byte SEND from QP 0 with @lkey completes IB_WC_LOC_PROT_ERR, sends
 * nothing (the peer's receive stays posted), and leaves QP 0 in ERR, where
 * the next SEND is flushed.
 */
static int kv_bad_lkey(struct kv_test *t, u32 (*lkey)(struct kv_rc *rc))
{
	struct ib_recv_wr rwr = { .wr_id = 2 };
	struct ib_send_wr swr = { .wr_id = 1, .opcode = IB_WR_SEND,
				  .num_sge = 1 };
	struct kv_buf b = {}, rb = {};
	struct ib_sge sge, rs;
	struct ib_wc wc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, KV_GLOBAL_RKEY));
	KV_TRY(t, kv_buf_alloc(t, &b, 64));
	KV_TRY(t, kv_buf_alloc(t, &rb, 64));
	kv_fill(&b, 0, 64, 1);
	sge = kv_sge(&b, 0, 64, lkey(&rc));
	rs = kv_sge(&rb, 0, 64, rc.rpd->local_dma_lkey);
	rwr.sg_list = &rs;
	rwr.num_sge = 1;
	swr.sg_list = &sge;
	KV_TRY(t, kv_post_recv(t, rc.p.qp[1], &rwr));
	KV_TRY(t, kv_post_send(t, rc.p.qp[0], &swr));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[0], &wc, 1, "sender"));
	KV_TRY(t, kv_expect(t, &wc, rc.p.qp[0], 1, IB_WC_LOC_PROT_ERR, 0, -1));
	KV_TRY(t, kv_qp_state(t, rc.p.qp[0], IB_QPS_ERR));
	KV_TRY(t, kv_poll_none(t, rc.p.cq[1], "receiver of nothing"));
	KV_TRY(t, kv_untouched(t, &rb, 0, 64, "receive buffer"));
	swr.wr_id = 3;
	sge.lkey = rc.pd->local_dma_lkey;
	KV_TRY(t, kv_post_send(t, rc.p.qp[0], &swr));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[0], &wc, 1, "sender in ERR"));
	KV_TRY(t, kv_expect(t, &wc, rc.p.qp[0], 3, IB_WC_WR_FLUSH_ERR, 0, -1));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &b);
	kv_buf_free(t, &rb);
	return err;
}

static u32 kv_lkey_zero(struct kv_rc *rc)
{
	return 0;
}

/* The PD's own key with another key byte: a stale key of the same MR. */
static u32 kv_lkey_stale(struct kv_rc *rc)
{
	return rc->pd->local_dma_lkey ^ 0xff;
}

/*
 * A good key, of another PD: the remote PD's DMA MR (made for its global
 * rkey; lkey and rkey are one key).  Not a local_dma_lkey: the device's is
 * good for every kernel PD, as IBK_LOCAL_DMA_LKEY says.
 */
static u32 kv_lkey_foreign(struct kv_rc *rc)
{
	return rc->rpd->unsafe_global_rkey;
}

static int kv_case_err_lkey_zero(struct kv_test *t)
{
	return kv_bad_lkey(t, kv_lkey_zero);
}

static int kv_case_err_lkey_stale(struct kv_test *t)
{
	return kv_bad_lkey(t, kv_lkey_stale);
}

static int kv_case_err_lkey_foreign_pd(struct kv_test *t)
{
	return kv_bad_lkey(t, kv_lkey_foreign);
}

/*
 * A receive naming a bad lkey: the responder fails it with
 * IB_WC_LOC_PROT_ERR and NAKs, so the SEND completes IB_WC_REM_OP_ERR;
 * both QPs are in ERR.
 */
static int kv_case_err_recv_lkey(struct kv_test *t)
{
	struct kv_buf b = {}, rb = {};
	struct ib_sge sge, rs;
	struct ib_recv_wr rwr = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 1, .opcode = IB_WR_SEND,
				  .sg_list = &sge, .num_sge = 1 };
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_buf_alloc(t, &b, 64));
	KV_TRY(t, kv_buf_alloc(t, &rb, 64));
	sge = kv_sge(&b, 0, 64, rc.pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, 64, rc.rpd->local_dma_lkey ^ 0xff);
	KV_TRY(t, kv_exchange(t, &rc.p, &swr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 2, IB_WC_LOC_PROT_ERR, 0, -1));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 1, IB_WC_REM_OP_ERR, 0, -1));
	KV_TRY(t, kv_untouched(t, &rb, 0, 64, "receive buffer"));
	KV_TRY(t, kv_qp_state(t, rc.p.qp[1], IB_QPS_ERR));
	KV_TRY(t, kv_qp_state(t, rc.p.qp[0], IB_QPS_ERR));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &b);
	kv_buf_free(t, &rb);
	return err;
}

/*
 * A SEND longer than the receive buffer: IB_WC_LOC_LEN_ERR for the receive,
 * IB_WC_REM_INV_REQ_ERR for the SEND.
 */
static int kv_case_err_recv_too_small(struct kv_test *t)
{
	struct kv_buf b = {}, rb = {};
	struct ib_sge sge, rs;
	struct ib_recv_wr rwr = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 1, .opcode = IB_WR_SEND,
				  .sg_list = &sge, .num_sge = 1 };
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_buf_alloc(t, &b, 64));
	KV_TRY(t, kv_buf_alloc(t, &rb, 16));
	sge = kv_sge(&b, 0, 64, rc.pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, 16, rc.rpd->local_dma_lkey);
	KV_TRY(t, kv_exchange(t, &rc.p, &swr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 2, IB_WC_LOC_LEN_ERR, 0, -1));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 1, IB_WC_REM_INV_REQ_ERR, 0,
			    -1));
	KV_TRY(t, kv_qp_state(t, rc.p.qp[0], IB_QPS_ERR));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &b);
	kv_buf_free(t, &rb);
	return err;
}

/* RDMA WRITE with a bad rkey: IB_WC_REM_ACCESS_ERR, nothing written, QP in ERR. */
static int kv_case_err_rkey_write(struct kv_test *t)
{
	struct kv_buf sb = {}, rb = {};
	struct ib_sge ss;
	struct ib_rdma_wr w = {
		.wr = { .wr_id = 5, .sg_list = &ss, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE },
	};
	struct ib_wc swc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, KV_GLOBAL_RKEY));
	KV_TRY(t, kv_buf_alloc(t, &sb, 128));
	KV_TRY(t, kv_buf_alloc(t, &rb, 128));
	kv_fill(&sb, 0, sb.len, 5);
	ss = kv_sge(&sb, 0, 128, rc.pd->local_dma_lkey);
	w.remote_addr = rb.dma;
	w.rkey = rc.rpd->unsafe_global_rkey ^ 0xff;
	KV_TRY(t, kv_exchange(t, &rc.p, &w.wr, NULL, &swc, NULL));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 5, IB_WC_REM_ACCESS_ERR, 0,
			    -1));
	KV_TRY(t, kv_untouched(t, &rb, 0, 128, "target"));
	KV_TRY(t, kv_qp_state(t, rc.p.qp[0], IB_QPS_ERR));
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	return err;
}

/*
 * An atomic through the unsafe global rkey, which grants remote READ and
 * WRITE only: IB_WC_REM_ACCESS_ERR, the target unchanged.
 */
static int kv_case_err_atomic_global_rkey(struct kv_test *t)
{
	struct kv_buf lb = {}, rb = {};
	struct ib_sge ls;
	struct ib_atomic_wr a = {
		.wr = { .wr_id = 7, .sg_list = &ls, .num_sge = 1,
			.opcode = IB_WR_ATOMIC_FETCH_AND_ADD },
		.compare_add = 1,
	};
	struct ib_wc swc;
	struct kv_rc rc;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, KV_GLOBAL_RKEY));
	KV_TRY(t, kv_buf_alloc(t, &lb, 8));
	KV_TRY(t, kv_buf_alloc(t, &rb, 8));
	*(u64 *)rb.va = 42;
	ls = kv_sge(&lb, 0, 8, rc.pd->local_dma_lkey);
	a.remote_addr = rb.dma;
	a.rkey = rc.rpd->unsafe_global_rkey;
	KV_TRY(t, kv_exchange(t, &rc.p, &a.wr, NULL, &swc, NULL));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 7, IB_WC_REM_ACCESS_ERR, 0,
			    -1));
	KV_CHECK(t, *(u64 *)rb.va == 42, "target changed to %llu",
		 *(u64 *)rb.va);
out:
	kv_rc_teardown(t, &rc);
	kv_buf_free(t, &lb);
	kv_buf_free(t, &rb);
	return err;
}

/* ---- fast registration ---------------------------------------------------------- */

/*
 * Memory as NVMe and NFS over RDMA register it: a scatterlist over pages
 * that are not contiguous (no page follows the one before it in memory),
 * the first element starting inside its page and the last ending inside
 * its own, mapped with ib_dma_map_sg(), then into an MR of type MEM_REG by
 * ib_map_mr_sg(), and made valid by IB_WR_REG_MR under the MR's next key,
 * posted on a QP of the MR's PD.  The pages not used, and the parts of the
 * used ones outside the region, keep KV_GUARD: a translation that lands in
 * the wrong page shows there.
 */
#define KV_FR_MAX	4	/* pages of one region */
#define KV_FR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ)

struct kv_fr {
	struct page *pool[2 * KV_FR_MAX];	/* allocated; the region uses n */
	struct scatterlist sg[KV_FR_MAX];
	int n;
	bool mapped;				/* by ib_dma_map_sg() */
	u64 len;				/* bytes of the region */
};

/*
 * A region of @n pages: from @first_off in the first to @last_end in the
 * last (both in the one page when @n is 1).
 */
static int kv_fr_make(struct kv_test *t, struct kv_fr *fr, int n,
		      u32 first_off, u32 last_end)
{
	bool used[2 * KV_FR_MAX] = {};
	struct page *prev = NULL;
	int i, j, got;

	memset(fr, 0, sizeof(*fr));
	for (i = 0; i < 2 * n; i++) {
		fr->pool[i] = alloc_page(GFP_KERNEL);
		if (!fr->pool[i])
			return kv_fail(t, "alloc_page failed");
		memset(page_address(fr->pool[i]), KV_GUARD, PAGE_SIZE);
	}
	sg_init_table(fr->sg, n);
	for (i = 0; i < n; i++) {
		u32 off = i ? 0 : first_off;
		u32 end = i == n - 1 ? last_end : PAGE_SIZE;

		for (j = 0; j < 2 * n; j++)
			if (!used[j] && (!prev ||
					 abs_diff(page_to_pfn(fr->pool[j]),
						  page_to_pfn(prev)) > 1))
				break;
		if (j == 2 * n)
			return kv_fail(t, "no page apart from the one before among %d",
				       2 * n);
		used[j] = true;
		prev = fr->pool[j];
		sg_set_page(&fr->sg[i], prev, end - off, off);
		fr->len += end - off;
	}
	fr->n = n;
	got = ib_dma_map_sg(t->dev, fr->sg, n, DMA_BIDIRECTIONAL);
	if (got != n)
		return kv_fail(t, "ib_dma_map_sg(%d elements): %d", n, got);
	fr->mapped = true;
	return 0;
}

static void kv_fr_free(struct kv_test *t, struct kv_fr *fr)
{
	int i;

	if (fr->mapped)
		ib_dma_unmap_sg(t->dev, fr->sg, fr->n, DMA_BIDIRECTIONAL);
	fr->mapped = false;
	for (i = 0; i < ARRAY_SIZE(fr->pool); i++) {
		if (fr->pool[i])
			__free_page(fr->pool[i]);
		fr->pool[i] = NULL;
	}
}

/* The byte at offset @off of the region, and how many follow in its page. */
static u8 *kv_fr_at(struct kv_fr *fr, u64 off, u32 *room)
{
	int i;

	for (i = 0; i < fr->n; i++) {
		if (off < fr->sg[i].length) {
			*room = fr->sg[i].length - off;
			return (u8 *)sg_virt(&fr->sg[i]) + off;
		}
		off -= fr->sg[i].length;
	}
	return NULL;
}

/* @len bytes between @buf and the region at @off: into it if @in. */
static void kv_fr_copy(struct kv_fr *fr, u64 off, void *buf, u64 len, bool in)
{
	while (len) {
		u32 room, c;
		u8 *p = kv_fr_at(fr, off, &room);

		if (!p)
			return;
		c = min_t(u64, len, room);
		if (in)
			memcpy(p, buf, c);
		else
			memcpy(buf, p, c);
		buf += c;
		off += c;
		len -= c;
	}
}

/* The region's bytes at @off are @want's (NULL: KV_GUARD, nothing written). */
static int kv_fr_same(struct kv_test *t, struct kv_fr *fr, u64 off,
		      const void *want, u64 len, const char *what)
{
	const u8 *w = want;
	u64 i;

	for (i = 0; i < len; i++) {
		u32 room;
		const u8 *p = kv_fr_at(fr, off + i, &room);
		u8 x = w ? w[i] : KV_GUARD;

		if (!p)
			return kv_fail(t, "%s: offset %llu is past the region (%llu)",
				       what, off + i, fr->len);
		if (*p != x)
			return kv_fail(t, "%s: region byte %llu is 0x%02x, want 0x%02x",
				       what, off + i, *p, x);
	}
	return 0;
}

/* Nothing outside the region was written: its pages' other bytes, other pages. */
static int kv_fr_guards(struct kv_test *t, struct kv_fr *fr)
{
	struct kv_buf b = {};
	int i, k, err;

	for (i = 0; i < ARRAY_SIZE(fr->pool) && fr->pool[i]; i++) {
		b.va = page_address(fr->pool[i]);
		for (k = 0; k < fr->n && sg_page(&fr->sg[k]) != fr->pool[i]; k++)
			;
		if (k == fr->n) {
			err = kv_untouched(t, &b, 0, PAGE_SIZE, "a page not in the region");
		} else {
			u32 off = fr->sg[k].offset, end = off + fr->sg[k].length;

			err = kv_untouched(t, &b, 0, off, "before the region in its page") ?:
			      kv_untouched(t, &b, end, PAGE_SIZE - end,
					   "after the region in its page");
		}
		if (err) {
			kv_note(t, " (page %d, element %d)", i, k);
			return err;
		}
	}
	return 0;
}

static int kv_fr_alloc(struct kv_test *t, struct ib_pd *pd, u32 max_sg,
		       struct ib_mr **mr)
{
	*mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max_sg);
	if (IS_ERR(*mr)) {
		int err = PTR_ERR(*mr);

		*mr = NULL;
		return kv_fail(t, "ib_alloc_mr(MEM_REG, %u): %d", max_sg, err);
	}
	return 0;
}

static void kv_fr_dereg(struct kv_test *t, struct ib_mr **mr)
{
	int err;

	if (IS_ERR_OR_NULL(*mr))
		return;
	err = ib_dereg_mr(*mr);
	if (err)
		kv_fail(t, "ib_dereg_mr: %d", err);
	*mr = NULL;
}

/* The whole region into @mr, one PAGE_SIZE page per element. */
static int kv_fr_map(struct kv_test *t, struct kv_fr *fr, struct ib_mr *mr)
{
	int n = ib_map_mr_sg(mr, fr->sg, fr->n, NULL, PAGE_SIZE);

	if (n != fr->n)
		return kv_fail(t, "ib_map_mr_sg(%d elements): %d", fr->n, n);
	if (mr->iova != sg_dma_address(&fr->sg[0]) || mr->length != fr->len)
		return kv_fail(t, "ib_map_mr_sg: iova 0x%llx length %llu, want 0x%llx %llu",
			       mr->iova, mr->length,
			       (u64)sg_dma_address(&fr->sg[0]), fr->len);
	return 0;
}

/* IB_WR_REG_MR of @mr under its next key, on @qp: its completion in @wc. */
static int kv_fr_post_reg(struct kv_test *t, struct ib_qp *qp,
			  struct ib_mr *mr, int access, u64 id,
			  struct ib_wc *wc)
{
	struct ib_reg_wr r = {
		.wr = { .wr_id = id, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr,
		.access = access,
	};

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	r.key = mr->rkey;
	return kv_post_send(t, qp, &r.wr) ?:
	       kv_poll_n(t, qp->send_cq, wc, 1, "REG_MR");
}

static int kv_fr_reg(struct kv_test *t, struct ib_qp *qp, struct ib_mr *mr,
		     u64 id)
{
	struct ib_wc wc;

	return kv_fr_post_reg(t, qp, mr, KV_FR_ACCESS, id, &wc) ?:
	       kv_expect(t, &wc, qp, id, IB_WC_SUCCESS, IB_WC_REG_MR, -1);
}

/* IB_WR_LOCAL_INV of @rkey on @qp: its completion in @wc. */
static int kv_fr_inv(struct kv_test *t, struct ib_qp *qp, u32 rkey, u64 id,
		     struct ib_wc *wc)
{
	struct ib_send_wr w = { .wr_id = id, .opcode = IB_WR_LOCAL_INV,
				.send_flags = IB_SEND_SIGNALED,
				.ex.invalidate_rkey = rkey };

	return kv_post_send(t, qp, &w) ?:
	       kv_poll_n(t, qp->send_cq, wc, 1, "LOCAL_INV");
}

/*
 * An RDMA WRITE or READ of @len bytes at @loff of @lb by QP @from of @rc,
 * at @raddr by @rkey on the other side; completes with @status.
 */
static int kv_rdma(struct kv_test *t, struct kv_rc *rc, int from,
		   enum ib_wr_opcode op, struct kv_buf *lb, u32 loff, u32 len,
		   u64 raddr, u32 rkey, u64 id, enum ib_wc_status status)
{
	struct ib_pd *pd = from ? rc->rpd : rc->pd;
	struct ib_sge s = kv_sge(lb, loff, len, pd->local_dma_lkey);
	struct ib_rdma_wr w = {
		.wr = { .wr_id = id, .sg_list = &s, .num_sge = 1,
			.opcode = op, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr,
		.rkey = rkey,
	};
	bool read = op == IB_WR_RDMA_READ;
	struct ib_wc wc;
	int err;

	err = kv_post_send(t, rc->p.qp[from], &w.wr) ?:
	      kv_poll_n(t, rc->p.cq[from], &wc, 1, read ? "READ" : "WRITE") ?:
	      kv_expect(t, &wc, rc->p.qp[from], id, status,
			read ? IB_WC_RDMA_READ : IB_WC_RDMA_WRITE, -1);
	if (err)
		kv_note(t, " (%s of %u at 0x%llx, rkey 0x%x)",
			read ? "READ" : "WRITE", len, raddr, rkey);
	return err;
}

/* Both QPs of @rc back to RESET, their CQs emptied, and connected again. */
static int kv_rc_reconnect(struct kv_test *t, struct kv_rc *rc)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_RESET };
	struct ib_wc wc;
	int i, err = 0;

	for (i = 0; i < 2 && !err; i++)
		err = kv_modify(t, rc->p.qp[i], &a, IB_QP_STATE);
	for (i = 0; i < 2; i++)
		while (ib_poll_cq(rc->p.cq[i], 1, &wc) > 0)
			;
	for (i = 0; i < 2 && !err; i++)
		err = kv_rc_connect(t, rc->p.qp[i], rc->p.qp[!i]->qp_num);
	return err;
}

/*
 * Four pages, 1,000 bytes into the first to 1,500 into the last, registered
 * on QP 1: QP 0 WRITEs and READs the whole region at the MR's iova by its
 * rkey, then pieces across each boundary between pages; QP 1 SENDs from
 * the region by the MR's lkey.
 */
static int kv_case_fr_reg_write_read(struct kv_test *t)
{
	struct kv_buf sb = {}, lb = {};
	struct ib_mr *mr = NULL;
	struct kv_fr fr = {};
	struct ib_sge ss, rs;
	struct ib_send_wr swr = { .wr_id = 40, .opcode = IB_WR_SEND,
				  .sg_list = &ss, .num_sge = 1 };
	struct ib_recv_wr rwr = { .wr_id = 41, .sg_list = &rs, .num_sge = 1 };
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	u64 edge = 0;
	u32 len;
	int err = 0, i;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_fr_make(t, &fr, 4, 1000, 1500));
	len = fr.len;
	KV_TRY(t, kv_buf_alloc(t, &sb, len));
	KV_TRY(t, kv_buf_alloc(t, &lb, len + 64));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, KV_FR_MAX, &mr));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 1));

	kv_fill(&sb, 0, len, 21);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, len, mr->iova,
			  mr->rkey, 2, IB_WC_SUCCESS));
	KV_TRY(t, kv_fr_same(t, &fr, 0, sb.va, len, "written"));
	KV_TRY(t, kv_fr_guards(t, &fr));
	/* The CPU changes the region; a READ brings what it holds. */
	kv_fill(&sb, 0, len, 22);
	kv_fr_copy(&fr, 0, sb.va, len, true);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_READ, &lb, 0, len, mr->iova,
			  mr->rkey, 3, IB_WC_SUCCESS));
	KV_TRY(t, kv_same(t, lb.va, sb.va, len, "read"));
	KV_TRY(t, kv_untouched(t, &lb, len, 64, "past the READ"));

	/* 40 bytes written, then 40 read, across each boundary. */
	for (i = 0; i + 1 < fr.n; i++) {
		edge += fr.sg[i].length;
		kv_fill(&sb, 0, 40, 23 + i);
		KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, 40,
				  mr->iova + edge - 20, mr->rkey, 4 + i,
				  IB_WC_SUCCESS));
		KV_TRY(t, kv_fr_same(t, &fr, edge - 20, sb.va, 40,
				     "written across a boundary"));
		memset(lb.va, KV_GUARD, lb.len);
		KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_READ, &lb, 0, 40,
				  mr->iova + edge - 13, mr->rkey, 14 + i,
				  IB_WC_SUCCESS));
		kv_fr_copy(&fr, edge - 13, sb.va, 40, false);
		KV_TRY(t, kv_same(t, lb.va, sb.va, 40, "read across a boundary"));
	}
	KV_TRY(t, kv_fr_guards(t, &fr));

	/* The region as a SEND's source, by the MR's lkey. */
	ss = (struct ib_sge){ .addr = mr->iova, .length = len,
			      .lkey = mr->lkey };
	memset(lb.va, KV_GUARD, lb.len);
	rs = kv_sge(&lb, 0, len + 64, rc.pd->local_dma_lkey);
	KV_TRY(t, kv_post_recv(t, rc.p.qp[0], &rwr));
	KV_TRY(t, kv_post_send(t, rc.p.qp[1], &swr));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[1], &swc, 1, "sender"));
	KV_TRY(t, kv_poll_n(t, rc.p.cq[0], &rwc, 1, "receiver"));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[1], 40, IB_WC_SUCCESS, IB_WC_SEND,
			    -1));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[0], 41, IB_WC_SUCCESS, IB_WC_RECV,
			    len));
	KV_TRY(t, kv_fr_same(t, &fr, 0, lb.va, len, "sent from the region"));
out:
	kv_pair_destroy(t, &rc.p);
	kv_fr_dereg(t, &mr);
	kv_rc_teardown(t, &rc);
	kv_fr_free(t, &fr);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &lb);
	return err;
}

/*
 * LOCAL_INV: the key then reaches nothing (IB_WC_REM_ACCESS_ERR, nothing
 * written).  Registered again under the next key: that key works, the
 * old one still reaches nothing, and a LOCAL_INV naming the old key is
 * refused (IB_WC_LOC_QP_OP_ERR) without invalidating the MR.
 */
static int kv_case_fr_local_inv(struct kv_test *t)
{
	struct kv_buf sb = {}, ob = {}, was = {};
	struct ib_mr *mr = NULL;
	struct kv_fr fr = {};
	struct ib_wc wc;
	struct kv_rc rc;
	u32 k1, k2, len;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_fr_make(t, &fr, 2, 0, PAGE_SIZE));
	len = fr.len;
	KV_TRY(t, kv_buf_alloc(t, &sb, len));
	KV_TRY(t, kv_buf_alloc(t, &ob, len));
	KV_TRY(t, kv_buf_alloc(t, &was, len));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, KV_FR_MAX, &mr));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 1));
	k1 = mr->rkey;
	kv_fill(&sb, 0, len, 31);
	kv_fill(&ob, 0, len, 32);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, 64, mr->iova,
			  k1, 2, IB_WC_SUCCESS));

	KV_TRY(t, kv_fr_inv(t, rc.p.qp[1], k1, 3, &wc));
	KV_TRY(t, kv_expect(t, &wc, rc.p.qp[1], 3, IB_WC_SUCCESS,
			    IB_WC_LOCAL_INV, -1));
	kv_fr_copy(&fr, 0, was.va, len, false);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &ob, 0, 64, mr->iova,
			  k1, 4, IB_WC_REM_ACCESS_ERR));
	KV_TRY(t, kv_fr_same(t, &fr, 0, was.va, len, "after an invalidated key's WRITE"));
	KV_TRY(t, kv_rc_reconnect(t, &rc));

	KV_TRY(t, kv_fr_map(t, &fr, mr));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 5));
	k2 = mr->rkey;
	KV_CHECK(t, k2 >> 8 == k1 >> 8 && (k2 & 0xff) != (k1 & 0xff),
		 "keys 0x%x then 0x%x", k1, k2);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, len, mr->iova,
			  k2, 6, IB_WC_SUCCESS));
	KV_TRY(t, kv_fr_same(t, &fr, 0, sb.va, len, "written by the new key"));
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &ob, 0, len, mr->iova,
			  k1, 7, IB_WC_REM_ACCESS_ERR));
	KV_TRY(t, kv_fr_same(t, &fr, 0, sb.va, len, "after the old key's WRITE"));
	KV_TRY(t, kv_rc_reconnect(t, &rc));

	KV_TRY(t, kv_fr_inv(t, rc.p.qp[1], k1, 8, &wc));
	KV_TRY(t, kv_expect(t, &wc, rc.p.qp[1], 8, IB_WC_LOC_QP_OP_ERR, 0, -1));
	KV_TRY(t, kv_rc_reconnect(t, &rc));
	memset(was.va, KV_GUARD, len);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_READ, &was, 0, len, mr->iova,
			  k2, 9, IB_WC_SUCCESS));
	KV_TRY(t, kv_same(t, was.va, sb.va, len, "read by the new key"));
	KV_TRY(t, kv_fr_guards(t, &fr));
out:
	kv_pair_destroy(t, &rc.p);
	kv_fr_dereg(t, &mr);
	kv_rc_teardown(t, &rc);
	kv_fr_free(t, &fr);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &ob);
	kv_buf_free(t, &was);
	return err;
}

/*
 * SEND_WITH_INV from QP 0 naming QP 1's MR: the receive completes with
 * IB_WC_WITH_INVALIDATE and the rkey, and the rkey then reaches nothing.
 * Naming an MR of QP 0's PD instead (QP 1 may not invalidate it): both
 * sides complete IB_WC_REM_INV_REQ_ERR, and that MR stays valid.
 */
static int kv_case_fr_remote_inv(struct kv_test *t)
{
	struct kv_buf sb = {}, rb = {}, was = {};
	struct ib_mr *mr = NULL, *mr0 = NULL;
	struct kv_fr fr = {}, fr0 = {};
	struct ib_sge ss, rs;
	struct ib_send_wr swr = { .opcode = IB_WR_SEND_WITH_INV,
				  .sg_list = &ss, .num_sge = 1 };
	struct ib_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 };
	struct ib_wc swc, rwc;
	struct kv_rc rc;
	u32 rkey;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_fr_make(t, &fr, 2, 200, 300));
	KV_TRY(t, kv_buf_alloc(t, &sb, fr.len));
	KV_TRY(t, kv_buf_alloc(t, &rb, 128));
	KV_TRY(t, kv_buf_alloc(t, &was, fr.len));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, KV_FR_MAX, &mr));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 1));
	rkey = mr->rkey;
	kv_fill(&sb, 0, sb.len, 41);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, 64, mr->iova,
			  rkey, 2, IB_WC_SUCCESS));

	ss = kv_sge(&sb, 0, 64, rc.pd->local_dma_lkey);
	rs = kv_sge(&rb, 0, 128, rc.rpd->local_dma_lkey);
	swr.wr_id = 3;
	swr.ex.invalidate_rkey = rkey;
	rwr.wr_id = 4;
	KV_TRY(t, kv_exchange(t, &rc.p, &swr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 3, IB_WC_SUCCESS, IB_WC_SEND,
			    -1));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 4, IB_WC_SUCCESS, IB_WC_RECV,
			    64));
	KV_CHECK(t, rwc.wc_flags & IB_WC_WITH_INVALIDATE,
		 "no IB_WC_WITH_INVALIDATE (wc_flags 0x%x)", rwc.wc_flags);
	KV_CHECK(t, !(rwc.wc_flags & IB_WC_WITH_IMM), "IB_WC_WITH_IMM too");
	KV_CHECK(t, rwc.ex.invalidate_rkey == rkey,
		 "invalidate_rkey 0x%x, want 0x%x", rwc.ex.invalidate_rkey,
		 rkey);
	KV_TRY(t, kv_same(t, rb.va, sb.va, 64, "received"));
	KV_TRY(t, kv_untouched(t, &rb, 64, 64, "past the message"));
	kv_fr_copy(&fr, 0, was.va, fr.len, false);
	kv_fill(&sb, 0, sb.len, 42);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, 64, mr->iova,
			  rkey, 5, IB_WC_REM_ACCESS_ERR));
	KV_TRY(t, kv_fr_same(t, &fr, 0, was.va, fr.len,
			     "after a WRITE by the invalidated key"));
	KV_TRY(t, kv_rc_reconnect(t, &rc));

	/* An rkey of QP 0's PD, registered by QP 0. */
	KV_TRY(t, kv_fr_make(t, &fr0, 1, 0, PAGE_SIZE));
	KV_TRY(t, kv_fr_alloc(t, rc.pd, 1, &mr0));
	KV_TRY(t, kv_fr_map(t, &fr0, mr0));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[0], mr0, 6));
	swr.wr_id = 7;
	swr.ex.invalidate_rkey = mr0->rkey;
	rwr.wr_id = 8;
	KV_TRY(t, kv_exchange(t, &rc.p, &swr, &rwr, &swc, &rwc));
	KV_TRY(t, kv_expect(t, &rwc, rc.p.qp[1], 8, IB_WC_REM_INV_REQ_ERR, 0,
			    -1));
	KV_TRY(t, kv_expect(t, &swc, rc.p.qp[0], 7, IB_WC_REM_INV_REQ_ERR, 0,
			    -1));
	KV_TRY(t, kv_rc_reconnect(t, &rc));
	kv_fill(&sb, 0, sb.len, 43);
	KV_TRY(t, kv_rdma(t, &rc, 1, IB_WR_RDMA_WRITE, &sb, 0, PAGE_SIZE,
			  mr0->iova, mr0->rkey, 9, IB_WC_SUCCESS));
	KV_TRY(t, kv_fr_same(t, &fr0, 0, sb.va, PAGE_SIZE,
			     "written after the refused invalidation"));
	KV_TRY(t, kv_fr_guards(t, &fr));
	KV_TRY(t, kv_fr_guards(t, &fr0));
out:
	kv_pair_destroy(t, &rc.p);
	kv_fr_dereg(t, &mr);
	kv_fr_dereg(t, &mr0);
	kv_rc_teardown(t, &rc);
	kv_fr_free(t, &fr);
	kv_fr_free(t, &fr0);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	kv_buf_free(t, &was);
	return err;
}

/*
 * A REG_MR that @mr (mapped, then changed by the caller) must not pass: it
 * completes in error, and the key it would have given reaches nothing.
 * What passed is recorded as a failure and the next variant tried (0);
 * a negative errno only when the test itself could not go on.
 */
static int kv_fr_refused(struct kv_test *t, struct kv_rc *rc,
			 struct ib_mr *mr, u64 id, const char *what)
{
	struct kv_buf b = {};
	struct ib_wc wc;
	int err = 0;

	KV_TRY(t, kv_fr_post_reg(t, rc->p.qp[1], mr, KV_FR_ACCESS, id, &wc));
	KV_CHECK(t, wc.wr_id == id, "wr_id %llu, want %llu", wc.wr_id, id);
	if (wc.status == IB_WC_SUCCESS) {
		if (t->why[0])
			kv_note(t, "; REG_MR %s succeeded too", what);
		else
			kv_fail(t, "REG_MR %s succeeded (iova 0x%llx length %llu page_size %u)",
				what, mr->iova, mr->length, mr->page_size);
		/* Nothing reaches it: no access through this registration. */
		return 0;
	}
	KV_CHECK(t, wc.status != IB_WC_WR_FLUSH_ERR,
		 "REG_MR %s flushed: the QP was in error before", what);
	pr_info("# REG_MR %s: %s\n", what, ib_wc_status_msg(wc.status));
	KV_TRY(t, kv_rc_reconnect(t, rc));
	KV_TRY(t, kv_buf_alloc(t, &b, 8));
	KV_TRY(t, kv_rdma(t, rc, 0, IB_WR_RDMA_WRITE, &b, 0, 8, mr->iova,
			  mr->rkey, id + 1, IB_WC_REM_ACCESS_ERR));
	KV_TRY(t, kv_rc_reconnect(t, rc));
out:
	if (err)
		kv_note(t, " (REG_MR %s)", what);
	kv_buf_free(t, &b);
	return err;
}

/*
 * What fast registration refuses: alloc_mr of 0 pages or more than the
 * device's max_fast_reg_page_list_len, or of type SG_GAPS (not offered);
 * ib_map_mr_sg maps no more than max_num_sg pages (the rest of the region
 * stays out of the MR); REG_MR of more than was mapped: a length one byte
 * longer, a page size twice or half the one mapped with, or nothing
 * mapped at all.
 */
static int kv_case_fr_bad_register(struct kv_test *t)
{
	u32 maxp = t->dev->attrs.max_fast_reg_page_list_len;
	static const u32 bad_max[] = { 0, 1 };	/* 0, and maxp + 1 */
	struct ib_mr *mr = NULL, *big = NULL;
	struct kv_buf sb = {};
	struct kv_fr fr = {};
	struct kv_rc rc;
	unsigned int off = 0;
	int err = 0, i, n;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_CHECK(t, t->dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS,
		 "no IB_DEVICE_MEM_MGT_EXTENSIONS");
	KV_CHECK(t, maxp >= KV_FR_MAX, "max_fast_reg_page_list_len %u", maxp);
	for (i = 0; i < ARRAY_SIZE(bad_max); i++) {
		u32 m = bad_max[i] ? maxp + 1 : 0;

		big = ib_alloc_mr(rc.rpd, IB_MR_TYPE_MEM_REG, m);
		KV_CHECK(t, IS_ERR(big), "ib_alloc_mr(MEM_REG, %u) succeeded", m);
	}
	big = ib_alloc_mr(rc.rpd, IB_MR_TYPE_SG_GAPS, KV_FR_MAX);
	KV_CHECK(t, IS_ERR(big), "ib_alloc_mr(SG_GAPS) succeeded");
	big = NULL;
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, maxp, &big));

	/* Four pages into an MR of two: two mapped. */
	KV_TRY(t, kv_fr_make(t, &fr, 4, 0, PAGE_SIZE));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, 2, &mr));
	n = ib_map_mr_sg(mr, fr.sg, fr.n, &off, PAGE_SIZE);
	KV_CHECK(t, n == 2 && off == 0 && mr->length == 2 * PAGE_SIZE,
		 "4 pages into an MR of 2: %d mapped, offset %u, length %llu",
		 n, off, mr->length);
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 1));
	KV_TRY(t, kv_buf_alloc(t, &sb, 2 * PAGE_SIZE));
	kv_fill(&sb, 0, sb.len, 51);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, 2 * PAGE_SIZE,
			  mr->iova, mr->rkey, 2, IB_WC_SUCCESS));
	KV_TRY(t, kv_fr_same(t, &fr, 0, sb.va, 2 * PAGE_SIZE, "written"));
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, 1,
			  mr->iova + 2 * PAGE_SIZE, mr->rkey, 3,
			  IB_WC_REM_ACCESS_ERR));
	KV_TRY(t, kv_fr_same(t, &fr, 2 * PAGE_SIZE, NULL, 2 * PAGE_SIZE,
			     "the pages not mapped"));
	KV_TRY(t, kv_rc_reconnect(t, &rc));
	kv_fr_dereg(t, &mr);
	kv_fr_free(t, &fr);

	/* Two pages mapped, and a REG_MR of more. */
	KV_TRY(t, kv_fr_make(t, &fr, 2, 0, PAGE_SIZE));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, KV_FR_MAX, &mr));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	mr->length++;
	KV_TRY(t, kv_fr_refused(t, &rc, mr, 10, "one byte longer than mapped"));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	mr->page_size = 2 * PAGE_SIZE;
	KV_TRY(t, kv_fr_refused(t, &rc, mr, 20, "of twice the page size mapped"));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	mr->page_size = PAGE_SIZE / 2;
	KV_TRY(t, kv_fr_refused(t, &rc, mr, 30, "of half the page size mapped"));
	kv_fr_dereg(t, &mr);
	/* Never mapped: no page at all, and an iova inside a page. */
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, KV_FR_MAX, &mr));
	mr->iova = 0x10000 + 5;
	mr->length = 100;
	KV_TRY(t, kv_fr_refused(t, &rc, mr, 40, "with no page mapped"));
	KV_TRY(t, kv_fr_guards(t, &fr));
out:
	kv_pair_destroy(t, &rc.p);
	kv_fr_dereg(t, &mr);
	kv_fr_dereg(t, &big);
	kv_rc_teardown(t, &rc);
	kv_fr_free(t, &fr);
	kv_buf_free(t, &sb);
	return err;
}

/*
 * As xprtrdma does: the upper 32 bits of the iova replaced (by an XID)
 * after ib_map_mr_sg and before REG_MR, the offset in the first page kept.
 * WRITE and READ at the new iova reach the region's pages and only them;
 * the old iova (the kernel address) is outside the MR.
 */
static int kv_case_fr_iova_high_bits(struct kv_test *t)
{
	struct kv_buf sb = {}, lb = {};
	struct ib_mr *mr = NULL;
	struct kv_fr fr = {};
	struct kv_rc rc;
	u64 iova, old;
	u32 len;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_fr_make(t, &fr, 3, 300, 700));
	len = fr.len;
	KV_TRY(t, kv_buf_alloc(t, &sb, len));
	KV_TRY(t, kv_buf_alloc(t, &lb, len));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, KV_FR_MAX, &mr));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	old = mr->iova;
	mr->iova = (mr->iova & 0xffffffff) | (u64)0x12345678 << 32;
	iova = mr->iova;
	KV_CHECK(t, (iova & ~PAGE_MASK) == 300, "iova 0x%llx", iova);
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 1));

	kv_fill(&sb, 0, len, 61);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &sb, 0, len, iova,
			  mr->rkey, 2, IB_WC_SUCCESS));
	KV_TRY(t, kv_fr_same(t, &fr, 0, sb.va, len, "written"));
	KV_TRY(t, kv_fr_guards(t, &fr));
	kv_fill(&sb, 0, len, 62);
	kv_fr_copy(&fr, 0, sb.va, len, true);
	memset(lb.va, KV_GUARD, len);
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_READ, &lb, 0, len - 100,
			  iova + 50, mr->rkey, 3, IB_WC_SUCCESS));
	KV_TRY(t, kv_same(t, lb.va, sb.va + 50, len - 100, "read"));
	KV_TRY(t, kv_untouched(t, &lb, len - 100, 100, "past the READ"));
	/* The kernel address the region was mapped at is not the MR's. */
	KV_TRY(t, kv_rdma(t, &rc, 0, IB_WR_RDMA_WRITE, &lb, 0, 8, old,
			  mr->rkey, 4, IB_WC_REM_ACCESS_ERR));
	KV_TRY(t, kv_fr_same(t, &fr, 0, sb.va, len, "after a WRITE at the old iova"));
out:
	kv_pair_destroy(t, &rc.p);
	kv_fr_dereg(t, &mr);
	kv_rc_teardown(t, &rc);
	kv_fr_free(t, &fr);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &lb);
	return err;
}

/*
 * Deregistering a fast-registration MR whose key was moved on (as every
 * REG_MR does): the next MR at its index gets a key byte that none of
 * that MR's keys had, so an rkey a peer kept misses the new MR, as
 * docs/design.md promises ("a stale key misses the next MR there").
 */
static int kv_case_fr_dereg_next_key(struct kv_test *t)
{
	struct ib_mr *mr = NULL, *next = NULL;
	struct kv_fr fr = {};
	struct kv_rc rc;
	u32 first, last;
	int err = 0;

	KV_TRY(t, kv_rc_setup(t, &rc, 0));
	KV_TRY(t, kv_fr_make(t, &fr, 1, 0, PAGE_SIZE));
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, 1, &mr));
	first = mr->rkey;
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 1));
	KV_TRY(t, kv_fr_map(t, &fr, mr));
	KV_TRY(t, kv_fr_reg(t, rc.p.qp[1], mr, 2));
	last = mr->rkey;
	kv_fr_dereg(t, &mr);
	KV_TRY(t, kv_fr_alloc(t, rc.rpd, 1, &next));
	if (next->rkey >> 8 != first >> 8) {
		pr_info("# fr_dereg_next_key: the next MR got index %u, not %u: not checked\n",
			next->rkey >> 8, first >> 8);
		goto out;
	}
	KV_CHECK(t, next->rkey != last && next->rkey != ib_inc_rkey(first) &&
		 next->rkey != first,
		 "the next MR at index %u has key 0x%x; the MR before had 0x%x, 0x%x and 0x%x",
		 first >> 8, next->rkey, first, ib_inc_rkey(first), last);
out:
	kv_pair_destroy(t, &rc.p);
	kv_fr_dereg(t, &mr);
	kv_fr_dereg(t, &next);
	kv_rc_teardown(t, &rc);
	kv_fr_free(t, &fr);
	return err;
}

/* ---- the end ---------------------------------------------------------------- */

static const enum rdma_restrack_type kv_res_types[] = {
	RDMA_RESTRACK_PD, RDMA_RESTRACK_CQ, RDMA_RESTRACK_QP,
	RDMA_RESTRACK_MR, RDMA_RESTRACK_SRQ,
};

static void kv_count_res(struct kv_test *t, int *res)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(kv_res_types); i++)
		res[kv_res_types[i]] = rdma_restrack_count(t->dev,
							   kv_res_types[i],
							   true);
}

/* Every PD, CQ, QP and MR the cases made is gone: the core counts as at load. */
static int kv_case_all_freed(struct kv_test *t)
{
	int now[RDMA_RESTRACK_MAX] = {}, i, ty;

	kv_count_res(t, now);
	for (i = 0; i < ARRAY_SIZE(kv_res_types); i++) {
		ty = kv_res_types[i];
		if (now[ty] != t->res[ty])
			return kv_fail(t, "restrack type %d: %d objects, %d at load",
				       ty, now[ty], t->res[ty]);
	}
	return 0;
}

struct kv_case {
	const char *name;
	int (*run)(struct kv_test *t);
};

/* ---- shared receive queues ------------------------------------------------ */

/*
 * A kernel SRQ (basic): two receiver QPs share it; SENDs to either take its
 * WQEs in order, each completion names the QP that received and the data
 * lands in that WQE's buffer; posting past max_wr fails with -ENOMEM and
 * bad_wr at the first WR that did not fit.
 */
static int kv_case_srq(struct kv_test *t)
{
	struct ib_srq_init_attr sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
		.port_num = KV_PORT,
	};
	struct kv_buf sb = {}, rb = {};
	struct ib_recv_wr rwr[9], *extra;
	const struct ib_recv_wr *bad = NULL;
	struct ib_send_wr swr = { .opcode = IB_WR_SEND, .num_sge = 1,
				  .send_flags = IB_SEND_SIGNALED };
	struct ib_qp *snd[2] = {}, *rcv[2] = {};
	struct ib_sge ss, rs[9];
	/* Apart: a SEND's receive may complete before its ACK comes back. */
	struct ib_cq *scq = NULL, *rcq = NULL;
	struct ib_srq *srq = NULL;
	struct ib_pd *pd = NULL;
	struct ib_wc wc;
	int err = 0, i, r;

	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	scq = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_DIRECT);
	KV_CHECK(t, !IS_ERR(scq), "ib_alloc_cq: %ld", PTR_ERR(scq));
	rcq = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_DIRECT);
	KV_CHECK(t, !IS_ERR(rcq), "ib_alloc_cq: %ld", PTR_ERR(rcq));
	srq = ib_create_srq(pd, &sa);
	KV_CHECK(t, !IS_ERR(srq), "ib_create_srq: %ld", PTR_ERR(srq));
	KV_CHECK(t, sa.attr.max_wr >= 4 && sa.attr.max_sge >= 1,
		 "SRQ got max_wr %u max_sge %u", sa.attr.max_wr, sa.attr.max_sge);
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	for (i = 0; i < 2; i++) {
		snd[i] = ib_create_qp(pd, &qa);
		qa.srq = srq;
		rcv[i] = ib_create_qp(pd, &qa);
		qa.srq = NULL;
		KV_CHECK(t, !IS_ERR(snd[i]) && !IS_ERR(rcv[i]), "ib_create_qp: %ld",
			 PTR_ERR(IS_ERR(snd[i]) ? snd[i] : rcv[i]));
	}
	for (i = 0; i < 2; i++) {
		KV_TRY(t, kv_rc_connect(t, snd[i], rcv[i]->qp_num));
		KV_TRY(t, kv_rc_connect(t, rcv[i], snd[i]->qp_num));
	}
	KV_TRY(t, kv_buf_alloc(t, &sb, 256));
	KV_TRY(t, kv_buf_alloc(t, &rb, 256 * 9));
	/* More than the SRQ holds: the WRs past its size are refused. */
	for (i = 0; i < 9; i++) {
		rs[i] = kv_sge(&rb, 256 * i, 256, pd->local_dma_lkey);
		rwr[i] = (struct ib_recv_wr){ .wr_id = 100 + i,
					      .sg_list = &rs[i], .num_sge = 1,
					      .next = i < 8 ? &rwr[i + 1] : NULL };
	}
	r = ib_post_srq_recv(srq, rwr, &bad);
	extra = &rwr[sa.attr.max_wr];
	KV_CHECK(t, r == -ENOMEM && bad == extra,
		 "posting 9 WRs to %u slots: %d, bad_wr %s", sa.attr.max_wr, r,
		 bad == extra ? "right" : "wrong");
	ss = kv_sge(&sb, 0, 0, pd->local_dma_lkey);
	swr.sg_list = &ss;
	/* SENDs of 10, 20, ... bytes through alternate QPs take WQEs in order. */
	for (i = 0; i < 4; i++) {
		kv_fill(&sb, 0, 256, 40 + i);
		ss.length = 10 * (i + 1);
		swr.wr_id = i;
		KV_TRY(t, kv_post_send(t, snd[i & 1], &swr));
		KV_TRY(t, kv_poll_n(t, scq, &wc, 1, "send"));
		KV_TRY(t, kv_expect(t, &wc, snd[i & 1], i, IB_WC_SUCCESS,
				    IB_WC_SEND, -1));
		KV_TRY(t, kv_poll_n(t, rcq, &wc, 1, "SRQ receive"));
		KV_TRY(t, kv_expect(t, &wc, rcv[i & 1], 100 + i, IB_WC_SUCCESS,
				    IB_WC_RECV, 10 * (i + 1)));
		KV_TRY(t, kv_same(t, rb.va + 256 * i, sb.va, 10 * (i + 1),
				  "SRQ buffer"));
	}
out:
	for (i = 0; i < 2; i++) {
		if (!IS_ERR_OR_NULL(snd[i]))
			ib_destroy_qp(snd[i]);
		if (!IS_ERR_OR_NULL(rcv[i]))
			ib_destroy_qp(rcv[i]);
	}
	if (!IS_ERR_OR_NULL(srq))
		ib_destroy_srq(srq);
	if (!IS_ERR_OR_NULL(scq))
		ib_free_cq(scq);
	if (!IS_ERR_OR_NULL(rcq))
		ib_free_cq(rcq);
	kv_buf_free(t, &sb);
	kv_buf_free(t, &rb);
	kv_pd_free(&pd);
	return err;
}

/*
 * Multicast from a kernel consumer: only UD QPs attach (one asking that its
 * own multicasts skip it may); a group holds max_mcast_qp_attach QPs and
 * a detached one frees its place; the core refuses to destroy an attached
 * QP, so the device never holds a group entry for a QP that is gone.
 */
static int kv_case_mcast(struct kv_test *t)
{
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_UD,
		.port_num = KV_PORT,
		.create_flags = IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK,
	};
	union ib_gid mgid = { .raw = { 0xff, 0x0e, [12] = 0x51, [15] = 9 } };
	u32 n = t->dev->attrs.max_mcast_qp_attach, i;
	struct ib_qp **qp = NULL, *rc = NULL;
	bool *att = NULL;
	struct ib_pd *pd = NULL;
	struct ib_cq *cq = NULL;
	int err = 0, r;

	KV_CHECK(t, n > 1 && n < 4096, "max_mcast_qp_attach %u", n);
	KV_TRY(t, kv_pd_alloc(t, &pd, 0));
	cq = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_DIRECT);
	KV_CHECK(t, !IS_ERR(cq), "ib_alloc_cq: %ld", PTR_ERR(cq));
	qa.send_cq = qa.recv_cq = cq;
	qp = kcalloc(n + 1, sizeof(*qp), GFP_KERNEL);
	att = kcalloc(n + 1, sizeof(*att), GFP_KERNEL);
	KV_CHECK(t, qp && att, "no memory");
	for (i = 0; i <= n; i++) {
		qp[i] = ib_create_qp(pd, &qa);
		KV_CHECK(t, !IS_ERR(qp[i]), "UD QP %u blocking multicast loopback: %ld",
			 i, PTR_ERR(qp[i]));
	}
	for (i = 0; i < n; i++) {
		r = ib_attach_mcast(qp[i], &mgid, 0);
		KV_CHECK(t, !r, "attach of QP %u of %u: %d", i + 1, n, r);
		att[i] = true;
	}
	r = ib_attach_mcast(qp[n], &mgid, 0);
	att[n] = !r;
	KV_CHECK(t, r == -ENOMEM, "attach of QP %u to a group of %u: %d", n + 1, n, r);
	r = ib_destroy_qp(qp[0]);
	KV_CHECK(t, r == -EBUSY, "destroy of an attached QP: %d", r);
	r = ib_detach_mcast(qp[0], &mgid, 0);
	att[0] = r != 0;
	KV_CHECK(t, !r, "detach: %d", r);
	r = ib_attach_mcast(qp[n], &mgid, 0);
	att[n] = !r;
	KV_CHECK(t, !r, "attach in the place a detached QP left: %d", r);
	qa.qp_type = IB_QPT_RC;
	qa.create_flags = 0;
	rc = ib_create_qp(pd, &qa);
	KV_CHECK(t, !IS_ERR(rc), "RC QP: %ld", PTR_ERR(rc));
	r = ib_attach_mcast(rc, &mgid, 0);
	KV_CHECK(t, r == -EINVAL, "an RC QP attached: %d", r);
out:
	if (!IS_ERR_OR_NULL(rc))
		ib_destroy_qp(rc);
	for (i = 0; qp && i <= n; i++) {
		if (IS_ERR_OR_NULL(qp[i]))
			continue;
		if (att[i])
			ib_detach_mcast(qp[i], &mgid, 0);
		ib_destroy_qp(qp[i]);
	}
	kfree(qp);
	kfree(att);
	if (!IS_ERR_OR_NULL(cq))
		ib_free_cq(cq);
	kv_pd_free(&pd);
	return err;
}

static const struct kv_case kv_cases[] = {
	{ "gid0_roce_v2", kv_case_gid },
	{ "pd_local_dma_lkey", kv_case_pd },
	{ "cq_poll_direct", kv_case_cq_direct },
	{ "cq_poll_softirq", kv_case_cq_softirq },
	{ "cq_poll_workqueue", kv_case_cq_workqueue },
	{ "cq_poll_unbound_workqueue", kv_case_cq_unbound_workqueue },
	{ "rc_send_sizes", kv_case_rc_send_sizes },
	{ "rc_send_multi_sge", kv_case_rc_send_multi_sge },
	{ "rc_send_with_imm", kv_case_rc_send_with_imm },
	{ "rc_unsignaled", kv_case_rc_unsignaled },
	{ "rc_recv_before_rts", kv_case_rc_recv_before_rts },
	{ "qp_reset_reconnect", kv_case_qp_reset_reconnect },
	{ "rc_rdma_write", kv_case_rc_rdma_write },
	{ "rc_rdma_write_with_imm", kv_case_rc_rdma_write_with_imm },
	{ "rc_rdma_read", kv_case_rc_rdma_read },
	{ "rc_atomics", kv_case_rc_atomics },
	{ "rc_send_inline", kv_case_rc_send_inline },
	{ "ud_send_ah_atomic_context", kv_case_ud_send },
	{ "ud_reply_ah_from_wc", kv_case_ud_reply_ah_from_wc },
	{ "ud_wrong_qkey_dropped", kv_case_ud_wrong_qkey },
	{ "gsi_qp1_answers_a_mad", kv_case_gsi_mad_reply },
	{ "post_irqs_off", kv_case_post_irqs_off },
	{ "post_from_timer_softirq", kv_case_post_from_timer },
	{ "post_from_hrtimer_hardirq", kv_case_post_from_hrtimer },
	{ "repost_in_softirq_done", kv_case_chain_softirq },
	{ "queue_full_enomem", kv_case_queue_full },
	{ "sge_over_cap_einval", kv_case_sge_over_cap },
	{ "notify_missed_events", kv_case_notify },
	{ "notify_solicited", kv_case_notify_solicited },
	{ "drain_qp_flush", kv_case_drain },
	{ "destroy_qp_unpolled", kv_case_destroy_unpolled },
	{ "err_lkey_zero", kv_case_err_lkey_zero },
	{ "err_lkey_stale", kv_case_err_lkey_stale },
	{ "err_lkey_foreign_pd", kv_case_err_lkey_foreign_pd },
	{ "err_recv_lkey", kv_case_err_recv_lkey },
	{ "err_recv_too_small", kv_case_err_recv_too_small },
	{ "err_rkey_write", kv_case_err_rkey_write },
	{ "err_atomic_global_rkey", kv_case_err_atomic_global_rkey },
	{ "fr_reg_write_read", kv_case_fr_reg_write_read },
	{ "fr_local_inv", kv_case_fr_local_inv },
	{ "fr_remote_inv", kv_case_fr_remote_inv },
	{ "fr_bad_register", kv_case_fr_bad_register },
	{ "fr_iova_high_bits", kv_case_fr_iova_high_bits },
	{ "fr_dereg_next_key", kv_case_fr_dereg_next_key },
	{ "srq_shared_by_two_qps", kv_case_srq },
	{ "mcast_kernel_qps", kv_case_mcast },
	{ "all_freed", kv_case_all_freed },
};

static void kv_run(struct kv_test *t)
{
	int i, err, passed = 0, failed = 0;

	pr_info("1..%zu\n", ARRAY_SIZE(kv_cases));
	for (i = 0; i < ARRAY_SIZE(kv_cases); i++) {
		t->why[0] = 0;
		/* Without GID 0 no QP can be connected: the rest is moot. */
		if (i && !t->ready)
			err = kv_fail(t, "no usable GID 0 (case 1)");
		else
			err = kv_cases[i].run(t);
		if (err || t->why[0]) {
			pr_info("not ok %d %s: %s\n", i + 1, kv_cases[i].name,
				t->why[0] ? t->why : "failed");
			failed++;
		} else {
			pr_info("ok %d %s\n", i + 1, kv_cases[i].name);
			passed++;
		}
	}
	pr_info("%d passed, %d failed\n", passed, failed);
}

static int __init kv_init(void)
{
	struct kv_test *t;

	if (!dev || !*dev) {
		pr_err("no device: load with dev=<ib device>\n");
		return -EINVAL;
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->dev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!t->dev) {
		pr_err("no ib device %s\n", dev);
		kfree(t);
		return -EINVAL;
	}
	t->timeout = 5 * HZ * max(timescale, 1U);
	kv_count_res(t, t->res);
	kv_run(t);
	/* A drain that never returned holds the device: so do we, then. */
	if (!t->stuck)
		ib_device_put(t->dev);
	kfree(t);
	return 0;
}

static void __exit kv_exit(void)
{
}

module_init(kv_init);
module_exit(kv_exit);
MODULE_DESCRIPTION("srnic kernel verbs test");
MODULE_LICENSE("Dual BSD/GPL");
