// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The adversarial suite: what a hostile process can write, written at
 * random, seeded (SRNIC_ADV_SEED; the seed is printed) and bounded in time.
 *
 *  - random_wqes: send WQEs with every field random, keys drawn from the
 *    whole 32-bit space (index 0, reserved indices, another PD's, stale
 *    and window keys included), addresses and lengths near and beyond the
 *    MRs' bounds, any opcode, flags and SGE count; receive WQEs likewise;
 *    hostile producer, consumer and arm values and doorbells; and, in its
 *    last part, another thread rewriting the ring while the engine reads it.
 *  - random_commands: create_cq, create_qp, create_srq, resize_cq and
 *    modify_qp with random driver data and attributes.
 *  - odp_churn: ODP ranges (explicit and implicit MRs) dropped and remapped
 *    while WRITEs and READs use them.
 *  - reg_mr_opcode_is_kernel_only, local_inv_of_keys_not_the_users: the
 *    kernel's fast-registration opcode, and LOCAL_INV of keys that are not
 *    the user's, written into the ring one WQE at a time.
 *  - flush_fields_one_by_one: FLUSH (no verb in rdma-core 44) written into
 *    the ring, each of its fields wrong in turn.
 *
 * Each asserts that every batch ends (completions or the QP in error)
 * within a deadline, that canary pages around and between the MRs are
 * unchanged, that pinned pages return to the baseline, and that the device
 * still carries a clean exchange afterwards.  qemu/run fails the run on
 * any kernel warning, lockup or hang.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"
#include "raw_qp.h"

#define REGION (64 * 1024)
#define CANARY 0xc3
#define ADV_WQES 100000		/* random WQEs per run, at least */
#define ADV_COMMANDS 1000	/* random commands per run, at least */
#define ADV_MIN_SUCCEEDED 1000	/* of the random WQEs, at least */

static uint64_t adv_seed(struct __test_metadata *_metadata, const char *what)
{
	uint64_t seed = srnic_test_seed();

	TH_LOG("%s: seed 0x%llx (SRNIC_ADV_SEED reproduces it)", what,
	       (unsigned long long)seed);
	return seed;
}

/*
 * [canary][MR a][canary][MR b][canary], REGION bytes each: a grants every
 * access, b only local write; c covers a from another PD; d was
 * deregistered (a stale key).
 */
struct arena {
	uint8_t *base;
	uint8_t *a, *b;
	uint32_t pd2;
	struct ib_uverbs_reg_mr_resp mra, mrb, mrc;
	uint32_t stale;
};

static int arena_make(struct arena *ar, struct raw_qp *g)
{
	struct srnic_raw_pd pd2;
	struct ib_uverbs_reg_mr_resp d;
	int err;

	ar->base = raw_qp_anon(5 * REGION);
	if (!ar->base)
		return -ENOMEM;
	memset(ar->base, CANARY, 5 * REGION);
	ar->a = ar->base + REGION;
	ar->b = ar->base + 3 * REGION;
	memset(ar->a, 0, REGION);
	memset(ar->b, 0, REGION);
	err = uverbs_reg_mr(g->fd, g->pd.core.pd_handle, (uintptr_t)ar->a,
			    REGION, (uintptr_t)ar->a, 0xf, &ar->mra) ?:
	      uverbs_reg_mr(g->fd, g->pd.core.pd_handle, (uintptr_t)ar->b,
			    REGION, (uintptr_t)ar->b, 0x1, &ar->mrb) ?:
	      uverbs_alloc_pd(g->fd, &pd2) ?:
	      uverbs_reg_mr(g->fd, pd2.core.pd_handle, (uintptr_t)ar->a,
			    REGION, (uintptr_t)ar->a, 0xf, &ar->mrc) ?:
	      uverbs_reg_mr(g->fd, g->pd.core.pd_handle, (uintptr_t)ar->b,
			    REGION, (uintptr_t)ar->b, 0xf, &d);
	if (err)
		return err;
	ar->pd2 = pd2.core.pd_handle;
	ar->stale = d.lkey;
	return uverbs_dereg_mr(g->fd, d.mr_handle);
}

/* Offset of the first canary byte that changed, or -1. */
static long arena_canaries(const struct arena *ar)
{
	for (int i = 0; i < 5; i += 2) {
		long off = all_eq(ar->base + (size_t)i * REGION, REGION, CANARY);

		if (off >= 0)
			return (long)i * REGION + off;
	}
	return -1;
}

static uint32_t pick_key(uint64_t *s, const struct arena *ar)
{
	uint64_t r = xorshift(s);

	switch (r % 10) {
	case 0: case 1: case 2: case 3:
		return ar->mra.lkey;
	case 4:
		return ar->mrb.lkey;
	case 5:
		return (r >> 8) & 0xff;		/* index 0, any key byte */
	case 6:
		return ar->mrc.lkey;		/* another PD's */
	case 7:
		return ar->stale;
	case 8:
		return (uint32_t)(r >> 32) | 0x80000000u; /* window space */
	default:
		return (uint32_t)(r >> 32);
	}
}

static uint64_t pick_addr(uint64_t *s, const struct arena *ar)
{
	uint64_t r = xorshift(s);
	uint64_t a = (uintptr_t)ar->a, b = (uintptr_t)ar->b;

	switch (r % 8) {
	case 0: case 1: case 2: case 3:
		return a + (r >> 16) % REGION;
	case 4:
		return a + REGION - (r >> 16) % 64;	/* at the end */
	case 5:
		return a - (r >> 16) % 64;		/* before the start */
	case 6:
		return b + (r >> 16) % REGION;
	default:
		return xorshift(s);
	}
}

static uint32_t pick_len(uint64_t *s)
{
	uint64_t r = xorshift(s);

	switch (r % 6) {
	case 0: case 1: case 2:
		return (r >> 8) % 64;
	case 3:
		return (r >> 8) % REGION;
	case 4:
		return REGION + (r >> 8) % 64;
	default:
		return (uint32_t)(r >> 32);
	}
}

static const uint8_t adv_ops[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
	IBV_WR_ATOMIC_FETCH_AND_ADD, SRNIC_WR_ATOMIC_WRITE, IBV_WR_BIND_MW,
	IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV, SRNIC_WR_FLUSH,
};

static const uint8_t sane_ops[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
	IBV_WR_ATOMIC_FETCH_AND_ADD,
};

