// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Scale: thousands of connected, idle QPs beside a ping-pong that must keep
 * working, with the engine's cost following the work.  The engine counts
 * the QPs it looks at (debugfs engine "visits"); per round trip of the
 * ping-pong that count must not grow with the idle QPs, in one process or
 * spread over many (each its own context and bell pages).  One process
 * makes every QP the device reports (max_qp), and no more.  And the marks
 * that name the rung doorbells, in pages the user writes, are hints: forged
 * ones, a storm of them, marks racing with destroy and marks of a process
 * that dies change nothing but the engine's passes.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "traffic.h"
#include "raw_qp.h"

#define ROUNDS 200
/* QPs the engine may look at per round trip of the ping-pong, idle QPs or none. */
#define MAX_VISITS 8

/* Idle QPs: connected in pairs to each other, on one CQ that stays empty. */
struct idle {
	struct env *e;
	struct ibv_cq *cq;
	struct ibv_qp **qp;
	int n;
	int err;		/* errno of the first failure */
};

static void idle_destroy(struct idle *s)
{
	while (s->n)
		ibv_destroy_qp(s->qp[--s->n]);
	free(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	memset(s, 0, sizeof(*s));
}

static struct ibv_qp *idle_qp(struct idle *s)
{
	struct ibv_qp_init_attr init = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->e->pd, &init);
}

/* @qp to RTS, connected to @dest on its own device. */
static int idle_connect(struct idle *s, struct ibv_qp *qp, uint32_t dest)
{
	struct ep x = { .e = s->e, .o = qp_defaults(s->e, IBV_QPT_RC), .qp = qp };

	return ep_connect(&x, dest);
}

/*
 * Up to @n idle QPs on @e (an even number: pairs); stops at the first
 * failure, its errno in s->err.  Returns the QPs made.
 */
static int idle_make(struct env *e, int n, struct idle *s)
{
	memset(s, 0, sizeof(*s));
	s->e = e;
	s->qp = calloc(n, sizeof(*s->qp));
	s->cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	if (!s->qp || !s->cq) {
		s->err = ENOMEM;
		return 0;
	}
	while (s->n + 2 <= n) {
		struct ibv_qp *a = idle_qp(s), *b = a ? idle_qp(s) : NULL;

		if (!b) {
			s->err = errno;
			if (a)
				ibv_destroy_qp(a);
			break;
		}
		s->qp[s->n++] = a;
		s->qp[s->n++] = b;
		if (idle_connect(s, a, b->qp_num) || idle_connect(s, b, a->qp_num)) {
			s->err = errno ? errno : EIO;
			break;
		}
	}
	return s->n;
}

/* @n round trips of 8-byte SENDs from @a to @b and back; 0, or -1. */
static int ping_pong(struct ep *a, struct ep *b, int n)
{
	struct ibv_wc wc[2];

	for (int i = 0; i < n; i++) {
		if (post_recv(b, i, 0, 8) || post_recv(a, i, 8, 8) ||
		    post_send1(a, IBV_WR_SEND, i, 0, 8, IBV_SEND_SIGNALED, NULL, 0, 0))
			return -1;
		if (poll_one(b->cq, &wc[0], WC_MS) != 1 || wc[0].status ||
		    wc[0].opcode != IBV_WC_RECV)
			return -1;
		if (post_send1(b, IBV_WR_SEND, i, 8, 8, IBV_SEND_SIGNALED, NULL, 0, 0) ||
		    poll_one(b->cq, &wc[0], WC_MS) != 1 || wc[0].status)
			return -1;
		if (drain(a->cq, wc, 2, WC_MS) != 2 || wc[0].status || wc[1].status)
			return -1;
	}
	return 0;
}

/* The QPs the engine looked at per round trip of the ping-pong, or -1. */
static double visits_per_round_trip(struct ep *a, struct ep *b)
{
	long long v0 = engine_stat("visits"), v1;

	if (v0 < 0 || ping_pong(a, b, ROUNDS))
		return -1;
	v1 = engine_stat("visits");
	return v1 < v0 ? -1 : (double)(v1 - v0) / ROUNDS;
}

