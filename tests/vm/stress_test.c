// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Doorbell / NEED_WAKEUP stress through the standard verbs API: threads,
 * each with its own RC QP pair, post bursts separated by idle gaps of
 * varied length (0, 1 ms, 20 ms, 200 ms: long enough for an engine to go
 * to sleep between bursts).  Every post waits for its completions with a
 * deadline; a completion that never comes is a lost wake-up, and fails.
 *
 * Half the threads poll their CQs, half sleep on completion events, so both
 * the send doorbell and the CQ arm doorbell race the engine going idle.
 * Half the threads share one context (one UAR page), the others have their
 * own.  Runs on any device ($SRNIC_DEV, GID index $SRNIC_GID); the duration
 * is $SRNIC_STRESS_SECONDS (default 30).
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

#define THREADS 8
#define DEADLINE_MS 10000	/* a completion later than this was lost */
#define MSG 64
#define SLOTS 16

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

static int gid_index(void)
{
	const char *s = getenv("SRNIC_GID");

	return s && *s ? atoi(s) : 0;
}

static int stress_seconds(void)
{
	const char *s = getenv("SRNIC_STRESS_SECONDS");
	int v = s && *s ? atoi(s) : (int)fuzz_budget(30);

	return v > 0 && v <= 600 ? v : (int)fuzz_budget(30);
}

struct worker {
	int id;
	int events;		/* wait on a completion channel, not polling */
	struct ibv_context *ctx;
	int own_ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	uint8_t *buf;		/* [0, SLOTS*MSG): send side; then receive side */
	uint64_t end_us;
	/* results */
	long msgs, bursts, gaps[4];
	uint64_t worst_us;
	char err[200];
	pthread_t th;
};

static int qp_up(struct worker *w, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	union ibv_gid gid;
	struct ibv_port_attr port;

	if (ibv_query_gid(w->ctx, 1, gid_index(), &gid) ||
	    ibv_query_port(w->ctx, 1, &port))
		return -1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = port.active_mtu,
		.dest_qp_num = dest, .rq_psn = 1, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = gid, .sgid_index = gid_index(),
				      .hop_limit = 64 } },
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 1, .max_rd_atomic = 1,
	};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int worker_setup(struct worker *w, struct ibv_context *shared)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 2 * SLOTS, .max_recv_wr = 2 * SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	w->ctx = shared ? shared : open_named(srnic_test_dev());
	w->own_ctx = !shared;
	if (!w->ctx)
		return -1;
	w->pd = ibv_alloc_pd(w->ctx);
	if (w->events)
		w->ch = ibv_create_comp_channel(w->ctx);
	w->scq = ibv_create_cq(w->ctx, 4 * SLOTS, NULL, w->ch, 0);
	w->rcq = ibv_create_cq(w->ctx, 4 * SLOTS, NULL, w->ch, 0);
	w->buf = mmap(NULL, 2 * SLOTS * MSG + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!w->pd || (w->events && !w->ch) || !w->scq || !w->rcq ||
	    w->buf == MAP_FAILED)
		return -1;
	w->mr = ibv_reg_mr(w->pd, w->buf, 2 * SLOTS * MSG + 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!w->mr)
		return -1;
	init.send_cq = w->scq;
	init.recv_cq = w->rcq;
	w->a = ibv_create_qp(w->pd, &init);
	w->b = ibv_create_qp(w->pd, &init);
	if (!w->a || !w->b)
		return -1;
	return qp_up(w, w->a, w->b->qp_num) || qp_up(w, w->b, w->a->qp_num);
}

static void worker_teardown(struct worker *w)
{
	if (w->a)
		ibv_destroy_qp(w->a);
	if (w->b)
		ibv_destroy_qp(w->b);
	if (w->mr)
		ibv_dereg_mr(w->mr);
	if (w->scq)
		ibv_destroy_cq(w->scq);
	if (w->rcq)
		ibv_destroy_cq(w->rcq);
	if (w->ch)
		ibv_destroy_comp_channel(w->ch);
	if (w->pd)
		ibv_dealloc_pd(w->pd);
	if (w->buf && w->buf != MAP_FAILED)
		munmap(w->buf, 2 * SLOTS * MSG + 4096);
	if (w->own_ctx && w->ctx)
		ibv_close_device(w->ctx);
}

