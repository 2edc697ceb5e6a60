// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Several engine threads per device (srnic.engines): QP N is served by
 * thread N % threads, each thread sleeps and is woken through its own
 * record of the status page, and QPs on every thread carry traffic at the
 * same time with their data intact.  Each test makes its own device with
 * the thread count of its variant.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "srnic_test.h"
#include "traffic.h"

#define THR_VETH "srthr"
#define THR_DEV THR_VETH "d"
#define THR_PARAM "/sys/module/srnic/parameters/engines"
#define THR_PAIRS 6
#define THR_MSG (64 * KiB)

FIXTURE(threads) {
	struct env e;
	struct ep a[THR_PAIRS], b[THR_PAIRS];
	int made;
};

FIXTURE_VARIANT(threads) {
	unsigned int engines;
};

FIXTURE_VARIANT_ADD(threads, two) { .engines = 2 };
FIXTURE_VARIANT_ADD(threads, three) { .engines = 3 };

/* The number in "@key N" of @s, or -1. */
static long long field(const char *s, const char *key)
{
	const char *p = s ? strstr(s, key) : NULL;

	return p ? strtoll(p + strlen(key), NULL, 0) : -1;
}

/* The line of debugfs "engine" that starts with @prefix ("thread 1 "), or NULL. */
static char *engine_line(const char *all, const char *prefix)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n%s", prefix);
	p = all ? strstr(all, key) : NULL;
	return p ? strndup(p + 1, strcspn(p + 1, "\n")) : NULL;
}

FIXTURE_SETUP(threads)
{
	char old[32] = "0";
	FILE *f = fopen(THR_PARAM, "r");

	if (!f)
		SKIP(return, "srnic has no engines parameter");
	if (!fgets(old, sizeof(old), f))
		strcpy(old, "0");
	fclose(f);
	old[strcspn(old, "\n")] = 0;
	/* What a test that failed in its set-up left (no teardown then). */
	sh("rdma link del " THR_DEV " 2>/dev/null; ip link del " THR_VETH "0 2>/dev/null");
	/*
	 * No duplicate address detection: while an address is tentative the
	 * core cannot resolve a path to it (modify to RTR: ETIMEDOUT).
	 */
	ASSERT_EQ(0, sh("ip link add %s0 type veth peer name %s1 && "
			"sysctl -qw net.ipv6.conf.%s0.accept_dad=0 && "
			"ip link set %s0 up && ip link set %s1 up",
			THR_VETH, THR_VETH, THR_VETH, THR_VETH, THR_VETH));
	self->made = 1;
	/* The count is read when a device is made: set, make, restore. */
	ASSERT_EQ(0, sh("echo %u > " THR_PARAM " && "
			"rdma link add " THR_DEV " type srnic netdev %s0; "
			"st=$?; echo %s > " THR_PARAM "; exit $st",
			variant->engines, THR_VETH, old));
	ASSERT_TRUE(wait_until(gid_ready, THR_DEV, 1, 10000));
	ASSERT_TRUE(wait_until(port_active, THR_DEV, 1, 10000));
	ASSERT_EQ(0, env_open_dev(&self->e, THR_DEV));
	for (int i = 0; i < THR_PAIRS; i++) {
		struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

		ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a[i], &self->b[i]));
	}
}

FIXTURE_TEARDOWN(threads)
{
	for (int i = 0; i < THR_PAIRS; i++) {
		ep_destroy(&self->a[i]);
		ep_destroy(&self->b[i]);
	}
	env_close(&self->e);
	if (self->made)
		sh("rdma link del " THR_DEV " 2>/dev/null; ip link del " THR_VETH "0");
}

/*
 * debugfs counts the threads and names for each QP the thread the ABI's
 * rule gives it; the requesters of QPs made in pairs reach every thread.
 */
TEST_F(threads, every_qp_on_the_thread_of_the_rule)
{
	unsigned int n = variant->engines, seen = 0;
	char *all = slurp(dbg_path("engine")), key[32], *line;

	ASSERT_NE(NULL, all);
	EXPECT_EQ(n, field(all, " threads "));
	for (unsigned int t = 0; t <= n; t++) {
		snprintf(key, sizeof(key), "thread %u ", t);
		line = engine_line(all, key);
		if (t < n) {
			EXPECT_NE(NULL, line) TH_LOG("%s", key);
		} else {
			EXPECT_EQ(NULL, line);
		}
		free(line);
	}
	for (int i = 0; i < 2 * THR_PAIRS; i++) {
		struct ep *x = i % 2 ? &self->b[i / 2] : &self->a[i / 2];
		uint32_t qpn = x->qp->qp_num;

		snprintf(key, sizeof(key), "qp %u ", qpn);
		line = engine_line(all, key);
		ASSERT_NE(NULL, line);
		EXPECT_EQ(srnic_qp_engine(qpn, n), field(line, " thread "));
		if (x == &self->a[i / 2])
			seen |= 1u << srnic_qp_engine(qpn, n);
		free(line);
	}
	EXPECT_EQ((1u << n) - 1, seen);
	free(all);
}