/* Whether the engine's run list has emptied (bounded wait). */
static int run_list_empties(void)
{
	uint64_t end = now_ms() + scaled_ms(20000);

	do {
		if (engine_stat("run") == 0)
			return 1;
		usleep(10000);
	} while (now_ms() < end);
	return 0;
}

FIXTURE(scale) {
	struct env e;
	struct ep a, b;		/* the ping-pong */
	struct idle idle;
	pid_t kids[64];
	int nkids;
	int go;			/* write end: closed, the children end */
};

FIXTURE_VARIANT(scale) {
	int procs;		/* 0: the idle QPs are this process's */
	int qps;		/* idle QPs per process */
};

FIXTURE_VARIANT_ADD(scale, one_process_16384) { .procs = 0, .qps = 16384 };
FIXTURE_VARIANT_ADD(scale, procs_32_of_512) { .procs = 32, .qps = 512 };

FIXTURE_SETUP(scale)
{
	struct qp_opts o;

	self->go = -1;
	ASSERT_EQ(0, env_open(&self->e)) TH_LOG("cannot open %s", srnic_test_dev());
	o = qp_defaults(&self->e, IBV_QPT_RC);
	o.buf_len = 4096;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(scale)
{
	int st;

	if (self->go >= 0)
		close(self->go);
	for (int i = 0; i < self->nkids; i++)
		waitpid(self->kids[i], &st, 0);
	idle_destroy(&self->idle);
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* A child: @n idle QPs in a context of its own, until @go closes. */
static void __attribute__((noreturn)) idle_child(int n, int ready, int go)
{
	struct env e;
	struct idle s = {};
	int made = -1;
	char c;

	if (!env_open_one(&e, srnic_test_dev()))
		made = idle_make(&e, n, &s);
	if (write(ready, &made, sizeof(made)) != sizeof(made))
		_exit(1);
	while (read(go, &c, 1) > 0)
		;
	idle_destroy(&s);
	env_close(&e);
	_exit(0);
}

/* The children's idle QPs: procs processes of qps each; returns how many were made. */
static long spawn_idle(FIXTURE_DATA(scale) *self, int procs, int qps)
{
	int ready[2], go[2], made;
	long total = 0;

	if (pipe(ready) || pipe(go))
		return -1;
	self->go = go[1];
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			break;
		if (!pid) {
			close(ready[0]);
			close(go[1]);
			idle_child(qps, ready[1], go[0]);
		}
		self->kids[self->nkids++] = pid;
	}
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < self->nkids; i++) {
		struct pollfd p = { .fd = ready[0], .events = POLLIN };

		if (poll(&p, 1, scaled_ms(600000)) != 1 ||
		    read(ready[0], &made, sizeof(made)) != sizeof(made) || made < 0)
			break;
		total += made;
	}
	close(ready[0]);
	return total;
}

/*
 * The ping-pong keeps working beside the idle QPs, and the engine looks at
 * no more QPs per round trip than without them: before the doorbells named
 * their queues, every pass read every connected QP's doorbell.
 */
TEST_F_TIMEOUT(scale, idle_qps_cost_nothing, 3600)
{
	long want = (long)(variant->procs ? variant->procs : 1) * variant->qps, made;
	double before, after;

	before = visits_per_round_trip(&self->a, &self->b);
	ASSERT_LE(0, before) TH_LOG("ping-pong failed, or no \"visits\" in debugfs engine");
	if (variant->procs)
		made = spawn_idle(self, variant->procs, variant->qps);
	else
		made = idle_make(&self->e, variant->qps, &self->idle);
	ASSERT_EQ(want, made) TH_LOG("idle QPs: %s", strerror(self->idle.err));
	/* Each went to RTS with a kick; once looked at, none is on the list. */
	ASSERT_TRUE(run_list_empties()) TH_LOG("run list: %lld", engine_stat("run"));
	after = visits_per_round_trip(&self->a, &self->b);
	ASSERT_LE(0, after) TH_LOG("the ping-pong failed beside %ld idle QPs", made);
	TH_LOG("QPs looked at per round trip: %.2f alone, %.2f beside %ld idle",
	       before, after, made);
	/*
	 * A round trip rings two doorbells: each QP looked at once for its
	 * mark, and again at most for what its doorbell call left.
	 */
	EXPECT_LE(before, MAX_VISITS);
	EXPECT_LE(after, MAX_VISITS);
}