/*
 * One completion from @cq within DEADLINE_MS, by polling (with yields) or
 * by sleeping on the channel (armed before the final poll, so no event is
 * missed).  1, or 0 when none came.
 */
static int wait_wc(struct worker *w, struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t start = now_us(), end = start + DEADLINE_MS * 1000ull;
	unsigned int spins = 0;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		uint64_t t = now_us();

		if (n < 0)
			return 0;
		if (n) {
			if (t - start > w->worst_us)
				w->worst_us = t - start;
			return 1;
		}
		if (t > end)
			return 0;
		if (!w->events) {
			if (++spins < 32)
				sched_yield();
			else
				usleep(20);
			continue;
		}
		if (ibv_req_notify_cq(cq, 0))
			return 0;
		n = ibv_poll_cq(cq, 1, wc);	/* raced the arming? */
		if (n) {
			if (n < 0)
				return 0;
			if (now_us() - start > w->worst_us)
				w->worst_us = now_us() - start;
			return 1;
		}
		struct pollfd pfd = { .fd = w->ch->fd, .events = POLLIN };
		int left = (int)((end - now_us()) / 1000) + 1;

		if (poll(&pfd, 1, left) == 1) {
			struct ibv_cq *ecq;
			void *cctx;

			if (ibv_get_cq_event(w->ch, &ecq, &cctx))
				return 0;
			ibv_ack_cq_events(ecq, 1);
		}
	}
}

static void *worker_main(void *arg)
{
	/* 0, 1 ms, 20 ms, 200 ms */
	static const unsigned int gap_us[4] = { 0, 1000, 20000, 200000 };
	struct worker *w = arg;
	uint64_t seed = 0x2545f4914f6cdd1dull * (w->id + 1);
	uint32_t seq = 0;

	for (long it = 0; now_us() < w->end_us; it++) {
		/* Burst: 1..SLOTS posts, each its own doorbell. */
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		int n = 1 + (int)(seed % SLOTS);

		for (int i = 0; i < n; i++) {
			struct ibv_sge rs = { (uintptr_t)w->buf + (SLOTS + i) * MSG,
					      MSG, w->mr->lkey };
			struct ibv_recv_wr rwr = { .wr_id = i, .sg_list = &rs,
						   .num_sge = 1 }, *rbad;
			uint8_t *src = w->buf + i * MSG;

			for (int k = 0; k < MSG; k++)
				src[k] = (uint8_t)(seq + i + k * 7 + w->id);
			if (ibv_post_recv(w->b, &rwr, &rbad)) {
				snprintf(w->err, sizeof(w->err), "post_recv failed");
				return NULL;
			}
		}
		for (int i = 0; i < n; i++) {
			struct ibv_sge s = { (uintptr_t)w->buf + i * MSG, MSG,
					     w->mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = seq + i, .sg_list = &s, .num_sge = 1,
				.opcode = IBV_WR_SEND_WITH_IMM,
				.send_flags = IBV_SEND_SIGNALED,
				.imm_data = htonl(seq + i),
			}, *bad;

			if (ibv_post_send(w->a, &wr, &bad)) {
				snprintf(w->err, sizeof(w->err), "post_send failed");
				return NULL;
			}
		}
		for (int i = 0; i < n; i++) {
			struct ibv_wc wc;

			if (!wait_wc(w, w->scq, &wc)) {
				snprintf(w->err, sizeof(w->err),
					 "send %u of burst %ld: no completion in %d ms "
					 "(lost wake-up) after a %u us gap",
					 seq + i, it, DEADLINE_MS,
					 gap_us[(it + w->id + 3) % 4]);
				return NULL;
			}
			if (wc.status || wc.wr_id != seq + i) {
				snprintf(w->err, sizeof(w->err),
					 "send %u: %s, wr_id %llu", seq + i,
					 ibv_wc_status_str(wc.status),
					 (unsigned long long)wc.wr_id);
				return NULL;
			}
			if (!wait_wc(w, w->rcq, &wc)) {
				snprintf(w->err, sizeof(w->err),
					 "receive %u of burst %ld: none in %d ms",
					 seq + i, it, DEADLINE_MS);
				return NULL;
			}
			const uint8_t *dst = w->buf + (SLOTS + i) * MSG;
			int bad = wc.status || wc.byte_len != MSG ||
				  ntohl(wc.imm_data) != seq + i;

			for (int k = 0; k < MSG && !bad; k++)
				bad = dst[k] != (uint8_t)(seq + i + k * 7 + w->id);
			if (bad) {
				snprintf(w->err, sizeof(w->err),
					 "receive %u: %s, %u bytes, imm %u, data %s",
					 seq + i, ibv_wc_status_str(wc.status),
					 wc.byte_len, ntohl(wc.imm_data),
					 bad ? "differs" : "ok");
				return NULL;
			}
		}
		seq += n;
		w->msgs += n;
		w->bursts++;
		/* The idle gap; each thread walks the gaps from another start. */
		int g = (int)((it + w->id) % 4);

		w->gaps[g]++;
		if (gap_us[g])
			usleep(gap_us[g]);
	}
	return NULL;
}

