// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The engine's contract with the provider: a sleeping engine is woken by a
 * post (the NEED_WAKEUP protocol through the zero-WR post_send), the work of
 * that post is executed by the system call itself, an engine whose CPU is
 * wanted by another task leaves the work to those calls, and a send slot is
 * free again as soon as its completion can be polled.
 */
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

/* Polls @cq for one completion for at most @ms; returns 1, 0 or -1. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
	} while (now_ms() < end);
	return 0;
}

FIXTURE(pair) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	uint32_t sq_cap;	/* what a's send queue holds */
	char buf[4096];
};

static int connect_rc(struct ibv_qp *qp, uint32_t dest, union ibv_gid *gid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .hop_limit = 1 } },
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 1,
	};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

FIXTURE_SETUP(pair)
{
	/*
	 * A one-entry send queue, as perftest's latency tests ask for (the
	 * provider makes it larger: the caps say by how much).
	 */
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	union ibv_gid gid;

	self->ctx = open_named(srnic_test_dev());
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	ia.send_cq = ia.recv_cq = self->cq;
	self->a = ibv_create_qp(self->pd, &ia);
	self->b = ibv_create_qp(self->pd, &ia);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_GE(ia.cap.max_send_wr, 1);
	self->sq_cap = ia.cap.max_send_wr;
	self->mr = ibv_reg_mr(self->pd, self->buf, sizeof(self->buf),
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, self->mr);
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &gid));
	ASSERT_EQ(0, connect_rc(self->a, self->b->qp_num, &gid));
	ASSERT_EQ(0, connect_rc(self->b, self->a->qp_num, &gid));
}

FIXTURE_TEARDOWN(pair)
{
	ibv_destroy_qp(self->a);
	ibv_destroy_qp(self->b);
	ibv_dereg_mr(self->mr);
	ibv_destroy_cq(self->cq);
	ibv_dealloc_pd(self->pd);
	ibv_close_device(self->ctx);
}

static int post_write(FIXTURE_DATA(pair) *self, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = 8, .lkey = self->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)self->buf + 64,
			     .rkey = self->mr->rkey },
	}, *bad;

	return ibv_post_send(self->a, &wr, &bad);
}

/*
 * The slot of a completed WQE is free when its CQE is polled: with the
 * send queue kept full, every post right after a completion must be
 * accepted.
 */
TEST_F(pair, slot_free_when_completion_polled)
{
	uint64_t next = 0;
	struct ibv_wc wc;

	for (; next < self->sq_cap; next++)
		ASSERT_EQ(0, post_write(self, next));
	for (uint64_t i = 0; i < 3000; i++) {
		ASSERT_EQ(1, poll_one(self->cq, &wc, 10000));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(i, wc.wr_id);
		ASSERT_EQ(0, post_write(self, next)) TH_LOG("post %llu",
							    (unsigned long long)next);
		next++;
	}
}

/* Resizing a CQ keeps the completions not yet polled, in order. */
TEST_F(pair, resize_keeps_unpolled_completions)
{
	const int k = 12;
	struct ibv_wc wc;
	int i;

	/*
	 * k writes, none polled (each post waits for a free slot, should
	 * the send queue be smaller), so k completions pile up in the CQ.
	 */
	for (i = 0; i < k; i++) {
		uint64_t end = now_ms() + 10000;

		while (post_write(self, i) && now_ms() < end)
			;
		ASSERT_LT(now_ms(), end) TH_LOG("post %d never accepted", i);
	}
	ASSERT_EQ(0, ibv_resize_cq(self->cq, 100));
	EXPECT_GE(self->cq->cqe, 100);
	for (i = 0; i < k; i++) {
		ASSERT_EQ(1, poll_one(self->cq, &wc, 10000)) TH_LOG("cqe %d", i);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(i, wc.wr_id);
	}
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

/* A post to an engine that sleeps wakes it (the NEED_WAKEUP protocol). */
TEST_F(pair, post_wakes_sleeping_engine)
{
	const volatile struct srnic_engine_status *st;
	struct srnic_raw_ctx raw;
	struct ibv_wc wc;
	int fd, round;

	/* A second, raw context only to watch the engine's status page. */
	fd = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, uverbs_get_context(fd, &raw, NULL, 0));
	st = uverbs_mmap(fd, 4096, PROT_READ, raw.drv.status_mmap_offset);
	ASSERT_NE(MAP_FAILED, (void *)st);

	for (round = 0; round < 20; round++) {
		uint64_t end = now_ms() + 10000;

		/* Wait (bounded) until the engine announces it sleeps. */
		while (!(st[0].flags & SRNIC_ENGINE_NEED_WAKEUP) &&
		       now_ms() < end)
			usleep(100);
		ASSERT_TRUE(st[0].flags & SRNIC_ENGINE_NEED_WAKEUP);
		ASSERT_EQ(0, post_write(self, round));
		ASSERT_EQ(1, poll_one(self->cq, &wc, 10000))
			TH_LOG("round %d: the post did not wake the engine",
			       round);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	}
	munmap((void *)st, 4096);
	close(raw.core.async_fd);
	close(fd);
}