/*
 * Hot QPs: a QP that keeps posting has its doorbell read on every pass
 * (debugfs engine "polls") instead of its marks taken, and the hot list
 * empties once the engine has nothing to do, so a QP that stopped costs
 * nothing again.
 */
FIXTURE(hot) {
	struct env e;
	struct ep a, b;
};

FIXTURE_SETUP(hot)
{
	struct qp_opts o;

	ASSERT_EQ(0, env_open(&self->e)) TH_LOG("cannot open %s", srnic_test_dev());
	o = qp_defaults(&self->e, IBV_QPT_RC);
	o.buf_len = 4096;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(hot)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* Whether every engine thread sleeps with its hot list empty (bounded wait). */
static int hot_list_empties(void)
{
	uint64_t end = now_ms() + scaled_ms(20000);

	do {
		if (engine_stat("flags") == SRNIC_ENGINE_NEED_WAKEUP &&
		    engine_stat("hot") == 0)
			return 1;
		usleep(10000);
	} while (now_ms() < end);
	return 0;
}

TEST_F_TIMEOUT(hot, busy_qps_polled_idle_ones_retired, 600)
{
	long long polls = engine_stat("polls"), marks = engine_stat("marks");

	ASSERT_LE(0, polls) TH_LOG("no \"polls\" in debugfs engine");
	ASSERT_EQ(0, ping_pong(&self->a, &self->b, ROUNDS));
	polls = engine_stat("polls") - polls;
	marks = engine_stat("marks") - marks;
	TH_LOG("%d round trips: %lld doorbells found hot, %lld by their marks",
	       ROUNDS, polls, marks);
	EXPECT_LT(0, polls);
	ASSERT_TRUE(hot_list_empties()) TH_LOG("hot %lld, flags %lld",
		    engine_stat("hot"), engine_stat("flags"));
	/* Retired, their marks serve them again. */
	EXPECT_EQ(0, ping_pong(&self->a, &self->b, ROUNDS));
}

/*
 * QPs destroyed while hot, with WRITEs in flight: destroy takes them off
 * the hot list (a use after free here is KASAN's to find), the list
 * empties, and the fixture's pair still works.
 */
TEST_F_TIMEOUT(hot, destroyed_while_polled, 900)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	uint64_t n = fuzz_budget(80);

	o.buf_len = 4096;
	for (uint64_t i = 0; i < n; i++) {
		struct ep x, y;

		ASSERT_EQ(0, pair_make(&self->e, &o, &o, &x, &y)) TH_LOG("round %llu",
			  (unsigned long long)i);
		/* One round trip makes both hot; then a stream, not waited for. */
		ASSERT_EQ(0, ping_pong(&x, &y, 1));
		for (int k = 0; k < 16; k++)
			ASSERT_EQ(0, post_send1(&x, IBV_WR_RDMA_WRITE, k, 0, 8,
						k == 15 ? IBV_SEND_SIGNALED : 0,
						&y, 64, 0));
		ep_destroy(&x);
		ep_destroy(&y);
	}
	ASSERT_TRUE(hot_list_empties()) TH_LOG("hot %lld", engine_stat("hot"));
	EXPECT_EQ(0, ping_pong(&self->a, &self->b, ROUNDS));
}

/* One process and the device's limits: the ping-pong and the idle QPs. */
FIXTURE(limits) {
	struct env e;
	struct ep a, b;
	struct idle idle;
};