FIXTURE(stress) {
	struct ibv_context *shared;
	struct worker w[THREADS];
};

FIXTURE_SETUP(stress)
{
	self->shared = open_named(srnic_test_dev());
	ASSERT_NE(NULL, self->shared) TH_LOG("cannot open %s", srnic_test_dev());
}

FIXTURE_TEARDOWN(stress)
{
	for (int i = 0; i < THREADS; i++)
		worker_teardown(&self->w[i]);
	if (self->shared)
		ibv_close_device(self->shared);
}

/* Threads, bursts and idle gaps; no completion may be lost. */
TEST_F_TIMEOUT(stress, bursts_and_idle_gaps, 700)
{
	uint64_t end = now_us() + stress_seconds() * 1000000ull;
	long total = 0;

	for (int i = 0; i < THREADS; i++) {
		struct worker *w = &self->w[i];

		w->id = i;
		w->events = i & 1;
		w->end_us = end;
		ASSERT_EQ(0, worker_setup(w, i < THREADS / 2 ? self->shared : NULL))
			TH_LOG("thread %d: set-up failed: %s", i, strerror(errno));
	}
	for (int i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&self->w[i].th, NULL, worker_main,
					    &self->w[i]));
	for (int i = 0; i < THREADS; i++) {
		struct worker *w = &self->w[i];

		pthread_join(w->th, NULL);
		TH_LOG("thread %d (%s, %s context): %ld messages in %ld bursts, "
		       "gaps 0/1/20/200 ms: %ld/%ld/%ld/%ld, slowest %llu us",
		       i, w->events ? "events" : "polling",
		       w->own_ctx ? "own" : "shared", w->msgs, w->bursts,
		       w->gaps[0], w->gaps[1], w->gaps[2], w->gaps[3],
		       (unsigned long long)w->worst_us);
		EXPECT_STREQ("", w->err) TH_LOG("thread %d", i);
		EXPECT_GT(w->gaps[3], 0) TH_LOG("thread %d never idled 200 ms", i);
		total += w->msgs;
	}
	EXPECT_GT(total, 0);
}

/*
 * One post after an idle period long enough for any engine to sleep, many
 * times, on QPs of one context: each must complete (the wake-up path alone).
 */
TEST_F_TIMEOUT(stress, post_after_long_idle, 120)
{
	struct worker *w = &self->w[0];
	struct ibv_wc wc;

	w->events = 0;
	ASSERT_EQ(0, worker_setup(w, self->shared));
	for (int round = 0; round < 6; round++) {
		struct ibv_sge rs = { (uintptr_t)w->buf + SLOTS * MSG, MSG,
				      w->mr->lkey };
		struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge s = { (uintptr_t)w->buf, MSG, w->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = round, .sg_list = &s,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		usleep(round < 3 ? 500000 : 1000000);
		ASSERT_EQ(0, ibv_post_recv(w->b, &rwr, &rbad));
		ASSERT_EQ(0, ibv_post_send(w->a, &wr, &bad));
		ASSERT_TRUE(wait_wc(w, w->scq, &wc))
			TH_LOG("round %d: lost wake-up", round);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_TRUE(wait_wc(w, w->rcq, &wc));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	}
}

TEST_HARNESS_MAIN