/* A well-formed WQE within a: the engine's data paths run to the end. */
static void sane_send_wqe(uint64_t *s, uint8_t *slot, const struct arena *ar)
{
	struct srnic_wqe_ctrl *c = (struct srnic_wqe_ctrl *)slot;
	struct srnic_wqe_raddr *ra = (struct srnic_wqe_raddr *)(c + 1);
	struct srnic_wqe_data *d = (struct srnic_wqe_data *)(slot + SRNIC_SEND_HDR_RC);
	uint64_t r = xorshift(s);
	uint32_t len = 1 + (r >> 8) % 4096;

	memset(slot, 0, SRNIC_SEND_HDR_RC + sizeof(*d));
	c->opcode = sane_ops[r % sizeof(sane_ops)];
	c->flags = (r >> 20) % 4 ? SRNIC_WQE_SIGNALED : 0;
	c->num_sge = 1;
	if (c->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    c->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		len = 8;
	ra->remote_addr = (uintptr_t)ar->a + (((r >> 32) % (REGION - len)) & ~7ull);
	ra->rkey = ar->mra.rkey;
	d->addr = (uintptr_t)ar->a + (((r >> 44) % (REGION - len)) & ~7ull);
	d->lkey = ar->mra.lkey;
	d->length = len;
}

/*
 * A send WQE.  Half are random bytes with most fields drawn from hostile
 * sets; half are well formed, a quarter of those with one field made
 * hostile, so that errors are found deep in the paths as well as at their
 * entrance.
 */
static void rand_send_wqe(uint64_t *s, uint8_t *slot, const struct arena *ar)
{
	const size_t stride = (size_t)1 << RAW_QP_LOG_STRIDE;
	struct srnic_wqe_ctrl *c = (struct srnic_wqe_ctrl *)slot;
	struct srnic_wqe_raddr *ra = (struct srnic_wqe_raddr *)(c + 1);
	struct srnic_wqe_data *d = (struct srnic_wqe_data *)(slot + SRNIC_SEND_HDR_RC);
	uint64_t r = xorshift(s);

	if (r % 2) {
		sane_send_wqe(s, slot, ar);
		switch ((r >> 8) % 16) {
		case 0: ra->rkey = pick_key(s, ar); break;
		case 1: d->lkey = pick_key(s, ar); break;
		case 2: ra->remote_addr = pick_addr(s, ar); break;
		case 3: d->addr = pick_addr(s, ar); break;
		case 4: d->length = pick_len(s); break;
		case 5: c->num_sge = (uint8_t)xorshift(s); break;
		case 6: c->flags = (uint8_t)xorshift(s); break;
		case 7: c->opcode = (uint8_t)xorshift(s); break;
		}
		return;
	}
	for (size_t i = 0; i < stride; i += 8) {
		r = xorshift(s);
		memcpy(slot + i, &r, 8);
	}
	r = xorshift(s);
	if (r % 10 < 8)
		c->opcode = adv_ops[(r >> 8) % sizeof(adv_ops)];
	if ((r >> 16) % 4)
		c->flags = SRNIC_WQE_SIGNALED | ((r >> 20) % 8 == 0 ? SRNIC_WQE_INLINE : 0);
	if (c->flags & SRNIC_WQE_INLINE) {
		c->num_sge = 0;
		c->inline_len = (r >> 24) % 3 ? (r >> 32) % 80 : (uint32_t)(r >> 32);
	} else if ((r >> 40) % 8 < 6) {
		c->num_sge = 1 + (r >> 44) % 2;
	}
	ra->remote_addr = pick_addr(s, ar);
	ra->rkey = pick_key(s, ar);
	c->imm_data = pick_key(s, ar);	/* also the rkey to invalidate */
	for (unsigned int i = 0; i < 2; i++) {
		d[i].addr = pick_addr(s, ar);
		d[i].lkey = pick_key(s, ar);
		d[i].length = pick_len(s);
	}
}

/* The receive ring: mostly one SGE into a or b, any key; some garbage. */
static void rand_recv_ring(uint64_t *s, struct raw_qp *g, const struct arena *ar)
{
	const size_t stride = (size_t)1 << RAW_QP_LOG_RQ_STRIDE;

	for (size_t off = 0; off < RAW_QP_RQ_LEN; off += stride) {
		struct srnic_recv_wqe_hdr *h = (void *)((uint8_t *)g->rq_ring + off);
		struct srnic_wqe_data *d = (struct srnic_wqe_data *)(h + 1);
		uint64_t r = xorshift(s);

		h->wr_id = r;
		h->num_sge = 1;
		d->addr = (uintptr_t)ar->a;
		d->lkey = ar->mra.lkey;
		d->length = 4096;
		/* A quarter of them hostile. */
		switch ((r >> 8) % 16) {
		case 0: h->num_sge = (uint32_t)(r >> 32); break;
		case 1: d->addr = pick_addr(s, ar); break;
		case 2: d->lkey = pick_key(s, ar); break;
		case 3: d->length = pick_len(s); break;
		}
	}
}

struct scribbler {
	struct raw_qp *g;
	uint64_t seed;
	atomic_int stop;
	uint64_t writes;
};

/* Rewrites random words of the send ring while the engine reads it. */
static void *scribble(void *p)
{
	struct scribbler *sc = p;

	while (!atomic_load(&sc->stop)) {
		uint64_t r = xorshift(&sc->seed);
		uint64_t *w = (uint64_t *)sc->g->sq_ring + (r >> 8) % (RAW_QP_SQ_LEN / 8);

		__atomic_store_n(w, xorshift(&sc->seed), __ATOMIC_RELAXED);
		sc->writes++;
	}
	return NULL;
}

static int raw_qp_reset(struct raw_qp *g, const struct env *e)
{
	struct ib_uverbs_modify_qp c = {
		.qp_handle = g->qp.core.qp_handle, .qp_state = 0 /* RESET */,
		.attr_mask = 1,
	};

	return uverbs_modify_qp(g->fd, &c) ?:
	       uverbs_rc_to_rts(g->fd, g->qp.core.qp_handle, g->qp.core.qpn,
				e->gid.raw, e->gid_idx);
}

struct adv_counts {
	uint64_t posted, executed, cqes, errors, resets, rebuilds, batches;
	uint64_t succeeded;
	/* While no thread rewrote the ring: how well-formed the WQEs were. */
	uint64_t calm_executed, calm_succeeded;
	uint64_t hostile_doorbells, hostile_cq;
};

FIXTURE(adv) {
	struct env e;
	struct raw_qp g;
	struct arena ar;
	long long pinned0;
};

FIXTURE_SETUP(adv)
{
	char prov[32];

	self->g.fd = -1;
	if (!provider_name(srnic_test_dev(), prov, sizeof(prov)) ||
	    strcmp(prov, "srnic"))
		SKIP(return, "needs srnic's rings (%s is not an srnic device)",
		     srnic_test_dev());
	ASSERT_EQ(0, env_open(&self->e));
	self->pinned0 = pinned_pages();
	ASSERT_LE(0, self->pinned0);
}

FIXTURE_TEARDOWN(adv)
{
	if (self->g.fd >= 0)
		raw_qp_free(&self->g);
	if (self->ar.base)
		munmap(self->ar.base, 5 * REGION);
	env_close(&self->e);
}

/* Everything released, and a plain exchange still works. */
static void adv_after(struct __test_metadata *_metadata,
		      FIXTURE_DATA(adv) *self)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ibv_wc wc;
	struct ep a, b;

	if (self->g.fd >= 0)
		raw_qp_free(&self->g);
	EXPECT_EQ(self->pinned0, pinned_pages());
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	fill(a.buf, 4096, 11);
	ASSERT_EQ(0, post_recv(&b, 1, 0, 4096));
	ASSERT_EQ(0, post_send1(&a, IBV_WR_SEND, 2, 0, 4096,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	ASSERT_EQ(1, poll_one(a.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_one(b.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(-1, verify(b.buf, 4096, 11));
	ep_destroy(&a);
	ep_destroy(&b);
}

static void adv_build(struct __test_metadata *_metadata,
		      FIXTURE_DATA(adv) *self, uint64_t *seed)
{
	const char *step = "";
	int err;

	if (self->g.fd >= 0)
		raw_qp_free(&self->g);
	if (self->ar.base)
		munmap(self->ar.base, 5 * REGION);
	memset(&self->ar, 0, sizeof(self->ar));
	err = raw_qp_make(&self->g, &self->e, &step);
	ASSERT_EQ(0, err) TH_LOG("raw QP, %s: %s", step, strerror(-err));
	ASSERT_EQ(0, arena_make(&self->ar, &self->g));
	rand_recv_ring(seed, &self->g, &self->ar);
	atomic_store_explicit((_Atomic uint32_t *)&self->g.qp_db->rq_producer,
			      1u << RAW_QP_LOG_RQ, memory_order_release);
}

/*
 * Hostile values in the CQ's records and doorbell: consumer counters far
 * ahead or behind, arm values with any bits.  The QP and CQ are rebuilt
 * afterwards: a CQ told nonsense may be in error, as the spec allows.
 */
static void adv_hostile_cq(uint64_t *s, struct raw_qp *g)
{
	volatile struct srnic_db_slot *arm =
		(struct srnic_db_slot *)g->uar + g->cq.drv.db.slot;

	for (int i = 0; i < 8; i++) {
		g->cq_db->consumer = (uint32_t)xorshift(s);
		g->cq_db->arm = (uint32_t)xorshift(s);
		if (g->cq.drv.db.uar_mmap_offset == g->qp.drv.db.uar_mmap_offset)
			arm->value = (uint32_t)xorshift(s);
	}
}

TEST_F_TIMEOUT(adv, random_wqes, 1800)
{
	const uint32_t entries = 1u << RAW_QP_LOG_SQ;
	const uint64_t budget = now_ms() + scaled_ms(600000);
	uint64_t seed = adv_seed(_metadata, "random_wqes");
	struct scribbler sc = { .seed = seed ^ 0x5bd1e995 };
	struct adv_counts n = {};
	pthread_t scribbler;
	bool scribbling = false;
	uint32_t prod = 0;

	adv_build(_metadata, self, &seed);
	while (n.executed < ADV_WQES && now_ms() < budget) {
		uint64_t r = xorshift(&seed);
		uint32_t k = 1 + r % 16, target, start_cons, ran;
		bool hostile = (r >> 8) % 64 == 0, ended = false;
		uint64_t end = now_ms() + scaled_ms(WC_MS);
		int cqes = 0, errors = 0;

		/* The last fifth: the ring rewritten under the engine. */
		if (!scribbling && n.executed >= ADV_WQES * 4 / 5) {
			sc.g = &self->g;
			ASSERT_EQ(0, pthread_create(&scribbler, NULL, scribble, &sc));
			scribbling = true;
		}
		start_cons = self->g.qp_db->sq_consumer;
		for (uint32_t i = 0; i < k; i++)
			rand_send_wqe(&seed, (uint8_t *)self->g.sq_ring +
				      ((size_t)((prod + i) & (entries - 1)) <<
				       RAW_QP_LOG_STRIDE), &self->ar);
		target = prod + k;
		if (hostile) {
			target = (uint32_t)xorshift(&seed);
			n.hostile_doorbells++;
		}
		ASSERT_EQ(0, srnic_raw_ring_sq(self->g.fd, self->g.qp.core.qp_handle,
					       self->g.qp_db, raw_qp_sq_slot(&self->g),
					       target));
		n.posted += k;
		n.batches++;
		/* The batch ends: all consumed, or the QP in error. */
		while (!ended) {
			raw_qp_reap(&self->g, &cqes, &errors);
			if (atomic_load_explicit((_Atomic uint32_t *)&self->g.qp_db->sq_consumer,
						 memory_order_acquire) == target ||
			    uverbs_query_qp_state(self->g.fd, self->g.qp.core.qp_handle) ==
			    IBV_QPS_ERR)
				ended = true;
			else if (now_ms() > end)
				break;
			else
				sched_yield();
		}
		ASSERT_TRUE(ended) TH_LOG("batch %llu (%u WQEs, producer %u): "
			"consumer %u and the QP not in error after %llu ms",
			(unsigned long long)n.batches, k, target,
			self->g.qp_db->sq_consumer,
			(unsigned long long)scaled_ms(WC_MS));
		raw_qp_reap(&self->g, &cqes, &errors);
		ran = (uint32_t)(self->g.qp_db->sq_consumer - start_cons) <= k ?
		      self->g.qp_db->sq_consumer - start_cons : k;
		n.executed += ran;
		n.cqes += cqes;
		n.errors += errors;
		n.succeeded += cqes - errors;
		if (!scribbling) {
			n.calm_executed += ran;
			n.calm_succeeded += cqes - errors;
		}
		prod = target;
		if (hostile || (r >> 16) % 128 == 0) {
			if (!hostile) {
				adv_hostile_cq(&seed, &self->g);
				n.hostile_cq++;
			}
			if (scribbling) {
				atomic_store(&sc.stop, 1);
				pthread_join(scribbler, NULL);
				atomic_store(&sc.stop, 0);
				scribbling = false;
			}
			ASSERT_EQ(-1, arena_canaries(&self->ar));
			adv_build(_metadata, self, &seed);
			prod = 0;
			n.rebuilds++;
		} else if (uverbs_query_qp_state(self->g.fd, self->g.qp.core.qp_handle) ==
			   IBV_QPS_ERR) {
			ASSERT_EQ(0, raw_qp_reset(&self->g, &self->e));
			prod = 0;
			n.resets++;
			/* Fresh receive WQEs for the fresh queue. */
			rand_recv_ring(&seed, &self->g, &self->ar);
			atomic_store_explicit((_Atomic uint32_t *)&self->g.qp_db->rq_producer,
					      1u << RAW_QP_LOG_RQ, memory_order_release);
		}
	}
	if (scribbling) {
		atomic_store(&sc.stop, 1);
		pthread_join(scribbler, NULL);
	}
	TH_LOG("random WQEs: %llu posted, %llu executed in %llu batches, %llu CQEs "
	       "(%llu successful, %llu errors and flushes), %llu QP resets, %llu rebuilds, %llu hostile "
	       "doorbells, %llu hostile CQ records, %llu ring rewrites",
	       (unsigned long long)n.posted, (unsigned long long)n.executed,
	       (unsigned long long)n.batches, (unsigned long long)n.cqes,
	       (unsigned long long)n.succeeded, (unsigned long long)n.errors, (unsigned long long)n.resets,
	       (unsigned long long)n.rebuilds,
	       (unsigned long long)n.hostile_doorbells,
	       (unsigned long long)n.hostile_cq, (unsigned long long)sc.writes);
	EXPECT_LE(ADV_WQES, n.executed);
	/*
	 * Well-formed WQEs went through: the paths were run, not only refused.
	 * A count, not a share: the share depends on the kernel's speed (8 %
	 * on Debian's kernel, 3 % on the debug kernel, before and after the
	 * rewriting thread starts alike).
	 */
	EXPECT_LE(ADV_MIN_SUCCEEDED, n.succeeded) TH_LOG("%llu before the ring was rewritten",
		(unsigned long long)n.calm_succeeded);
	EXPECT_EQ(-1, arena_canaries(&self->ar));
	adv_after(_metadata, self);
}

/* ---- random commands ---- */

/*
 * A command's fields are either what a careful provider sends or, for the
 * fields whose bit is set in the command's hostile mask, hostile values.
 * Half the commands have one hostile field (they reach deep checks), half
 * a random set of them.
 */
static uint32_t hostile_mask(uint64_t *s)
{
	uint64_t r = xorshift(s);

	return r % 2 ? 1u << ((r >> 8) % 8) : (uint32_t)(r >> 32);
}

#define HOSTILE(mask, bit) (((mask) >> (bit)) & 1)

/* A driver-data address: @sane, or short, odd, read-only or hostile. */
static uint64_t cmd_addr(uint64_t *s, bool hostile, uint64_t sane,
			 uint8_t *good, uint8_t *ro)
{
	uint64_t r = xorshift(s);

	if (!hostile)
		return sane;
	switch (r % 6) {
	case 0:
		return sane + 1 + (r >> 8) % 63;		/* unaligned */
	case 1:
		return (uintptr_t)good + (1 << 20) - 64;	/* runs off the end */
	case 2:
		return (uintptr_t)ro;				/* read-only */
	case 3:
		return 0;
	case 4:
		return 0xffff888000000000ull + ((r >> 8) << 12); /* kernel */
	default:
		return xorshift(s);
	}
}

static uint32_t cmd_u32(uint64_t *s, bool hostile, uint32_t sane)
{
	uint64_t r = xorshift(s);

	if (!hostile)
		return sane;
	return r % 2 ? (uint32_t)(r >> 32) : sane + (uint32_t)((r >> 8) % 40) - 20;
}

TEST_F_TIMEOUT(adv, random_commands, 1200)
{
	uint64_t seed = adv_seed(_metadata, "random_commands");
	const uint64_t budget = now_ms() + scaled_ms(300000);
	uint8_t *good = raw_qp_anon(1 << 20);
	uint8_t *ro = mmap(NULL, 1 << 16, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	unsigned int cmds = 0, ok = 0;
	const char *step = "";
	int err;

	ASSERT_NE(NULL, good);
	ASSERT_NE(MAP_FAILED, ro);
	err = raw_qp_make(&self->g, &self->e, &step);
	ASSERT_EQ(0, err) TH_LOG("raw QP, %s: %s", step, strerror(-err));
	while (cmds < ADV_COMMANDS && now_ms() < budget) {
		uint64_t r = xorshift(&seed);
		struct srnic_raw_cq cq;
		struct srnic_raw_qp qp;

		uint32_t h = hostile_mask(&seed), log = 2 + (r >> 8) % 6;
		uint64_t dbs = (uintptr_t)good + (1 << 19);

		switch (r % 5) {
		case 0: {
			struct srnic_create_cq_req req = {
				.buf_addr = cmd_addr(&seed, HOSTILE(h, 0), (uintptr_t)good, good, ro),
				.db_addr = cmd_addr(&seed, HOSTILE(h, 1), dbs, good, ro),
				.log_entries = cmd_u32(&seed, HOSTILE(h, 2), log),
				.flags = cmd_u32(&seed, HOSTILE(h, 3), 0),
			};
			size_t len = HOSTILE(h, 4) ? (r >> 20) % sizeof(req) : sizeof(req);

			if (!uverbs_create_cq(self->g.fd,
					      cmd_u32(&seed, HOSTILE(h, 5), (1u << log) - 1),
					      &req, len & ~3ul, &cq)) {
				ok++;
				uverbs_destroy_cq(self->g.fd, cq.core.cq_handle);
			}
			break;
		}
		case 1: {
			struct srnic_create_qp_req req = {
				.sq_buf_addr = cmd_addr(&seed, HOSTILE(h, 0), (uintptr_t)good, good, ro),
				.rq_buf_addr = cmd_addr(&seed, HOSTILE(h, 1), (uintptr_t)good + (1 << 18), good, ro),
				.db_addr = cmd_addr(&seed, HOSTILE(h, 2), dbs, good, ro),
				.sq_log_entries = cmd_u32(&seed, HOSTILE(h, 3), 4),
				.sq_log_stride = cmd_u32(&seed, HOSTILE(h, 4), 7),
				.rq_log_entries = cmd_u32(&seed, HOSTILE(h, 5), 4),
				.rq_log_stride = cmd_u32(&seed, HOSTILE(h, 6), 5),
			};
			struct srnic_raw_qp_caps caps = {
				.max_send_wr = cmd_u32(&seed, HOSTILE(h, 7), 16),
				.max_recv_wr = cmd_u32(&seed, HOSTILE(h, 7), 16),
				.max_send_sge = cmd_u32(&seed, HOSTILE(h, 7), 1),
				.max_recv_sge = cmd_u32(&seed, HOSTILE(h, 7), 1),
				.max_inline_data = cmd_u32(&seed, HOSTILE(h, 7), 0),
			};
			static const uint8_t types[] = { IB_UVERBS_QPT_RC,
				IB_UVERBS_QPT_UC, IB_UVERBS_QPT_UD, 9, 0, 200 };

			if (!uverbs_create_qp(self->g.fd, self->g.pd.core.pd_handle,
					      self->g.cq.core.cq_handle,
					      self->g.cq.core.cq_handle,
					      types[(r >> 16) % (HOSTILE(h, 1) ? 6 : 3)],
					      &caps, &req, &qp)) {
				ok++;
				uverbs_destroy_qp(self->g.fd, qp.core.qp_handle);
			}
			break;
		}
		case 2: {
			struct srnic_resize_cq_req req = {
				.buf_addr = cmd_addr(&seed, HOSTILE(h, 0), (uintptr_t)good, good, ro),
				.log_entries = cmd_u32(&seed, HOSTILE(h, 1), log),
				.reserved = cmd_u32(&seed, HOSTILE(h, 2), 0),
			};

			/* The raw QP's own CQ, between batches of nothing. */
			if (!uverbs_resize_cq(self->g.fd, self->g.cq.core.cq_handle,
					      cmd_u32(&seed, HOSTILE(h, 3), (1u << log) - 1),
					      &req, sizeof(req)))
				ok++;
			break;
		}
		case 3: {
			struct ib_uverbs_modify_qp c;
			uint64_t *w = (uint64_t *)&c;

			for (size_t i = 0; i < sizeof(c) / 8; i++)
				w[i] = xorshift(&seed);
			c.qp_handle = self->g.qp.core.qp_handle;
			c.attr_mask &= HOSTILE(h, 0) ? 0xffffffff : 0x1fffff;
			c.qp_state = (r >> 12) % 8;
			c.dest.port_num = HOSTILE(h, 1) ? c.dest.port_num : 1;
			c.port_num = HOSTILE(h, 2) ? c.port_num : 1;
			c.dest.sgid_index = HOSTILE(h, 3) ? c.dest.sgid_index : 0;
			if (!uverbs_modify_qp(self->g.fd, &c))
				ok++;
			break;
		}
		default: {
			struct {
				struct ib_uverbs_create_srq_resp core;
				struct srnic_create_srq_resp drv;
			} resp;
			struct ib_uverbs_create_srq c = {
				.pd_handle = self->g.pd.core.pd_handle,
				.max_wr = cmd_u32(&seed, HOSTILE(h, 0), 15),
				.max_sge = cmd_u32(&seed, HOSTILE(h, 1), 1),
				.srq_limit = cmd_u32(&seed, HOSTILE(h, 2), 0),
			};
			struct srnic_create_srq_req req = {
				.buf_addr = cmd_addr(&seed, HOSTILE(h, 3), (uintptr_t)good, good, ro),
				.db_addr = cmd_addr(&seed, HOSTILE(h, 4), dbs, good, ro),
				.log_entries = cmd_u32(&seed, HOSTILE(h, 5), 4),
				.log_stride = cmd_u32(&seed, HOSTILE(h, 6), 5),
			};
			struct ib_uverbs_destroy_srq_resp dresp;
			struct ib_uverbs_destroy_srq d = { .response = (uintptr_t)&dresp };

			c.response = (uintptr_t)&resp;
			if (!uverbs_write(self->g.fd, IB_USER_VERBS_CMD_CREATE_SRQ, &c,
					  sizeof(c), &req, sizeof(req), sizeof(resp))) {
				ok++;
				d.srq_handle = resp.core.srq_handle;
				uverbs_write(self->g.fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &d,
					     sizeof(d), NULL, 0, sizeof(dresp));
			}
			break;
		}
		}
		cmds++;
	}
	TH_LOG("random commands: %u sent, %u accepted", cmds, ok);
	EXPECT_LE(ADV_COMMANDS, cmds);
	/* Some got past the checks: what they created was torn down again. */
	EXPECT_LT(cmds / 20, ok);
	munmap(good, 1 << 20);
	munmap(ro, 1 << 16);
	adv_after(_metadata, self);
}

/* ---- ODP ranges dropped and remapped under traffic ---- */

#define ODP_LEN (1 << 20)

struct churner {
	uint8_t *base;
	uint64_t seed;
	atomic_int stop;
	volatile int fast;	/* no pause between changes */
	uint64_t drops, remaps;
};

static void *churn(void *p)
{
	struct churner *ch = p;

	while (!atomic_load(&ch->stop)) {
		uint64_t r = xorshift(&ch->seed);
		size_t pages = ODP_LEN / 4096;
		size_t first = (r >> 8) % pages, n = 1 + (r >> 32) % 16;

		if (first + n > pages)
			n = pages - first;
		if (r % 2) {
			madvise(ch->base + first * 4096, n * 4096, MADV_DONTNEED);
			ch->drops++;
		} else {
			mmap(ch->base + first * 4096, n * 4096,
			     PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			ch->remaps++;
		}
		if (!ch->fast)
			usleep(200);
	}
	return NULL;
}


/* One signaled 64-byte WRITE from arena a to @raddr by @rkey, at ring position @prod. */
static void adv_post_write_to(struct raw_qp *g, const struct arena *ar, uint32_t prod,
			      uint64_t raddr, uint32_t rkey)
{
	struct srnic_wqe_ctrl *c = raw_qp_wqe(g, prod, IBV_WR_RDMA_WRITE);
	struct srnic_wqe_raddr *ra = (struct srnic_wqe_raddr *)(c + 1);
	struct srnic_wqe_data *d = (struct srnic_wqe_data *)((uint8_t *)c + SRNIC_SEND_HDR_RC);

	c->num_sge = 1;
	ra->remote_addr = raddr;
	ra->rkey = rkey;
	d->addr = (uintptr_t)ar->a;
	d->lkey = ar->mra.lkey;
	d->length = 64;
}

/* One signaled 64-byte WRITE within arena a, at ring position @prod. */
static void adv_post_write(struct raw_qp *g, const struct arena *ar, uint32_t prod)
{
	adv_post_write_to(g, ar, prod, (uintptr_t)ar->a + 4096, ar->mra.rkey);
}

/*
 * Rings the send doorbell for the WQE at ring position @prod (the QP's
 * next) and waits for its CQE, then 20 ms more for any other: the CQE's
 * status, or -1 (logged) when none came, more than one, or another WQE's.
 */
static int adv_run_one(struct __test_metadata *_metadata, struct raw_qp *g,
		       uint32_t prod)
{
	const uint32_t mask = (1u << RAW_QP_LOG_CQ) - 1;
	const struct srnic_cqe *ring = g->cq_ring;
	uint32_t first = g->cq_cons;
	uint64_t end = now_ms() + scaled_ms(WC_MS);
	int cqes = 0, errors = 0;

	if (srnic_raw_ring_sq(g->fd, g->qp.core.qp_handle, g->qp_db,
			      raw_qp_sq_slot(g), prod + 1)) {
		TH_LOG("doorbell: %s", strerror(errno));
		return -1;
	}
	while (!cqes && now_ms() < end) {
		raw_qp_reap(g, &cqes, &errors);
		if (!cqes)
			usleep(100);
	}
	usleep(scaled_ms(20) * 1000);
	raw_qp_reap(g, &cqes, &errors);
	if (cqes == 1 && ring[first & mask].wr_id == 100 + prod)
		return ring[first & mask].status;
	TH_LOG("WQE %u: %d CQEs in %llu ms", prod, cqes,
	       (unsigned long long)scaled_ms(WC_MS));
	for (int i = 0; i < cqes; i++) {
		const struct srnic_cqe *c = &ring[(first + i) & mask];

		TH_LOG("  CQE %d: wr_id %llu status %u opcode %u", i,
		       (unsigned long long)c->wr_id, c->status, c->opcode);
	}
	return -1;
}

/*
 * A QP moved to RESET and back to RTS by a client that leaves its
 * doorbell as it was (the producer counter of the work before): the
 * engine must not run that old ring again.  (Found as 17 completions for
 * one WQE in odp_churn, after its QP was reset.)
 */
TEST_F(adv, reset_forgets_the_doorbell)
{
	uint64_t seed = 1;
	int cqes = 0, errors = 0;

	adv_build(_metadata, self, &seed);
	for (uint32_t p = 0; p < 5; p++)
		adv_post_write(&self->g, &self->ar, p);
	ASSERT_EQ(0, srnic_raw_ring_sq(self->g.fd, self->g.qp.core.qp_handle,
				       self->g.qp_db, raw_qp_sq_slot(&self->g), 5));
	for (int t = 0; t < 10000 && cqes < 5; t++) {
		raw_qp_reap(&self->g, &cqes, &errors);
		usleep(100);
	}
	ASSERT_EQ(5, cqes);
	ASSERT_EQ(0, errors);
	ASSERT_EQ(0, raw_qp_reset(&self->g, &self->e));
	/*
	 * A wake-up call with nothing new posted: it runs the QP's work at
	 * once (srnic_engine_doorbell), which is whatever the doorbell says.
	 */
	cqes = errors = 0;
	ASSERT_EQ(0, uverbs_post_send_doorbell(self->g.fd, self->g.qp.core.qp_handle));
	/* One new WQE: its completion, and no other. */
	adv_post_write(&self->g, &self->ar, 0);
	ASSERT_EQ(0, srnic_raw_ring_sq(self->g.fd, self->g.qp.core.qp_handle,
				       self->g.qp_db, raw_qp_sq_slot(&self->g), 1));
	for (int t = 0; t < 10000 && !cqes; t++) {
		raw_qp_reap(&self->g, &cqes, &errors);
		usleep(100);
	}
	EXPECT_EQ(1, cqes) TH_LOG("completions of work posted before the reset");
	EXPECT_EQ(0, errors);
}

/* ---- kernel-only work requests, and keys that are not the user's ---- */

/* IB_WR_REG_MR, a kernel QP's opcode: the kernel's segment after the control one. */
#define ADV_KERNEL_WR_REG_MR 0x20
struct adv_reg_seg {			/* struct srnic_kwqe_reg */
	uint64_t iova;
	uint64_t length;
	uint32_t mr_index;
	uint32_t key;
	uint32_t access;
	uint32_t page_shift;
};

/*
 * The arena and its QP for one WQE at a time: adv_build's, with no receive
 * posted (an error flushes the receive queue too: 16 more CQEs each time).
 */
static void adv_build_sends_only(struct __test_metadata *_metadata,
				 FIXTURE_DATA(adv) *self, uint64_t *seed)
{
	adv_build(_metadata, self, seed);
	atomic_store_explicit((_Atomic uint32_t *)&self->g.qp_db->rq_producer, 0,
			      memory_order_release);
	ASSERT_EQ(0, raw_qp_reset(&self->g, &self->e));
}

/* The WQE at ring position 0 run on a QP just reset: its status; the QP reset again. */
static int adv_run_first(struct __test_metadata *_metadata,
			 FIXTURE_DATA(adv) *self, bool want_err)
{
	int st = adv_run_one(_metadata, &self->g, 0);

	if (want_err)
		EXPECT_EQ(IBV_QPS_ERR, uverbs_query_qp_state(self->g.fd,
							      self->g.qp.core.qp_handle));
	EXPECT_EQ(0, raw_qp_reset(&self->g, &self->e));
	return st;
}

/* @key with its key byte moved on: a key the MR at its index does not have yet. */
static uint32_t next_key(uint32_t key)
{
	return (key & ~0xffu) | ((key + 1) & 0xff);
}

/*
 * IB_WR_REG_MR names an MR by index and gives it any range, access and key:
 * kernel QPs only (their PDs alone have fast-registration MRs).  Written
 * into a user QP's ring, naming the user's MR b (local write only) with
 * every remote right, MR a over the canaries around it, or the lowest
 * indexes (MRs the kernel made at boot, its DMA MRs), it completes
 * IBV_WC_LOC_QP_OP_ERR, moves the QP to error and registers nothing: the
 * keys it asked for reach nothing, b still refuses remote writes and a
 * works as before.
 */
TEST_F(adv, reg_mr_opcode_is_kernel_only)
{
	uint64_t seed = 1;
	const struct arena *ar;

	adv_build_sends_only(_metadata, self, &seed);
	ar = &self->ar;
	struct {
		uint32_t index, key;
		uint64_t iova, length;
		const char *what;
	} t[] = {
		{ ar->mrb.lkey >> 8, next_key(ar->mrb.lkey), (uintptr_t)ar->b, REGION,
		  "b, every right" },
		{ ar->mra.lkey >> 8, next_key(ar->mra.lkey), (uintptr_t)ar->base,
		  5 * REGION, "a, over the canaries" },
		{ 1, 1 << 8 | 0x11, (uintptr_t)ar->a, REGION, "index 1" },
		{ 2, 2 << 8 | 0x11, (uintptr_t)ar->a, REGION, "index 2" },
		{ 3, 3 << 8 | 0x11, (uintptr_t)ar->a, REGION, "index 3" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct srnic_wqe_ctrl *c = raw_qp_wqe(&self->g, 0, ADV_KERNEL_WR_REG_MR);
		struct adv_reg_seg *reg = (struct adv_reg_seg *)(c + 1);

		reg->iova = t[i].iova;
		reg->length = t[i].length;
		reg->mr_index = t[i].index;
		reg->key = t[i].key;
		reg->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		reg->page_shift = 12;
		EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, adv_run_first(_metadata, self, true))
			TH_LOG("REG_MR of %s", t[i].what);
		/* The key it asked for reaches nothing. */
		adv_post_write_to(&self->g, ar, 0, t[i].iova + REGION / 2, t[i].key);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, adv_run_first(_metadata, self, true))
			TH_LOG("WRITE by the key REG_MR of %s asked for", t[i].what);
	}
	/* b: still no remote write; a: as it was. */
	adv_post_write_to(&self->g, ar, 0, (uintptr_t)ar->b, ar->mrb.rkey);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, adv_run_first(_metadata, self, true));
	EXPECT_EQ(-1, all_eq(ar->b, REGION, 0));
	fill(self->ar.a, 64, 7);
	adv_post_write(&self->g, ar, 0);
	EXPECT_EQ(IBV_WC_SUCCESS, adv_run_first(_metadata, self, false));
	EXPECT_EQ(-1, verify(ar->a + 4096, 64, 7));
	EXPECT_EQ(-1, arena_canaries(ar));
	adv_after(_metadata, self);
}

/*
 * LOCAL_INV from a user QP naming keys it may not invalidate: 0, random
 * keys (MR and window space), the lowest indexes with key byte 0 (MRs the
 * kernel made at boot), another PD's MR, a deregistered MR's key, and its
 * own MR a (a registered MR, not a fast-registration one: only kernel PDs
 * have those).  Each completes IBV_WC_LOC_QP_OP_ERR and moves the QP to
 * error; a still works afterwards.
 */
TEST_F(adv, local_inv_of_keys_not_the_users)
{
	uint64_t seed = adv_seed(_metadata, "local_inv_of_keys_not_the_users");
	const struct arena *ar;

	adv_build_sends_only(_metadata, self, &seed);
	ar = &self->ar;
	const uint32_t keys[] = {
		0, (uint32_t)xorshift(&seed) & 0x7fffffffu,
		(uint32_t)xorshift(&seed) | 0x80000000u, 1 << 8, 2 << 8, 3 << 8,
		ar->mrc.lkey, ar->stale, ar->mra.lkey, ar->mrb.lkey,
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct srnic_wqe_ctrl *c = raw_qp_wqe(&self->g, 0, IBV_WR_LOCAL_INV);

		c->imm_data = keys[i];
		EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, adv_run_first(_metadata, self, true))
			TH_LOG("LOCAL_INV of 0x%x", keys[i]);
	}
	fill(self->ar.a, 64, 8);
	adv_post_write(&self->g, ar, 0);
	EXPECT_EQ(IBV_WC_SUCCESS, adv_run_first(_metadata, self, false));
	EXPECT_EQ(-1, verify(ar->a + 4096, 64, 8));
	EXPECT_EQ(-1, arena_canaries(ar));
	adv_after(_metadata, self);
}

/*
 * READ, CMP_AND_SWP and FETCH_AND_ADD written with the inline flag (what
 * the provider refuses at post time): their answer would land in the
 * WQE's inline bytes, a copy in the engine, and be lost with a successful
 * completion.  Each completes IBV_WC_LOC_QP_OP_ERR and moves the QP to
 * error; the atomics change nothing at their target.
 */
TEST_F(adv, inline_where_an_answer_lands)
{
	const uint8_t ops[] = { IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
				IBV_WR_ATOMIC_FETCH_AND_ADD };
	uint64_t seed = 1;
	const struct arena *ar;

	adv_build_sends_only(_metadata, self, &seed);
	ar = &self->ar;
	for (size_t i = 0; i < sizeof(ops); i++) {
		struct srnic_wqe_atomic *at =
			raw_qp_wqe_remote(&self->g, 0, ops[i], (uintptr_t)ar->a + 4096,
					  ar->mra.rkey);
		struct srnic_wqe_ctrl *c = self->g.sq_ring;	/* position 0 */

		at->compare_add = 0;	/* CMP_AND_SWP would match */
		at->swap = 0x1111111111111111ull;
		c->flags |= SRNIC_WQE_INLINE;
		c->inline_len = 8;
		memset((uint8_t *)c + SRNIC_SEND_HDR_RC, 0x77, 8);
		memset(self->ar.a + 4096, 0, 8);
		EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, adv_run_first(_metadata, self, true))
			TH_LOG("opcode %u with inline data", ops[i]);
		EXPECT_EQ(-1, all_eq(ar->a + 4096, 8, 0)) TH_LOG("opcode %u", ops[i]);
	}
	EXPECT_EQ(-1, arena_canaries(ar));
	adv_after(_metadata, self);
}

/* ---- FLUSH, written into the ring (rdma-core 44 has no verb for it) ---- */

#define ADV_ACCESS_FLUSH_GLOBAL 0x100		/* IB_UVERBS_ACCESS_FLUSH_GLOBAL */
#define ADV_ACCESS_FLUSH_PERSISTENT 0x200	/* IB_UVERBS_ACCESS_FLUSH_PERSISTENT */
#define ADV_FLUSH_GLOBAL 1			/* placement types */
#define ADV_FLUSH_PERSISTENT 2
#define ADV_FLUSH_RANGE 0			/* selectivity levels */
#define ADV_FLUSH_MR 1

/* The raw QP's access rights, RTS to RTS (raw_qp_reset() gives it 0xf). */
static int adv_qp_access(struct raw_qp *g, uint32_t access)
{
	struct ib_uverbs_modify_qp c = {
		.qp_handle = g->qp.core.qp_handle, .qp_state = 3 /* RTS */,
		.qp_access_flags = access, .attr_mask = 1 | (1 << 3) /* STATE | ACCESS_FLAGS */,
	};

	return uverbs_modify_qp(g->fd, &c);
}

/*
 * FLUSH (opcode 14) from a QP to itself, one field wrong at a time: it
 * completes (IBV_WC_FLUSH, no bytes) only through a key whose MR has the
 * FLUSH right, on a QP that has it too, within the region (any address
 * for the whole region), for global visibility.  Otherwise the responder
 * refuses it (IBV_WC_REM_ACCESS_ERR: the right, the PD, the range, key 0
 * or stale, persistence) or the WQE fails where it is (IBV_WC_LOC_QP_OP_ERR:
 * a placement type or level no FETH may hold, a data segment).  An MR with
 * the persistence right cannot be registered: srnic has no persistent
 * memory, and does not offer the right; a QP may have it (the CM gives a
 * QP both FLUSH rights of a device that has either), which grants nothing.
 */
TEST_F(adv, flush_fields_one_by_one)
{
	const uint32_t all = 0xf | ADV_ACCESS_FLUSH_GLOBAL;
	struct ib_uverbs_reg_mr_resp mf, mf2, d;
	const struct arena *ar;
	uint64_t seed = 1;

	adv_build_sends_only(_metadata, self, &seed);
	ar = &self->ar;
	ASSERT_EQ(0, uverbs_reg_mr(self->g.fd, self->g.pd.core.pd_handle, (uintptr_t)ar->a,
				   REGION, (uintptr_t)ar->a, all, &mf));
	ASSERT_EQ(0, uverbs_reg_mr(self->g.fd, ar->pd2, (uintptr_t)ar->a, REGION,
				   (uintptr_t)ar->a, all, &mf2));
	EXPECT_EQ(-EOPNOTSUPP, uverbs_reg_mr(self->g.fd, self->g.pd.core.pd_handle,
					     (uintptr_t)ar->a, REGION, (uintptr_t)ar->a,
					     0xf | ADV_ACCESS_FLUSH_PERSISTENT, &d));
	const struct {
		uint32_t rkey, qp_access, len;
		uint64_t raddr;
		uint8_t type, level, num_sge, status;
		const char *what;
	} t[] = {
		{ mf.rkey, all, 64, (uintptr_t)ar->a + 4096, ADV_FLUSH_GLOBAL,
		  ADV_FLUSH_RANGE, 0, IBV_WC_SUCCESS, "a range" },
		{ mf.rkey, all, REGION, (uintptr_t)ar->a, ADV_FLUSH_GLOBAL,
		  ADV_FLUSH_RANGE, 0, IBV_WC_SUCCESS, "the whole region as a range" },
		{ mf.rkey, all, 0, 0x5a5a0000ull, ADV_FLUSH_GLOBAL, ADV_FLUSH_MR, 0,
		  IBV_WC_SUCCESS, "the region, any address" },
		{ ar->mra.rkey, all, 64, (uintptr_t)ar->a, ADV_FLUSH_GLOBAL,
		  ADV_FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR, "a key without the right" },
		{ mf.rkey, 0xf, 64, (uintptr_t)ar->a, ADV_FLUSH_GLOBAL, ADV_FLUSH_RANGE, 0,
		  IBV_WC_REM_ACCESS_ERR, "a QP without the right" },
		{ mf2.rkey, all, 64, (uintptr_t)ar->a, ADV_FLUSH_GLOBAL, ADV_FLUSH_MR, 0,
		  IBV_WC_REM_ACCESS_ERR, "another PD's key" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a + REGION - 32, ADV_FLUSH_GLOBAL,
		  ADV_FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR, "past the region" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a - 64, ADV_FLUSH_GLOBAL,
		  ADV_FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR, "before the region" },
		{ 0, all, 0, 0, ADV_FLUSH_GLOBAL, ADV_FLUSH_MR, 0, IBV_WC_REM_ACCESS_ERR,
		  "key 0" },
		{ ar->stale, all, 0, 0, ADV_FLUSH_GLOBAL, ADV_FLUSH_MR, 0,
		  IBV_WC_REM_ACCESS_ERR, "a deregistered MR's key" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a, ADV_FLUSH_PERSISTENT,
		  ADV_FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR, "persistence" },
		/* Both rights on the QP, as the CM gives them: still no persistence. */
		{ mf.rkey, all | ADV_ACCESS_FLUSH_PERSISTENT, 64, (uintptr_t)ar->a,
		  ADV_FLUSH_GLOBAL, ADV_FLUSH_RANGE, 0, IBV_WC_SUCCESS,
		  "visibility, the QP with both rights" },
		{ mf.rkey, all | ADV_ACCESS_FLUSH_PERSISTENT, 64, (uintptr_t)ar->a,
		  ADV_FLUSH_PERSISTENT, ADV_FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR,
		  "persistence, the QP with both rights" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a, 0, ADV_FLUSH_RANGE, 0,
		  IBV_WC_LOC_QP_OP_ERR, "no placement type" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a, 0x80, ADV_FLUSH_RANGE, 0,
		  IBV_WC_LOC_QP_OP_ERR, "a reserved placement type" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a, ADV_FLUSH_GLOBAL, 2, 0,
		  IBV_WC_LOC_QP_OP_ERR, "a reserved level" },
		{ mf.rkey, all, 64, (uintptr_t)ar->a, ADV_FLUSH_GLOBAL, ADV_FLUSH_RANGE, 1,
		  IBV_WC_LOC_QP_OP_ERR, "a data segment" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct srnic_wqe_ctrl *c = self->g.sq_ring;	/* ring position 0 */
		struct srnic_wqe_data *dseg =
			(struct srnic_wqe_data *)((uint8_t *)c + SRNIC_SEND_HDR_RC);
		const struct srnic_cqe *cqe;
		bool ok = t[i].status == IBV_WC_SUCCESS;

		TH_LOG("FLUSH: %s", t[i].what);
		ASSERT_EQ(0, adv_qp_access(&self->g, t[i].qp_access));
		raw_qp_flush(&self->g, 0, t[i].raddr, t[i].rkey, t[i].len, t[i].type,
			     t[i].level);
		c->num_sge = t[i].num_sge;
		*dseg = (struct srnic_wqe_data){ 8, ar->mra.lkey, (uintptr_t)ar->a };
		EXPECT_EQ(t[i].status, adv_run_first(_metadata, self, !ok));
		cqe = (const struct srnic_cqe *)self->g.cq_ring +
		      ((self->g.cq_cons - 1) & ((1u << RAW_QP_LOG_CQ) - 1));
		if (ok) {
			EXPECT_EQ(SRNIC_WC_FLUSH, cqe->opcode);
			EXPECT_EQ(0, cqe->byte_len);
		}
	}
	EXPECT_EQ(-1, all_eq(ar->a, REGION, 0)) TH_LOG("a FLUSH wrote");
	EXPECT_EQ(-1, arena_canaries(ar));
	adv_after(_metadata, self);
}

TEST_F_TIMEOUT(adv, odp_churn, 900)
{
	const uint32_t entries = 1u << RAW_QP_LOG_SQ;
	uint64_t seed = adv_seed(_metadata, "odp_churn");
	struct churner ch = { .seed = seed ^ 0x2545f491 };
	struct ib_uverbs_reg_mr_resp odp, implicit;
	uint64_t ops = 0, end_all = now_ms() + scaled_ms(60000);
	pthread_t t;
	uint32_t prod = 0;

	/* No receives: an error would flush them, 16 CQEs more. */
	adv_build_sends_only(_metadata, self, &seed);
	ch.base = raw_qp_anon(ODP_LEN);
	ASSERT_NE(NULL, ch.base);
	ASSERT_EQ(0, uverbs_reg_mr(self->g.fd, self->g.pd.core.pd_handle,
				   (uintptr_t)ch.base, ODP_LEN, (uintptr_t)ch.base,
				   0xf | IBV_ACCESS_ON_DEMAND, &odp)) TH_LOG("srnic's ODP MR");
	ASSERT_EQ(0, uverbs_reg_mr(self->g.fd, self->g.pd.core.pd_handle, 0,
				   UINT64_MAX, 0, 0xf | IBV_ACCESS_ON_DEMAND,
				   &implicit));
	ASSERT_EQ(0, pthread_create(&t, NULL, churn, &ch));
	/*
	 * Registrations while the range changes: the MMU notifier is live
	 * before the registration returns (an invalidation then once found
	 * the MR half made).
	 */
	ch.fast = 1;
	for (int i = 0; i < 300; i++) {
		struct ib_uverbs_reg_mr_resp m;

		ASSERT_EQ(0, uverbs_reg_mr(self->g.fd, self->g.pd.core.pd_handle,
					   (uintptr_t)ch.base, ODP_LEN,
					   (uintptr_t)ch.base,
					   0xf | IBV_ACCESS_ON_DEMAND, &m));
		ASSERT_EQ(0, uverbs_dereg_mr(self->g.fd, m.mr_handle));
	}
	ch.fast = 0;
	while (ops < 3000 && now_ms() < end_all) {
		uint64_t r = xorshift(&seed);
		uint8_t *slot = (uint8_t *)self->g.sq_ring +
				((size_t)(prod & (entries - 1)) << RAW_QP_LOG_STRIDE);
		struct srnic_wqe_ctrl *c = (struct srnic_wqe_ctrl *)slot;
		struct srnic_wqe_raddr *ra = (struct srnic_wqe_raddr *)(c + 1);
		struct srnic_wqe_data *d = (struct srnic_wqe_data *)(slot + SRNIC_SEND_HDR_RC);
		uint32_t len = 1 + (r >> 8) % 16384;
		uint64_t off = (r >> 24) % (ODP_LEN - len);
		uint64_t end = now_ms() + scaled_ms(WC_MS);
		int cqes = 0, errors = 0;

		memset(slot, 0, SRNIC_SEND_HDR_RC + sizeof(*d));
		c->opcode = r % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		c->flags = SRNIC_WQE_SIGNALED;
		c->num_sge = 1;
		ra->remote_addr = (uintptr_t)ch.base + off;
		ra->rkey = (r >> 6) % 2 ? odp.rkey : implicit.rkey;
		d->addr = (r >> 7) % 2 ? (uintptr_t)self->ar.a + (r >> 40) % (REGION - 16384) :
					 (uintptr_t)ch.base + (ODP_LEN - off - len);
		d->lkey = d->addr >= (uintptr_t)ch.base ? implicit.lkey : self->ar.mra.lkey;
		d->length = len;
		prod++;
		ASSERT_EQ(0, srnic_raw_ring_sq(self->g.fd, self->g.qp.core.qp_handle,
					       self->g.qp_db, raw_qp_sq_slot(&self->g), prod));
		while (!cqes && now_ms() < end) {
			raw_qp_reap(&self->g, &cqes, &errors);
			if (!cqes)
				usleep(50);
		}
		ASSERT_EQ(1, cqes) TH_LOG("ODP op %llu: %d completions in %llu ms",
					  (unsigned long long)ops, cqes,
					  (unsigned long long)scaled_ms(WC_MS));
		/* Every page stays mapped, only changing: nothing may fail. */
		ASSERT_EQ(0, errors)
			TH_LOG("ODP op %llu (%s of %u bytes): status %u",
			       (unsigned long long)ops,
			       c->opcode == IBV_WR_RDMA_READ ? "READ" : "WRITE",
			       len, raw_qp_last_status(&self->g));
		ops++;
	}
	atomic_store(&ch.stop, 1);
	pthread_join(t, NULL);
	TH_LOG("ODP: %llu operations under %llu drops and %llu remaps",
	       (unsigned long long)ops, (unsigned long long)ch.drops,
	       (unsigned long long)ch.remaps);
	EXPECT_LE(1000, ops);
	EXPECT_EQ(-1, arena_canaries(&self->ar));
	adv_after(_metadata, self);
	munmap(ch.base, ODP_LEN);
}

TEST_HARNESS_MAIN