FIXTURE_SETUP(limits)
{
	struct qp_opts o;

	ASSERT_EQ(0, env_open(&self->e)) TH_LOG("cannot open %s", srnic_test_dev());
	o = qp_defaults(&self->e, IBV_QPT_RC);
	o.buf_len = 4096;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(limits)
{
	idle_destroy(&self->idle);
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/*
 * One process makes the QPs query_device reports, less the ping-pong's two:
 * connected and idle, the ping-pong still works, and the next QP is refused
 * with ENOMEM.  (A context had 256 UAR pages of 64 doorbells: 16,384
 * queues, QPs and CQs together.)
 */
TEST_F_TIMEOUT(limits, max_qp_in_one_process, 3600)
{
	int want = self->e.dev.max_qp - 2, made;
	struct ibv_qp *more;
	double v;

	made = idle_make(&self->e, want, &self->idle);
	ASSERT_EQ(want, made) TH_LOG("made %d of %d: %s", made, want,
				     strerror(self->idle.err));
	more = idle_qp(&self->idle);
	EXPECT_EQ(NULL, more);
	EXPECT_EQ(ENOMEM, errno);
	if (more)
		ibv_destroy_qp(more);
	ASSERT_TRUE(run_list_empties());
	v = visits_per_round_trip(&self->a, &self->b);
	ASSERT_LE(0, v) TH_LOG("the ping-pong failed beside %d idle QPs", made);
	EXPECT_LE(v, MAX_VISITS);
}

/* How many objects of @type `rdma resource` shows on the device, kernel's included, or -1. */
static long res_count(const char *type)
{
	char cmd[256], line[64];
	long n = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s dev %s 2>/dev/null | grep -c .",
		 type, srnic_test_dev());
	f = popen(cmd, "r");
	if (f && fgets(line, sizeof(line), f))
		n = atol(line);
	if (f)
		pclose(f);
	return n;
}

/*
 * The CQs and SRQs query_device reports are there to make: less those the
 * device has (the MAD layer's, the ping-pong's), one process makes all of
 * them, and one more is refused with ENOMEM.
 */
TEST_F_TIMEOUT(limits, max_cq_and_max_srq_in_one_process, 3600)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	long cqs = self->e.dev.max_cq - res_count("cq");
	long srqs = self->e.dev.max_srq - res_count("srq");
	void **obj = calloc((cqs > srqs ? cqs : srqs) + 1, sizeof(*obj));
	long n;

	ASSERT_NE(NULL, obj);
	ASSERT_GT(cqs, 0);
	ASSERT_GT(srqs, 0);
	for (n = 0; n <= cqs && (obj[n] = ibv_create_cq(self->e.ctx, 1, NULL, NULL, 0)); n++)
		;
	EXPECT_EQ(cqs, n) TH_LOG("CQs: %s", strerror(errno));
	if (n == cqs) {
		EXPECT_EQ(ENOMEM, errno);
	}
	while (n)
		ibv_destroy_cq(obj[--n]);
	for (n = 0; n <= srqs && (obj[n] = ibv_create_srq(self->e.pd, &sa)); n++)
		;
	EXPECT_EQ(srqs, n) TH_LOG("SRQs: %s", strerror(errno));
	if (n == srqs) {
		EXPECT_EQ(ENOMEM, errno);
	}
	while (n)
		ibv_destroy_srq(obj[--n]);
	free(obj);
}

/* ---- the bell pages under hostile writes ---- */

/* A raw QP (connected to itself) whose every page the test may write, and an MR. */
FIXTURE(bells) {
	struct env e;
	struct raw_qp g;
	uint8_t *buf;
	struct ib_uverbs_reg_mr_resp mr;
	uint32_t prod;
};

FIXTURE_SETUP(bells)
{
	const char *step = "";
	int err;

	self->g.fd = -1;
	ASSERT_EQ(0, env_open(&self->e)) TH_LOG("cannot open %s", srnic_test_dev());
	err = raw_qp_make(&self->g, &self->e, &step);
	ASSERT_EQ(0, err) TH_LOG("raw QP, %s: %s", step, strerror(-err));
	self->buf = raw_qp_anon(4096);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, uverbs_reg_mr(self->g.fd, self->g.pd.core.pd_handle,
				   (uintptr_t)self->buf, 4096, (uintptr_t)self->buf,
				   0xf, &self->mr));
}

FIXTURE_TEARDOWN(bells)
{
	raw_qp_free(&self->g);
	if (self->buf)
		munmap(self->buf, 4096);
	env_close(&self->e);
}