/* Waits (bounded, polling the counter) until debugfs shows @key == @want. */
static int wait_stat(const char *key, long long want, int ms)
{
	uint64_t end = now_ms() + ms;

	while (engine_stat(key) != want && now_ms() < end)
		usleep(100);
	return engine_stat(key) == want;
}

/*
 * The pid of the device's engine thread, or -1: its only one, as the
 * suite's device has one per two CPUs and the VM has two.
 */
static pid_t engine_pid(void)
{
	pid_t pid;

	return engine_pids(srnic_test_dev(), &pid, 1) == 1 ? pid : -1;
}

/* The scheduler state letter of @pid ('R', 'S', ...), or 0. */
static char task_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * Whether the engine sleeps: NEED_WAKEUP set and the thread blocked (it
 * blocks nowhere but in that wait), so only a kick or a timer wakes it.
 */
static int engine_asleep(const char *epid)
{
	return engine_stat("flags") == 1 && task_state(atoi(epid)) == 'S';
}

/*
 * A post to a sleeping engine is executed by the doorbell system call
 * itself: its completion is there when ibv_post_send() returns, and the
 * counters put it on the call's account, not the engine thread's.
 */
TEST_F(pair, doorbell_call_executes_the_work)
{
	long long thread, inl, calls;
	char epid[16];
	struct ibv_wc wc;
	int round;

	snprintf(epid, sizeof(epid), "%d", engine_pid());
	for (round = 0; round < 10; round++) {
		ASSERT_TRUE(wait_until(engine_asleep, epid, 1, 10000))
			TH_LOG("the engine never went to sleep");
		thread = engine_stat("wqes");
		inl = engine_stat("inline_wqes");
		calls = engine_stat("doorbells");
		ASSERT_EQ(0, post_write(self, round));
		ASSERT_EQ(1, ibv_poll_cq(self->cq, 1, &wc))
			TH_LOG("round %d: not complete when the post returned",
			       round);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(calls + 1, engine_stat("doorbells"));
		EXPECT_EQ(inl + 1, engine_stat("inline_wqes"));
		EXPECT_EQ(thread, engine_stat("wqes"));
	}
}

static int pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set);
}

/*
 * An engine whose CPU another task wants sleeps ("yield") instead of
 * polling: the posts of that time run in their doorbell calls.  Once the
 * CPU is its own again, the engine polls again (and later sleeps idle).
 */
TEST_F(pair, engine_yields_a_busy_cpu)
{
	const int n = 200;
	long long thread = 0, inl = 0, yields;
	cpu_set_t all;
	pid_t epid, spinner;
	struct ibv_wc wc;
	int i, ok;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	epid = engine_pid();
	ASSERT_LT(0, epid);
	ASSERT_EQ(0, sched_getaffinity(epid, sizeof(all), &all));
	/*
	 * From a known state: not in a yield that began before (a busy CPU
	 * in an earlier test), which would leave "reason" at 1 without a
	 * yield of this test's.  With its CPUs free it ends within a tick.
	 */
	ASSERT_TRUE(wait_stat("reason", 0, 1000))
		TH_LOG("the engine still yields with no one on its CPUs");
	/* The engine and a task that never stops running share CPU 0. */
	ASSERT_EQ(0, pin(0, 1));
	spinner = fork();
	ASSERT_LE(0, spinner);
	if (!spinner) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pin(0, 0);
		for (;;)
			;
	}
	yields = engine_stat("yields");
	ok = pin(epid, 0) == 0;
	EXPECT_TRUE(ok);
	/*
	 * Posts wake the engine; on CPU 0 it finds the spinner and yields.
	 * It decides when it runs out of work, so it may first go to sleep
	 * idle (its view of the CPU a tick old): post until it has yielded.
	 */
	if (ok) {
		uint64_t end = now_ms() + 10000;

		for (i = 0, ok = 0; !ok && now_ms() < end; i++) {
			if (post_write(self, i) ||
			    poll_one(self->cq, &wc, 10000) != 1)
				break;
			ok = wait_stat("reason", 1, 20);
		}
	}
	EXPECT_TRUE(ok) TH_LOG("the engine did not yield its CPU");
	if (ok) {
		EXPECT_LT(yields, engine_stat("yields"));
		thread = engine_stat("wqes");
		inl = engine_stat("inline_wqes");
	}
	for (i = 0; ok && i < n; i++) {
		ok = post_write(self, i) == 0 &&
		     poll_one(self->cq, &wc, 10000) == 1 &&
		     wc.status == IBV_WC_SUCCESS;
		EXPECT_TRUE(ok) TH_LOG("post %d", i);
	}
	if (ok) {
		/*
		 * The engine looks at its CPU every tick and may run a post
		 * it finds between doorbell and call; the calls run the rest.
		 */
		EXPECT_EQ(thread + inl + n,
			  engine_stat("wqes") + engine_stat("inline_wqes"));
		EXPECT_LE(inl + n / 2, engine_stat("inline_wqes"));
		EXPECT_EQ(1, engine_stat("reason"));
	}
	kill(spinner, SIGKILL);
	waitpid(spinner, NULL, 0);
	/* Its CPU free again, the engine polls, then sleeps idle. */
	EXPECT_TRUE(wait_stat("reason", 0, 10000));
	EXPECT_EQ(0, sched_setaffinity(epid, sizeof(all), &all));
}

TEST_HARNESS_MAIN
