// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ATOMIC WRITE and FLUSH between two hosts, for tests/vm/pair-smoke.sh
 * (which runs it as it runs the pingpongs): `wire_ops -p PORT` serves,
 * `wire_ops -p PORT HOST` is the client; SRNIC_DEV names the device (srnic
 * or rxe), SRNIC_GID its GID index.  The server's QP and 4 KiB have the
 * remote write and FLUSH rights.  The client ATOMIC WRITEs 8 bytes there
 * and, from srnic, FLUSHes them: rdma-core 44 has no FLUSH verb, so srnic's
 * client writes both WQEs into a raw QP's ring, while another device's
 * client posts ibv_wr_atomic_write() and no FLUSH.  Then it tells the
 * server the value, which the server must find in its memory.  Exits 0
 * when every completion was a success of its opcode and the value is
 * there.
 */
#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "kselftest_harness.h"
#include "traffic.h"
#include "raw_qp.h"

#define WO_ACCESS_FLUSH_GLOBAL 0x100	/* IB_UVERBS_ACCESS_FLUSH_GLOBAL */
#define WO_FLUSH_GLOBAL 1		/* placement type */
#define WO_FLUSH_RANGE 0		/* selectivity level */
#define WO_PSN 0x100			/* ep_connect()'s */
#define WO_VALUE 0x5eed0123456789abull

/* What each side tells the other. */
struct wo_info {
	uint32_t qpn, rkey;
	uint64_t va;
	uint8_t gid[16];
};

static int wo_fail(const char *what)
{
	fprintf(stderr, "wire_ops: %s: %s\n", what, errno ? strerror(errno) : "failed");
	return 1;
}

static int wo_all(int fd, void *buf, size_t len, int out)
{
	for (size_t n = 0; n < len;) {
		ssize_t r = out ? write(fd, (char *)buf + n, len - n) :
				  read(fd, (char *)buf + n, len - n);

		if (r <= 0)
			return -1;
		n += r;
	}
	return 0;
}

static int wo_listen(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), c;

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1))
		return -1;
	c = accept(s, NULL, NULL);
	close(s);
	return c;
}

static int wo_dial(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	return s;
}

/* The server: a QP and memory with the rights; the client's value must land there. */
static int wo_serve(struct env *e, int port)
{
	struct qp_opts o = qp_defaults(e, IBV_QPT_RC);
	struct wo_info me = { 0 }, peer;
	union ibv_gid pgid;
	uint64_t want, got;
	uint8_t ok = 1;
	struct ep x;
	int fd;

	o.qp_access |= WO_ACCESS_FLUSH_GLOBAL;
	o.mr_access |= WO_ACCESS_FLUSH_GLOBAL;
	o.buf_len = 4096;
	if (ep_create(e, &o, &x))
		return wo_fail("a QP and an MR with the FLUSH right");
	memset(x.buf, 0, 4096);
	me.qpn = x.qp->qp_num;
	me.rkey = x.mr->rkey;
	me.va = (uintptr_t)x.buf + 64;
	memcpy(me.gid, e->gid.raw, 16);
	fd = wo_listen(port);
	if (fd < 0 || wo_all(fd, &me, sizeof(me), 1) || wo_all(fd, &peer, sizeof(peer), 0))
		return wo_fail("exchange");
	memcpy(pgid.raw, peer.gid, 16);
	x.dgid = &pgid;
	if (ep_connect(&x, peer.qpn) || wo_all(fd, &ok, 1, 1))
		return wo_fail("connect");
	if (wo_all(fd, &want, 8, 0))
		return wo_fail("the client's value");
	memcpy(&got, x.buf + 64, 8);
	ok = got == want;
	printf("server: 0x%llx at the ATOMIC WRITE's address, the client wrote 0x%llx\n",
	       (unsigned long long)got, (unsigned long long)want);
	wo_all(fd, &ok, 1, 1);
	ep_destroy(&x);
	return !ok;
}

