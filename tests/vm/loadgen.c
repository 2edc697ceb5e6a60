// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Load for the teardown tests (tests/vm/teardown.sh): processes that keep a
 * device busy while it is deleted, its module unloaded or its netdev taken
 * away, or that are killed mid-transfer.
 *
 *   loadgen hold DEV NMW NMR     thousands of windows and MRs, then waits
 *   loadgen traffic DEV KIND     RC WRITE/READ of 64 KiB, in a loop, on 4 QP
 *                                pairs; KIND: pinned, odp, implicit, srq
 *
 * Prints "ready" once its load runs; exits 0 when the device goes away
 * under it (errors are what it expects then), 1 if it could not start.
 */
#include "kselftest_harness.h"
#include "traffic.h"

#define PAIRS 4
#define XFER (64 * 1024)

static int usage(void)
{
	fprintf(stderr, "usage: loadgen hold DEV NMW NMR | traffic DEV pinned|odp|implicit|srq\n");
	return 2;
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

static int hold(int nmw, int nmr)
{
	struct env e;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (env_open(&e) || page == MAP_FAILED)
		return 1;
	for (int i = 0; i < nmw; i++)
		if (!ibv_alloc_mw(e.pd, i & 1 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1))
			return 1;
	for (int i = 0; i < nmr; i++)
		if (!ibv_reg_mr(e.pd, page, 4096, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE))
			return 1;
	ready();
	for (;;)
		pause();
}

/* One WRITE then one READ on each pair; 0 while the device works. */
static int round_trip(struct ep *a, struct ep *b)
{
	struct ibv_wc wc;

	if (post_send1(a, IBV_WR_RDMA_WRITE, 1, 0, XFER, IBV_SEND_SIGNALED,
		       b, 0, 0) ||
	    poll_one(a->cq, &wc, WC_MS) != 1 || wc.status != IBV_WC_SUCCESS)
		return -1;
	if (post_send1(a, IBV_WR_RDMA_READ, 2, XFER, XFER, IBV_SEND_SIGNALED,
		       b, 0, 0) ||
	    poll_one(a->cq, &wc, WC_MS) != 1 || wc.status != IBV_WC_SUCCESS)
		return -1;
	return 0;
}

/* SEND through an SRQ on the receiving side. */
static int srq_trip(struct ep *a, struct ep *b, struct ibv_srq *srq)
{
	struct ibv_sge s = { (uintptr_t)b->buf, XFER, b->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &s, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	if (ibv_post_srq_recv(srq, &rwr, &bad) ||
	    post_send1(a, IBV_WR_SEND, 4, 0, XFER, IBV_SEND_SIGNALED, NULL, 0, 0) ||
	    poll_one(a->cq, &wc, WC_MS) != 1 || wc.status != IBV_WC_SUCCESS ||
	    poll_one(b->cq, &wc, WC_MS) != 1 || wc.status != IBV_WC_SUCCESS)
		return -1;
	return 0;
}

static int traffic(const char *kind)
{
	struct ep a[PAIRS], b[PAIRS];
	struct ibv_srq *srq = NULL;
	struct qp_opts o;
	struct env e;

	if (env_open(&e))
		return 1;
	o = qp_defaults(&e, IBV_QPT_RC);
	o.buf_len = 2 * XFER;
	if (!strcmp(kind, "odp"))
		o.mr_access |= IBV_ACCESS_ON_DEMAND;
	else if (!strcmp(kind, "implicit"))
		o.mr_access |= IBV_ACCESS_ON_DEMAND;	/* and an implicit MR below */
	for (int i = 0; i < PAIRS; i++) {
		struct qp_opts ob = o;

		if (!strcmp(kind, "srq")) {
			struct ibv_srq_init_attr sa = {
				.attr = { .max_wr = 64, .max_sge = 1 },
			};

			if (!srq && !(srq = ibv_create_srq(e.pd, &sa)))
				return 1;
			ob.srq = srq;
		}
		if (pair_make(&e, &o, &ob, &a[i], &b[i]))
			return 1;
	}
	if (!strcmp(kind, "implicit")) {
		struct ibv_mr *imr = ibv_reg_mr(e.pd, NULL, SIZE_MAX,
						IBV_ACCESS_ON_DEMAND |
						IBV_ACCESS_LOCAL_WRITE |
						IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ);

		if (!imr)
			return 1;
		for (int i = 0; i < PAIRS; i++)
			b[i].mr = imr;	/* remote accesses through it */
	}
	ready();
	for (;;)
		for (int i = 0; i < PAIRS; i++)
			if (srq ? srq_trip(&a[i], &b[i], srq) :
				  round_trip(&a[i], &b[i]))
				return 0;	/* the device went away */
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	setenv("SRNIC_DEV", argv[2], 1);
	if (!strcmp(argv[1], "hold") && argc == 5)
		return hold(atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "traffic") && argc == 4)
		return traffic(argv[3]);
	return usage();
}