struct worker {
	struct ep *a, *b;
	unsigned int seed, iters;
	int bad;		/* what went wrong first, 0 if nothing */
};

/* One signaled op of a's, waited for: 0 on success. */
static int op_wait(struct ep *a, enum ibv_wr_opcode op, size_t off, struct ep *b,
		   size_t roff)
{
	struct ibv_wc wc;

	if (post_send1(a, op, op, off, THR_MSG, IBV_SEND_SIGNALED, b, roff, 0))
		return 1;
	if (poll_one(a->cq, &wc, WC_MS) != 1 || wc.status != IBV_WC_SUCCESS)
		return 2;
	return 0;
}

/*
 * WRITE a's block into b, SEND it into b's receive buffer, READ it back
 * into a's third block: every copy must be the block written.
 */
static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct ibv_wc wc;

	for (unsigned int i = 0; i < w->iters && !w->bad; i++) {
		unsigned int seed = w->seed * 1000 + i;

		fill(w->a->buf, THR_MSG, seed);
		if (post_recv(w->b, 1, MiB, THR_MSG))
			w->bad = 10;
		else if (op_wait(w->a, IBV_WR_RDMA_WRITE, 0, w->b, 0))
			w->bad = 11;
		else if (op_wait(w->a, IBV_WR_SEND, 0, NULL, 0))
			w->bad = 12;
		else if (poll_one(w->b->cq, &wc, WC_MS) != 1 ||
			 wc.status != IBV_WC_SUCCESS || wc.byte_len != THR_MSG)
			w->bad = 13;
		else if (op_wait(w->a, IBV_WR_RDMA_READ, 2 * THR_MSG, w->b, 0))
			w->bad = 14;
		else if (verify(w->b->buf, THR_MSG, seed) != -1)
			w->bad = 15;
		else if (verify(w->b->buf + MiB, THR_MSG, seed) != -1)
			w->bad = 16;
		else if (verify(w->a->buf + 2 * THR_MSG, THR_MSG, seed) != -1)
			w->bad = 17;
	}
	return NULL;
}

/* The sum of @key over the "thread" lines, per thread in @out. */
static void thread_counts(unsigned int n, const char *key, long long *out)
{
	char *all = slurp(dbg_path("engine")), prefix[32], *line;

	for (unsigned int t = 0; t < n; t++) {
		snprintf(prefix, sizeof(prefix), "thread %u ", t);
		line = engine_line(all, prefix);
		out[t] = field(line, key);
		free(line);
	}
	free(all);
}

/*
 * Every pair's traffic at once, from a thread each: with QPs on every
 * engine thread, the threads execute and answer at the same time, each
 * for its own QPs and as the responder of others'.
 */
TEST_F(threads, qps_of_every_thread_carry_traffic_at_once)
{
	struct worker w[THR_PAIRS];
	pthread_t tid[THR_PAIRS];
	long long scans0[SRNIC_MAX_ENGINES], scans1[SRNIC_MAX_ENGINES];
	unsigned int n = variant->engines;

	thread_counts(n, " scans ", scans0);
	for (int i = 0; i < THR_PAIRS; i++) {
		w[i] = (struct worker){ &self->a[i], &self->b[i], i + 1, 40, 0 };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, worker_run, &w[i]));
	}
	for (int i = 0; i < THR_PAIRS; i++)
		pthread_join(tid[i], NULL);
	for (int i = 0; i < THR_PAIRS; i++) {
		EXPECT_EQ(0, w[i].bad) TH_LOG("pair %d (QP %u)", i,
					      self->a[i].qp->qp_num);
	}
	/* Every thread ran: it was woken for its QPs, or polled them. */
	thread_counts(n, " scans ", scans1);
	for (unsigned int k = 0; k < n; k++) {
		EXPECT_LT(scans0[k], scans1[k]) TH_LOG("thread %u", k);
	}
}

/* All threads asleep (the flags every thread has, debugfs' first line). */
static int all_asleep(const char *unused)
{
	char *all = slurp(dbg_path("engine"));
	long long flags = field(all, " flags ");

	(void)unused;
	free(all);
	return flags > 0 && (flags & 1);
}

/*
 * Once every thread sleeps, a post to a QP of any thread is executed: the
 * provider looks at that QP's thread's record and makes the wake-up call.
 */
TEST_F(threads, post_to_any_thread_wakes_it)
{
	for (int i = 0; i < THR_PAIRS; i++) {
		struct ibv_wc wc;

		ASSERT_TRUE(wait_until(all_asleep, NULL, 1, 10000));
		fill(self->a[i].buf, THR_MSG, i + 7);
		ASSERT_EQ(0, post_send1(&self->a[i], IBV_WR_RDMA_WRITE, 1, 0,
					THR_MSG, IBV_SEND_SIGNALED, &self->b[i], 0, 0));
		ASSERT_EQ(1, poll_one(self->a[i].cq, &wc, WC_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(-1, verify(self->b[i].buf, THR_MSG, i + 7));
	}
}

TEST_HARNESS_MAIN