/* Every bit of @g's bell page and UAR page summary set, and the slots' values @v. */
static void forge_marks(struct raw_qp *g, uint32_t v)
{
	struct srnic_db_slot *slot = g->uar;

	memset(g->bells, 0xff, sizeof(*g->bells));
	memset(raw_qp_summary(g), 0xff, sizeof(struct srnic_uar_summary));
	for (unsigned int i = 0; i < SRNIC_DBS_PER_UAR; i++)
		if (i != g->qp.drv.db.slot)
			slot[i].value = v;
}

/* An 8-byte WRITE from buf to buf + 8 + 8 * n, rung. */
static int raw_write(FIXTURE_DATA(bells) *self, uint32_t n)
{
	struct srnic_wqe_ctrl *c = raw_qp_wqe(&self->g, self->prod, IBV_WR_RDMA_WRITE);
	struct srnic_wqe_raddr *ra = (struct srnic_wqe_raddr *)(c + 1);
	struct srnic_wqe_data *d = (struct srnic_wqe_data *)((char *)c + SRNIC_SEND_HDR_RC);

	memcpy(self->buf, "written!", 8);
	c->num_sge = 1;
	ra->remote_addr = (uintptr_t)self->buf + 8 + 8 * n;
	ra->rkey = self->mr.rkey;
	*d = (struct srnic_wqe_data){ .length = 8, .lkey = self->mr.lkey,
				      .addr = (uintptr_t)self->buf };
	return raw_qp_ring(&self->g, ++self->prod);
}

/* Whether the engine took every mark of @g's bell page (bounded wait). */
static int marks_taken(struct raw_qp *g)
{
	uint64_t end = now_ms() + scaled_ms(20000);

	do {
		if (!atomic_load((_Atomic __u64 *)&g->bells->top))
			return 1;
		usleep(1000);
	} while (now_ms() < end);
	return 0;
}

/* @want successful CQEs and no other within the bounded wait, the data in place. */
static void expect_writes(struct __test_metadata *_metadata,
			  FIXTURE_DATA(bells) *self, int want)
{
	uint64_t end = now_ms() + WC_MS;
	int cqes = 0, errors = 0;

	while (cqes < want && now_ms() < end) {
		raw_qp_reap(&self->g, &cqes, &errors);
		usleep(1000);
	}
	EXPECT_EQ(want, cqes);
	EXPECT_EQ(0, errors);
	for (int i = 0; i < want; i++) {
		EXPECT_EQ(0, memcmp(self->buf, self->buf + 8 + 8 * i, 8)) TH_LOG("WRITE %d", i);
	}
}

/*
 * Every mark set, of pages the context does not have, of its free slots
 * and of the summary's own place, with garbage in every other slot: the
 * engine takes them all and runs nothing, and then the one WRITE posted.
 */
TEST_F(bells, forged_marks_run_nothing)
{
	forge_marks(&self->g, 0x80000000u);
	ASSERT_EQ(0, uverbs_post_send_doorbell(self->g.fd, self->g.qp.core.qp_handle));
	ASSERT_TRUE(marks_taken(&self->g)) TH_LOG("top %#llx",
		    (unsigned long long)self->g.bells->top);
	EXPECT_EQ(IBV_QPS_RTS, uverbs_query_qp_state(self->g.fd, self->g.qp.core.qp_handle));
	ASSERT_EQ(0, raw_write(self, 0));
	expect_writes(_metadata, self, 1);
}

struct hammer {
	struct raw_qp *g;
	atomic_bool stop;
	unsigned long rounds;
};

static void *hammer_marks(void *arg)
{
	struct hammer *h = arg;
	uint64_t seed = srnic_test_seed();

	while (!atomic_load(&h->stop)) {
		forge_marks(h->g, (uint32_t)xorshift(&seed));
		h->rounds++;
	}
	return NULL;
}

/*
 * Marks forged without pause while QPs of the same context are made,
 * connected and destroyed in its slots: a mark may name a QP being
 * destroyed, or a slot just given to another.  Nothing breaks, and the
 * context's own QP still works after.
 */