/* srnic's client: ATOMIC WRITE and FLUSH written into a raw QP's ring. */
static int wo_client_raw(struct env *e, int fd, const struct wo_info *peer)
{
	struct srnic_wqe_atomic *at;
	struct wo_info me = { 0 };
	const char *step = "";
	struct raw_qp g;
	uint8_t ready;
	int n = 0, errors = 0, err;

	err = raw_qp_make(&g, e, &step);
	if (!err) {
		struct ib_uverbs_modify_qp reset = {
			.qp_handle = g.qp.core.qp_handle, .attr_mask = 1,
		};

		step = "connect";
		err = uverbs_modify_qp(g.fd, &reset) ?:
		      uverbs_rc_to_rts_timed(g.fd, g.qp.core.qp_handle, peer->qpn,
					     peer->gid, e->gid_idx, 14, 7, WO_PSN);
	}
	if (err) {
		errno = -err;
		return wo_fail(step);
	}
	me.qpn = g.qp.core.qpn;
	memcpy(me.gid, e->gid.raw, 16);
	if (wo_all(fd, &me, sizeof(me), 1) || wo_all(fd, &ready, 1, 0))
		return wo_fail("exchange");
	at = raw_qp_wqe_remote(&g, 0, SRNIC_WR_ATOMIC_WRITE, peer->va, peer->rkey);
	at->compare_add = WO_VALUE;
	raw_qp_flush(&g, 1, peer->va, peer->rkey, 8, WO_FLUSH_GLOBAL, WO_FLUSH_RANGE);
	if (raw_qp_ring(&g, 2))
		return wo_fail("doorbell");
	for (uint64_t end = now_ms() + WC_MS; n < 2 && now_ms() < end; usleep(1000))
		raw_qp_reap(&g, &n, &errors);
	for (int i = 0; i < n; i++) {
		const struct srnic_cqe *q = (const struct srnic_cqe *)g.cq_ring + i;

		printf("client: completion %llu: status %u, opcode %u\n",
		       (unsigned long long)q->wr_id, q->status, q->opcode);
		if (q->wr_id != 100u + i ||
		    q->opcode != (i ? SRNIC_WC_FLUSH : SRNIC_WC_ATOMIC_WRITE))
			errors++;
	}
	raw_qp_free(&g);
	return n != 2 || errors;
}

/* Another device's client: ibv_wr_atomic_write(), no FLUSH. */
static int wo_client_verbs(struct env *e, int fd, const struct wo_info *peer)
{
	struct qp_opts o = qp_defaults(e, IBV_QPT_RC);
	const uint64_t v = WO_VALUE;
	struct wo_info me = { 0 };
	union ibv_gid pgid;
	struct ibv_wc wc;
	uint8_t ready;
	struct ep x;
	int bad;

	o.send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE;
	if (ep_create(e, &o, &x))
		return wo_fail("a QP with ATOMIC WRITE");
	me.qpn = x.qp->qp_num;
	memcpy(me.gid, e->gid.raw, 16);
	memcpy(pgid.raw, peer->gid, 16);
	x.dgid = &pgid;
	if (wo_all(fd, &me, sizeof(me), 1) || ep_connect(&x, peer->qpn) ||
	    wo_all(fd, &ready, 1, 0))
		return wo_fail("exchange");
	ibv_wr_start(x.qpx);
	x.qpx->wr_id = 100;
	x.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x.qpx, peer->rkey, peer->va, &v);
	if (ibv_wr_complete(x.qpx))
		return wo_fail("ibv_wr_atomic_write");
	bad = poll_one(x.cq, &wc, WC_MS) != 1;
	if (!bad)
		printf("client: completion %llu: status %u, opcode %u\n",
		       (unsigned long long)wc.wr_id, wc.status, wc.opcode);
	bad = bad || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_ATOMIC_WRITE;
	ep_destroy(&x);
	return bad;
}

int main(int argc, char **argv)
{
	const char *host = NULL;
	struct wo_info peer;
	char prov[32];
	struct env e;
	int port = 0, fd, bad, opt;
	uint64_t v = WO_VALUE;
	uint8_t ok = 0;

	while ((opt = getopt(argc, argv, "p:")) != -1)
		if (opt == 'p')
			port = atoi(optarg);
	if (optind < argc)
		host = argv[optind];
	if (!port || env_open(&e))
		return wo_fail("usage: SRNIC_DEV=dev SRNIC_GID=n wire_ops -p PORT [HOST]");
	if (!host)
		return wo_serve(&e, port);
	fd = wo_dial(host, port);
	if (fd < 0 || wo_all(fd, &peer, sizeof(peer), 0))
		return wo_fail("the server");
	if (provider_name(srnic_test_dev(), prov, sizeof(prov)) && !strcmp(prov, "srnic"))
		bad = wo_client_raw(&e, fd, &peer);
	else
		bad = wo_client_verbs(&e, fd, &peer);
	/* The value goes either way: the server reports what it found. */
	if (wo_all(fd, &v, 8, 1) || wo_all(fd, &ok, 1, 0))
		return wo_fail("the server's check");
	env_close(&e);
	return bad || !ok;
}