TEST_F_TIMEOUT(bells, marks_race_with_destroy, 900)
{
	struct srnic_raw_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4,
					  .max_send_sge = 1, .max_recv_sge = 1 };
	struct srnic_create_qp_req qr = {};
	struct srnic_create_cq_req cr = {};
	struct hammer h = { .g = &self->g };
	uint64_t n = fuzz_budget(400);
	void *sq = raw_qp_anon(4096), *rq = raw_qp_anon(4096), *db = raw_qp_anon(4096);
	void *cq_ring = raw_qp_anon(4096);
	struct srnic_raw_cq cq;
	pthread_t th;

	ASSERT_TRUE(sq && rq && db && cq_ring);
	/* Their flushes (the hammer writes their producers) go to a CQ of their own. */
	cr.buf_addr = (uintptr_t)cq_ring;
	cr.db_addr = (uintptr_t)db + 2048;
	cr.log_entries = 6;
	ASSERT_EQ(0, uverbs_create_cq(self->g.fd, 63, &cr, sizeof(cr), &cq));
	qr.sq_buf_addr = (uintptr_t)sq;
	qr.rq_buf_addr = (uintptr_t)rq;
	qr.db_addr = (uintptr_t)db;
	qr.sq_log_entries = 2;
	qr.sq_log_stride = 7;
	qr.rq_log_entries = 2;
	qr.rq_log_stride = 5;
	ASSERT_EQ(0, pthread_create(&th, NULL, hammer_marks, &h));
	for (uint64_t i = 0; i < n; i++) {
		struct srnic_raw_qp q;

		ASSERT_EQ(0, uverbs_create_qp(self->g.fd, self->g.pd.core.pd_handle,
					      cq.core.cq_handle, cq.core.cq_handle,
					      IB_UVERBS_QPT_RC,
					      &caps, &qr, &q)) TH_LOG("round %llu",
								      (unsigned long long)i);
		/* Half of them die in RTS, the engine's to look at. */
		if (i % 2)
			EXPECT_EQ(0, uverbs_rc_to_rts(self->g.fd, q.core.qp_handle,
						      q.core.qpn, self->e.gid.raw,
						      self->e.gid_idx));
		ASSERT_EQ(0, uverbs_destroy_qp(self->g.fd, q.core.qp_handle));
	}
	atomic_store(&h.stop, true);
	pthread_join(th, NULL);
	TH_LOG("%llu QPs made and destroyed under %lu rounds of forged marks",
	       (unsigned long long)n, h.rounds);
	forge_marks(&self->g, 0);
	/* The engine may sleep by now: the doorbell call wakes it to take them. */
	ASSERT_EQ(0, uverbs_post_send_doorbell(self->g.fd, self->g.qp.core.qp_handle));
	ASSERT_TRUE(marks_taken(&self->g));
	/* What the hammer left in its neighbours' slots did nothing to this QP. */
	ASSERT_EQ(0, raw_write(self, 0));
	expect_writes(_metadata, self, 1);
	EXPECT_EQ(0, uverbs_destroy_cq(self->g.fd, cq.core.cq_handle));
	munmap(cq_ring, 4096);
	munmap(sq, 4096);
	munmap(rq, 4096);
	munmap(db, 4096);
}

/*
 * A process that forges marks without pause costs the engine passes, not
 * the others their service: another context's ping-pong keeps working, and
 * once the process is killed (its bell pages going with its context) so
 * does the engine.
 */
TEST_F_TIMEOUT(bells, storm_from_a_dying_process, 900)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep a, b;
	pid_t pid;
	int st;

	o.buf_len = 4096;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct raw_qp g;
		struct hammer h = { .g = &g };
		const char *step;

		/* A context of its own, which dies with it. */
		if (raw_qp_make(&g, &self->e, &step))
			_exit(1);
		hammer_marks(&h);
		_exit(0);
	}
	EXPECT_EQ(0, ping_pong(&a, &b, ROUNDS)) TH_LOG("beside the storm");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	EXPECT_TRUE(WIFSIGNALED(st)) TH_LOG("the storm ended early: status %#x", st);
	EXPECT_EQ(0, ping_pong(&a, &b, ROUNDS)) TH_LOG("after the storm");
	EXPECT_TRUE(run_list_empties());
	ep_destroy(&a);
	ep_destroy(&b);
}

TEST_HARNESS_MAIN
