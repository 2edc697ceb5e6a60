// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RoCEv2 packets from the wire, as a hostile peer writes them.  srnic sits
 * on one end of a veth pair; the other end is in a network namespace of
 * its own, from which the tests send hand-made IPv4/UDP 4791 packets with
 * a raw socket: good datagrams (delivered to a UD QP, GRH and immediate
 * included), then every header field wrong in turn (lengths, pad, ICRC,
 * version, opcode, QPN, Q_Key, destination address) and seeded random
 * garbage.  A bad packet is dropped and counted, never delivered; a good
 * datagram sent after the bad ones (a sentinel: one QP's packets are
 * handled in order) arrives and is the first completion.
 *
 * Then the same peer as an RC requester (fixture rcw): srnic's RC QP is
 * connected to it, a UDP socket in its namespace reads srnic's answers.
 * Wrong PSNs, forged sources, lengths beyond the RETH, keys 0 and
 * foreign, duplicates of what was never asked, READs too long or too
 * large to answer at once, FLUSHes srnic may not carry out.  And srnic as
 * the requester, the peer answering by hand: the window, READs and
 * atomics in flight, FLUSH and ATOMIC WRITE as rxe sends and answers them.
 */
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <endian.h>
#include <sched.h>
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <infiniband/tm_types.h>

#include "kselftest_harness.h"
#include "traffic.h"
#include "raw_qp.h"

#define W_VETH "srw"
#define W_DEV "srwd"
#define W_NS "srwns"
#define W_ME "10.77.0.1"	/* srnic's side */
#define W_PEER "10.77.0.2"	/* the hostile peer's */
#define W_NOBODY "10.77.0.99"	/* on the link, answering nothing */
#define W_QKEY 0x11111111u
#define W_SQP 0x123456u

/* CRC-32 as the ICRC uses it (reflected, 0xedb88320), without the final xor. */
static uint32_t crc32_raw(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

/*
 * The ICRC of the IPv4 packet @pkt (20-byte header): over 8 bytes of ones
 * (the LRH), the IP and UDP headers and the BTH with the variant fields
 * set to ones, then the rest up to the ICRC itself.
 */
static uint32_t icrc(const uint8_t *pkt, size_t len)
{
	uint8_t m[20 + 8 + 12], ones[8];
	uint32_t crc;

	memset(ones, 0xff, sizeof(ones));
	memcpy(m, pkt, sizeof(m));
	m[1] = 0xff;			/* TOS */
	m[8] = 0xff;			/* TTL */
	m[10] = m[11] = 0xff;		/* header checksum */
	m[26] = m[27] = 0xff;		/* UDP checksum */
	m[28 + 4] = 0xff;		/* BTH FECN, BECN, reserved */
	crc = crc32_raw(0xffffffffu, ones, 8);
	crc = crc32_raw(crc, m, sizeof(m));
	crc = crc32_raw(crc, pkt + sizeof(m), len - sizeof(m) - 4);
	return ~crc;
}

/* What a datagram is made of; tests spoil one field at a time. */
struct dgram {
	uint8_t opcode, flags_extra, tver;
	int pad;			/* -1: the right one */
	uint32_t dqpn, qkey;
	int imm;
	uint32_t imm_val;
	const char *daddr;
	uint32_t len;			/* payload */
	uint8_t fill;
	int udp_len_delta;		/* added to the UDP length field */
	int truncate;			/* bytes cut off the end */
	int bad_icrc;
};

/* The IPv4 and UDP headers of a @len-byte packet from @saddr to @daddr, zeroed after. */
static void put_ip_udp(uint8_t *b, const char *saddr, const char *daddr, size_t len)
{
	memset(b, 0, len);
	b[0] = 0x45;
	b[2] = len >> 8;
	b[3] = len;
	b[4] = 0x12;			/* id: set, so the kernel keeps it */
	b[5] = 0x34;
	b[6] = 0x40;			/* DF */
	b[8] = 64;
	b[9] = IPPROTO_UDP;
	inet_pton(AF_INET, saddr, b + 12);
	inet_pton(AF_INET, daddr, b + 16);
	b[20] = 0xc0;			/* UDP source port 0xc001 */
	b[21] = 0x01;
	b[22] = 4791 >> 8;
	b[23] = 4791 & 0xff;
	b[24] = (len - 20) >> 8;
	b[25] = (len - 20);
}

/*
 * The ICRC rxe (Linux 6.12) gives a FLUSH: the CRC goes on, after the
 * headers, over the packet from its BTH again (rxe's opcode table has no
 * payload offset for FLUSH).
 */
static uint32_t icrc_rxe_flush(const uint8_t *pkt, size_t len)
{
	return ~crc32_raw(~icrc(pkt, len), pkt + 28, len - 28 - 4);
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The ICRC into the last 4 bytes, little end first; @flip spoils it. */
static void put_icrc(uint8_t *b, size_t len, uint32_t flip)
{
	uint32_t c = icrc(b, len) ^ flip;

	b[len - 4] = c;
	b[len - 3] = c >> 8;
	b[len - 2] = c >> 16;
	b[len - 1] = c >> 24;
}

static size_t build(uint8_t *b, const struct dgram *d)
{
	uint32_t pad = d->pad >= 0 ? (uint32_t)d->pad : (-d->len & 3);
	uint32_t hdrs = 12 + 8 + (d->imm ? 4 : 0);
	uint32_t l4 = 8 + hdrs + d->len + pad + 4;
	size_t len = 20 + l4;
	uint8_t *p;

	put_ip_udp(b, W_PEER, d->daddr ? d->daddr : W_ME, len);
	b[24] = (l4 + d->udp_len_delta) >> 8;
	b[25] = (l4 + d->udp_len_delta);
	p = b + 28;			/* BTH */
	p[0] = d->opcode;
	p[1] = (pad & 3) << 4 | d->flags_extra | (d->tver & 0xf);
	p[2] = p[3] = 0xff;
	p[5] = d->dqpn >> 16;
	p[6] = d->dqpn >> 8;
	p[7] = d->dqpn;
	p[11] = 7;			/* PSN */
	p += 12;			/* DETH */
	p[0] = d->qkey >> 24;
	p[1] = d->qkey >> 16;
	p[2] = d->qkey >> 8;
	p[3] = d->qkey;
	p[5] = (uint8_t)(W_SQP >> 16);
	p[6] = (uint8_t)(W_SQP >> 8);
	p[7] = (uint8_t)W_SQP;
	p += 8;
	if (d->imm) {
		uint32_t v = htonl(d->imm_val);

		memcpy(p, &v, 4);
		p += 4;
	}
	memset(p, d->fill, d->len);
	put_icrc(b, len, d->bad_icrc ? 1 : 0);
	return len - d->truncate;
}

FIXTURE(wire) {
	struct env e;
	struct ep x;
	int raw;
	int made;
};

/*
 * Where srnic's netdev is: in the initial namespace, or in a namespace of
 * its own (the device routes and receives in its netdev's namespace).
 */
FIXTURE_VARIANT(wire) {
	int in_ns;
};
FIXTURE_VARIANT_ADD(wire, init_ns) { .in_ns = 0 };
FIXTURE_VARIANT_ADD(wire, own_ns) { .in_ns = 1 };

#define W_MY_NS "srwme"

/* Runs @cmd inside the peer's namespace. */
#define NS "ip netns exec " W_NS " "

static int ipv4_gid_ready(const char *dev)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "grep -qs '0000:0000:0000:0000:0000:ffff:0a4d:0001' "
		 "/sys/class/infiniband/%s/ports/1/gids/*", dev);
	return !sh("%s", cmd);
}

/*
 * The net (the peer's namespace, the veth, srnic's device on its end) is
 * built once and kept from test to test: it takes seconds to build here and
 * minutes on the debug kernel.  W_KEPT records the layout it was built with;
 * net_up() reuses a net of the same layout whose device is still there.  A
 * test that changes the net (an MTU, a qdisc, a route, a fault knob, the
 * device removed) calls net_spoil() first, and its teardown then removes the
 * net for the next test to build anew.  The suite's process removes what is
 * left when it ends.
 */
#define W_KEPT "/run/srnic-wire-net"

static void net_down(void)
{
	unlink(W_KEPT);
	sh("rdma link del " W_DEV " 2>/dev/null; ip link del " W_VETH "0 2>/dev/null;"
	   " ip netns exec " W_MY_NS " ip link del " W_VETH "0 2>/dev/null;"
	   " ip netns del " W_NS " 2>/dev/null; ip netns del " W_MY_NS " 2>/dev/null");
}

static void net_spoil(void)
{
	unlink(W_KEPT);
}

/* A fixture's teardown: the net goes only if a test changed it. */
static void net_release(void)
{
	if (access(W_KEPT, F_OK))
		net_down();
}

static pid_t net_owner;

static void __attribute__((constructor)) net_owner_is_main(void)
{
	net_owner = getpid();
}

static void __attribute__((destructor)) net_gone_at_exit(void)
{
	if (getpid() == net_owner)
		net_down();
}

/* The kept net has layout @in_ns and its device. */
static int net_kept(int in_ns)
{
	char want = in_ns ? '1' : '0', got = 0;
	int fd = open(W_KEPT, O_RDONLY);

	if (fd < 0)
		return 0;
	if (read(fd, &got, 1) != 1)
		got = 0;
	close(fd);
	return got == want && !access("/sys/class/infiniband/" W_DEV, F_OK) &&
	       !access("/var/run/netns/" W_NS, F_OK);
}

/*
 * The veth pair, the peer's namespace, srnic's device on its end (in a
 * namespace of its own with @in_ns), then the device opened.
 */
static void net_up(struct __test_metadata *_metadata, int in_ns, struct env *e)
{
	const char *me = in_ns ? "ip netns exec " W_MY_NS " " : "";

	if (net_kept(in_ns)) {
		ASSERT_TRUE(wait_until(ipv4_gid_ready, W_DEV, 1, 10000));
		ASSERT_EQ(0, env_open_dev(e, W_DEV));
		return;
	}
	net_down();
	ASSERT_EQ(0, sh("ip netns add " W_NS " && "
			"ip link add " W_VETH "0 type veth peer name " W_VETH "1 && "
			"ip link set " W_VETH "1 netns " W_NS));
	if (in_ns)
		ASSERT_EQ(0, sh("ip netns add " W_MY_NS " && ip link set " W_VETH "0 netns "
				W_MY_NS));
	/*
	 * No duplicate address detection: while the link-local address is
	 * tentative the core cannot resolve the UD QP's address handle.
	 */
	ASSERT_EQ(0, sh("%ssysctl -qw net.ipv6.conf." W_VETH "0.accept_dad=0 && "
			"%sip addr add " W_ME "/24 dev " W_VETH "0 && "
			"%sip link set " W_VETH "0 up && "
			NS "ip addr add " W_PEER "/24 dev " W_VETH "1 && "
			NS "ip link set " W_VETH "1 up && "
			"%srdma link add " W_DEV " type srnic netdev " W_VETH "0", me, me, me, me));
	ASSERT_TRUE(wait_until(ipv4_gid_ready, W_DEV, 1, 10000));
	ASSERT_EQ(0, sh("echo %d > " W_KEPT, in_ns));
	ASSERT_EQ(0, env_open_dev(e, W_DEV));
}

/* A socket made in the peer's namespace (it stays there), or -1. */
static int peer_socket(int domain, int type, int proto)
{
	int self_ns = open("/proc/self/ns/net", O_RDONLY);
	int ns = open("/var/run/netns/" W_NS, O_RDONLY);
	int s = -1;

	if (self_ns >= 0 && ns >= 0 && !setns(ns, CLONE_NEWNET)) {
		s = socket(domain, type, proto);
		if (setns(self_ns, CLONE_NEWNET)) {
			close(s);
			s = -1;
		}
	}
	if (ns >= 0)
		close(ns);
	if (self_ns >= 0)
		close(self_ns);
	return s;
}

/* Sends small datagrams to srnic's side, port 4791, from the peer's namespace until told. */
struct flood {
	volatile int stop;
	long long sent;
};

static void *flood_4791(void *arg)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(4791) };
	uint8_t bth[16] = { 0x64, 0, 0xff, 0xff, 0, 0, 0, 1 };
	struct flood *f = arg;
	int u = peer_socket(AF_INET, SOCK_DGRAM, 0);

	inet_pton(AF_INET, W_ME, &to.sin_addr);
	while (u >= 0 && !f->stop)
		if (sendto(u, bth, sizeof(bth), MSG_DONTWAIT, (struct sockaddr *)&to,
			   sizeof(to)) == sizeof(bth))
			f->sent++;
	if (u >= 0)
		close(u);
	return NULL;
}

/*
 * RoCEv2 datagrams arriving on a netdev all the while its srnic device is
 * made and removed, again and again: the packet hook finds the device only
 * once it can answer.  (It once found it listed before the core had made
 * its GID table: the hook's lookup of a packet's address read through a
 * NULL table and the kernel crashed in softirq.)
 */
TEST(link_made_under_a_flood)
{
	struct flood f = {};
	struct env e = {};
	int made, rounds;
	pthread_t th;

	net_up(_metadata, 0, &e);
	net_spoil();
	env_close(&e);
	ASSERT_EQ(0, sh("rdma link del " W_DEV));
	ASSERT_EQ(0, pthread_create(&th, NULL, flood_4791, &f));
	rounds = link_churn(W_DEV, W_VETH "0", fuzz_budget(40), fuzz_budget(10000), &made);
	f.stop = 1;
	pthread_join(th, NULL);
	net_down();
	EXPECT_EQ(rounds, made);
	EXPECT_LT(1000, f.sent) TH_LOG("only %lld datagrams sent", f.sent);
}

FIXTURE_SETUP(wire)
{
	struct qp_opts o;

	net_up(_metadata, variant->in_ns, &self->e);
	self->made = 1;
	o = qp_defaults(&self->e, IBV_QPT_UD);
	o.recv_wr = 256;
	ASSERT_EQ(0, ep_create(&self->e, &o, &self->x));
	ASSERT_EQ(0, ep_connect(&self->x, self->x.qp->qp_num));
	for (int i = 0; i < 256; i++)
		ASSERT_EQ(0, post_recv(&self->x, i, (size_t)i * 4096, 4096));
	self->raw = peer_socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	ASSERT_LE(0, self->raw);
}

FIXTURE_TEARDOWN(wire)
{
	if (self->raw > 0)
		close(self->raw);
	ep_destroy(&self->x);
	env_close(&self->e);
	if (self->made)
		net_release();
}

static struct dgram good(const struct ep *x, uint32_t len, uint8_t fill)
{
	return (struct dgram){
		.opcode = 0x64, .pad = -1, .dqpn = x->qp->qp_num, .qkey = W_QKEY,
		.len = len, .fill = fill,
	};
}

static int send_pkt(int raw, const struct dgram *d)
{
	static uint8_t b[4096];
	struct sockaddr_in to = { .sin_family = AF_INET };
	size_t len = build(b, d);

	/*
	 * To srnic's side whatever the header says: its MAC, then its hook;
	 * to a group's address (IP_MULTICAST_IF: the peer's link) for one.
	 */
	inet_pton(AF_INET, d->daddr ? d->daddr : W_ME, &to.sin_addr);
	if (!IN_MULTICAST(ntohl(to.sin_addr.s_addr)))
		inet_pton(AF_INET, W_ME, &to.sin_addr);
	return sendto(raw, b, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len ?
		       0 : -1;
}

static long long counter(const char *name)
{
	return dev_counter(W_DEV, name);
}

static long long counter_reaching(const char *name, long long want)
{
	return dev_counter_reaching(W_DEV, name, want);
}

/* The next completion is the sentinel's (fill 0x5e): nothing came before it. */
static void expect_sentinel_first(struct __test_metadata *_metadata, FIXTURE_DATA(wire) *self)
{
	struct dgram s = good(&self->x, 64, 0x5e);
	struct ibv_wc wc;

	ASSERT_EQ(0, send_pkt(self->raw, &s));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(40 + 64u, wc.byte_len);
	EXPECT_EQ(-1, all_eq(self->x.buf + wc.wr_id * 4096 + 40, 64, 0x5e))
		TH_LOG("the first completion is not the sentinel's");
	ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
}

/* A good datagram, with and without immediate: data, GRH, source QP, immediate. */
TEST_F(wire, good_datagrams_delivered)
{
	for (int imm = 0; imm < 2; imm++) {
		struct dgram d = good(&self->x, 1001, 0x40 + imm);
		const uint8_t *g;
		struct ibv_wc wc;
		uint8_t peer[4];

		d.opcode = imm ? 0x65 : 0x64;
		d.imm = imm;
		d.imm_val = 0xabcd0000 + imm;
		ASSERT_EQ(0, send_pkt(self->raw, &d));
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(IBV_WC_RECV, wc.opcode);
		EXPECT_EQ(40 + 1001u, wc.byte_len);
		EXPECT_EQ(W_SQP, wc.src_qp);
		EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
		EXPECT_EQ(imm, !!(wc.wc_flags & IBV_WC_WITH_IMM));
		if (imm)
			EXPECT_EQ(0xabcd0001, ntohl(wc.imm_data));
		g = self->x.buf + wc.wr_id * 4096;
		EXPECT_EQ(-1, all_eq(g + 40, 1001, 0x40 + imm));
		/* The IPv4 header in the GRH's last 20 bytes: from the peer, to us. */
		inet_pton(AF_INET, W_PEER, peer);
		EXPECT_EQ(0x45, g[20]);
		EXPECT_EQ(0, memcmp(g + 32, peer, 4));
		/* ... and sl says so, where mlx5's provider does: UCX's UD reads it. */
		EXPECT_EQ(2, wc.sl);
		ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
	}
}

/* A packet whose ICRC is wrong: dropped, counted as such, nothing delivered. */
TEST_F(wire, bad_icrc_dropped_and_counted)
{
	long long icrc0 = counter("rx_icrc_errors"), drop0 = counter("rx_dropped");
	struct dgram d = good(&self->x, 100, 0xbb);

	ASSERT_LE(0, icrc0);
	d.bad_icrc = 1;
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	expect_sentinel_first(_metadata, self);
	/* The core caches counters for a few milliseconds: polled, bounded. */
	for (int t = 0; t < 2000 && counter("rx_icrc_errors") == icrc0; t++)
		usleep(1000);
	EXPECT_EQ(1, counter("rx_icrc_errors") - icrc0);
	EXPECT_EQ(0, counter("rx_dropped") - drop0);
}

/* Every other field wrong in turn: each dropped and counted once, nothing delivered. */
TEST_F(wire, bad_packets_dropped_and_counted)
{
	long long icrc0 = counter("rx_icrc_errors"), drop0 = counter("rx_dropped");
	struct dgram d[16];
	int n = 0;

	ASSERT_LE(0, icrc0);
	for (int i = 0; i < 16; i++)
		d[i] = good(&self->x, 100, 0xbb);
	d[n++].udp_len_delta = -100;		/* shorter than its headers */
	d[n++].udp_len_delta = 64;		/* longer than the packet */
	d[n++].truncate = 30;			/* cut: the UDP length lies */
	d[n].pad = 3, d[n++].len = 2;		/* payload and pad not 4-byte aligned */
	d[n].pad = 3, d[n++].len = 0;		/* pad without payload, misaligned */
	d[n++].tver = 1;			/* transport version 1 */
	d[n++].opcode = 0x04;			/* RC SEND ONLY */
	d[n++].opcode = 0xff;
	d[n++].dqpn = 0;
	d[n++].dqpn = 0xffffff;
	d[n++].qkey = W_QKEY + 1;
	d[n].len = 0, d[n].udp_len_delta = -8, d[n++].truncate = 8; /* no DETH */
	/* Not our address: the stack's (a router's to forward), not counted. */
	d[n].daddr = "10.77.0.9";
	for (int i = 0; i <= n; i++) {
		ASSERT_EQ(0, send_pkt(self->raw, &d[i])) TH_LOG("packet %d", i);
	}
	expect_sentinel_first(_metadata, self);
	/*
	 * The packets whose QPN is not the QP's may be another engine
	 * thread's to drop, and the core caches counters for a few
	 * milliseconds: bounded, polling the counters themselves.
	 */
	for (int t = 0; t < 2000 && counter("rx_dropped") - drop0 +
			counter("rx_icrc_errors") - icrc0 < n; t++)
		usleep(1000);
	EXPECT_EQ(n, counter("rx_dropped") - drop0 + counter("rx_icrc_errors") - icrc0);
}

/* Seeded random packets after a good header: no crash, the QP still receives. */
TEST_F(wire, random_garbage_survived)
{
	unsigned int seed = getenv("SRNIC_ADV_SEED") ? atoi(getenv("SRNIC_ADV_SEED")) : 4791;
	static uint8_t b[2048];
	struct sockaddr_in to = { .sin_family = AF_INET };
	int sent = 0;

	srand(seed);
	inet_pton(AF_INET, W_ME, &to.sin_addr);
	for (int i = 0; i < 3000; i++) {
		struct dgram d = good(&self->x, rand() % 1200, rand());
		size_t len = build(b, &d), k;

		/* Keep the IP and UDP headers (or it is not ours); spoil the rest. */
		for (k = 0; k < 1 + (size_t)rand() % 8; k++)
			b[28 + rand() % (len - 28)] = rand();
		/* Half of them with a right ICRC: parsed further. */
		if (rand() % 2)
			put_icrc(b, len, 0);
		if (rand() % 4 == 0)
			len -= rand() % (len - 28);
		sent += sendto(self->raw, b, len, 0, (struct sockaddr *)&to, sizeof(to)) ==
			(ssize_t)len;
	}
	TH_LOG("seed %u: %d random packets sent", seed, sent);
	EXPECT_LT(2900, sent);
	/* Whatever was delivered (a random spoil may leave a good datagram), then the sentinel. */
	for (int tries = 0; tries < 300; tries++) {
		struct ibv_wc wc;

		struct dgram s = good(&self->x, 64, 0x5e);

		ASSERT_EQ(0, send_pkt(self->raw, &s));
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
		if (wc.byte_len == 40 + 64 &&
		    all_eq(self->x.buf + wc.wr_id * 4096 + 40, 64, 0x5e) == -1)
			break;
	}
}


/* A receive of 40 + 512 bytes into slot @i of @u's buffer: on @srq, or @u's own queue. */
static int post_small_recv(struct ep *u, struct ibv_srq *srq, uint64_t i)
{
	struct ibv_sge s = { (uintptr_t)u->buf + i * 4096, 40 + 512, u->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &s, .num_sge = 1 }, *bad;

	return srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(u->qp, &wr, &bad);
}

/*
 * A datagram longer than the receive buffers of the UD QP it is for (any
 * host may send one): dropped and counted in resp_local_length_error, the
 * QP still in RTS.  Its receive WQE, of the QP's own queue, is not
 * consumed: the next datagram, which fits, is the first completion and
 * takes it.  On an SRQ (whose WQE another QP could have had) the WQE taken
 * completes with IBV_WC_LOC_LEN_ERR, and the QP goes on (IBTA class E, as
 * rxe).  The datagram once completed in error and moved the QP to error.
 */
TEST_F(wire, ud_datagram_over_receive_buffer_dropped)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	long long len0 = counter("resp_local_length_error");
	struct ibv_srq *srq = NULL;

	for (int on_srq = 0; on_srq < 2; on_srq++) {
		struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);
		struct ibv_wc wc;
		struct dgram d;
		struct ep u;

		TH_LOG("%s", on_srq ? "on an SRQ" : "on its own receive queue");
		if (on_srq) {
			srq = ibv_create_srq(self->e.pd, &sa);
			ASSERT_NE(NULL, srq);
			o.srq = srq;
		}
		ASSERT_EQ(0, ep_create(&self->e, &o, &u));
		ASSERT_EQ(0, ep_connect(&u, u.qp->qp_num));
		for (uint64_t i = 0; i < 2; i++)
			ASSERT_EQ(0, post_small_recv(&u, srq, i));
		d = good(&u, 1024, 0xee);
		ASSERT_EQ(0, send_pkt(self->raw, &d));
		d = good(&u, 512, 0x5e);
		ASSERT_EQ(0, send_pkt(self->raw, &d));
		ASSERT_EQ(1, poll_one(u.cq, &wc, WC_MS));
		if (on_srq) {
			EXPECT_EQ(0, wc.wr_id);
			EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status)
				TH_LOG("%s", ibv_wc_status_str(wc.status));
			ASSERT_EQ(1, poll_one(u.cq, &wc, WC_MS));
		}
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("wr_id %llu: %s", (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
		EXPECT_EQ((uint64_t)on_srq, wc.wr_id);
		EXPECT_EQ(40 + 512u, wc.byte_len);
		EXPECT_EQ(-1, all_eq(u.buf + wc.wr_id * 4096 + 40, 512, 0x5e));
		EXPECT_EQ(IBV_QPS_RTS, qp_state(u.qp));
		EXPECT_EQ(len0 + on_srq + 1,
			  counter_reaching("resp_local_length_error", len0 + on_srq + 1));
		ep_destroy(&u);
	}
	ibv_destroy_srq(srq);
}


/* ---- a hostile RC requester ---- */

#define W_PQPN 0x00abcdu	/* the peer's QPN, to which srnic's QP is connected */
#define W_PSN 0x100u		/* ep_connect()'s PSNs */
#define W_BUF (16u * MiB)

enum {
	OP_SEND_FIRST = 0x00, OP_SEND_MIDDLE = 0x01, OP_SEND_LAST = 0x02,
	OP_SEND_ONLY = 0x04, OP_WRITE_FIRST = 0x06, OP_WRITE_ONLY = 0x0a,
	OP_WRITE_MIDDLE = 0x07, OP_WRITE_LAST = 0x08, OP_READ_REQ = 0x0c, OP_READ_FIRST = 0x0d,
	OP_READ_MIDDLE = 0x0e, OP_READ_LAST = 0x0f, OP_READ_ONLY = 0x10,
	OP_ACK = 0x11, OP_ATOMIC_ACK = 0x12, OP_CMP_SWAP = 0x13, OP_FETCH_ADD = 0x14,
	OP_FLUSH = 0x1c, OP_ATOMIC_WRITE = 0x1d,
	OP_XRC = 0xa0,
	SYN_ACK = 0x00, SYN_NAK_SEQ = 0x60, SYN_NAK_INV = 0x61, SYN_NAK_ACCESS = 0x62,
};

/* A request packet from the peer; tests spoil one field at a time. */
struct rcpkt {
	uint8_t opcode;
	uint32_t psn;
	int ackreq;
	uint8_t ext[32];		/* XRCETH, RETH, ... */
	uint32_t ext_len;
	uint32_t len;			/* payload */
	uint8_t fill;
	const void *head;		/* the payload's first head_len bytes (a TMH) */
	uint32_t head_len;
	const char *saddr;		/* NULL: the peer's */
	int rxe_icrc;			/* a FLUSH with rxe's ICRC */
	uint32_t icrc_flip;		/* spoils the ICRC */
};

static struct rcpkt rc_send(uint32_t psn, uint32_t len, uint8_t fill)
{
	return (struct rcpkt){ .opcode = OP_SEND_ONLY, .psn = psn, .ackreq = 1,
			       .len = len, .fill = fill };
}

/* @op with a RETH for @len bytes at @va through @rkey. */
static struct rcpkt rc_reth(uint8_t op, uint32_t psn, uint64_t va, uint32_t rkey,
			    uint32_t len)
{
	struct rcpkt r = { .opcode = op, .psn = psn, .ackreq = 1, .ext_len = 16 };
	uint64_t bva = htobe64(va);
	uint32_t brkey = htonl(rkey), blen = htonl(len);

	memcpy(r.ext, &bva, 8);
	memcpy(r.ext + 8, &brkey, 4);
	memcpy(r.ext + 12, &blen, 4);
	return r;
}

static size_t build_rc(uint8_t *b, const struct rcpkt *r, uint32_t dqpn)
{
	uint32_t pad = -r->len & 3;
	size_t len = 20 + 8 + 12 + r->ext_len + r->len + pad + 4;
	uint8_t *p = b + 28;

	put_ip_udp(b, r->saddr ? r->saddr : W_PEER, W_ME, len);
	p[0] = r->opcode;
	p[1] = pad << 4;
	p[2] = p[3] = 0xff;
	p[5] = dqpn >> 16;
	p[6] = dqpn >> 8;
	p[7] = dqpn;
	p[8] = r->ackreq ? 0x80 : 0;
	p[9] = r->psn >> 16;
	p[10] = r->psn >> 8;
	p[11] = r->psn;
	memcpy(p + 12, r->ext, r->ext_len);
	memset(p + 12 + r->ext_len, r->fill, r->len);
	if (r->head)
		memcpy(p + 12 + r->ext_len, r->head, r->head_len);
	put_icrc(b, len, r->icrc_flip);
	if (r->rxe_icrc) {
		uint32_t c = icrc_rxe_flush(b, len) ^ r->icrc_flip;

		for (int i = 0; i < 4; i++)
			b[len - 4 + i] = c >> 8 * i;
	}
	return len;
}

/* An answer from srnic: its opcode, PSN, AETH syndrome and payload. */
struct answer {
	uint8_t op, syn;
	uint32_t psn, msn, plen;
	const uint8_t *payload;
	uint8_t b[4096];
};

FIXTURE(rcw) {
	struct env e;
	struct ep x;
	int raw, ans;
	int made;
};

/* srnic's IPv4 GID, which the QP's path takes as its source. */
static int ipv4_gid(struct env *e)
{
	union ibv_gid g;
	uint8_t me[4];

	inet_pton(AF_INET, W_ME, me);
	for (int i = 0; i < 16; i++)
		if (!ibv_query_gid(e->ctx, 1, i, &g) && g.raw[10] == 0xff &&
		    g.raw[11] == 0xff && !memcmp(g.raw + 12, me, 4)) {
			e->gid_idx = i;
			e->gid = g;
			return 0;
		}
	return -1;
}

/* The peer's GID: its IPv4 address, mapped. */
static const union ibv_gid *peer_gid(void)
{
	static union ibv_gid peer = { .raw = { [10] = 0xff, [11] = 0xff } };

	inet_pton(AF_INET, W_PEER, peer.raw + 12);
	return &peer;
}

/* srnic's RC QP as @o says, connected to the peer's QPN at its address, its receive queue full. */
static void rc_connect_with(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			    struct qp_opts *o)
{
	o->buf_len = W_BUF;
	ASSERT_EQ(0, ep_create(&self->e, o, &self->x));
	self->x.dgid = peer_gid();
	ASSERT_EQ(0, ep_connect(&self->x, W_PQPN));
	for (int k = 0; k < 32; k++)
		ASSERT_EQ(0, post_recv(&self->x, k, (size_t)k * 4096, 4096));
}

/*
 * ... with @timeout its Local ACK Timeout (0: the tests' default), @rd its
 * max_rd_atomic (0: the device's, at most 16).
 */
static void rc_connect_rd(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			  uint8_t timeout, uint8_t rd)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	o.max_rd_atomic = rd;
	if (timeout)
		o.timeout = timeout;
	rc_connect_with(_metadata, self, &o);
}

static void rc_connect(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		       uint8_t timeout)
{
	rc_connect_rd(_metadata, self, timeout, 0);
}

FIXTURE_SETUP(rcw)
{
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(4791) };
	int big = 64 << 20;

	net_up(_metadata, 0, &self->e);
	self->made = 1;
	ASSERT_EQ(0, ipv4_gid(&self->e));
	rc_connect(_metadata, self, 0);
	self->raw = peer_socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	ASSERT_LE(0, self->raw);
	/* srnic's answers, to the peer's UDP port 4791 (no rxe in that namespace). */
	self->ans = peer_socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, self->ans);
	ASSERT_EQ(0, setsockopt(self->ans, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)));
	inet_pton(AF_INET, W_PEER, &at.sin_addr);
	ASSERT_EQ(0, bind(self->ans, (struct sockaddr *)&at, sizeof(at)));
}

FIXTURE_TEARDOWN(rcw)
{
	/* route_changes_followed's, should it have stopped half-way. */
	sh("ip route del " W_PEER "/32 2>/dev/null");
	if (self->raw > 0)
		close(self->raw);
	if (self->ans > 0)
		close(self->ans);
	ep_destroy(&self->x);
	env_close(&self->e);
	if (self->made)
		net_release();
}

/* The peer's packet @r to srnic's QP @dqpn. */
static int rc_send_to(FIXTURE_DATA(rcw) *self, const struct rcpkt *r, uint32_t dqpn)
{
	static uint8_t b[9000];
	struct sockaddr_in to = { .sin_family = AF_INET };
	size_t len = build_rc(b, r, dqpn);

	inet_pton(AF_INET, W_ME, &to.sin_addr);
	return sendto(self->raw, b, len, 0, (struct sockaddr *)&to, sizeof(to)) ==
		       (ssize_t)len ? 0 : -1;
}

static int rc_send_pkt(FIXTURE_DATA(rcw) *self, const struct rcpkt *r)
{
	return rc_send_to(self, r, self->x.qp->qp_num);
}

/* srnic's next answer within @ms, parsed into @a; -1 if none came. */
static int next_answer(int s, struct answer *a, int ms)
{
	struct pollfd pfd = { .fd = s, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	n = recv(s, a->b, sizeof(a->b), 0);
	if (n < 12 + 4)
		return -1;
	a->op = a->b[0];
	a->psn = (uint32_t)a->b[9] << 16 | a->b[10] << 8 | a->b[11];
	a->syn = 0xff;
	a->payload = a->b + 12;
	/* RC's answers and XRC's (the same with the service bits 0xa0). */
	if ((a->op & ~OP_XRC) == OP_ACK || (a->op & ~OP_XRC) == OP_READ_FIRST ||
	    (a->op & ~OP_XRC) == OP_READ_LAST || (a->op & ~OP_XRC) == OP_READ_ONLY) {
		if (n < 12 + 4 + 4)
			return -1;
		a->syn = a->b[12];
		a->msn = (uint32_t)a->b[13] << 16 | a->b[14] << 8 | a->b[15];
		a->payload += 4;
	}
	a->plen = a->b + n - 4 - (a->b[1] >> 4 & 3) - a->payload;
	return 0;
}

/* The next answer is an ACKNOWLEDGE with @syn for @psn. */
static void expect_ack(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		       uint8_t syn, uint32_t psn)
{
	struct answer a;

	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("no answer for PSN %#x", psn);
	EXPECT_EQ(OP_ACK, a.op);
	EXPECT_EQ(psn, a.psn);
	if (syn == SYN_ACK) {
		EXPECT_EQ(0, a.syn >> 5) TH_LOG("syndrome %#x", a.syn);
	} else {
		EXPECT_EQ(syn, a.syn);
	}
}

/*
 * The peer's sentinel to srnic's QP @qpn: a duplicate, an empty SEND with
 * AckReq just behind @epsn (the PSN the QP expects next), which srnic must
 * acknowledge again, executing nothing: an ACK for @epsn - 1.
 */
static int send_sentinel(FIXTURE_DATA(rcw) *self, uint32_t qpn, uint32_t epsn)
{
	struct rcpkt r = rc_send((epsn - 1) & 0xffffff, 0, 0);

	return rc_send_to(self, &r, qpn);
}

static bool is_sentinel_ack(const struct answer *a, uint32_t epsn)
{
	return a->op == OP_ACK && a->psn == ((epsn - 1) & 0xffffff) && !(a->syn >> 5);
}

/*
 * Nothing more from srnic's QP @qpn since the peer's last packet: a
 * sentinel, not a wait.  The QP's engine thread takes its packets in
 * order, answers them in order and sends its requests too: the sentinel's
 * ACK is the next answer, and once it is back, whatever the packets before
 * it completed is in the CQ; @cq (if given) has nothing.
 */
static void expect_quiet_to(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			    uint32_t qpn, uint32_t epsn, struct ibv_cq *cq)
{
	struct answer a;
	struct ibv_wc wc;

	ASSERT_EQ(0, send_sentinel(self, qpn, epsn));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("no ACK for the sentinel");
	ASSERT_TRUE(is_sentinel_ack(&a, epsn))
		TH_LOG("before the sentinel's ACK for %#x: %#x for PSN %#x, syndrome %#x",
		       (epsn - 1) & 0xffffff, a.op, a.psn, a.syn);
	if (cq) {
		EXPECT_EQ(0, poll_one(cq, &wc, 0))
			TH_LOG("before the sentinel: completion wr_id %llu opcode %d (%s)",
			       (unsigned long long)wc.wr_id, wc.opcode,
			       ibv_wc_status_str(wc.status));
	}
}

/* Nothing more from the fixture's QP, which expects @epsn: no answer, no completion. */
static void expect_no_answer(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			     uint32_t epsn)
{
	expect_quiet_to(_metadata, self, self->x.qp->qp_num, epsn, self->x.cq);
}

/*
 * Nothing from srnic's QP @q, which is in error: it answers nothing, a
 * sentinel neither, so the last resort, quiet_ms().
 */
static void expect_silent_in_err(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
				 struct ep *q)
{
	struct answer a;

	ASSERT_TRUE(wait_state(q->qp, IBV_QPS_ERR, WC_MS)) TH_LOG("state %d", qp_state(q->qp));
	EXPECT_EQ(-1, next_answer(self->ans, &a, quiet_ms()))
		TH_LOG("unexpected answer %#x for PSN %#x", a.op, a.psn);
}

/* The next receive completion is the SEND filled with @fill, of @len bytes. */
static void expect_recv(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			uint32_t len, uint8_t fill)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(-1, all_eq(self->x.buf + wc.wr_id * 4096, len, fill));
	ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
}

/* A SEND from the connected peer: delivered and acknowledged, once; its duplicate re-ACKed. */
TEST_F(rcw, send_delivered_duplicate_acked_again)
{
	struct rcpkt r = rc_send(W_PSN, 100, 0x31);

	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 100, 0x31);
	expect_ack(_metadata, self, SYN_ACK, W_PSN);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_ack(_metadata, self, SYN_ACK, W_PSN);
	/* Not delivered again: the next SEND is the next completion. */
	r = rc_send(W_PSN + 1, 8, 0x32);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 8, 0x32);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 1);
}

/*
 * Device @dev's engine threads (srnic/<dev>/N) and this process on CPU 0,
 * this process ahead of them (SCHED_FIFO) while @on: the packets it sends
 * meanwhile queue for the engine, which runs once it sleeps.  Off: every
 * CPU again, and the usual policy.  0 or -1.
 */
static int engine_behind_me(const char *dev, int on)
{
	struct sched_param prio = { .sched_priority = on ? 1 : 0 };
	pid_t pids[64];
	int n = engine_pids(dev, pids, 64), err = 0;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	for (int c = 0; c < (on ? 1 : CPU_SETSIZE); c++)
		CPU_SET(c, &cpus);
	for (int i = 0; i < n; i++)
		err |= sched_setaffinity(pids[i], sizeof(cpus), &cpus);
	err |= sched_setaffinity(0, sizeof(cpus), &cpus);
	err |= sched_setscheduler(0, on ? SCHED_FIFO : SCHED_OTHER, &prio);
	return n && !err ? 0 : -1;
}

/*
 * Requests that arrive together get one ACK, for the last of them (an ACK
 * covers every PSN before its own): eight SENDs queued while the engine
 * cannot run, then a single ACK, for the eighth PSN with the eighth MSN.
 */
TEST_F(rcw, acks_coalesced_in_a_batch)
{
	struct answer a;
	struct rcpkt r;
	int sent = 0, pinned = engine_behind_me(W_DEV, 1), back;

	for (int i = 0; i < 8 && !pinned; i++) {
		struct rcpkt r = rc_send(W_PSN + i, 64, 0x50 + i);

		sent += !rc_send_pkt(self, &r);
	}
	back = engine_behind_me(W_DEV, 0);
	ASSERT_EQ(0, pinned);
	ASSERT_EQ(0, back);
	ASSERT_EQ(8, sent);
	for (int i = 0; i < 8; i++)
		expect_recv(_metadata, self, 64, 0x50 + i);
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_ACK, a.op);
	EXPECT_EQ(W_PSN + 7, a.psn);
	EXPECT_EQ(0, a.syn >> 5) TH_LOG("syndrome %#x", a.syn);
	EXPECT_EQ(8, a.msn);
	/* No other ACK: the next SEND's is the next answer. */
	r = rc_send(W_PSN + 8, 16, 0x58);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 16, 0x58);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 8);
}

/*
 * A SEND and a WRITE of three packets, each packet's bytes its own: every
 * byte lands where its packet says (each packet's payload is its own piece
 * of the message, not the message from its start).
 */
TEST_F(rcw, multi_packet_data_placed)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = 2 * mtu + 100;
	uint8_t *dst = self->x.buf + 64 * 4096;
	const uint8_t ops[2][3] = { { OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST },
				    { OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST } };
	struct ibv_wc wc;

	memset(dst, 0, len);
	for (int w = 0; w < 2; w++) {
		for (uint32_t i = 0; i < 3; i++) {
			struct rcpkt r = rc_send(W_PSN + 3 * w + i, i < 2 ? mtu : 100, 0x41 + i);

			if (w && !i) {
				r = rc_reth(OP_WRITE_FIRST, W_PSN + 3, (uintptr_t)dst,
					    self->x.mr->rkey, len);
				r.len = mtu, r.fill = 0x41;
			}
			r.opcode = ops[w][i];
			r.ackreq = i == 2;
			ASSERT_EQ(0, rc_send_pkt(self, &r));
		}
		expect_ack(_metadata, self, SYN_ACK, W_PSN + 3 * w + 2);
	}
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(len, wc.byte_len);
	for (const uint8_t *b = self->x.buf + wc.wr_id * 4096; b; b = b == dst ? NULL : dst) {
		EXPECT_EQ(-1, all_eq(b, mtu, 0x41));
		EXPECT_EQ(-1, all_eq(b + mtu, mtu, 0x42));
		EXPECT_EQ(-1, all_eq(b + 2 * mtu, 100, 0x43));
	}
}

/*
 * A UDP socket of the peer's, bound to the source port the packets here
 * carry, sending with DF: the stack then writes an IP ID of 0 (no
 * connection), so that the ICRC can be computed beforehand.
 */
static int frag_socket(void)
{
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_port = htons(0xc001) };
	int u = peer_socket(AF_INET, SOCK_DGRAM, 0), pmtu = IP_PMTUDISC_DO;

	inet_pton(AF_INET, W_PEER, &from.sin_addr);
	if (u >= 0 && (bind(u, (struct sockaddr *)&from, sizeof(from)) ||
		       setsockopt(u, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))) {
		close(u);
		u = -1;
	}
	return u;
}

/*
 * The packet @b of @len bytes (IP header first, its ID 0) through @u in two
 * writes (MSG_MORE), the UDP payload cut @cut bytes in: the peer's stack
 * keeps the second part in a page fragment, as veth hands it on.
 */
static int send_in_frags(int u, const uint8_t *b, size_t len, size_t cut)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(4791) };

	inet_pton(AF_INET, W_ME, &to.sin_addr);
	return sendto(u, b + 28, cut, MSG_MORE, (struct sockaddr *)&to, sizeof(to)) ==
		       (ssize_t)cut &&
	       sendto(u, b + 28 + cut, len - 28 - cut, 0, (struct sockaddr *)&to, sizeof(to)) ==
		       (ssize_t)(len - 28 - cut) ? 0 : -1;
}

/*
 * The peer's packet @r to srnic's QP, its headers in one part, the rest
 * (payload, pad, ICRC) in a fragment.  @spoil: a payload byte flipped
 * after the ICRC was computed.
 */
static int rc_send_in_frags(FIXTURE_DATA(rcw) *self, const struct rcpkt *r, int spoil)
{
	static uint8_t b[9000];
	size_t len = build_rc(b, r, self->x.qp->qp_num), head = 12 + r->ext_len;
	int u = frag_socket(), ret;

	b[4] = b[5] = 0;
	put_icrc(b, len, r->icrc_flip);
	if (spoil)
		b[28 + head + r->len / 2] ^= 1;
	ret = u >= 0 ? send_in_frags(u, b, len, head) : -1;
	if (u >= 0)
		close(u);
	return ret;
}

/*
 * A packet whose payload arrives in page fragments is taken as it is
 * (rx_frag_packets counts it), not made linear: its ICRC checked across
 * the fragments (a flipped payload byte there is an ICRC error), its
 * payload copied from them into the receive WQE's buffer or the WRITE's
 * memory.
 */
TEST_F(rcw, payload_taken_from_fragments)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	uint8_t *dst = self->x.buf + 64 * 4096;
	long long frags = counter("rx_frag_packets"), icrc = counter("rx_icrc_errors");
	struct rcpkt r;

	ASSERT_LE(0, frags) TH_LOG("no rx_frag_packets counter");
	r = rc_send(W_PSN, 1000, 0x6b);
	ASSERT_EQ(0, rc_send_in_frags(self, &r, 1));
	EXPECT_EQ(icrc + 1, counter_reaching("rx_icrc_errors", icrc + 1));
	/* The good copy is the sentinel: its ACK the first answer, its data the first receive. */
	ASSERT_EQ(0, rc_send_in_frags(self, &r, 0));
	expect_ack(_metadata, self, SYN_ACK, W_PSN);
	expect_recv(_metadata, self, 1000, 0x6b);
	memset(dst, 0, mtu);
	r = rc_reth(OP_WRITE_ONLY, W_PSN + 1, (uintptr_t)dst, self->x.mr->rkey, mtu - 1);
	r.len = mtu - 1;
	r.fill = 0x6c;
	ASSERT_EQ(0, rc_send_in_frags(self, &r, 0));
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 1);
	EXPECT_EQ(-1, all_eq(dst, mtu - 1, 0x6c));
	EXPECT_EQ(0, dst[mtu - 1]);
	EXPECT_EQ(frags + 2, counter_reaching("rx_frag_packets", frags + 2));
}

/*
 * Seeded random RC packets to the QP, any opcode and headers, half of
 * them with a right ICRC, each cut at a random place into a linear part
 * and a fragment: no crash; a new QP then takes a good packet so.
 */
TEST_F(rcw, random_packets_in_fragments_survived)
{
	unsigned int seed = getenv("SRNIC_ADV_SEED") ? atoi(getenv("SRNIC_ADV_SEED")) : 4791;
	static uint8_t b[2048];
	int u = frag_socket(), sent = 0;
	struct answer a;
	struct rcpkt r;

	ASSERT_LE(0, u);
	srand(seed);
	for (int i = 0; i < 1500; i++) {
		struct rcpkt g = rc_send(W_PSN + rand() % 8, 200 + rand() % 900, rand());
		size_t len, k;

		g.opcode = rand();
		g.ext_len = 4 * (rand() % 8);
		for (k = 0; k < g.ext_len; k++)
			g.ext[k] = rand();
		len = build_rc(b, &g, self->x.qp->qp_num);
		b[4] = b[5] = 0;
		for (k = 0; k < (size_t)rand() % 4; k++)
			b[28 + 12 + rand() % (len - 40)] = rand();
		if (rand() % 2)
			put_icrc(b, len, 0);
		sent += !send_in_frags(u, b, len, 1 + rand() % (len - 29));
	}
	close(u);
	TH_LOG("seed %u: %d random packets sent in fragments", seed, sent);
	EXPECT_LT(1400, sent);
	ep_destroy(&self->x);
	/* What the flood made srnic answer, drained (the QP is gone: no sentinel). */
	while (!next_answer(self->ans, &a, quiet_ms()))
		;
	rc_connect(_metadata, self, 0);
	r = rc_send(W_PSN, 700, 0x5e);
	ASSERT_EQ(0, rc_send_in_frags(self, &r, 0));
	expect_ack(_metadata, self, SYN_ACK, W_PSN);
	expect_recv(_metadata, self, 700, 0x5e);
}

/* From another address, or to a QP not connected to the peer: dropped, the QP unmoved. */
TEST_F(rcw, forged_source_dropped)
{
	struct rcpkt r = rc_send(W_PSN, 64, 0x66);
	long long drop0 = counter("rx_dropped");

	r.saddr = "10.77.0.3";
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	for (int t = 0; t < 2000 && counter("rx_dropped") == drop0; t++)
		usleep(1000);
	EXPECT_EQ(1, counter("rx_dropped") - drop0);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
	/* The right peer, the same PSN: its SEND is the first thing delivered (the sentinel). */
	r = rc_send(W_PSN, 64, 0x67);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 64, 0x67);
	expect_ack(_metadata, self, SYN_ACK, W_PSN);
}

/* The peer's packet @r to the fixture's QP with @pkey in its BTH (the ICRC made again). */
static int rc_send_pkey(FIXTURE_DATA(rcw) *self, const struct rcpkt *r, uint16_t pkey)
{
	static uint8_t b[9000];
	struct sockaddr_in to = { .sin_family = AF_INET };
	size_t len = build_rc(b, r, self->x.qp->qp_num);

	b[28 + 2] = pkey >> 8;
	b[28 + 3] = pkey;
	put_icrc(b, len, 0);
	inet_pton(AF_INET, W_ME, &to.sin_addr);
	return sendto(self->raw, b, len, 0, (struct sockaddr *)&to, sizeof(to)) ==
		       (ssize_t)len ? 0 : -1;
}

/*
 * WRITEs whose BTH P_Key does not match the port's (0xFFFF, a full
 * member): a full member of another partition (0x8001), a limited one
 * (0x0001), the invalid keys (0x0000, 0x8000).  Each is dropped before it
 * runs and counted in rx_bad_pkey: its bytes stay as they were, and a good
 * WRITE with the same PSN is the first answered and executed (the
 * sentinel).  A limited member of the port's partition (0x7FFF) matches a
 * full member (IBTA 10.9.3, rxe's pkey_match()): executed, not counted.
 * The P_Key was once not checked: the first was executed, the rest and
 * the sentinel taken as its duplicates.
 */
TEST_F(rcw, bad_pkey_dropped_and_counted)
{
	static const uint16_t bad[] = { 0x8001, 0x0001, 0x0000, 0x8000 };
	const int n = sizeof(bad) / sizeof(bad[0]);
	uint8_t *dst = self->x.buf + 64 * 4096;
	long long pk0 = counter("rx_bad_pkey");
	struct rcpkt r;

	memset(dst, 0, (n + 2) * 4096);
	for (int i = 0; i < n; i++) {
		r = rc_reth(OP_WRITE_ONLY, W_PSN, (uintptr_t)dst + i * 4096, self->x.mr->rkey, 64);
		r.len = 64, r.fill = 0xee;
		ASSERT_EQ(0, rc_send_pkey(self, &r, bad[i]));
	}
	r = rc_reth(OP_WRITE_ONLY, W_PSN, (uintptr_t)dst + n * 4096, self->x.mr->rkey, 64);
	r.len = 64, r.fill = 0x5e;
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_ack(_metadata, self, SYN_ACK, W_PSN);
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(-1, all_eq(dst + i * 4096, 64, 0)) TH_LOG("P_Key %#x: written", bad[i]);
	}
	EXPECT_EQ(-1, all_eq(dst + n * 4096, 64, 0x5e)) TH_LOG("the good WRITE not executed");
	EXPECT_EQ(pk0 + n, counter_reaching("rx_bad_pkey", pk0 + n));
	r = rc_reth(OP_WRITE_ONLY, W_PSN + 1, (uintptr_t)dst + (n + 1) * 4096,
		    self->x.mr->rkey, 64);
	r.len = 64, r.fill = 0x7f;
	ASSERT_EQ(0, rc_send_pkey(self, &r, 0x7fff));
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 1);
	EXPECT_EQ(-1, all_eq(dst + (n + 1) * 4096, 64, 0x7f)) TH_LOG("P_Key 0x7fff refused");
	EXPECT_EQ(pk0 + n, dev_counter_now(W_DEV, "rx_bad_pkey"));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/* PSNs ahead of the expected one: one sequence NAK for the gap, nothing delivered. */
TEST_F(rcw, psn_gap_one_nak)
{
	for (uint32_t i = 0; i < 3; i++) {
		struct rcpkt r = rc_send(W_PSN + 5 + i, 16, 0x70);

		ASSERT_EQ(0, rc_send_pkt(self, &r));
	}
	expect_ack(_metadata, self, SYN_NAK_SEQ, W_PSN);
	expect_no_answer(_metadata, self, W_PSN);
	/* A PSN far ahead, behind by the PSN space's half: a duplicate, nothing executed. */
	{
		struct rcpkt r = rc_send((W_PSN + (1u << 23) + 1) & 0xffffff, 16, 0x71);

		ASSERT_EQ(0, rc_send_pkt(self, &r));
	}
	/* The expected PSN: the first thing delivered (the sentinel). */
	{
		struct rcpkt r = rc_send(W_PSN, 16, 0x72);

		ASSERT_EQ(0, rc_send_pkt(self, &r));
	}
	expect_recv(_metadata, self, 16, 0x72);
}

/*
 * Bad request @i against srnic's buffer at @va, @rkey: the packet, the
 * NAK it earns, and what it is; false past the last.
 */
static bool bad_request(int i, uint64_t va, uint32_t rkey, uint32_t mtu, struct rcpkt *r,
			uint8_t *syn, const char **what)
{
	*syn = SYN_NAK_INV;
	switch (i) {
	case 0:
		*r = rc_reth(OP_WRITE_ONLY, W_PSN, va, rkey, 16);
		*what = "WRITE payload over its RETH";
		break;
	case 1:
		*r = rc_reth(OP_WRITE_ONLY, W_PSN, va, 0, 64);
		*syn = SYN_NAK_ACCESS, *what = "WRITE with rkey 0";
		break;
	case 2:
		*r = rc_reth(OP_WRITE_ONLY, W_PSN, va, rkey ^ 0x100, 64);
		*syn = SYN_NAK_ACCESS, *what = "WRITE with no such rkey";
		break;
	case 3:
		*r = rc_reth(OP_WRITE_ONLY, W_PSN, va + W_BUF, rkey, 64);
		*syn = SYN_NAK_ACCESS, *what = "WRITE past the MR";
		break;
	case 4:
		*r = rc_reth(OP_WRITE_ONLY, W_PSN, va, rkey, 0xffffffffu);
		*what = "WRITE ONLY whose RETH says more than it carries";
		break;
	case 5:
		*r = (struct rcpkt){ .opcode = OP_WRITE_MIDDLE, .psn = W_PSN, .ackreq = 1 };
		*what = "WRITE MIDDLE without FIRST";
		break;
	case 6:
		*r = (struct rcpkt){ .opcode = OP_SEND_MIDDLE, .psn = W_PSN, .ackreq = 1 };
		*what = "SEND MIDDLE without FIRST";
		break;
	case 7:
		*r = rc_send(W_PSN, mtu + 4, 0x11);
		*what = "SEND ONLY over the path MTU";
		break;
	case 8:
		*r = rc_reth(OP_WRITE_FIRST, W_PSN, va, rkey, 4 * mtu);
		r->len = mtu - 4;
		*what = "WRITE FIRST shorter than the path MTU";
		return true;
	case 9:
		*r = rc_reth(OP_READ_REQ, W_PSN, va, rkey, 0x80000001u);
		r->len = 0;
		*what = "READ longer than a message may be";
		return true;
	case 10:
		*r = rc_reth(OP_READ_REQ, W_PSN, va, 0, 64);
		r->len = 0;
		*syn = SYN_NAK_ACCESS, *what = "READ with rkey 0";
		return true;
	default:
		return false;
	}
	if (!r->len)
		r->len = 64;
	r->fill = 0xee;
	return true;
}

/*
 * Requests that overrun their RETH, name key 0 or no key, land outside
 * the region, come out of their message's order or over the path MTU:
 * refused with the NAK the spec gives, nothing written or delivered, the
 * QP in error afterwards (as any RC responder after such a NAK).
 */
TEST_F(rcw, bad_requests_refused)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	const char *what;
	struct rcpkt r;
	uint8_t syn;

	for (int i = 0; bad_request(i, (uintptr_t)self->x.buf + 64 * 4096, self->x.mr->rkey,
				    mtu, &r, &syn, &what); i++) {
		TH_LOG("%s", what);
		memset(self->x.buf + 64 * 4096, 0, 8192);
		ASSERT_EQ(0, rc_send_pkt(self, &r));
		expect_ack(_metadata, self, syn, W_PSN);
		expect_silent_in_err(_metadata, self, &self->x);
		EXPECT_EQ(-1, all_eq(self->x.buf + 64 * 4096, 8192, 0)) TH_LOG("memory written");
		ep_destroy(&self->x);
		rc_connect(_metadata, self, 0);
	}
}

/*
 * A READ of 128 KiB from 96 KiB before the end of its MR, then (the QP made
 * again) a WRITE of three packets whose last runs past that end: the whole
 * range is checked before anything moves.  The READ's first answer is a
 * remote access NAK, no READ response before it; the WRITE gets the NAK for
 * its FIRST packet and nothing of it is written; the QP is in error after
 * each, as after any access NAK.  The READ was once answered up to the MR's
 * end (64 KiB of responses), then not at all.
 */
TEST_F(rcw, read_past_its_mr_refused_before_any_data)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	uint64_t end = (uintptr_t)self->x.buf + W_BUF;
	struct answer a;
	struct rcpkt r;

	r = rc_reth(OP_READ_REQ, W_PSN, end - 96 * KiB, self->x.mr->rkey, 128 * KiB);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("no answer to the READ");
	EXPECT_EQ(OP_ACK, a.op) TH_LOG("first answer %#x for PSN %#x", a.op, a.psn);
	EXPECT_EQ(SYN_NAK_ACCESS, a.syn);
	EXPECT_EQ(W_PSN, a.psn);
	expect_silent_in_err(_metadata, self, &self->x);
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 0);
	end = (uintptr_t)self->x.buf + W_BUF;
	memset(self->x.buf + W_BUF - 4 * mtu, 0, 4 * mtu);
	for (uint32_t i = 0; i < 3; i++) {
		r = rc_send(W_PSN + i, mtu, 0xee);
		if (!i)
			r = rc_reth(OP_WRITE_FIRST, W_PSN, end - 2 * mtu - 100,
				    self->x.mr->rkey, 3 * mtu);
		r.opcode = !i ? OP_WRITE_FIRST : i == 1 ? OP_WRITE_MIDDLE : OP_WRITE_LAST;
		r.len = mtu, r.fill = 0xee;
		r.ackreq = i == 2;
		ASSERT_EQ(0, rc_send_pkt(self, &r));
	}
	expect_ack(_metadata, self, SYN_NAK_ACCESS, W_PSN);
	expect_silent_in_err(_metadata, self, &self->x);
	EXPECT_EQ(-1, all_eq(self->x.buf + W_BUF - 4 * mtu, 4 * mtu, 0)) TH_LOG("memory written");
}

/*
 * A SEND of five MTU packets into a 4 KiB receive buffer: refused at the
 * packet that shows it cannot fit (the MIDDLE that fills the buffer: more
 * must follow), its receive WQE completed in error, the QP in error and
 * silent afterwards.
 */
TEST_F(rcw, send_over_receive_buffer)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	uint32_t n = 4096 / mtu + 1;
	struct ibv_wc wc;

	for (uint32_t i = 0; i < n; i++) {
		struct rcpkt r = rc_send(W_PSN + i, mtu, 0x44);

		r.opcode = !i ? OP_SEND_FIRST : i + 1 < n ? OP_SEND_MIDDLE : OP_SEND_LAST;
		r.ackreq = i + 1 == n;
		ASSERT_EQ(0, rc_send_pkt(self, &r));
	}
	expect_ack(_metadata, self, SYN_NAK_INV, W_PSN + n - 2);
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_NE(IBV_WC_SUCCESS, wc.status);
	expect_silent_in_err(_metadata, self, &self->x);
}

/*
 * UC SENDs longer than the receive buffers (one and a half MTUs) from the
 * connected peer: one too long at its LAST packet, one at its MIDDLE (its
 * LAST dropped after it).  Each is dropped and counted in
 * resp_local_length_error, the QP stays in RTS, and its receive WQE is not
 * consumed: the SEND that fits after them is the first completion, in the
 * first WQE.  UC answers nothing.  The first SEND once completed in error
 * and moved the QP to error.
 */
TEST_F(rcw, uc_send_over_receive_buffer_dropped)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	const uint8_t uc = 0x20, ops[2][3] = { { OP_SEND_FIRST, OP_SEND_LAST },
					      { OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST } };
	long long len0 = counter("resp_local_length_error");
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UC);
	struct answer a;
	struct ibv_wc wc;
	struct rcpkt r;
	struct ep u;

	ASSERT_EQ(0, ep_create(&self->e, &o, &u));
	u.dgid = peer_gid();
	ASSERT_EQ(0, ep_connect(&u, W_PQPN + 2));
	for (uint64_t k = 0; k < 4; k++)
		ASSERT_EQ(0, post_recv(&u, k, k * 4096, mtu + mtu / 2));
	for (int msg = 0; msg < 2; msg++)
		for (int i = 0; i < 2 + msg; i++) {
			r = rc_send(psn++, mtu, 0xee);
			r.opcode = uc | ops[msg][i];
			r.ackreq = 0;
			ASSERT_EQ(0, rc_send_to(self, &r, u.qp->qp_num));
		}
	r = rc_send(psn, 100, 0x5e);
	r.opcode = uc | OP_SEND_ONLY;
	r.ackreq = 0;
	ASSERT_EQ(0, rc_send_to(self, &r, u.qp->qp_num));
	ASSERT_EQ(1, poll_one(u.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("wr_id %llu: %s", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	EXPECT_EQ(0u, wc.wr_id);
	EXPECT_EQ(100u, wc.byte_len);
	EXPECT_EQ(-1, all_eq(u.buf, 100, 0x5e));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(u.qp));
	EXPECT_EQ(len0 + 2, counter_reaching("resp_local_length_error", len0 + 2));
	EXPECT_EQ(-1, next_answer(self->ans, &a, 0)) TH_LOG("UC answered %#x", a.op);
	ep_destroy(&u);
}

#define W_GSI_QKEY 0x80010000u	/* QP1's Q_Key */
#define W_CM_PORT 7391		/* rping's rdma_cm port */

/* Whether QP1 of srnic's device is in @state, as `rdma resource` shows it. */
static int qp1_in(const char *state)
{
	return !sh("rdma resource show qp link " W_DEV "/1 lqpn 1 | grep -q 'state %s '", state);
}

/*
 * An rdma_cm connection on srnic's device, both ends on its address (the
 * core puts them on the one device: REQ, REP and RTU through QP1), data
 * checked: rping's exit status.
 */
static int rping_on_device(int port)
{
	return sh("modprobe rdma_ucm 2>/dev/null; "
		  "timeout 60 rping -s -a " W_ME " -p %d -C 4 >/dev/null 2>&1 & s=$!; "
		  "for i in $(seq 200); do rdma resource show cm_id 2>/dev/null | "
		  "grep -q 'state LISTEN .*src-addr [^ ]*:%d ' && break; sleep 0.05; done; "
		  "timeout 30 rping -c -a " W_ME " -p %d -C 4 -V >/dev/null 2>&1; c=$?; "
		  "[ $c = 0 ] || kill $s 2>/dev/null; wait $s; exit $c", port, port, port);
}

/*
 * Datagrams from any host to QP1 (Q_Key 0x80010000): one longer than its
 * receive buffers (ib_mad posts 40 + 256 bytes), one that fits but is no
 * MAD (ib_mad drops it), one whose UDP length lies.  QP1 stays in RTS, the
 * long one is counted in resp_local_length_error, and rdma_cm still
 * connects on the device.  The long one once moved QP1 to error: no
 * rdma_cm connection of the device succeeded afterwards.
 */
TEST_F_TIMEOUT(rcw, qp1_survives_datagrams_over_its_buffers, 180)
{
	long long len0 = counter("resp_local_length_error");
	struct dgram d[3];

	d[0] = (struct dgram){ .opcode = 0x64, .pad = -1, .dqpn = 1, .qkey = W_GSI_QKEY,
			       .len = 1000, .fill = 0xee };
	d[1] = d[0], d[1].len = 256;
	d[2] = d[0], d[2].udp_len_delta = 64;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, send_pkt(self->raw, &d[i]));
	EXPECT_EQ(len0 + 1, counter_reaching("resp_local_length_error", len0 + 1));
	EXPECT_TRUE(qp1_in("RTS")) TH_LOG("QP1 left RTS");
	EXPECT_EQ(0, rping_on_device(W_CM_PORT)) TH_LOG("rdma_cm does not connect on the device");
}

/*
 * srnic's RC QP on a tag matching SRQ (list operations complete on @scq),
 * connected to the peer's QPN + 1 beside the fixture's QP.
 */
struct tmq {
	struct ibv_cq *scq;
	struct ibv_srq *srq;
	struct ep q;
	struct ibv_tmh tmh;
	uint8_t timeout;		/* the QP's Local ACK Timeout; 0: 20 */
};

static void tmq_make(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		     struct tmq *t)
{
	static union ibv_gid peer = { .raw = { [10] = 0xff, [11] = 0xff } };
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	inet_pton(AF_INET, W_PEER, peer.raw + 12);
	t->scq = ibv_create_cq(self->e.ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, t->scq);
	t->srq = tm_srq_create(&self->e, t->scq, 4);
	ASSERT_NE(NULL, t->srq) TH_LOG("TM SRQ: %s", strerror(errno));
	o.srq = t->srq;
	o.buf_len = 2 * MiB;
	o.timeout = t->timeout ? t->timeout : 20;
	ASSERT_EQ(0, ep_create(&self->e, &o, &t->q));
	t->q.dgid = &peer;
	ASSERT_EQ(0, ep_connect(&t->q, W_PQPN + 1));
}

static void tmq_destroy(struct tmq *t)
{
	ep_destroy(&t->q);
	if (t->srq)
		ibv_destroy_srq(t->srq);
	if (t->scq)
		ibv_destroy_cq(t->scq);
}

/* Tag @tag for receive @wr_id: @len bytes at @off of the QP's buffer. */
static void tmq_tag(struct __test_metadata *_metadata, struct tmq *t, uint64_t wr_id,
		    uint64_t tag, size_t off, uint32_t len)
{
	struct ibv_sge sg = { (uintptr_t)t->q.buf + off, len, t->q.mr->lkey };
	struct ibv_ops_wr wr = {
		.wr_id = 1000 + wr_id, .opcode = IBV_WR_TAG_ADD, .flags = IBV_OPS_SIGNALED,
		.tm.add = { .recv_wr_id = wr_id, .sg_list = &sg, .num_sge = 1,
			    .tag = tag, .mask = ~0ull },
	}, *bad;
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_post_srq_ops(t->srq, &wr, &bad));
	ASSERT_EQ(1, poll_one(t->scq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_TM_ADD, wc.opcode);
}

/* The peer's SEND packet @op to the TM QP: @len bytes, an eager TMH for @tag first. */
static void tmq_send(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		     struct tmq *t, uint8_t op, uint32_t psn, uint32_t len, uint64_t tag)
{
	struct rcpkt r = rc_send(psn, len, 0x5a);

	t->tmh = (struct ibv_tmh){ .opcode = IBV_TMH_EAGER, .tag = htobe64(tag) };
	r.opcode = op;
	r.ackreq = op == OP_SEND_LAST || op == OP_SEND_ONLY;
	if (op == OP_SEND_FIRST || op == OP_SEND_ONLY) {
		r.head = &t->tmh;
		r.head_len = sizeof(t->tmh);
	}
	ASSERT_EQ(0, rc_send_to(self, &r, t->q.qp->qp_num));
}

/* The next completion of the TM QP: @wr_id's, TM_RECV, with @status. */
static void tmq_done(struct __test_metadata *_metadata, struct tmq *t, uint64_t wr_id,
		     enum ibv_wc_status status, struct ibv_wc *wc)
{
	ASSERT_EQ(1, poll_one(t->q.cq, wc, WC_MS));
	EXPECT_EQ(wr_id, wc->wr_id);
	EXPECT_EQ(status, wc->status) TH_LOG("%s", ibv_wc_status_str(wc->status));
	if (status == IBV_WC_SUCCESS)
		EXPECT_EQ(IBV_WC_TM_RECV, wc->opcode);
}

/*
 * A tag matching QP across the wire, its peer hostile: an eager message
 * matched at its first packet, then cut by a new message; its tag's
 * buffer overrun by its last packet; its first packet repeated.  The tag's
 * receive completes once (in error where the message was), the QP goes to
 * error with an invalid-request NAK, and a repeated packet matches nothing
 * twice.
 */
/*
 * The first packet of an eager message for tag 9, then @op (@len bytes):
 * refused with an invalid-request NAK, the tag's receive completed once
 * with @status, the QP in error and silent.
 */
static void tmq_refused(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			struct tmq *t, uint8_t op, uint32_t len, enum ibv_wc_status status)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	struct ibv_wc wc;

	tmq_send(_metadata, self, t, OP_SEND_FIRST, W_PSN, mtu, 9);
	tmq_send(_metadata, self, t, op, W_PSN + 1, len, 9);
	expect_ack(_metadata, self, SYN_NAK_INV, W_PSN + 1);
	tmq_done(_metadata, t, 1, status, &wc);
	expect_silent_in_err(_metadata, self, &t->q);
	/* In error, on an SRQ, no sentinel: after that wait, no completion either. */
	EXPECT_EQ(0, poll_one(t->q.cq, &wc, 0));
}

TEST_F(rcw, tm_message_cut_by_another)
{
	struct tmq t = {};

	tmq_make(_metadata, self, &t);
	tmq_tag(_metadata, &t, 1, 9, 0, 64 * KiB);
	tmq_refused(_metadata, self, &t, OP_SEND_ONLY, 64, IBV_WC_WR_FLUSH_ERR);
	tmq_destroy(&t);
}

TEST_F(rcw, tm_eager_over_its_tag_buffer)
{
	uint32_t end = mtu_bytes(self->e.port.active_mtu) - sizeof(struct ibv_tmh) + 32;
	struct tmq t = {};

	tmq_make(_metadata, self, &t);
	/* The first packet's payload fits, and half the last's. */
	tmq_tag(_metadata, &t, 1, 9, 0, end);
	memset(t.q.buf + end, 0xee, 4096);
	tmq_refused(_metadata, self, &t, OP_SEND_LAST, 64, IBV_WC_LOC_LEN_ERR);
	/* Nothing written past the tag's buffer. */
	EXPECT_EQ(-1, all_eq(t.q.buf + end, 4096, 0xee));
	tmq_destroy(&t);
}

TEST_F(rcw, tm_first_packet_again_matches_once)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	struct tmq t = {};
	struct ibv_wc wc;

	tmq_make(_metadata, self, &t);
	tmq_tag(_metadata, &t, 1, 9, 0, 64 * KiB);
	tmq_tag(_metadata, &t, 2, 9, 64 * KiB, 64 * KiB);
	tmq_send(_metadata, self, &t, OP_SEND_FIRST, W_PSN, mtu, 9);
	tmq_send(_metadata, self, &t, OP_SEND_FIRST, W_PSN, mtu, 9);
	tmq_send(_metadata, self, &t, OP_SEND_LAST, W_PSN + 1, 100, 9);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 1);
	tmq_done(_metadata, &t, 1, IBV_WC_SUCCESS, &wc);
	EXPECT_EQ(IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID,
		  wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
	EXPECT_EQ(mtu - sizeof(struct ibv_tmh) + 100, wc.byte_len);
	EXPECT_EQ(-1, all_eq(t.q.buf, wc.byte_len, 0x5a));
	/* The second tag is still there for the next message. */
	tmq_send(_metadata, self, &t, OP_SEND_ONLY, W_PSN + 2, 64, 9);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 2);
	tmq_done(_metadata, &t, 2, IBV_WC_SUCCESS, &wc);
	EXPECT_EQ(64 - sizeof(struct ibv_tmh), wc.byte_len);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(t.q.qp));
	tmq_destroy(&t);
}

/* The peer's READ response @op for @psn to the TM QP: @len bytes of @fill, AETH syndrome @syn. */
static void tmq_read_resp(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			  struct tmq *t, uint8_t op, uint32_t psn, uint32_t len, uint8_t fill,
			  uint8_t syn)
{
	struct rcpkt r = { .opcode = op, .psn = psn, .ext_len = op == OP_READ_MIDDLE ? 0 : 4,
			   .len = len, .fill = fill };

	r.ext[0] = syn;
	ASSERT_EQ(0, rc_send_to(self, &r, t->q.qp->qp_num));
}

/* The hostile peer's rendezvous: tag 9, @len bytes at its 0x20000 under rkey 0x4321. */
static void tmq_rndv_send(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			  struct tmq *t, uint32_t len)
{
	struct {
		struct ibv_tmh h;
		struct ibv_rvh v;
	} hv = { .h = { .opcode = IBV_TMH_RNDV, .tag = htobe64(9) },
		 .v = { .va = htobe64(0x20000), .rkey = htonl(0x4321), .len = htonl(len) } };
	struct rcpkt r = rc_send(W_PSN, sizeof(hv), 0);

	r.head = &hv;
	r.head_len = sizeof(hv);
	ASSERT_EQ(0, rc_send_to(self, &r, t->q.qp->qp_num));
}

/* Whether @a is the READ REQUEST of tmq_rndv_send()'s range. */
static int tmq_rndv_read(const struct answer *a, uint32_t len)
{
	return a->op == OP_READ_REQ && be64toh(*(uint64_t *)a->payload) == 0x20000 &&
	       ntohl(*(uint32_t *)(a->payload + 8)) == 0x4321 &&
	       ntohl(*(uint32_t *)(a->payload + 12)) == len;
}

/*
 * A rendezvous from the hostile peer (tmq_rndv_send): acknowledged,
 * matched, and read by srnic's TM QP, whose READ REQUEST names the RVH's
 * range.
 */
static void tmq_rndv(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		     struct tmq *t, uint32_t len)
{
	int acked = 0, read = 0;
	struct answer a;
	struct ibv_wc wc;

	tmq_rndv_send(_metadata, self, t, len);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("answer %d", i);
		EXPECT_EQ(W_PSN, a.psn);
		if (a.op == OP_ACK) {
			acked++;
		} else {
			ASSERT_TRUE(tmq_rndv_read(&a, len)) TH_LOG("op 0x%x", a.op);
			read++;
		}
	}
	EXPECT_EQ(1, acked);
	EXPECT_EQ(1, read);
	ASSERT_EQ(1, poll_one(t->q.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_TM_MATCH, wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
}

/*
 * The READ of a rendezvous from the hostile peer takes only responses of
 * its own PSNs and shape, into the tag's buffer and within the RVH's
 * length: one longer than the path MTU, one for another PSN, one whose
 * AETH is a NAK, a LAST with more than is left, and any after the
 * rendezvous is done place nothing (the malformed ones, for its PSNs,
 * counted as dropped).  The right ones complete it (every
 * byte in place, none past it); then the FIN goes to the peer.
 */
TEST_F(rcw, tm_rndv_forged_read_responses)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = mtu + 100;
	long long dropped = dev_counter_now(W_DEV, "rx_dropped");
	struct tmq t = {};
	struct answer a;
	struct ibv_wc wc;

	tmq_make(_metadata, self, &t);
	tmq_tag(_metadata, &t, 1, 9, 0, 64 * KiB);
	memset(t.q.buf, 0xee, 64 * KiB + 4096);
	tmq_rndv(_metadata, self, &t, len);
	tmq_read_resp(_metadata, self, &t, OP_READ_ONLY, W_PSN, len, 0x11, SYN_ACK | 0x1f);
	tmq_read_resp(_metadata, self, &t, OP_READ_FIRST, W_PSN + 1, mtu, 0x11, SYN_ACK | 0x1f);
	tmq_read_resp(_metadata, self, &t, OP_READ_FIRST, W_PSN, mtu, 0x11, SYN_NAK_ACCESS);
	tmq_read_resp(_metadata, self, &t, OP_READ_FIRST, W_PSN, mtu, 0x5a, SYN_ACK | 0x1f);
	tmq_read_resp(_metadata, self, &t, OP_READ_LAST, W_PSN + 1, 200, 0x11, SYN_ACK | 0x1f);
	/* The QP took the rendezvous at W_PSN: the sentinel repeats that PSN. */
	expect_quiet_to(_metadata, self, t.q.qp->qp_num, W_PSN + 1, t.q.cq);
	EXPECT_EQ(-1, all_eq(t.q.buf + mtu, 64 * KiB, 0xee));
	EXPECT_EQ(dropped + 3, dev_counter_now(W_DEV, "rx_dropped"));
	tmq_read_resp(_metadata, self, &t, OP_READ_LAST, W_PSN + 1, 100, 0x5a, SYN_ACK | 0x1f);
	ASSERT_EQ(1, poll_one(t.q.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_TM_DATA_VALID, wc.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(-1, all_eq(t.q.buf, len, 0x5a));
	EXPECT_EQ(-1, all_eq(t.q.buf + len, 64 * KiB, 0xee));
	/* The FIN, a SEND with the next PSN. */
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_SEND_ONLY, a.op);
	EXPECT_EQ(W_PSN + 2, a.psn);
	/* The same responses again, and one for the FIN's PSN: nothing moves. */
	tmq_read_resp(_metadata, self, &t, OP_READ_LAST, W_PSN + 1, 100, 0x11, SYN_ACK | 0x1f);
	tmq_read_resp(_metadata, self, &t, OP_READ_ONLY, W_PSN + 2, 64, 0x11, SYN_ACK | 0x1f);
	expect_quiet_to(_metadata, self, t.q.qp->qp_num, W_PSN + 1, t.q.cq);
	EXPECT_EQ(-1, all_eq(t.q.buf, len, 0x5a));
	EXPECT_EQ(-1, all_eq(t.q.buf + len, 64 * KiB, 0xee));
	EXPECT_EQ(dropped + 3, dev_counter_now(W_DEV, "rx_dropped"));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(t.q.qp));
	tmq_destroy(&t);
}

/* The bytes of srnic's buffer that READs fetch: each from its offset. */
static uint8_t rd_byte(size_t off)
{
	return (uint8_t)(off * 7 + (off >> 10));
}

/* What a reader of READ responses saw: PSNs in order, bytes right, times. */
struct rd_seen {
	int s;
	uint32_t psn, npsn, mtu;
	size_t off;			/* of the first byte asked for */
	uint32_t got, bad;
	uint64_t first_us, last_us;
	int ack_after;			/* the SEND's ACK came after the last response */
	uint32_t ack_psn;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

static void *rd_reader(void *arg)
{
	struct rd_seen *r = arg;
	static struct answer a;

	while (!next_answer(r->s, &a, WC_MS)) {
		if (a.op == OP_ACK) {
			r->ack_after = r->got == r->npsn && a.psn == r->ack_psn;
			break;
		}
		if (a.op < OP_READ_FIRST || a.op > OP_READ_ONLY ||
		    a.psn != ((r->psn + r->got) & 0xffffff) || a.plen > r->mtu) {
			r->bad++;
			continue;
		}
		for (uint32_t j = 0; j < a.plen; j++)
			if (a.payload[j] != rd_byte(r->off + (size_t)r->got * r->mtu + j)) {
				r->bad++;
				break;
			}
		r->last_us = now_us();
		if (!r->got++)
			r->first_us = r->last_us;
		if (r->got == r->npsn && !r->ack_psn)
			break;
	}
	return NULL;
}

/*
 * A READ of 8 MiB from the peer: its responses go out in parts, the
 * device's other QPs served between them (a loopback pair's WRITEs
 * complete while they go out), every byte right and in PSN order; a SEND
 * that came after it waits for it, and is then delivered and acknowledged.
 * (The pair shares the READ's engine thread when the device has one, as
 * it has on two CPUs.)
 */
TEST_F(rcw, long_read_in_parts_others_served)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = 8 * MiB;
	struct rd_seen seen = { .s = self->ans, .psn = W_PSN, .mtu = mtu,
				.npsn = len / mtu, .ack_psn = W_PSN + len / mtu };
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	uint64_t t_end[4096], until = now_ms() + 60000;
	struct ep va, vb;
	struct rcpkt r;
	pthread_t th;
	int n = 0, inside = 0, delivered = 0;

	for (size_t i = 0; i < len; i++)
		self->x.buf[i] = rd_byte(i);
	o.buf_len = 64 * KiB;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &va, &vb));
	ASSERT_EQ(0, pthread_create(&th, NULL, rd_reader, &seen));
	r = rc_reth(OP_READ_REQ, W_PSN, (uintptr_t)self->x.buf, self->x.mr->rkey, len);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	r = rc_send(W_PSN + len / mtu, 32, 0x55);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	/* WRITEs on the loopback pair, one at a time, until the SEND is delivered. */
	for (struct ibv_wc wc; !delivered && now_ms() < until;) {
		ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&va, IBV_WR_RDMA_WRITE, 0, 8,
						  (uintptr_t)vb.buf, vb.mr->rkey, 0));
		if (n < 4096)
			t_end[n++] = now_us();
		if (poll_one(self->x.cq, &wc, 0) == 1) {
			ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
			EXPECT_EQ(32u, wc.byte_len);
			delivered = 1;
		}
	}
	pthread_join(th, NULL);
	EXPECT_TRUE(delivered);
	ep_destroy(&va);
	ep_destroy(&vb);
	for (int i = 0; i < n; i++)
		inside += t_end[i] > seen.first_us && t_end[i] < seen.last_us;
	TH_LOG("%u responses in %llu us, %d of %d loopback WRITEs done meanwhile",
	       seen.got, (unsigned long long)(seen.last_us - seen.first_us), inside, n);
	EXPECT_EQ(seen.npsn, seen.got);
	EXPECT_EQ(0u, seen.bad);
	EXPECT_TRUE(seen.ack_after) TH_LOG("the SEND's ACK did not follow the READ");
	EXPECT_LE(8, inside) TH_LOG("the READ held the engine");
}

/*
 * Duplicate READs: one asking again for the rest of a READ that came is
 * answered from memory; one asking for more than that READ, another key or
 * an offset its PSN does not match is not answered at all.
 */
TEST_F(rcw, duplicate_read_only_within_kept)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = 4 * mtu;
	uint64_t va = (uintptr_t)self->x.buf;
	uint32_t rkey = self->x.mr->rkey;
	struct rd_seen seen = { .s = self->ans, .mtu = mtu };
	struct rcpkt bad[] = {
		rc_reth(OP_READ_REQ, W_PSN, va, rkey, 1 * MiB),
		rc_reth(OP_READ_REQ, W_PSN, va, rkey ^ 0x100, len),
		rc_reth(OP_READ_REQ, W_PSN + 1, va, rkey, len - mtu),
		rc_reth(OP_READ_REQ, W_PSN + 1, va + mtu, rkey, len),
		rc_reth(OP_READ_REQ, W_PSN - 1, va, rkey, mtu),
	};
	struct rcpkt r;

	for (size_t i = 0; i < W_BUF / 4; i++)
		self->x.buf[i] = rd_byte(i);
	r = rc_reth(OP_READ_REQ, W_PSN, va, rkey, len);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	seen.psn = W_PSN, seen.npsn = 4;
	rd_reader(&seen);
	EXPECT_EQ(4u, seen.got);
	EXPECT_EQ(0u, seen.bad);
	/* Again from its second response: three responses, from the second PSN. */
	r = rc_reth(OP_READ_REQ, W_PSN + 1, va + mtu, rkey, len - mtu);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	memset(&seen, 0, sizeof(seen));
	seen = (struct rd_seen){ .s = self->ans, .mtu = mtu, .psn = W_PSN + 1, .npsn = 3,
				 .off = mtu };
	rd_reader(&seen);
	EXPECT_EQ(3u, seen.got);
	EXPECT_EQ(0u, seen.bad);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TH_LOG("duplicate %zu", i);
		ASSERT_EQ(0, rc_send_pkt(self, &bad[i]));
		expect_no_answer(_metadata, self, W_PSN + 4);
	}
	/* The connection goes on. */
	r = rc_send(W_PSN + 4, 16, 0x21);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 16, 0x21);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 4);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * A READ kept at one MTU, asked again after the QP's MTU grew (the netdev's
 * MTU raised, the path set again in SQD): a duplicate from its last PSN on
 * that, at the new MTU, would start beyond the kept READ's end is not
 * answered (the responder reads only what a READ asked for).
 */
TEST_F(rcw, duplicate_read_after_mtu_change)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_SQD };
	struct ibv_qp_init_attr ia;
	uint32_t len = 4 * 256;
	struct rd_seen seen = { .s = self->ans, .mtu = 256, .psn = W_PSN, .npsn = 4 };
	uint64_t va;
	struct rcpkt r;

	/* A path MTU of 1024 on a netdev that carries 256 (600 bytes less RoCEv2's). */
	ep_destroy(&self->x);
	net_spoil();
	ASSERT_EQ(0, sh("ip link set " W_VETH "0 mtu 600"));
	self->e.port.active_mtu = IBV_MTU_1024;
	rc_connect(_metadata, self, 0);
	for (size_t i = 0; i < W_BUF / 4; i++)
		self->x.buf[i] = rd_byte(i);
	va = (uintptr_t)self->x.buf;
	r = rc_reth(OP_READ_REQ, W_PSN, va, self->x.mr->rkey, len);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	rd_reader(&seen);
	ASSERT_EQ(4u, seen.got);
	EXPECT_EQ(0u, seen.bad);

	/* The MTU grows: 1500 on the netdev, the path set again. */
	ASSERT_EQ(0, sh("ip link set " W_VETH "0 mtu 1500"));
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(0, ibv_query_qp(self->x.qp, &qa, IBV_QP_AV, &ia));
	qa.qp_state = IBV_QPS_SQD;
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &qa, IBV_QP_STATE | IBV_QP_AV));
	qa.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &qa, IBV_QP_STATE));
	r = rc_reth(OP_READ_REQ, W_PSN + 3, va + 3 * 1024, self->x.mr->rkey, 64);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_no_answer(_metadata, self, W_PSN + 4);
	/* The connection goes on. */
	r = rc_send(W_PSN + 4, 16, 0x21);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 16, 0x21);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 4);
}

/*
 * A duplicate READ while another READ's responses go out: the requester
 * went back to it (go-back-N), so it is answered at once, in place of the
 * rest of the READ going out, and the requests held behind that READ are
 * dropped: their copies, which the requester sends after the duplicate,
 * are answered once.  (Queued behind the READ, the duplicate's answer came
 * seconds late on the debug kernel, after the requester's timer had asked
 * again and again.)  The netdev's queue is slow (16 packets at 8 Mbit/s,
 * the READ 9 s long), so the READ is still going out when the duplicate
 * comes, whatever the machine's speed.
 */
TEST_F(rcw, duplicate_read_replaces_the_one_going_out)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), n1 = 8 * MiB / mtu, n2 = 4;
	uint32_t tail = n1 - 4, before = 0, again = 0, second = 0, bad = 0;
	uint64_t va = (uintptr_t)self->x.buf;
	uint32_t rkey = self->x.mr->rkey;
	struct rcpkt r1 = rc_reth(OP_READ_REQ, W_PSN, va, rkey, n1 * mtu);
	struct rcpkt r2 = rc_reth(OP_READ_REQ, W_PSN + n1, va + (size_t)n1 * mtu, rkey,
				  n2 * mtu);
	struct rcpkt dup = rc_reth(OP_READ_REQ, W_PSN + tail, va + (size_t)tail * mtu, rkey,
				   (n1 - tail) * mtu);
	struct rcpkt sentinel = rc_send(W_PSN + n1 + n2, 16, 0x21);
	static struct answer a;

	for (size_t i = 0; i < (size_t)(n1 + n2) * mtu; i++)
		self->x.buf[i] = rd_byte(i);
	net_spoil();
	ASSERT_EQ(0, sh("tc qdisc replace dev " W_VETH "0 root netem rate 8mbit limit 16"));
	ASSERT_EQ(0, rc_send_pkt(self, &r1));
	ASSERT_EQ(0, rc_send_pkt(self, &r2));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	ASSERT_EQ(OP_READ_FIRST, a.op);
	before++;
	/* The requester goes back to the READ's last packets, then sends on. */
	ASSERT_EQ(0, rc_send_pkt(self, &dup));
	ASSERT_EQ(0, rc_send_pkt(self, &r2));
	ASSERT_EQ(0, rc_send_pkt(self, &sentinel));
	for (int quiet = 0; quiet < 10;) {
		uint32_t d;

		if (next_answer(self->ans, &a, 1000)) {
			/* Its ACK met the full queue: the SEND again, as a requester would. */
			ASSERT_EQ(0, rc_send_pkt(self, &sentinel));
			quiet++;
			continue;
		}
		if (a.op == OP_ACK)
			break;
		d = (a.psn - W_PSN) & 0xffffff;
		if (a.op < OP_READ_FIRST || a.op > OP_READ_ONLY || a.plen != mtu ||
		    d >= n1 + n2) {
			bad++;
			continue;
		}
		for (uint32_t j = 0; j < a.plen; j++)
			bad += a.payload[j] != rd_byte((size_t)d * mtu + j);
		before += d < tail;
		again += d >= tail && d < n1;
		second += d >= n1;
	}
	sh("tc qdisc del dev " W_VETH "0 root");
	TH_LOG("%u of the READ's %u responses went before the duplicate's", before, n1);
	EXPECT_EQ(OP_ACK, a.op);
	EXPECT_EQ(W_PSN + n1 + n2, a.psn);
	EXPECT_EQ(0u, bad);
	EXPECT_GT(n1 / 2, before) TH_LOG("the READ went on to its end first");
	EXPECT_EQ(n1 - tail, again);
	EXPECT_EQ(n2, second) TH_LOG("the held READ was answered twice");
	expect_recv(_metadata, self, 16, 0x21);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * Responses to the READ at W_PSN that come within quiet_ms() each: how
 * many.  (Its QP, or device, is gone: no sentinel can follow them.)
 */
static uint32_t count_responses(int s)
{
	static struct answer a;
	uint32_t n = 0;

	while (!next_answer(s, &a, quiet_ms()))
		n += a.op >= OP_READ_FIRST && a.op <= OP_READ_ONLY;
	return n;
}

/*
 * The QP answering an 8 MiB READ, requests held behind it, is destroyed
 * once the first response is out: the destroy returns, the responses
 * stop, what was held goes with it (kmemleak and KASAN watch in the debug
 * kernel); then the device itself is removed in the middle of another.
 * The netdev's queue is short and slow (16 packets at 8 Mbit/s, the READ
 * 9 s long): the READ waits for it as it goes, and the destroy and the
 * removal land in the middle whatever the machine's speed (at full speed
 * the READ took 100 ms, and `rdma link del` came after its end once).
 */
TEST_F(rcw, destroy_and_link_del_while_reading)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = 8 * MiB, n;
	struct answer a;
	struct rcpkt r;

	net_spoil();
	ASSERT_EQ(0, sh("tc qdisc replace dev " W_VETH "0 root netem rate 8mbit limit 16"));
	for (int round = 0; round < 2; round++) {
		r = rc_reth(OP_READ_REQ, W_PSN, (uintptr_t)self->x.buf, self->x.mr->rkey, len);
		ASSERT_EQ(0, rc_send_pkt(self, &r));
		for (uint32_t i = 0; i < 64; i++) {
			r = rc_send(W_PSN + len / mtu + i, 16, 0x60);
			ASSERT_EQ(0, rc_send_pkt(self, &r));
		}
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
		ASSERT_EQ(OP_READ_FIRST, a.op);
		if (!round)
			ep_destroy(&self->x);
		else
			ASSERT_EQ(0, sh("rdma link del " W_DEV));
		n = count_responses(self->ans);
		TH_LOG("%s after %u of %u responses", round ? "link deleted" : "QP destroyed",
		       n + 1, len / mtu);
		EXPECT_GT(len / mtu - 1, n);
		if (!round)
			rc_connect(_metadata, self, 0);
	}
	/* The device is gone; its QP is destroyed all the same. */
	ep_destroy(&self->x);
}

/* One signaled RDMA op of srnic's QP against the peer's (made-up) memory. */
static int post_rdma(struct ep *x, enum ibv_wr_opcode op, uint64_t wr_id, size_t off,
		     uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)x->buf + off, len, x->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = 0x10000 + off, .rkey = 0x1234 },
	}, *bad;

	return ibv_post_send(x->qp, &wr, &bad);
}

/* srnic's next @n request packets: their opcodes and PSNs from @psn on, in order. */
static void expect_requests(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			    const uint8_t *ops, uint32_t n, uint32_t psn)
{
	struct answer a;

	for (uint32_t i = 0; i < n; i++) {
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("request %u", i);
		EXPECT_EQ(ops[i], a.op) TH_LOG("request %u", i);
		EXPECT_EQ(psn + i, a.psn) TH_LOG("request %u", i);
	}
}

/* The peer's ACKNOWLEDGE for @psn with @syn, or a READ RESPONSE ONLY of @len bytes. */
static void peer_answer(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			uint8_t op, uint8_t syn, uint32_t psn, uint32_t len)
{
	struct rcpkt r = { .opcode = op, .psn = psn, .ext_len = 4, .len = len, .fill = 0x3c };

	r.ext[0] = syn;
	ASSERT_EQ(0, rc_send_pkt(self, &r));
}

/* The peer's ACKNOWLEDGE for @psn to the TM QP. */
static void peer_tm_ack(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			struct tmq *t, uint32_t psn)
{
	tmq_read_resp(_metadata, self, t, OP_ACK, psn, 0, 0, SYN_ACK | 0x1f);
}

/* The peer's READ RESPONSE @op for @psn: @len bytes of @fill (an AETH but in MIDDLE). */
static void peer_read_resp(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			   uint8_t op, uint32_t psn, uint32_t len, uint8_t fill)
{
	struct rcpkt r = { .opcode = op, .psn = psn, .ext_len = op == OP_READ_MIDDLE ? 0 : 4,
			   .len = len, .fill = fill };

	r.ext[0] = SYN_ACK | 0x1f;
	ASSERT_EQ(0, rc_send_pkt(self, &r));
}

static void peer_read_only(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			   uint32_t psn, uint32_t len, uint8_t fill)
{
	peer_read_resp(_metadata, self, OP_READ_ONLY, psn, len, fill);
}

/* The peer's ATOMIC ACKNOWLEDGE for @psn: the original value @orig. */
static void peer_atomic_ack(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			    uint32_t psn, uint64_t orig)
{
	struct rcpkt r = { .opcode = OP_ATOMIC_ACK, .psn = psn, .ext_len = 12 };
	uint64_t b = htobe64(orig);

	r.ext[0] = SYN_ACK | 0x1f;
	memcpy(r.ext + 4, &b, 8);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
}

/* One signaled atomic of srnic's QP into its buffer at @off (8 bytes). */
static int post_atomic(struct ep *x, enum ibv_wr_opcode op, uint64_t wr_id, size_t off,
		       uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge s = { (uintptr_t)x->buf + off, 8, x->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = 0x10000 + off, .compare_add = compare_add,
			       .swap = swap, .rkey = 0x1234 },
	}, *bad;

	return ibv_post_send(x->qp, &wr, &bad);
}

/* The next @n send completions: successful, wr_id @first on, in order. */
static void expect_done(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			uint64_t first, int n)
{
	struct ibv_wc wc;

	for (int i = 0; i < n; i++) {
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(first + i, wc.wr_id);
	}
}

/*
 * srnic as the requester, the peer answering by hand.  WRITEs go ahead of
 * their ACKs (the window); a sequence NAK in the third has it and the
 * fourth go again from the PSN it names (go-back-N), the first two
 * complete; an ACK of the last completes the rest, in order.  A READ goes
 * ahead of an unacknowledged WRITE, and a WRITE ahead of the READ's
 * response; the READ's response says that the WRITE before it came (it
 * completes, then the READ with its data), and the last WRITE waits for
 * its own ACK.
 */
TEST_F(rcw, requester_window_and_reads_ahead)
{
	const uint8_t wr2[] = { OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_FIRST,
				OP_WRITE_LAST, OP_WRITE_FIRST, OP_WRITE_LAST,
				OP_WRITE_FIRST, OP_WRITE_LAST };
	const uint8_t mixed[] = { OP_WRITE_FIRST, OP_WRITE_LAST, OP_READ_REQ,
				  OP_WRITE_FIRST, OP_WRITE_LAST };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	struct ibv_wc wc;

	/* Long timers: only the peer's answers move srnic here. */
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, i, i * 2 * mtu, 2 * mtu));
	expect_requests(_metadata, self, wr2, 8, psn);
	/* The peer sent srnic no request: the sentinel goes just behind W_PSN. */
	expect_no_answer(_metadata, self, W_PSN);
	peer_answer(_metadata, self, OP_ACK, SYN_NAK_SEQ, psn + 4, 0);
	expect_done(_metadata, self, 0, 2);
	expect_requests(_metadata, self, wr2 + 4, 4, psn + 4);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 7, 0);
	expect_done(_metadata, self, 2, 2);
	psn += 8;

	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 10, 0, 2 * mtu));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 11, 8 * mtu, mtu));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 12, 0, 2 * mtu));
	expect_requests(_metadata, self, mixed, 5, psn);
	expect_no_answer(_metadata, self, W_PSN);
	peer_read_only(_metadata, self, psn + 2, mtu, 0x3c);
	expect_done(_metadata, self, 10, 2);
	EXPECT_EQ(-1, all_eq(self->x.buf + 8 * mtu, mtu, 0x3c));
	EXPECT_EQ(0, poll_one(self->x.cq, &wc, 0));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 4, 0);
	expect_done(_metadata, self, 12, 1);
}

/*
 * 8-byte WRITEs all go ahead of their ACKs as far as the send queue holds
 * them (64 here): the responder answers a batch of up to 64 packets with
 * one ACK, and a window of fewer pieces (32 once) stopped the requester
 * every round trip, halving the small-message rate between two hosts.
 */
TEST_F(rcw, small_writes_all_ahead)
{
	enum { N = 64 };
	uint8_t ops[N];

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	for (int i = 0; i < N; i++) {
		ops[i] = OP_WRITE_ONLY;
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, i, i * 8, 8)) TH_LOG("WRITE %d", i);
	}
	expect_requests(_metadata, self, ops, N, W_PSN);
	expect_no_answer(_metadata, self, W_PSN);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN + N - 1, 0);
	expect_done(_metadata, self, 0, N);
}

/*
 * The peer's answer @ans to what srnic sent, then its request @bad that
 * moves srnic's QP to error, sent while srnic's engine cannot run: both
 * reach it in one batch.  What the answer acknowledged completes
 * successfully before the error's flush, in order: the peer has it, as a
 * NIC completes a WQE when its ACK arrives.  (Flushed once, though
 * acknowledged.)  Then the NAK for @bad, and the QP in error.
 */
static void answer_then_error(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			      const struct rcpkt *ans, int n)
{
	struct rcpkt bad = rc_reth(OP_WRITE_ONLY, W_PSN, (uintptr_t)self->x.buf, 0, 64);
	int sent = 0, pinned = engine_behind_me(W_DEV, 1), back;
	struct ibv_wc wc;

	bad.len = 64;
	if (!pinned)
		sent = !rc_send_pkt(self, ans) + !rc_send_pkt(self, &bad);
	back = engine_behind_me(W_DEV, 0);
	ASSERT_EQ(0, pinned);
	ASSERT_EQ(0, back);
	ASSERT_EQ(2, sent);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		EXPECT_EQ(i, wc.wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("WQE %d: %s", i,
							    ibv_wc_status_str(wc.status));
	}
	expect_ack(_metadata, self, SYN_NAK_ACCESS, W_PSN);
	EXPECT_TRUE(wait_state(self->x.qp, IBV_QPS_ERR, WC_MS));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
}

/* Three WRITEs, one ACK for the last, and the error in one batch. */
TEST_F(rcw, acked_writes_complete_before_error)
{
	const uint8_t ops[] = { OP_WRITE_ONLY, OP_WRITE_ONLY, OP_WRITE_ONLY };
	struct rcpkt ack = { .opcode = OP_ACK, .psn = W_PSN + 2, .ext_len = 4 };

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, i, i * 64, 64));
	expect_requests(_metadata, self, ops, 3, W_PSN);
	ack.ext[0] = SYN_ACK | 0x1f;
	answer_then_error(_metadata, self, &ack, 3);
}

/* Two WRITEs and a READ, its response (with the READ's data), and the error in one batch. */
TEST_F(rcw, answered_read_completes_before_error)
{
	const uint8_t ops[] = { OP_WRITE_ONLY, OP_WRITE_ONLY, OP_READ_REQ };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	struct rcpkt rsp = { .opcode = OP_READ_ONLY, .psn = W_PSN + 2, .ext_len = 4,
			     .len = mtu, .fill = 0x5a };

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 0, 0, 64));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 1, 64, 64));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 2, 4 * mtu, mtu));
	expect_requests(_metadata, self, ops, 3, W_PSN);
	rsp.ext[0] = SYN_ACK | 0x1f;
	answer_then_error(_metadata, self, &rsp, 3);
	EXPECT_EQ(-1, all_eq(self->x.buf + 4 * mtu, mtu, 0x5a));
}

/*
 * Three SENDs went ahead, then the peer's rendezvous came: nothing more
 * goes ahead, and its READ waits for the SENDs' answers.  The first
 * SEND's timer runs out: go-back-N forgets the two after it, which the
 * peer has, and one ACK for all three answers the copy.  The two go
 * again with their own PSNs before the READ, which takes the PSN after
 * theirs: with one the peer had, it would be a duplicate READ a
 * responder answers nothing to (it asked for none there), sent again
 * until its retries ran out.
 */
TEST_F(rcw, tm_rndv_read_after_sends_gone_again)
{
	const uint8_t ops[] = { OP_SEND_ONLY, OP_SEND_ONLY, OP_SEND_ONLY };
	struct tmq t = { .timeout = 14 };
	int acks = 0, again = 0, sends = 0, match = 0, valid = 0;
	uint32_t read_psn = 0;
	struct answer a;
	struct ibv_wc wc;

	tmq_make(_metadata, self, &t);
	tmq_tag(_metadata, &t, 1, 9, 0, 64 * KiB);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, post_rdma(&t.q, IBV_WR_SEND, 10 + i, MiB + i * 64, 64));
	expect_requests(_metadata, self, ops, 3, W_PSN);
	tmq_rndv_send(_metadata, self, &t, 64);
	/* Copies of the SENDs are answered as a responder that has all three answers them. */
	for (int i = 0; i < 16 && !read_psn; i++) {
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("answer %d", i);
		if (a.op == OP_ACK) {
			EXPECT_EQ(W_PSN, a.psn);
			acks++;
		} else if (a.op == OP_SEND_ONLY) {
			EXPECT_LE(W_PSN, a.psn);
			EXPECT_GE(W_PSN + 2, a.psn);
			again++;
			peer_tm_ack(_metadata, self, &t, W_PSN + 2);
		} else {
			ASSERT_TRUE(tmq_rndv_read(&a, 64)) TH_LOG("op 0x%x", a.op);
			read_psn = a.psn;
		}
	}
	EXPECT_EQ(1, acks);
	EXPECT_LE(1, again);
	EXPECT_EQ(W_PSN + 3, read_psn);
	tmq_read_resp(_metadata, self, &t, OP_READ_ONLY, read_psn, 64, 0x5a, SYN_ACK | 0x1f);
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_SEND_ONLY, a.op);
	EXPECT_EQ(read_psn + 1, a.psn);
	/* Each SEND once and successful, in order; the tag's match, then its data. */
	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(1, poll_one(t.q.cq, &wc, WC_MS)) TH_LOG("completion %d", i);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("wr_id %llu: %s",
			(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_SEND) {
			EXPECT_EQ(10 + sends, wc.wr_id);
			sends++;
		} else {
			EXPECT_EQ(1, wc.wr_id);
			match += !!(wc.wc_flags & IBV_WC_TM_MATCH);
			valid += !!(wc.wc_flags & IBV_WC_TM_DATA_VALID);
		}
	}
	EXPECT_EQ(3, sends);
	EXPECT_EQ(1, match);
	EXPECT_EQ(1, valid);
	EXPECT_EQ(-1, all_eq(t.q.buf, 64, 0x5a));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(t.q.qp));
	tmq_destroy(&t);
}

/*
 * Field @field (" name ") of the line of W_DEV's debugfs engine file that
 * begins with @line ("thread 0 ", "qp 17 "), or -1.
 */
static long long engine_field(const char *line, const char *field)
{
	char *all = slurp("/sys/kernel/debug/srnic/" W_DEV "/engine"), key[48], *p;
	long long v = -1;

	snprintf(key, sizeof(key), "\n%s", line);
	p = all ? strstr(all, key) : NULL;
	if (p) {
		p[strcspn(p + 1, "\n") + 1] = 0;
		p = strstr(p, field);
		if (p)
			v = strtoll(p + strlen(field), NULL, 0);
	}
	free(all);
	return v;
}

/* The "wire_ahead" of the engine thread @t of W_DEV, or -1. */
static long long thread_wire_ahead(unsigned int t)
{
	char line[32];

	snprintf(line, sizeof(line), "thread %u ", t);
	return engine_field(line, " wire_ahead ");
}

/* How often W_DEV's engine has run QP @qpn (its "visits"), or -1. */
static long long qp_visits(uint32_t qpn)
{
	char line[32];

	snprintf(line, sizeof(line), "qp %u ", qpn);
	return engine_field(line, " visits ");
}

/*
 * QPs of one engine thread, each with 2 MiB of WRITEs posted and the peer
 * answering nothing, send each its head piece and together one window
 * ahead of them (SRNIC_WIRE_WINDOW_BYTES, 1 MiB), not a window each: eight
 * QPs with a window each overflowed the receiver's queue, and every piece
 * went twice.  QPs in error hold none of it.
 */
TEST_F(rcw, qps_of_a_thread_share_one_window)
{
	enum { NQP = 4, MSGS = 32, LEN = 64 << 10 };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), per_piece = LEN / mtu;
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	char *all = slurp("/sys/kernel/debug/srnic/" W_DEV "/engine");
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	static union ibv_gid peer = { .raw = { [10] = 0xff, [11] = 0xff } };
	uint32_t packets = 0, nthreads, limit;
	struct ep q[NQP] = {};
	bool acked = false;
	uint64_t end;
	struct answer a;
	char *t;

	ASSERT_NE(NULL, all);
	t = strstr(all, " threads ");
	ASSERT_NE(NULL, t);
	nthreads = strtoul(t + strlen(" threads "), NULL, 0);
	free(all);
	if (nthreads != 1)
		SKIP(return, "the device has %u engine threads; the test wants its QPs on one", nthreads);
	inet_pton(AF_INET, W_PEER, peer.raw + 12);
	o.buf_len = (size_t)MSGS * LEN;
	o.send_wr = MSGS;
	/* 4 s (scaled): nothing goes twice meanwhile. */
	o.timeout = scaled_qp_timeout(20);
	for (int i = 0; i < NQP; i++) {
		ASSERT_EQ(0, ep_create(&self->e, &o, &q[i]));
		q[i].dgid = &peer;
		ASSERT_EQ(0, ep_connect(&q[i], W_PQPN + 1 + i));
	}
	for (int k = 0; k < MSGS; k++)
		for (int i = 0; i < NQP; i++)
			ASSERT_EQ(0, post_rdma(&q[i], IBV_WR_RDMA_WRITE, k, (size_t)k * LEN, LEN));
	/* Until the thread's window is full (or never is), then what is on its way. */
	end = now_ms() + WC_MS;
	do {
		while (!next_answer(self->ans, &a, 50))
			packets += a.op >= OP_WRITE_FIRST && a.op <= OP_WRITE_ONLY + 1;
	} while (thread_wire_ahead(0) < (1 << 20) && now_ms() < end);
	/*
	 * Then up to a sentinel's ACK: the one thread answers it after all it
	 * sent before.
	 */
	ASSERT_EQ(0, send_sentinel(self, q[0].qp->qp_num, W_PSN));
	while (!acked && !next_answer(self->ans, &a, WC_MS)) {
		acked = is_sentinel_ack(&a, W_PSN);
		packets += a.op >= OP_WRITE_FIRST && a.op <= OP_WRITE_ONLY + 1;
	}
	ASSERT_TRUE(acked) TH_LOG("no ACK for the sentinel");
	/* The heads, the window, and a piece that began just under its end. */
	limit = NQP * per_piece + (1u << 20) / mtu + per_piece;
	EXPECT_LE(packets, limit) TH_LOG("%u packets; a window each would be %u",
					 packets, NQP * (per_piece + (1u << 20) / mtu));
	EXPECT_GE(packets, NQP * per_piece + (1u << 20) / mtu)
		TH_LOG("%u packets: not even the window went", packets);
	EXPECT_LT(0, thread_wire_ahead(0));
	for (int i = 0; i < NQP; i++)
		ASSERT_EQ(0, ibv_modify_qp(q[i].qp, &err, IBV_QP_STATE));
	EXPECT_EQ(0, thread_wire_ahead(0));
	for (int i = 0; i < NQP; i++)
		ep_destroy(&q[i]);
}

/*
 * max_rd_atomic bounds the READs in flight: with 2, two READ REQUESTs go,
 * the third waits for a response and the WRITE behind it too; each
 * response lets one more go.  The data land in each READ's own buffer,
 * the completions in order.
 */
TEST_F(rcw, reads_in_flight_up_to_max_rd_atomic)
{
	const uint8_t rd2[] = { OP_READ_REQ, OP_READ_REQ },
		      rdwr[] = { OP_READ_REQ, OP_WRITE_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;

	ep_destroy(&self->x);
	rc_connect_rd(_metadata, self, 20, 2);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, i, (i + 1) * mtu, mtu));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 3, 0, 64));
	expect_requests(_metadata, self, rd2, 2, psn);
	expect_no_answer(_metadata, self, W_PSN);
	peer_read_only(_metadata, self, psn, mtu, 0x41);
	expect_done(_metadata, self, 0, 1);
	expect_requests(_metadata, self, rdwr, 2, psn + 2);
	peer_read_only(_metadata, self, psn + 1, mtu, 0x42);
	peer_read_only(_metadata, self, psn + 2, mtu, 0x43);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 3, 0);
	expect_done(_metadata, self, 1, 3);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(-1, all_eq(self->x.buf + (i + 1) * mtu, mtu, 0x41 + i))
			TH_LOG("READ %d", i);
	}
}

/*
 * Atomics and READs in flight together (the device's max_rd_atomic): all
 * four requests go before any answer; each atomic's original value lands
 * in its own 8 bytes, the READ's data in its buffer.
 */
TEST_F(rcw, atomics_and_reads_in_flight)
{
	const uint8_t ops[] = { OP_FETCH_ADD, OP_READ_REQ, OP_CMP_SWAP, OP_WRITE_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	uint64_t v;

	ASSERT_TRUE(has_atomics(&self->e)) TH_LOG("srnic reports atomic_cap NONE");
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	memset(self->x.buf, 0xee, 4 * mtu);
	ASSERT_EQ(0, post_atomic(&self->x, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 1, 0));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, mtu, mtu));
	ASSERT_EQ(0, post_atomic(&self->x, IBV_WR_ATOMIC_CMP_AND_SWP, 2, 8, 7, 9));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 3, 2 * mtu, 64));
	expect_requests(_metadata, self, ops, 4, psn);
	expect_no_answer(_metadata, self, W_PSN);
	peer_atomic_ack(_metadata, self, psn, 0x1111222233334444ull);
	peer_read_only(_metadata, self, psn + 1, mtu, 0x51);
	peer_atomic_ack(_metadata, self, psn + 2, 7);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 3, 0);
	expect_done(_metadata, self, 0, 4);
	memcpy(&v, self->x.buf, 8);
	EXPECT_EQ(0x1111222233334444ull, v);
	memcpy(&v, self->x.buf + 8, 8);
	EXPECT_EQ(7, v);
	EXPECT_EQ(-1, all_eq(self->x.buf + mtu, mtu, 0x51));
}

/*
 * Responses that do not fit the piece ahead they name are dropped: a READ
 * response for a WRITE's PSN, one longer than its READ (half an MTU), an atomic
 * acknowledge for a READ.  Nothing completes on them and nothing of
 * theirs lands; the READ's own response then completes the WRITE before
 * it and the READ, with its data.
 */
TEST_F(rcw, wrong_responses_ahead_dropped)
{
	const uint8_t ops[] = { OP_WRITE_ONLY, OP_READ_REQ };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 0, 0, 64));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 2 * mtu, mtu / 2));
	expect_requests(_metadata, self, ops, 2, psn);
	peer_read_only(_metadata, self, psn, mtu, 0x66);
	peer_read_only(_metadata, self, psn + 1, mtu, 0x67);
	peer_atomic_ack(_metadata, self, psn + 1, 5);
	expect_no_answer(_metadata, self, W_PSN);
	peer_read_only(_metadata, self, psn + 1, mtu / 2, 0x3c);
	expect_done(_metadata, self, 0, 2);
	EXPECT_EQ(-1, all_eq(self->x.buf + 2 * mtu, mtu / 2, 0x3c));
}

/*
 * srnic's QP connected anew (a Local ACK Timeout of 4 s: the READ does not
 * go again meanwhile), @len bytes of its buffer filled with 0xee and a
 * READ (wr_id 1) into them posted, its request seen.
 */
static void rc_read_posted(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			   uint32_t len)
{
	const uint8_t ops[] = { OP_READ_REQ };

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	memset(self->x.buf, 0xee, len);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 0, len));
	expect_requests(_metadata, self, ops, 1, W_PSN);
}

/*
 * READ responses of the wrong shape: a FIRST shorter than the path MTU and
 * an empty MIDDLE (each response packet is one PSN of the READ's, so
 * taking them would move the PSN expected past the READ's own) are
 * dropped; the right ones then complete the READ with their data.
 */
TEST_F(rcw, short_read_responses_dropped)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;

	rc_read_posted(_metadata, self, 2 * mtu);
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu / 2, 0x11);
	peer_read_resp(_metadata, self, OP_READ_MIDDLE, psn + 1, 0, 0x11);
	expect_no_answer(_metadata, self, W_PSN);
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu, 0x5a);
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 1, mtu, 0x5a);
	expect_done(_metadata, self, 1, 1);
	EXPECT_EQ(-1, all_eq(self->x.buf, 2 * mtu, 0x5a));
}

/*
 * A READ response longer than the path MTU (a READ of one MTU and a bit
 * answered by one ONLY packet, or by a LAST that brings the rest at once)
 * is malformed: each response packet is one PSN of the READ's, of at most
 * the path MTU.  Dropped, nothing placed; the right ones then complete it.
 */
TEST_F(rcw, read_responses_over_the_mtu_dropped)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN, len = 2 * mtu + 100;
	long long dropped = dev_counter_now(W_DEV, "rx_dropped");

	rc_read_posted(_metadata, self, len);
	peer_read_resp(_metadata, self, OP_READ_ONLY, psn, mtu + 100, 0x11);
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu, 0x5a);
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 1, mtu + 100, 0x11);
	expect_no_answer(_metadata, self, W_PSN);
	EXPECT_EQ(-1, all_eq(self->x.buf + mtu, len - mtu, 0xee));
	EXPECT_EQ(dropped + 2, dev_counter_now(W_DEV, "rx_dropped"));
	peer_read_resp(_metadata, self, OP_READ_MIDDLE, psn + 1, mtu, 0x5a);
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 2, 100, 0x5a);
	expect_done(_metadata, self, 1, 1);
	EXPECT_EQ(-1, all_eq(self->x.buf, len, 0x5a));
}

/* The RETH of srnic's READ REQUEST @a: the address and length it asks for. */
static void read_req_reth(const struct answer *a, uint64_t *va, uint32_t *len)
{
	uint64_t v;
	uint32_t l;

	memcpy(&v, a->payload, 8);
	memcpy(&l, a->payload + 12, 4);
	*va = be64toh(v);
	*len = ntohl(l);
}

/*
 * A READ of four MTUs, a WRITE behind it (its PSN the one after the
 * READ's last).  The peer answers the READ's first PSN well, its second
 * with a LAST of 100 bytes: malformed (each response PSN stands for one
 * MTU of the READ's, a LAST is its last PSN's), dropped and counted.  At
 * each timeout the READ asks again from the first PSN whose response has
 * not come, for the rest from that PSN's offset (MTU times its place in
 * the READ); the peer answers each such copy with a short LAST again.
 * No request goes at a PSN in the READ's range but a READ REQUEST of the
 * READ's, and at the WRITE's PSN only the WRITE: a READ REQUEST there (the
 * old requester's, whose next PSN a short LAST moved past the READ's last)
 * would have an honest responder execute the READ there and take the real
 * WRITE for a duplicate.  Answered properly at last, the READ completes
 * with its data, then the WRITE.
 */
TEST_F(rcw, read_retry_keeps_to_its_psns)
{
	const uint8_t ops[] = { OP_READ_REQ, OP_WRITE_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN, n = 4, len, d;
	long long dropped;
	struct answer a;
	uint64_t va;
	int round = 0, timer = 0;

	memset(self->x.buf, 0xee, n * mtu);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 0, n * mtu));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 2, 8 * mtu, 64));
	/* The READ takes n PSNs, the WRITE the next. */
	expect_requests(_metadata, self, ops, 1, psn);
	expect_requests(_metadata, self, ops + 1, 1, psn + n);
	dropped = dev_counter_now(W_DEV, "rx_dropped");
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu, 0x5a);
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 1, 100, 0x11);
	while (round < 4) {
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("round %d", round);
		d = (a.psn - psn) & 0xffffff;
		/* The WRITE goes again after each retry (go-back-N), as itself. */
		if (d == n) {
			ASSERT_EQ(OP_WRITE_ONLY, a.op)
				TH_LOG("round %d: opcode %#x at the WRITE's PSN", round, a.op);
			continue;
		}
		ASSERT_GT(n, d) TH_LOG("round %d: opcode %#x at PSN %#x", round, a.op, a.psn);
		ASSERT_EQ(OP_READ_REQ, a.op) TH_LOG("round %d: PSN %#x", round, a.psn);
		/*
		 * The whole READ again: its timer ran out before the first
		 * response came (a slow kernel); the responses then answer that.
		 */
		if (d == 0 && !round && !timer++)
			continue;
		read_req_reth(&a, &va, &len);
		EXPECT_EQ(1u, d) TH_LOG("round %d: the READ again from PSN %#x", round, a.psn);
		EXPECT_EQ(0x10000 + (uint64_t)d * mtu, va) TH_LOG("round %d: at %#x", round, a.psn);
		EXPECT_EQ((n - d) * mtu, len) TH_LOG("round %d: PSN %#x", round, a.psn);
		if (++round < 4) {
			peer_read_resp(_metadata, self, OP_READ_LAST, a.psn, 100, 0x11);
			continue;
		}
		for (uint32_t i = d; i < n; i++)
			peer_read_resp(_metadata, self,
				       i == d ? (i == n - 1 ? OP_READ_ONLY : OP_READ_FIRST) :
				       i == n - 1 ? OP_READ_LAST : OP_READ_MIDDLE,
				       psn + i, mtu, 0x5a);
	}
	expect_done(_metadata, self, 1, 1);
	EXPECT_EQ(-1, all_eq(self->x.buf, n * mtu, 0x5a));
	/* The four short LASTs; a response that crossed the timer's copy may be one more. */
	EXPECT_LE(dropped + 4, dev_counter_now(W_DEV, "rx_dropped"));
	EXPECT_GE(dropped + 4 + timer, dev_counter_now(W_DEV, "rx_dropped"));
	/* The WRITE, now or at its timer, at its own PSN: acknowledged, it completes. */
	do {
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("no WRITE");
		ASSERT_NE(OP_READ_REQ, a.op) TH_LOG("a READ REQUEST at PSN %#x", a.psn);
	} while (a.op != OP_WRITE_ONLY || a.psn != psn + n);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + n, 0);
	expect_done(_metadata, self, 2, 1);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}


/* ---- READ responses placed as they come ---- */

/* One signaled READ of srnic's QP into @len bytes at @dst, under @lkey. */
static int post_read_to(struct ep *x, uint64_t wr_id, void *dst, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)dst, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 },
	}, *bad;

	return ibv_post_send(x->qp, &wr, &bad);
}

/* Whether the @n bytes at @p become @v within WC_MS (polled). */
static int bytes_become(const volatile uint8_t *p, size_t n, uint8_t v)
{
	struct timespec ts = { 0, 1000 * 1000 };

	for (int waited = 0; waited <= WC_MS; waited++) {
		size_t i = 0;

		while (i < n && p[i] == v)
			i++;
		if (i == n)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/*
 * READ data land in the WQE's buffer as their packets come, not when the
 * READ completes: each response's bytes are there while the next is still
 * to come, and nothing after them is written.  None is staged.
 */
TEST_F(rcw, read_data_placed_as_it_arrives)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	long long staged = counter("rx_read_staged_packets");
	struct ibv_wc wc;

	rc_read_posted(_metadata, self, 3 * mtu);
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu, 0x11);
	ASSERT_TRUE(bytes_become(self->x.buf, mtu, 0x11));
	peer_read_resp(_metadata, self, OP_READ_MIDDLE, psn + 1, mtu, 0x22);
	ASSERT_TRUE(bytes_become(self->x.buf + mtu, mtu, 0x22));
	EXPECT_EQ(0, poll_one(self->x.cq, &wc, 0));
	EXPECT_EQ(-1, all_eq(self->x.buf + 2 * mtu, mtu, 0xee));
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 2, mtu, 0x33);
	expect_done(_metadata, self, 1, 1);
	EXPECT_EQ(-1, all_eq(self->x.buf, mtu, 0x11));
	EXPECT_EQ(-1, all_eq(self->x.buf + 2 * mtu, mtu, 0x33));
	EXPECT_EQ(staged, counter("rx_read_staged_packets"));
}

/*
 * The READ's MR deregistered while its responses come: what came before
 * is in place; what comes after does not land in the memory the MR
 * covered (it is staged, and counted), and the READ completes with a
 * local protection error, its buffer no longer the device's to write.
 */
TEST_F(rcw, read_into_deregistered_mr_not_placed)
{
	const uint8_t ops[] = { OP_READ_REQ };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	long long staged = counter("rx_read_staged_packets");
	uint8_t *buf = aligned_alloc(4096, 2 * mtu);
	struct ibv_mr *mr;
	struct ibv_wc wc;

	ASSERT_NE(NULL, buf);
	memset(buf, 0xee, 2 * mtu);
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	mr = ibv_reg_mr(self->e.pd, buf, 2 * mtu, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	ASSERT_EQ(0, post_read_to(&self->x, 1, buf, 2 * mtu, mr->lkey));
	expect_requests(_metadata, self, ops, 1, psn);
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu, 0x11);
	ASSERT_TRUE(bytes_become(buf, mtu, 0x11));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 1, mtu, 0x22);
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status) TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(staged + 1, counter_reaching("rx_read_staged_packets", staged + 1));
	EXPECT_EQ(-1, all_eq(buf + mtu, mtu, 0xee));
	free(buf);
}

/*
 * A READ into an ODP MR whose second page is taken away (MADV_DONTNEED)
 * between its responses: that packet cannot be placed where no page
 * fault may be taken, so it is staged (and counted); at the answer the
 * requester faults the page in and copies it there.  Every byte right.
 */
TEST_F(rcw, read_into_odp_page_taken_away)
{
	const uint8_t ops[] = { OP_READ_REQ };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	long long staged = counter("rx_read_staged_packets");
	uint8_t *buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *dst;
	struct ibv_mr *mr;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_GE(4096, mtu);
	memset(buf, 0xee, 8192);
	dst = buf + 4096 - mtu;
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	mr = ibv_reg_mr(self->e.pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	ASSERT_NE(NULL, mr) TH_LOG("srnic's ODP MR: %s", strerror(errno));
	ASSERT_EQ(0, post_read_to(&self->x, 1, dst, 2 * mtu, mr->lkey));
	expect_requests(_metadata, self, ops, 1, psn);
	peer_read_resp(_metadata, self, OP_READ_FIRST, psn, mtu, 0x11);
	ASSERT_TRUE(bytes_become(dst, mtu, 0x11));
	ASSERT_EQ(0, madvise(buf + 4096, 4096, MADV_DONTNEED));
	peer_read_resp(_metadata, self, OP_READ_LAST, psn + 1, mtu, 0x22);
	expect_done(_metadata, self, 1, 1);
	EXPECT_EQ(staged + 1, counter_reaching("rx_read_staged_packets", staged + 1));
	EXPECT_EQ(-1, all_eq(dst, mtu, 0x11));
	EXPECT_EQ(-1, all_eq(dst + mtu, mtu, 0x22));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, 8192);
}

/*
 * A READ on the wire when its QP goes to error is flushed, its buffer the
 * application's again.  The QP reset and brought to RTR anew (the ring
 * still holding the old WQE), a late response to that READ, with its PSN,
 * is not placed there.  The peer's SEND behind it is the sentinel: once it
 * is received, the response before it was handled.
 */
TEST_F(rcw, stale_read_response_after_reset_not_placed)
{
	const uint8_t ops[] = { OP_READ_REQ };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	size_t off = 64 * 4096;
	struct rcpkt r = rc_send(W_PSN, 64, 0x5e);
	int flushed = 0;
	struct ibv_wc wc;

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	memset(self->x.buf + off, 0xee, mtu);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1000, off, mtu));
	expect_requests(_metadata, self, ops, 1, psn);
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &a, IBV_QP_STATE));
	/* The READ's flush, and the 32 receives'. */
	for (int i = 0; i < 33 && poll_one(self->x.cq, &wc, WC_MS) == 1; i++)
		flushed += wc.wr_id == 1000 && wc.status == IBV_WC_WR_FLUSH_ERR;
	ASSERT_EQ(1, flushed);
	a.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, ep_to_init(&self->x));
	ASSERT_EQ(0, ep_to_rtr(&self->x, W_PQPN));
	ASSERT_EQ(0, post_recv(&self->x, 0, 0, 4096));
	peer_read_only(_metadata, self, psn, mtu, 0x11);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	expect_recv(_metadata, self, 64, 0x5e);
	EXPECT_EQ(-1, all_eq(self->x.buf + off, mtu, 0xee));
}

/* The destination QPN of srnic's packet @a. */
static uint32_t answer_dqpn(const struct answer *a)
{
	return (uint32_t)a->b[5] << 16 | a->b[6] << 8 | a->b[7];
}

/*
 * srnic's QP answers a 16 MiB READ, SENDs held behind it, and is reset
 * and connected to another peer QP once the first response is out: the
 * READ and what was held are forgotten.  Nothing for the new QPN comes
 * before srnic's own WRITE on the new connection, no READ response after
 * it, and no held SEND completes; nothing at all goes to another QPN
 * (an answer of the responder just reset went to QPN 0).  Rounds, as the
 * reset must land inside a visit of the READ as well as between two (in
 * one round in six, the visit wrote the READ back after the reset had
 * cleared it, and its responses went on to the new QPN).
 */
TEST_F(rcw, reset_while_reading_forgets_the_read)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = W_BUF, leaked = 0, late = 0;
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	static struct answer a;
	struct ibv_wc wc;
	struct rcpkt r;

	/*
	 * The new connection's WRITE waits while the test reads the old one's
	 * READ responses up to it: on the debug kernel, longer than the
	 * default timer's seven retries (0.5 s), which failed the WRITE with
	 * RETRY_EXC_ERR.  About 1 s a try, scaled.
	 */
	self->x.o.timeout = scaled_qp_timeout(18);
	for (int round = 0; round < 64; round++) {
		uint32_t qpn = W_PQPN + 0x100 + round, old = self->x.peer_qpn;

		r = rc_reth(OP_READ_REQ, W_PSN, (uintptr_t)self->x.buf, self->x.mr->rkey, len);
		ASSERT_EQ(0, rc_send_pkt(self, &r));
		for (uint32_t i = 0; i < 8; i++) {
			r = rc_send(W_PSN + len / mtu + i, 16, 0x60);
			ASSERT_EQ(0, rc_send_pkt(self, &r));
		}
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
		ASSERT_EQ(OP_READ_FIRST, a.op);
		ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &reset, IBV_QP_STATE));
		ASSERT_EQ(0, ep_connect(&self->x, qpn));
		for (int k = 0; k < 32; k++)
			ASSERT_EQ(0, post_recv(&self->x, k, (size_t)k * 4096, 4096));
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 7, 0, 8));
		/* Up to the WRITE: the old connection's packets only. */
		for (;;) {
			ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS))
				TH_LOG("round %d: no WRITE on the new connection", round);
			if (answer_dqpn(&a) == qpn && a.op == OP_WRITE_ONLY)
				break;
			if (answer_dqpn(&a) != old) {
				leaked++;
				TH_LOG("round %d: %#x for PSN %#x to QPN %#x before the WRITE",
				       round, a.op, a.psn, answer_dqpn(&a));
			}
		}
		EXPECT_EQ(W_PSN, a.psn);
		peer_answer(_metadata, self, OP_ACK, SYN_ACK, W_PSN, 0);
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		EXPECT_EQ(7u, wc.wr_id) TH_LOG("round %d: a held SEND completed", round);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("round %d: %s", round,
							    ibv_wc_status_str(wc.status));
		/* Then nothing: neither the READ's rest nor a SEND it held. */
		ASSERT_EQ(0, send_sentinel(self, self->x.qp->qp_num, W_PSN));
		for (;;) {
			ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("no sentinel ACK");
			if (is_sentinel_ack(&a, W_PSN))
				break;
			/* The WRITE again: its timer ran out before the ACK came (debug kernel). */
			if (answer_dqpn(&a) == qpn && a.op == OP_WRITE_ONLY && a.psn == W_PSN)
				continue;
			late++;
			TH_LOG("round %d: %#x for PSN %#x to QPN %#x after the WRITE", round,
			       a.op, a.psn, answer_dqpn(&a));
		}
		EXPECT_EQ(0, poll_one(self->x.cq, &wc, 0)) TH_LOG("round %d: a held SEND", round);
		if (leaked || late)
			break;
	}
	EXPECT_EQ(0u, leaked);
	EXPECT_EQ(0u, late);
}

/* ---- FLUSH and ATOMIC WRITE, answered and asked as rxe does ---- */

/* uapi values rdma-core 44 has no names for. */
#define W_ACCESS_FLUSH_GLOBAL 0x100	/* IB_UVERBS_ACCESS_FLUSH_GLOBAL */
#define W_FLUSH_GLOBAL 1		/* placement types */
#define W_FLUSH_PERSISTENT 2
#define W_FLUSH_RANGE 0			/* selectivity levels */
#define W_FLUSH_MR 1

/* A FLUSH from the peer: a FETH (@type, @level), then a RETH for @len bytes at @va. */
static struct rcpkt rc_flush(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len,
			     uint8_t type, uint8_t level)
{
	struct rcpkt r = rc_reth(OP_FLUSH, psn, va, rkey, len);
	uint32_t feth = htonl((uint32_t)level << 4 | type);

	memmove(r.ext + 4, r.ext, 16);
	memcpy(r.ext, &feth, 4);
	r.ext_len = 20;
	return r;
}

/* An ATOMIC WRITE from the peer: a RETH for 8 bytes at @va, then *@v's bytes. */
static struct rcpkt rc_atomic_write(uint32_t psn, uint64_t va, uint32_t rkey,
				    const uint64_t *v)
{
	struct rcpkt r = rc_reth(OP_ATOMIC_WRITE, psn, va, rkey, 8);

	r.len = 8;
	r.head = v;
	r.head_len = 8;
	return r;
}

/* srnic's next answer is an empty READ RESPONSE ONLY acknowledging @psn, MSN @msn. */
static void expect_empty_read(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			      uint32_t psn, uint32_t msn)
{
	struct answer a;

	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("no answer for PSN %#x", psn);
	EXPECT_EQ(OP_READ_ONLY, a.op);
	EXPECT_EQ(psn, a.psn);
	EXPECT_EQ(0, a.syn >> 5) TH_LOG("syndrome %#x", a.syn);
	EXPECT_EQ(msn, a.msn);
	EXPECT_EQ(0, a.plen);
}

/* srnic's QP connected with the FLUSH right for the QP (@qp) and its MR (@mr). */
static void rc_connect_flush(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			     int qp, int mr)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	ep_destroy(&self->x);
	if (qp)
		o.qp_access |= W_ACCESS_FLUSH_GLOBAL;
	if (mr)
		o.mr_access |= W_ACCESS_FLUSH_GLOBAL;
	rc_connect_with(_metadata, self, &o);
}

/*
 * The peer's FLUSH of a range and of the whole region (any address), and
 * its ATOMIC WRITE, are each answered with an empty READ RESPONSE ONLY, as
 * rxe answers them; a duplicate of each gets the same answer again from
 * the responder's resources, and the duplicate ATOMIC WRITE does not
 * write again (the memory rewritten meanwhile keeps its new value).
 */
TEST_F(rcw, flush_and_atomic_write_answered_with_empty_reads)
{
	uint64_t v1 = 0x0102030405060708ull, v2 = 0x1111, got, va;
	uint32_t psn = W_PSN, rkey;
	struct rcpkt f, aw;

	rc_connect_flush(_metadata, self, 1, 1);
	va = (uintptr_t)self->x.buf;
	rkey = self->x.mr->rkey;
	f = rc_flush(psn, va + 65536, rkey, 4096, W_FLUSH_GLOBAL, W_FLUSH_RANGE);
	ASSERT_EQ(0, rc_send_pkt(self, &f));
	expect_empty_read(_metadata, self, psn, 1);
	ASSERT_EQ(0, rc_send_pkt(self, &f));
	expect_empty_read(_metadata, self, psn, 1);

	aw = rc_atomic_write(psn + 1, va + 131072, rkey, &v1);
	ASSERT_EQ(0, rc_send_pkt(self, &aw));
	expect_empty_read(_metadata, self, psn + 1, 2);
	memcpy(&got, self->x.buf + 131072, 8);
	EXPECT_EQ(v1, got);
	memcpy(self->x.buf + 131072, &v2, 8);
	ASSERT_EQ(0, rc_send_pkt(self, &aw));
	expect_empty_read(_metadata, self, psn + 1, 2);
	memcpy(&got, self->x.buf + 131072, 8);
	EXPECT_EQ(v2, got) TH_LOG("a duplicate ATOMIC WRITE wrote again");

	f = rc_flush(psn + 2, 0, rkey, 0, W_FLUSH_GLOBAL, W_FLUSH_MR);
	ASSERT_EQ(0, rc_send_pkt(self, &f));
	expect_empty_read(_metadata, self, psn + 2, 3);
	expect_no_answer(_metadata, self, psn + 3);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * FLUSHes the responder cannot carry out: refused with the NAK the spec
 * gives (remote access for a right or a range that is not there, invalid
 * request for a placement type or level the FETH may not hold), the QP in
 * error afterwards, as after any such NAK.
 */
TEST_F(rcw, flush_refused)
{
	const struct {
		uint8_t type, level;
		int qp, mr, key0;
		uint64_t off;
		uint8_t syn;
		const char *what;
	} t[] = {
		{ W_FLUSH_GLOBAL, W_FLUSH_RANGE, 1, 0, 0, 0, SYN_NAK_ACCESS,
		  "a key without the FLUSH right" },
		{ W_FLUSH_GLOBAL, W_FLUSH_RANGE, 0, 1, 0, 0, SYN_NAK_ACCESS,
		  "a QP without the FLUSH right" },
		{ W_FLUSH_GLOBAL, W_FLUSH_MR, 1, 1, 1, 0, SYN_NAK_ACCESS, "rkey 0" },
		{ W_FLUSH_GLOBAL, W_FLUSH_RANGE, 1, 1, 0, W_BUF - 32, SYN_NAK_ACCESS,
		  "a range past the region" },
		{ W_FLUSH_PERSISTENT, W_FLUSH_RANGE, 1, 1, 0, 0, SYN_NAK_ACCESS,
		  "persistence, which no srnic memory has" },
		{ W_FLUSH_GLOBAL | W_FLUSH_PERSISTENT, W_FLUSH_MR, 1, 1, 0, 0, SYN_NAK_ACCESS,
		  "visibility and persistence" },
		{ 0, W_FLUSH_RANGE, 1, 1, 0, 0, SYN_NAK_INV, "no placement type" },
		{ 4, W_FLUSH_RANGE, 1, 1, 0, 0, SYN_NAK_INV, "a reserved placement type" },
		{ W_FLUSH_GLOBAL, 2, 1, 1, 0, 0, SYN_NAK_INV, "a reserved selectivity level" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct rcpkt f;

		TH_LOG("%s", t[i].what);
		rc_connect_flush(_metadata, self, t[i].qp, t[i].mr);
		f = rc_flush(W_PSN, (uintptr_t)self->x.buf + t[i].off,
			     t[i].key0 ? 0 : self->x.mr->rkey, 64, t[i].type, t[i].level);
		ASSERT_EQ(0, rc_send_pkt(self, &f));
		expect_ack(_metadata, self, t[i].syn, W_PSN);
		expect_silent_in_err(_metadata, self, &self->x);
	}
}

/*
 * A FLUSH from rxe carries rxe's own ICRC (srnic_icrc.c): srnic answers it
 * as any FLUSH.  That form is taken for an RC FLUSH only: a WRITE with an
 * ICRC made that way, and a FLUSH whose rxe-form ICRC is spoiled, are
 * dropped and counted as ICRC errors, and answer nothing.
 */
TEST_F(rcw, flush_with_rxe_icrc_answered)
{
	long long icrc0 = counter("rx_icrc_errors");
	struct rcpkt f, w;

	rc_connect_flush(_metadata, self, 1, 1);
	f = rc_flush(W_PSN, (uintptr_t)self->x.buf, self->x.mr->rkey, 64, W_FLUSH_GLOBAL,
		     W_FLUSH_RANGE);
	f.rxe_icrc = 1;
	f.icrc_flip = 0x100;
	ASSERT_EQ(0, rc_send_pkt(self, &f));
	w = rc_reth(OP_WRITE_ONLY, W_PSN, (uintptr_t)self->x.buf, self->x.mr->rkey, 64);
	w.len = 64;
	w.fill = 0x77;
	w.rxe_icrc = 1;
	ASSERT_EQ(0, rc_send_pkt(self, &w));
	expect_no_answer(_metadata, self, W_PSN);
	EXPECT_EQ(icrc0 + 2, counter_reaching("rx_icrc_errors", icrc0 + 2));
	EXPECT_EQ(-1, all_eq(self->x.buf, 64, 0)) TH_LOG("the WRITE landed");
	f.icrc_flip = 0;
	ASSERT_EQ(0, rc_send_pkt(self, &f));
	expect_empty_read(_metadata, self, W_PSN, 1);
}


/* srnic's QP's max_dest_rd_atomic set to @n (through SQD, before any traffic). */
static void set_max_dest_rd_atomic(struct __test_metadata *_metadata, struct ibv_qp *qp,
				   uint8_t n)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD };
	struct ibv_qp_init_attr ia;

	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.max_dest_rd_atomic = n;
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC));
	a.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_MAX_DEST_RD_ATOMIC, &ia));
	ASSERT_EQ(n, a.max_dest_rd_atomic);
}

/*
 * srnic's answers to the peer's READ at W_PSN of @n0 PSNs and what follows
 * it, up to the first ACKNOWLEDGE or empty READ RESPONSE (returned in @a):
 * READ responses in PSN order from W_PSN, every byte right.  Returns how
 * many came; *@bad counts the wrong ones.
 */
static uint32_t read_answers_until(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
				   uint32_t mtu, struct answer *a, uint32_t *bad)
{
	uint32_t got = 0, d;

	for (;;) {
		if (next_answer(self->ans, a, WC_MS)) {
			TH_LOG("%u responses, then nothing", got);
			a->op = 0xff;
			return got;
		}
		if (a->op == OP_ACK || (a->op == OP_READ_ONLY && !a->plen))
			return got;
		d = (a->psn - W_PSN) & 0xffffff;
		if (a->op < OP_READ_FIRST || a->op > OP_READ_ONLY || a->plen != mtu || d != got) {
			++*bad;
			continue;
		}
		for (uint32_t j = 0; j < a->plen; j++)
			*bad += a->payload[j] != rd_byte((size_t)d * mtu + j);
		got++;
	}
}

/*
 * With max_dest_rd_atomic 4, a READ of 8 MiB and five READs of one MTU
 * behind it, all sent at once: the five wait behind the long READ's
 * responses, unanswered, so when the fourth of them comes its requester
 * has five READs outstanding, one more than srnic's responder resources:
 * the spec's "too many RDMA READ or ATOMIC requests", an invalid request.
 * The long READ and the three within the resources are answered in full,
 * in order, every byte right; then the fourth gets an Invalid Request NAK
 * for its PSN, the QP goes to error and answers nothing more.  (Answered
 * all, by the old responder: a peer that went on so had up to 300 READs
 * outstanding, and its duplicates of the older ones were never answered.)
 */
TEST_F(rcw, reads_beyond_responder_resources_refused)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), n0 = 8 * MiB / mtu, n = 4, k = 2;
	uint32_t rkey = self->x.mr->rkey, got, bad = 0;
	uint64_t va = (uintptr_t)self->x.buf;
	static struct answer a;
	struct rcpkt r;

	set_max_dest_rd_atomic(_metadata, self->x.qp, n);
	for (size_t i = 0; i < (size_t)(n0 + n + k) * mtu; i++)
		self->x.buf[i] = rd_byte(i);
	r = rc_reth(OP_READ_REQ, W_PSN, va, rkey, n0 * mtu);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	for (uint32_t i = n0; i < n0 + n + k - 1; i++) {
		r = rc_reth(OP_READ_REQ, W_PSN + i, va + (size_t)i * mtu, rkey, mtu);
		ASSERT_EQ(0, rc_send_pkt(self, &r));
	}
	got = read_answers_until(_metadata, self, mtu, &a, &bad);
	EXPECT_EQ(n0 + n - 1, got);
	EXPECT_EQ(0u, bad);
	ASSERT_EQ(OP_ACK, a.op);
	EXPECT_EQ(SYN_NAK_INV, a.syn);
	EXPECT_EQ(W_PSN + n0 + n - 1, a.psn);
	expect_silent_in_err(_metadata, self, &self->x);
}

/*
 * With max_dest_rd_atomic 1, a READ of 8 MiB asked for again whole (the
 * requester went back to it) while its responses go out, and the next
 * READ behind that: the replay is of a READ already counted, not another
 * one outstanding, so the next READ is within the one resource and is
 * answered after the replay.  (Counting the replay, a first attempt at
 * the too-many rule NAKed it: the requester had one READ outstanding.)
 */
TEST_F(rcw, read_replay_not_counted_against_resources)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), n0 = 8 * MiB / mtu;
	uint32_t rkey = self->x.mr->rkey, bad = 0;
	uint64_t va = (uintptr_t)self->x.buf;
	static struct answer a;
	struct rcpkt r = rc_reth(OP_READ_REQ, W_PSN, va, rkey, n0 * mtu);
	struct rcpkt next = rc_reth(OP_READ_REQ, W_PSN + n0, va + (size_t)n0 * mtu, rkey, mtu);

	set_max_dest_rd_atomic(_metadata, self->x.qp, 1);
	for (size_t i = 0; i < (size_t)(n0 + 1) * mtu; i++)
		self->x.buf[i] = rd_byte(i);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	ASSERT_EQ(0, rc_send_pkt(self, &next));
	/* The READ's first responses, then again from its start, then the next READ's. */
	for (;;) {
		ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("the next READ unanswered");
		ASSERT_NE(OP_ACK, a.op) TH_LOG("for PSN %#x, syndrome %#x", a.psn, a.syn);
		if (a.psn == ((W_PSN + n0) & 0xffffff))
			break;
		bad += a.op < OP_READ_FIRST || a.op > OP_READ_LAST || a.plen != mtu;
	}
	EXPECT_EQ(OP_READ_ONLY, a.op);
	ASSERT_EQ(mtu, a.plen);
	for (uint32_t j = 0; j < a.plen; j++)
		bad += a.payload[j] != rd_byte((size_t)n0 * mtu + j);
	EXPECT_EQ(0u, bad);
	expect_no_answer(_metadata, self, W_PSN + n0 + 1);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * Two READs of 4 MiB (n0 PSNs each, from W_PSN, of memory filled with
 * rd_byte) and a WRITE of 64 bytes behind them, for the peer to send.
 */
struct two_reads {
	uint32_t mtu, n0;
	struct rcpkt r1, r2, w;
};

static struct two_reads two_reads_make(FIXTURE_DATA(rcw) *self)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), n0 = 4 * MiB / mtu;
	uint32_t rkey = self->x.mr->rkey;
	uint64_t va = (uintptr_t)self->x.buf;
	struct two_reads t = {
		.mtu = mtu, .n0 = n0,
		.r1 = rc_reth(OP_READ_REQ, W_PSN, va, rkey, n0 * mtu),
		.r2 = rc_reth(OP_READ_REQ, W_PSN + n0, va + (size_t)n0 * mtu, rkey, n0 * mtu),
		.w = rc_reth(OP_WRITE_ONLY, W_PSN + 2 * n0, va + (size_t)2 * n0 * mtu, rkey, 64),
	};

	t.w.len = 64;
	t.w.fill = 0x5a;
	for (size_t i = 0; i < (size_t)2 * n0 * mtu; i++)
		self->x.buf[i] = rd_byte(i);
	return t;
}

/*
 * The answers to what @t's READs and WRITE were sent as, once or more:
 * both READs' responses whole, in PSN order, every byte right, then the
 * WRITE's ACK.
 */
static void expect_two_reads(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			     const struct two_reads *t)
{
	static struct answer a;
	uint32_t bad = 0;

	EXPECT_EQ(2 * t->n0, read_answers_until(_metadata, self, t->mtu, &a, &bad));
	EXPECT_EQ(0u, bad);
	ASSERT_EQ(OP_ACK, a.op);
	EXPECT_EQ(0, a.syn >> 5) TH_LOG("syndrome %#x", a.syn);
}

/*
 * Two READs of 4 MiB and a WRITE behind them, sent at once, then again
 * (the requester went back to the first READ): each time both READs are
 * answered whole, in order, then the WRITE is acknowledged.  The second
 * READ's copy waits behind the first's replay.  (The old responder
 * answered it at once, in place of that replay, after the replay's first
 * 256 KiB: its requester, still short of the first READ's rest, would go
 * back to it again, and again be cut.)
 */
TEST_F(rcw, read_replays_in_order)
{
	struct two_reads t = two_reads_make(self);

	for (int round = 0; round < 2; round++) {
		TH_LOG("%s", round ? "asked again" : "asked");
		ASSERT_EQ(0, rc_send_pkt(self, &t.r1));
		ASSERT_EQ(0, rc_send_pkt(self, &t.r2));
		ASSERT_EQ(0, rc_send_pkt(self, &t.w));
		expect_two_reads(_metadata, self, &t);
	}
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * Two READs of 4 MiB and a WRITE behind them, answered; then asked again,
 * and while the first's replay goes out, the second READ and the WRITE
 * asked again once more (the requester went back to the second READ):
 * the first's replay, the second's once, the WRITE's ACK, and then
 * nothing but the ACK of a new WRITE.  The copies held from the first
 * going back come again with the second, so the second takes their place.
 * (Held too, each copy was answered in turn: the second READ twice, and a
 * requester going back each time its timer ran out had copy after copy
 * answered behind the first, until its retries ran out.)
 */
TEST_F(rcw, read_going_back_twice_answered_once)
{
	struct two_reads t = two_reads_make(self);
	struct rcpkt w2 = t.w;
	static struct answer a;

	w2.psn = W_PSN + 2 * t.n0 + 1;
	w2.fill = 0x5b;
	ASSERT_EQ(0, rc_send_pkt(self, &t.r1));
	ASSERT_EQ(0, rc_send_pkt(self, &t.r2));
	ASSERT_EQ(0, rc_send_pkt(self, &t.w));
	expect_two_reads(_metadata, self, &t);
	ASSERT_EQ(0, rc_send_pkt(self, &t.r1));
	ASSERT_EQ(0, rc_send_pkt(self, &t.r2));
	ASSERT_EQ(0, rc_send_pkt(self, &t.w));
	ASSERT_EQ(0, rc_send_pkt(self, &t.r2));
	ASSERT_EQ(0, rc_send_pkt(self, &t.w));
	expect_two_reads(_metadata, self, &t);
	/* The sentinel: the next answer is the new WRITE's, not the second READ's again. */
	ASSERT_EQ(0, rc_send_pkt(self, &w2));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS)) TH_LOG("the new WRITE unanswered");
	EXPECT_EQ(OP_ACK, a.op) TH_LOG("answer %#x for PSN %#x", a.op, a.psn);
	EXPECT_EQ((W_PSN + 2 * t.n0 + 1) & 0xffffff, a.psn);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * With max_dest_rd_atomic 1, a READ of 8 MiB, then a FLUSH, an ATOMIC
 * WRITE and a READ of one MTU behind it, sent at once: rxe's requester
 * counts neither FLUSH nor ATOMIC WRITE against its max_rd_atomic, so
 * those two are never too many and are answered (empty READ responses,
 * the ATOMIC WRITE done); the second READ is one more than the resource
 * and gets an Invalid Request NAK, after them.
 */
TEST_F(rcw, flush_and_atomic_write_never_too_many)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), n0 = 8 * MiB / mtu;
	uint64_t v = 0x0a0b0c0d0e0f0102ull, got8, va;
	uint32_t rkey, got, bad = 0;
	size_t at = 12 * MiB;
	static struct answer a;
	struct rcpkt r;

	rc_connect_flush(_metadata, self, 1, 1);
	set_max_dest_rd_atomic(_metadata, self->x.qp, 1);
	va = (uintptr_t)self->x.buf;
	rkey = self->x.mr->rkey;
	for (size_t i = 0; i < (size_t)(n0 + 1) * mtu; i++)
		self->x.buf[i] = rd_byte(i);
	memset(self->x.buf + at, 0, 8);
	r = rc_reth(OP_READ_REQ, W_PSN, va, rkey, n0 * mtu);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	r = rc_flush(W_PSN + n0, va, rkey, 4096, W_FLUSH_GLOBAL, W_FLUSH_RANGE);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	r = rc_atomic_write(W_PSN + n0 + 1, va + at, rkey, &v);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	r = rc_reth(OP_READ_REQ, W_PSN + n0 + 2, va, rkey, mtu);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	got = read_answers_until(_metadata, self, mtu, &a, &bad);
	EXPECT_EQ(n0, got);
	EXPECT_EQ(0u, bad);
	EXPECT_EQ(OP_READ_ONLY, a.op) TH_LOG("%#x for PSN %#x, syndrome %#x", a.op, a.psn, a.syn);
	EXPECT_EQ(W_PSN + n0, a.psn);
	expect_empty_read(_metadata, self, W_PSN + n0 + 1, 3);
	memcpy(&got8, self->x.buf + at, 8);
	EXPECT_EQ(v, got8);
	expect_ack(_metadata, self, SYN_NAK_INV, W_PSN + n0 + 2);
	expect_silent_in_err(_metadata, self, &self->x);
}

/*
 * With max_dest_rd_atomic 0 the responder has no resources: a READ and a
 * FLUSH get an Invalid Request NAK and the QP goes to error; an ATOMIC
 * WRITE, which needs none (it is written as a WRITE is), is done and
 * answered, and so is its duplicate, from the answers kept, without
 * writing again.  (Keeping answers only within max_dest_rd_atomic, a first
 * attempt at the responder resources never answered that duplicate.)
 */
TEST_F(rcw, no_responder_resources_but_atomic_write)
{
	uint64_t v = 0x5555, v2 = 0x6666, got8;
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);

	for (int round = 0; round < 3; round++) {
		uint64_t va;
		uint32_t rkey;
		struct rcpkt r;

		TH_LOG("round %d", round);
		rc_connect_flush(_metadata, self, 1, 1);
		set_max_dest_rd_atomic(_metadata, self->x.qp, 0);
		va = (uintptr_t)self->x.buf;
		rkey = self->x.mr->rkey;
		memset(self->x.buf, 0, 8);
		if (round == 2) {
			r = rc_atomic_write(W_PSN, va, rkey, &v);
			ASSERT_EQ(0, rc_send_pkt(self, &r));
			expect_empty_read(_metadata, self, W_PSN, 1);
			memcpy(&got8, self->x.buf, 8);
			EXPECT_EQ(v, got8);
			memcpy(self->x.buf, &v2, 8);
			ASSERT_EQ(0, rc_send_pkt(self, &r));
			expect_empty_read(_metadata, self, W_PSN, 1);
			memcpy(&got8, self->x.buf, 8);
			EXPECT_EQ(v2, got8) TH_LOG("the duplicate wrote again");
			EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
			continue;
		}
		r = round ? rc_flush(W_PSN, va, rkey, 4096, W_FLUSH_GLOBAL, W_FLUSH_RANGE) :
			    rc_reth(OP_READ_REQ, W_PSN, va, rkey, mtu);
		ASSERT_EQ(0, rc_send_pkt(self, &r));
		expect_ack(_metadata, self, SYN_NAK_INV, W_PSN);
		expect_silent_in_err(_metadata, self, &self->x);
	}
}

/* A raw QP (rings the test writes: rdma-core 44 posts no FLUSH) connected to the peer. */
static void raw_connect(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			struct raw_qp *g)
{
	struct ib_uverbs_modify_qp reset = { .qp_state = 0, .attr_mask = 1 };
	const char *step = "";
	int err = raw_qp_make(g, &self->e, &step);

	ASSERT_EQ(0, err) TH_LOG("raw QP, %s: %s", step, strerror(-err));
	reset.qp_handle = g->qp.core.qp_handle;
	/* A Local ACK Timeout of 4 s: nothing goes again while the peer waits. */
	ASSERT_EQ(0, uverbs_modify_qp(g->fd, &reset));
	ASSERT_EQ(0, uverbs_rc_to_rts_timed(g->fd, g->qp.core.qp_handle, W_PQPN,
					    peer_gid()->raw, self->e.gid_idx, 20, 7, 0));
}

/* The raw QP's next completion within @ms, into *@c: how many came (1 expected). */
static int raw_cqe(struct raw_qp *g, int ms, struct srnic_cqe *c)
{
	const struct srnic_cqe *ring = g->cq_ring;
	uint64_t end = now_ms() + ms;
	int n = 0, errors = 0;

	do {
		raw_qp_reap(g, &n, &errors);
		if (n) {
			*c = ring[(g->cq_cons - 1) & ((1u << RAW_QP_LOG_CQ) - 1)];
			return n;
		}
		usleep(1000);
	} while (now_ms() < end);
	return 0;
}

/* The peer's empty READ RESPONSE ONLY for @psn, to QP @qpn. */
static void peer_empty_read(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			    uint32_t qpn, uint32_t psn, uint8_t op)
{
	struct rcpkt r = { .opcode = op, .psn = psn, .ext_len = 4 };

	r.ext[0] = SYN_ACK | 0x1f;
	ASSERT_EQ(0, rc_send_to(self, &r, qpn));
}

/*
 * srnic's FLUSH on the wire (a WQE written into the ring: opcode 14 and
 * its segment), as rxe sends it: a FETH and a RETH naming the range, no
 * payload.  An ACK does not complete it; its empty READ RESPONSE ONLY
 * does, with IBV_WC_FLUSH and no bytes.
 */
TEST_F(rcw, flush_requested)
{
	const uint64_t va = 0x123456789000ull;
	const uint32_t rkey = 0xabcd01, len = 4096;
	uint32_t feth = htonl(W_FLUSH_RANGE << 4 | W_FLUSH_GLOBAL), brkey = htonl(rkey);
	uint32_t blen = htonl(len);
	uint64_t bva = htobe64(va);
	struct srnic_cqe cqe;
	struct answer a;
	struct raw_qp g;

	raw_connect(_metadata, self, &g);
	raw_qp_flush(&g, 0, va, rkey, len, W_FLUSH_GLOBAL, W_FLUSH_RANGE);
	ASSERT_EQ(0, raw_qp_ring(&g, 1));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_FLUSH, a.op);
	EXPECT_EQ(0, a.psn);
	EXPECT_TRUE(a.b[8] & 0x80) TH_LOG("no AckReq");
	ASSERT_EQ(20, a.plen) TH_LOG("a FETH and a RETH");
	EXPECT_EQ(0, memcmp(a.payload, &feth, 4));
	EXPECT_EQ(0, memcmp(a.payload + 4, &bva, 8));
	EXPECT_EQ(0, memcmp(a.payload + 12, &brkey, 4));
	EXPECT_EQ(0, memcmp(a.payload + 16, &blen, 4));
	peer_empty_read(_metadata, self, g.qp.core.qpn, 0, OP_ACK);
	/* The raw QP's PSNs are 0: the sentinel goes just behind 0. */
	expect_quiet_to(_metadata, self, g.qp.core.qpn, 0, NULL);
	EXPECT_EQ(0, raw_cqe(&g, 0, &cqe)) TH_LOG("an ACK completed a FLUSH");
	peer_empty_read(_metadata, self, g.qp.core.qpn, 0, OP_READ_ONLY);
	ASSERT_EQ(1, raw_cqe(&g, WC_MS, &cqe));
	EXPECT_EQ(IBV_WC_SUCCESS, cqe.status);
	EXPECT_EQ(SRNIC_WC_FLUSH, cqe.opcode);
	EXPECT_EQ(100, cqe.wr_id);
	EXPECT_EQ(0, cqe.byte_len);
	expect_quiet_to(_metadata, self, g.qp.core.qpn, 0, NULL);
	raw_qp_free(&g);
}

/*
 * srnic's next packet as the peer's IP layer saw it: the IPv4 and UDP
 * headers srnic writes (ID 0, DF, its UDP source port) rebuilt in front of
 * what the socket got, so that the ICRC can be checked.  Its length, or 0
 * when none came within @ms.
 */
static size_t next_packet(int s, uint8_t *b, size_t cap, int ms)
{
	struct pollfd pfd = { .fd = s, .events = POLLIN };
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	uint8_t h[28];
	ssize_t n;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	n = recvfrom(s, b + 28, cap - 28, 0, (struct sockaddr *)&from, &flen);
	if (n < 16)
		return 0;
	put_ip_udp(h, W_ME, W_PEER, sizeof(h));
	h[2] = (n + 28) >> 8;
	h[3] = n + 28;
	h[4] = h[5] = 0;
	memcpy(h + 20, &from.sin_port, 2);
	h[24] = (n + 8) >> 8;
	h[25] = n + 8;
	memcpy(b, h, sizeof(h));
	return n + 28;
}

/*
 * srnic's next packet for PSN @psn, as next_packet() gives it; copies of
 * earlier ones (an answer may cross a retransmission) are passed over.
 * 0 when it did not come within WC_MS each.
 */
static size_t next_packet_psn(int s, uint8_t *b, size_t cap, uint32_t psn)
{
	size_t len;

	do
		len = next_packet(s, b, cap, WC_MS);
	while (len && (uint32_t)(b[28 + 9] << 16 | b[28 + 10] << 8 | b[28 + 11]) != psn);
	return len;
}

/*
 * The raw QP's FLUSH at WQE (and PSN) @k, rung: it goes in rxe's ICRC
 * form; answered, it completes as wr_id 100 + @k.
 */
static void rxe_flush_answered(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			       struct raw_qp *g, uint32_t k, const char *why)
{
	static uint8_t b[4096];
	struct srnic_cqe cqe;
	size_t len;

	ASSERT_EQ(0, raw_qp_ring(g, k + 1));
	len = next_packet_psn(self->ans, b, sizeof(b), k);
	ASSERT_NE(0, len);
	EXPECT_EQ(icrc_rxe_flush(b, len), get_le32(b + len - 4)) TH_LOG("%s", why);
	peer_empty_read(_metadata, self, g->qp.core.qpn, k, OP_READ_ONLY);
	ASSERT_EQ(1, raw_cqe(g, WC_MS, &cqe));
	EXPECT_EQ(IBV_WC_SUCCESS, cqe.status);
	EXPECT_EQ(100 + k, cqe.wr_id);
}

/*
 * A FLUSH that goes unanswered goes again with the other ICRC form (the
 * spec's first, then rxe's, srnic_icrc.c), so that a peer taking either
 * answers; the form the peer answered is the QP's first choice for the
 * next FLUSH.
 */
TEST_F(rcw, flush_again_in_rxe_form_then_kept)
{
	struct ib_uverbs_modify_qp reset = { .qp_state = 0, .attr_mask = 1 };
	static uint8_t b[4096];
	struct srnic_cqe cqe;
	const char *step = "";
	struct raw_qp g;
	size_t len;

	ASSERT_EQ(0, raw_qp_make(&g, &self->e, &step)) TH_LOG("raw QP, %s", step);
	reset.qp_handle = g.qp.core.qp_handle;
	ASSERT_EQ(0, uverbs_modify_qp(g.fd, &reset));
	/* A Local ACK Timeout of 67 ms (the least srnic takes), 7 retries. */
	ASSERT_EQ(0, uverbs_rc_to_rts_timed(g.fd, g.qp.core.qp_handle, W_PQPN,
					    peer_gid()->raw, self->e.gid_idx, 14, 7, 0));
	for (uint32_t k = 0; k < 2; k++)
		raw_qp_flush(&g, k, 0, 0x1234, 64, W_FLUSH_GLOBAL, W_FLUSH_RANGE);
	ASSERT_EQ(0, raw_qp_ring(&g, 1));
	len = next_packet(self->ans, b, sizeof(b), WC_MS);
	ASSERT_EQ(28 + 12 + 20 + 4, len);
	EXPECT_EQ(OP_FLUSH, b[28]);
	EXPECT_EQ(icrc(b, len), get_le32(b + len - 4)) TH_LOG("first: not the spec's ICRC");
	len = next_packet(self->ans, b, sizeof(b), WC_MS);
	ASSERT_EQ(28 + 12 + 20 + 4, len) TH_LOG("the FLUSH did not go again");
	EXPECT_EQ(icrc_rxe_flush(b, len), get_le32(b + len - 4)) TH_LOG("again: not rxe's ICRC");
	peer_empty_read(_metadata, self, g.qp.core.qpn, 0, OP_READ_ONLY);
	ASSERT_EQ(1, raw_cqe(&g, WC_MS, &cqe));
	EXPECT_EQ(IBV_WC_SUCCESS, cqe.status);
	/* The answer may have crossed a third copy: only the next FLUSH's first counts. */
	rxe_flush_answered(_metadata, self, &g, 1, "the next FLUSH: not in the form answered");

	/*
	 * A FLUSH ahead of an empty WRITE goes in that form too; answered
	 * once it is the head, it leaves the form as it was.
	 */
	raw_qp_wqe_remote(&g, 2, IBV_WR_RDMA_WRITE, 0, 0x1234);
	raw_qp_flush(&g, 3, 0, 0x1234, 64, W_FLUSH_GLOBAL, W_FLUSH_RANGE);
	raw_qp_flush(&g, 4, 0, 0x1234, 64, W_FLUSH_GLOBAL, W_FLUSH_RANGE);
	ASSERT_EQ(0, raw_qp_ring(&g, 4));
	ASSERT_NE(0, next_packet_psn(self->ans, b, sizeof(b), 2));
	len = next_packet_psn(self->ans, b, sizeof(b), 3);
	ASSERT_NE(0, len);
	EXPECT_EQ(OP_FLUSH, b[28]);
	EXPECT_EQ(icrc_rxe_flush(b, len), get_le32(b + len - 4)) TH_LOG("the FLUSH ahead");
	peer_empty_read(_metadata, self, g.qp.core.qpn, 2, OP_ACK);
	ASSERT_EQ(1, raw_cqe(&g, WC_MS, &cqe));
	EXPECT_EQ(102, cqe.wr_id);
	peer_empty_read(_metadata, self, g.qp.core.qpn, 3, OP_READ_ONLY);
	ASSERT_EQ(1, raw_cqe(&g, WC_MS, &cqe));
	EXPECT_EQ(103, cqe.wr_id);
	rxe_flush_answered(_metadata, self, &g, 4, "a FLUSH after one answered at the head from ahead");
	raw_qp_free(&g);
}

/*
 * srnic's ATOMIC WRITE as rxe sends it (a RETH for 8 bytes, and the 8
 * bytes) is completed by the answer rxe gives: an empty READ RESPONSE
 * ONLY.  (srnic used to wait for an ACK, which rxe never sends: every
 * ATOMIC WRITE to rxe ended in IBV_WC_RETRY_EXC_ERR.)
 */
TEST_F(rcw, atomic_write_requested_answered_as_rxe_answers)
{
	const uint64_t v = 0x0102030405060708ull, va = 0x123456789000ull;
	const uint32_t rkey = 0xabcd01;
	uint32_t brkey = htonl(rkey), b8 = htonl(8);
	uint64_t bva = htobe64(va);
	struct srnic_wqe_atomic *at;
	struct srnic_cqe cqe;
	struct answer a;
	struct raw_qp g;

	raw_connect(_metadata, self, &g);
	at = raw_qp_wqe_remote(&g, 0, SRNIC_WR_ATOMIC_WRITE, va, rkey);
	at->compare_add = v;
	ASSERT_EQ(0, raw_qp_ring(&g, 1));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_ATOMIC_WRITE, a.op);
	EXPECT_EQ(0, a.psn);
	ASSERT_EQ(24, a.plen) TH_LOG("a RETH and 8 bytes");
	EXPECT_EQ(0, memcmp(a.payload, &bva, 8));
	EXPECT_EQ(0, memcmp(a.payload + 8, &brkey, 4));
	EXPECT_EQ(0, memcmp(a.payload + 12, &b8, 4));
	EXPECT_EQ(0, memcmp(a.payload + 16, &v, 8));
	peer_empty_read(_metadata, self, g.qp.core.qpn, 0, OP_READ_ONLY);
	ASSERT_EQ(1, raw_cqe(&g, WC_MS, &cqe));
	EXPECT_EQ(IBV_WC_SUCCESS, cqe.status);
	EXPECT_EQ(SRNIC_WC_ATOMIC_WRITE, cqe.opcode);
	EXPECT_EQ(100, cqe.wr_id);
	expect_quiet_to(_metadata, self, g.qp.core.qpn, 0, NULL);
	raw_qp_free(&g);
}

/* Byte @i of the zero-copy tests' buffers: no two pages alike. */
static uint8_t zc_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 12) * 13 + 1);
}

/*
 * A signaled WRITE of srnic's QP to the peer's memory from the @n pieces @s
 * (offset, length) of @base, under @lkey.
 */
static int post_write_sges(struct ep *x, uint64_t wr_id, const uint8_t *base,
			   const size_t (*s)[2], int n, uint32_t lkey)
{
	struct ibv_sge sge[4];
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = n, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 },
	}, *bad;

	for (int i = 0; i < n; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)base + s[i][0], s[i][1], lkey };
	return ibv_post_send(x->qp, &wr, &bad);
}

/*
 * srnic's next request packet: a WRITE's of PSN @psn whose payload is the
 * @len bytes of @src (@reth: after a RETH), its ICRC right.
 */
static void expect_write_packet(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
				uint32_t psn, int reth, const uint8_t *src, uint32_t len)
{
	static uint8_t b[9000];
	size_t n = next_packet(self->ans, b, sizeof(b), WC_MS);
	uint32_t hdr = 28 + 12 + (reth ? 16 : 0);

	ASSERT_EQ(hdr + len + (-len & 3) + 4, n) TH_LOG("PSN %#x", psn);
	EXPECT_EQ(psn, (uint32_t)(b[28 + 9] << 16 | b[28 + 10] << 8 | b[28 + 11]));
	EXPECT_EQ(-len & 3, b[28 + 1] >> 4 & 3) TH_LOG("PSN %#x: pad", psn);
	EXPECT_EQ(icrc(b, n), get_le32(b + n - 4)) TH_LOG("PSN %#x: ICRC", psn);
	EXPECT_EQ(0, memcmp(b + hdr, src, len)) TH_LOG("PSN %#x: payload", psn);
	EXPECT_EQ(-1, all_eq(b + hdr + len, -len & 3, 0)) TH_LOG("PSN %#x: pad bytes", psn);
}

/*
 * Zero-copy transmit: a payload of 512 bytes or more leaves as the pages of
 * the MR it lies in (tx_zcopy_packets counts them), a smaller one copied;
 * either way the packet is the same: payload, pad and ICRC right, also
 * for a packet across two pages or two SGEs.
 */
TEST_F(rcw, payload_sent_as_its_pages)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	const size_t first[1][2] = { { 100, 3 * mtu + 5 } }, small[1][2] = { { 5, 511 } };
	const size_t across[1][2] = { { 4096 - 300, 600 } };
	const size_t two[2][2] = { { 8192 + 10, 300 }, { 3 * 4096 + 1, 701 } };
	uint8_t *buf;
	long long zc = counter("tx_zcopy_packets");
	uint8_t src[2048];

	ASSERT_LE(0, zc) TH_LOG("no tx_zcopy_packets counter");
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	buf = self->x.buf;
	for (size_t i = 0; i < 64 * 1024; i++)
		buf[i] = zc_byte(i);

	/* Three packets of the path MTU from offset 100, then 5 bytes (copied). */
	ASSERT_EQ(0, post_write_sges(&self->x, 0, buf, first, 1, self->x.mr->lkey));
	for (uint32_t k = 0; k < 4; k++)
		expect_write_packet(_metadata, self, psn + k, !k, buf + 100 + k * mtu,
				    k < 3 ? mtu : 5);
	psn += 4;
	ASSERT_EQ(0, post_write_sges(&self->x, 1, buf, across, 1, self->x.mr->lkey));
	expect_write_packet(_metadata, self, psn++, 1, buf + 4096 - 300, 600);
	ASSERT_EQ(0, post_write_sges(&self->x, 2, buf, two, 2, self->x.mr->lkey));
	memcpy(src, buf + two[0][0], 300);
	memcpy(src + 300, buf + two[1][0], 701);
	expect_write_packet(_metadata, self, psn++, 1, src, 1001);
	/* 511 bytes: copied. */
	ASSERT_EQ(0, post_write_sges(&self->x, 3, buf, small, 1, self->x.mr->lkey));
	expect_write_packet(_metadata, self, psn++, 1, buf + 5, 511);
	EXPECT_EQ(zc + 5, counter_reaching("tx_zcopy_packets", zc + 5));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn - 1, 0);
	expect_done(_metadata, self, 0, 4);
}

/*
 * Zero-copy from the pages of other kinds of MR: a transparent huge page
 * (its pages are a compound page's tails; the WRITE crosses into the next
 * huge page) and an ODP MR (pages the requester faults in first).  Each
 * packet as the memory holds it, the full ones zero-copy.
 */
TEST_F(rcw, payload_sent_from_huge_and_odp_pages)
{
	enum { LEN = 4 << 20, HUGE = 2 << 20 };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	const size_t w[1][2] = { { HUGE - 1500, 3 * mtu + 100 } };

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	for (int odp = 0; odp < 2; odp++) {
		uint8_t *raw = mmap(NULL, LEN + HUGE, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *buf;
		long long zc = counter("tx_zcopy_packets");
		struct ibv_mr *mr;

		ASSERT_NE(MAP_FAILED, raw);
		buf = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~((uintptr_t)HUGE - 1));
		if (!odp)
			madvise(buf, LEN, MADV_HUGEPAGE);
		for (size_t i = 0; i < LEN; i++)
			buf[i] = zc_byte(i + odp);
		mr = ibv_reg_mr(self->e.pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE |
				(odp ? IBV_ACCESS_ON_DEMAND : 0));
		ASSERT_NE(NULL, mr) TH_LOG("reg_mr%s: %s", odp ? " (srnic's ODP)" : "",
					   strerror(errno));
		ASSERT_EQ(0, post_write_sges(&self->x, odp, buf, w, 1, mr->lkey));
		for (uint32_t k = 0; k < 4; k++)
			expect_write_packet(_metadata, self, psn + k, !k, buf + w[0][0] + k * mtu,
					    k < 3 ? mtu : 100);
		psn += 4;
		EXPECT_EQ(zc + 3, counter_reaching("tx_zcopy_packets", zc + 3))
			TH_LOG("%s", odp ? "ODP" : "huge page");
		peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn - 1, 0);
		expect_done(_metadata, self, odp, 1);
		EXPECT_EQ(0, ibv_dereg_mr(mr));
		munmap(raw, LEN + HUGE);
	}
}

/*
 * srnic's next packet has the @len bytes of @src as its payload, @hdr bytes
 * in (IP and UDP headers included), and its ICRC right.
 */
static void expect_payload_packet(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
				  uint32_t hdr, const uint8_t *src, uint32_t len, int k)
{
	static uint8_t b[9000];
	size_t n = next_packet(self->ans, b, sizeof(b), WC_MS);

	ASSERT_EQ(hdr + len + (-len & 3) + 4, n) TH_LOG("packet %d", k);
	EXPECT_EQ(icrc(b, n), get_le32(b + n - 4)) TH_LOG("packet %d: ICRC", k);
	EXPECT_EQ(0, memcmp(b + hdr, src, len)) TH_LOG("packet %d: not the bytes posted", k);
}

/*
 * A UD SEND and a UC WRITE complete once their packets are built, without
 * an answer: a buffer rewritten right after the completion (as the verbs
 * allow) changes nothing on the wire.  Each packet, read by the peer after
 * the rewrite, carries the bytes posted, with its ICRC right.  (Zero-copy,
 * the packets held the buffer's pages: every one went out with the new
 * bytes and an ICRC of the old, and the receiver dropped it.)
 */
TEST_F(rcw, send_completion_means_the_bytes_are_gone)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = 3 * mtu;
	const size_t w[1][2] = { { 0, len } };
	static uint8_t was[16384];
	struct ibv_wc wc;

	for (int uc = 0; uc < 2; uc++) {
		struct qp_opts o = qp_defaults(&self->e, uc ? IBV_QPT_UC : IBV_QPT_UD);
		uint32_t n = uc ? len : mtu;
		struct ep q;

		ASSERT_EQ(0, ep_create(&self->e, &o, &q));
		q.dgid = peer_gid();
		ASSERT_EQ(0, ep_connect(&q, W_PQPN + 3));
		for (uint32_t i = 0; i < n; i++)
			was[i] = q.buf[i] = zc_byte(i + uc);
		if (uc) {
			ASSERT_EQ(0, post_write_sges(&q, 7, q.buf, w, 1, q.mr->lkey));
		} else {
			ASSERT_EQ(0, post_send1(&q, IBV_WR_SEND, 7, 0, n, IBV_SEND_SIGNALED,
						NULL, 0, 0));
		}
		ASSERT_EQ(1, poll_one(q.cq, &wc, WC_MS));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		memset(q.buf, 0xa5, n);
		if (uc) {
			for (int k = 0; k < 3; k++)
				expect_payload_packet(_metadata, self, 28 + 12 + (k ? 0 : 16),
						      was + k * mtu, mtu, k);
		} else {
			expect_payload_packet(_metadata, self, 28 + 12 + 8, was, n, 0);
		}
		ep_destroy(&q);
	}
}

/*
 * The peer's READ of four MTUs, then its WRITE over the same bytes: RC
 * executes them in order, so the READ returns the memory as it was before
 * the WRITE.  The responses, read by the peer after the WRITE's ACK, carry
 * the old bytes, with their ICRCs right.  (Zero-copy, they held the MR's
 * pages, and went out with the WRITE's bytes and the ICRCs of the old.)
 */
TEST_F(rcw, read_returns_memory_before_the_write_behind_it)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), len = 4 * mtu;
	uint64_t va = (uintptr_t)self->x.buf + 65536;
	static uint8_t was[16384];
	struct rcpkt r;

	for (uint32_t i = 0; i < len; i++)
		was[i] = self->x.buf[65536 + i] = zc_byte(i);
	r = rc_reth(OP_READ_REQ, W_PSN, va, self->x.mr->rkey, len);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	r = rc_reth(OP_WRITE_ONLY, W_PSN + 4, va, self->x.mr->rkey, mtu);
	r.len = mtu;
	r.fill = 0x5a;
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	/* The WRITE's ACK is the fifth answer: the READ's responses are queued before it. */
	ASSERT_TRUE(bytes_become(self->x.buf + 65536, mtu, 0x5a)) TH_LOG("the WRITE was not done");
	for (int k = 0; k < 4; k++)
		expect_payload_packet(_metadata, self, 28 + 12 + (k == 0 || k == 3 ? 4 : 0),
				      was + k * mtu, mtu, k);
	expect_ack(_metadata, self, SYN_ACK, W_PSN + 4);
}

/*
 * An RC WRITE's first transmission goes as its buffer's pages; the netdev's
 * queue holds it (netem, 400 ms) while the peer acknowledges it early (it
 * knows the PSN).  The WQE completes only once the stack has let go of the
 * pages (the kernel's zero-copy completion), so the buffer rewritten right
 * after the completion changes nothing: the packet leaves with the bytes
 * posted and its ICRC right.  (Completed at the ACK, the packet left with
 * the new bytes and the old ICRC.)
 */
TEST_F(rcw, zero_copy_completion_waits_for_the_pages)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	const size_t w[1][2] = { { 0, mtu } };
	static uint8_t was[4096];
	long long zc;
	struct ibv_wc wc;
	char cmd[128];

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	for (uint32_t i = 0; i < mtu; i++)
		was[i] = self->x.buf[i] = zc_byte(i + 3);
	net_spoil();
	snprintf(cmd, sizeof(cmd), "tc qdisc replace dev " W_VETH "0 root netem delay %llums",
		 (unsigned long long)scaled_ms(400));
	ASSERT_EQ(0, sh(cmd));
	zc = counter("tx_zcopy_packets");
	ASSERT_EQ(0, post_write_sges(&self->x, 9, self->x.buf, w, 1, self->x.mr->lkey));
	ASSERT_EQ(zc + 1, counter_reaching("tx_zcopy_packets", zc + 1))
		TH_LOG("the WRITE did not go zero-copy");
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(9u, wc.wr_id);
	memset(self->x.buf, 0xa5, mtu);
	expect_payload_packet(_metadata, self, 28 + 12 + 16, was, mtu, 0);
	sh("tc qdisc del dev " W_VETH "0 root");
}

/*
 * A connection's zero-copy packet still in the netdev's queue (netem, 2 s)
 * when the QP is reset and connected again: the new connection's PSNs
 * start at sq_psn again, and its WRITE (copied: 64 bytes), acknowledged,
 * completes at once, not after the old packet leaves.  (The ring of
 * packets out was the QP's, not the connection's: the new WRITE waited for
 * the old connection's packet of the same PSN.)
 */
TEST_F(rcw, zero_copy_of_an_old_connection_holds_no_new_wqe)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	const size_t w[1][2] = { { 0, mtu } }, small[1][2] = { { 8192, 64 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	uint64_t t0, waited;
	struct ibv_wc wc;
	long long zc;
	char cmd[128];

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	net_spoil();
	snprintf(cmd, sizeof(cmd), "tc qdisc replace dev " W_VETH "0 root netem delay %llums",
		 (unsigned long long)scaled_ms(2000));
	ASSERT_EQ(0, sh(cmd));
	zc = counter("tx_zcopy_packets");
	ASSERT_EQ(0, post_write_sges(&self->x, 1, self->x.buf, w, 1, self->x.mr->lkey));
	ASSERT_EQ(zc + 1, counter_reaching("tx_zcopy_packets", zc + 1));
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, ep_connect(&self->x, W_PQPN + 9));
	ASSERT_EQ(0, post_write_sges(&self->x, 2, self->x.buf, small, 1, self->x.mr->lkey));
	t0 = now_ms();
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	waited = now_ms() - t0;
	EXPECT_EQ(2u, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_GT(scaled_ms(1000), waited) TH_LOG("the new WRITE waited %llu ms for the old packet",
						   (unsigned long long)waited);
	sh("tc qdisc del dev " W_VETH "0 root");
}

/*
 * Reads W_DEV's pinned_pages into *@out (-1 if it cannot): the read waits
 * until the MRs deregistered before it are released (srnic_debugfs.c).
 */
static void *pinned_reader(void *out)
{
	char *s = slurp("/sys/kernel/debug/srnic/" W_DEV "/pinned_pages");

	*(long long *)out = s ? atoll(s) : -1;
	free(s);
	return NULL;
}

/*
 * Deregisters @mr; the pinned_pages read, which waits until the MRs
 * deregistered before it are released, returns: no reference is left.
 */
static void dereg_released(struct __test_metadata *_metadata, struct ibv_mr *mr)
{
	long long pinned = -1;
	struct timespec until;
	pthread_t th;

	ASSERT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ(0, pthread_create(&th, NULL, pinned_reader, &pinned));
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += scaled_ms(WC_MS) / 1000 + 1;
	ASSERT_EQ(0, pthread_timedjoin_np(th, NULL, &until))
		TH_LOG("the ODP MR's release waits for a reference left behind");
	EXPECT_LE(0, pinned);
}

/*
 * srnic's QP again, with long timers, and an ODP MR over @len bytes of
 * anonymous memory at *@buf, filled with zc_byte(); NULL (and nothing
 * mapped) if there is no such MR.
 */
static struct ibv_mr *rc_connect_odp(struct __test_metadata *_metadata,
				     FIXTURE_DATA(rcw) *self, size_t len, uint8_t **buf)
{
	struct ibv_mr *mr;

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	*buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*buf == MAP_FAILED)
		return NULL;
	for (size_t i = 0; i < len; i++)
		(*buf)[i] = zc_byte(i);
	mr = ibv_reg_mr(self->e.pd, *buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	if (!mr)
		munmap(*buf, len);
	return mr;
}

/*
 * A WRITE that would go ahead of the head's ACK but lies on ODP pages the
 * requester has not faulted in yet waits for its turn, holding nothing:
 * once the head is acknowledged it faults them in and goes, and its MR is
 * released once deregistered.  (Such a try once kept a reference to the
 * MR: its release then waited for ever, and every MR deregistered after
 * it, the pinned_pages read and the device's removal with it.)
 */
TEST_F(rcw, piece_ahead_on_odp_pages_holds_nothing)
{
	enum { LEN = 64 << 10 };
	const size_t head[1][2] = { { 0, 100 } }, next[1][2] = { { 4096, 200 } };
	uint32_t psn = W_PSN;
	struct ibv_mr *mr;
	long long visits;
	uint64_t end;
	uint8_t *buf;

	mr = rc_connect_odp(_metadata, self, LEN, &buf);
	ASSERT_NE(NULL, mr) TH_LOG("srnic's ODP MR: %s", strerror(errno));
	fill(self->x.buf, 100, 3);
	ASSERT_EQ(0, post_write_sges(&self->x, 0, self->x.buf, head, 1, self->x.mr->lkey));
	expect_write_packet(_metadata, self, psn, 1, self->x.buf, 100);
	/* The head waits for its ACK; the next WRITE is tried ahead of it. */
	visits = qp_visits(self->x.qp->qp_num);
	ASSERT_LE(0, visits);
	ASSERT_EQ(0, post_write_sges(&self->x, 1, buf, next, 1, mr->lkey));
	end = now_ms() + scaled_ms(WC_MS);
	while (qp_visits(self->x.qp->qp_num) <= visits && now_ms() < end)
		usleep(1000);
	ASSERT_LT(visits, qp_visits(self->x.qp->qp_num));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn, 0);
	expect_write_packet(_metadata, self, psn + 1, 1, buf + 4096, 200);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 1, 0);
	expect_done(_metadata, self, 0, 2);
	dereg_released(_metadata, mr);
	munmap(buf, LEN);
}

#define W_DBG "/sys/kernel/debug/srnic/" W_DEV "/"

/* A number in W_DEV's debugfs file @file, after "@field " if @field, or -1. */
static long long dbg_number(const char *file, const char *field)
{
	char *all = slurp(file), *p = all;
	long long v = -1;

	if (p && field) {
		p = strstr(p, field);
		if (p)
			p += strlen(field) + 1;
	}
	if (p)
		v = atoll(p);
	free(all);
	return v;
}

static int odp_slow_injected(const char *unused)
{
	return dbg_number(W_DBG "fault/odp_slow/injected", NULL) > 0;
}

/*
 * A WQE sent ahead whose pages are then taken away faults them in again
 * when it becomes the head.  An ACK for it and an error of the QP (the
 * peer's WRITE with a bad key) that come while that fault is out (made
 * slow here) wait for it: the WQE completes, then the flush.  (The QP in
 * error once asked for a second fault while the first was out, and the
 * fault's work then ran again on the record it had cleared: a NULL MR,
 * and the kernel crashed.)
 */
TEST_F(rcw, error_while_the_head_faults)
{
	enum { LEN = 64 << 10 };
	const size_t head[1][2] = { { 0, 100 } }, next[1][2] = { { 4096, 200 } };
	struct rcpkt bad = rc_reth(OP_WRITE_ONLY, W_PSN, (uintptr_t)self->x.buf, 0, 64);
	struct rcpkt ack = { .opcode = OP_ACK, .psn = W_PSN + 1, .ext_len = 4 };
	struct ibv_sge whole;
	struct ibv_mr *mr;
	long long faults;
	struct ibv_wc wc;
	uint8_t *buf;

	mr = rc_connect_odp(_metadata, self, LEN, &buf);
	ASSERT_NE(NULL, mr) TH_LOG("srnic's ODP MR: %s", strerror(errno));
	whole = (struct ibv_sge){ (uintptr_t)buf, LEN, mr->lkey };
	ASSERT_EQ(0, ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				   IBV_ADVISE_MR_FLAG_FLUSH, &whole, 1));
	fill(self->x.buf, 100, 3);
	ASSERT_EQ(0, post_write_sges(&self->x, 7, self->x.buf, head, 1, self->x.mr->lkey));
	expect_write_packet(_metadata, self, W_PSN, 1, self->x.buf, 100);
	ASSERT_EQ(0, post_write_sges(&self->x, 0, buf, next, 1, mr->lkey));
	expect_write_packet(_metadata, self, W_PSN + 1, 1, buf + 4096, 200);
	ASSERT_EQ(0, madvise(buf, LEN, MADV_DONTNEED));
	/* The next fault of this QP's takes a second before it starts. */
	net_spoil();
	ASSERT_EQ(0, sh("cd " W_DBG "fault && echo 1000000 > delay_us && cd odp_slow && "
			"echo %u > qpn && echo 1 > times && echo 100 > probability",
			self->x.qp->qp_num));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	expect_done(_metadata, self, 7, 1);
	ASSERT_TRUE(wait_until(odp_slow_injected, NULL, 1, WC_MS));
	faults = dbg_number(W_DBG "odp", "page_faults");
	ack.ext[0] = SYN_ACK | 0x1f;
	bad.len = 64;
	ASSERT_EQ(0, rc_send_pkt(self, &ack));
	ASSERT_EQ(0, rc_send_pkt(self, &bad));
	expect_ack(_metadata, self, SYN_NAK_ACCESS, W_PSN);
	EXPECT_TRUE(wait_state(self->x.qp, IBV_QPS_ERR, WC_MS));
	/* What this test is about: the QP failed while its fault was out. */
	ASSERT_EQ(faults, dbg_number(W_DBG "odp", "page_faults"));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(0, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_LT(faults, dbg_number(W_DBG "odp", "page_faults"));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	dereg_released(_metadata, mr);
	munmap(buf, LEN);
}

static int rx_hold_injected(const char *unused)
{
	return dbg_number(W_DBG "fault/rx_hold/injected", NULL) > 0;
}

/*
 * The next packet srnic takes for QP @qpn waits in its receive queue, the
 * packets behind it too, until rx_hold_release().
 */
static void rx_hold(struct __test_metadata *_metadata, uint32_t qpn)
{
	net_spoil();
	ASSERT_EQ(0, sh("cd " W_DBG "fault/rx_hold && echo %u > qpn && echo 1 > times && "
			"echo 100 > probability", qpn));
}

/* The packet held goes, the one held exactly. */
static void rx_hold_release(struct __test_metadata *_metadata)
{
	EXPECT_EQ(1, dbg_number(W_DBG "fault/rx_hold/injected", NULL));
	ASSERT_EQ(0, sh("echo 0 > " W_DBG "fault/rx_hold/probability"));
}

/*
 * A SEND at the expected PSN waits in srnic's receive queue (the fault
 * rx_hold: an engine late to take packets, as the debug kernel's is) while
 * its QP is reset and connected to another peer QP, from the same address
 * and expecting the same PSN: it was the old connection's, and the new one
 * neither receives it nor answers it.  (Taken for the new connection's
 * first SEND, it completed a receive and was acknowledged to the new QPN;
 * on the debug kernel one round in 64 of reset_while_reading_forgets_the_
 * read saw a SEND held that way NAKed to the new QPN.)
 */
TEST_F(rcw, packets_before_a_reset_are_not_the_new_connections)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct rcpkt r = rc_send(W_PSN, 16, 0x61);

	ASSERT_EQ(0, post_recv(&self->x, 1, 0, 4096));
	rx_hold(_metadata, self->x.qp->qp_num);
	ASSERT_EQ(0, rc_send_pkt(self, &r));
	ASSERT_TRUE(wait_until(rx_hold_injected, NULL, 1, WC_MS));
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &reset, IBV_QP_STATE));
	ASSERT_EQ(0, ep_connect(&self->x, W_PQPN + 0x77));
	ASSERT_EQ(0, post_recv(&self->x, 2, 4096, 4096));
	rx_hold_release(_metadata);
	/* Behind the held SEND in the queue: the first answer, and no receive. */
	expect_quiet_to(_metadata, self, self->x.qp->qp_num, W_PSN, self->x.cq);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->x.qp));
}

/*
 * An ACK for the WRITE at the first PSN waits in srnic's receive queue
 * while the QP is reset and connected again, and sends a new WRITE at the
 * same PSN: the ACK was for the old one and completes nothing.  (Taken for
 * the new connection's, it completed a WRITE the peer never had.)
 */
TEST_F(rcw, answers_before_a_reset_are_not_the_new_connections)
{
	const uint8_t ops[] = { OP_WRITE_ONLY };
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 22);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 0, 0, 64));
	expect_requests(_metadata, self, ops, 1, W_PSN);
	rx_hold(_metadata, self->x.qp->qp_num);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	ASSERT_TRUE(wait_until(rx_hold_injected, NULL, 1, WC_MS));
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &reset, IBV_QP_STATE));
	while (poll_one(self->x.cq, &wc, 0) == 1)
		;
	ASSERT_EQ(0, ep_connect(&self->x, W_PQPN + 0x77));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 1, 64, 64));
	expect_requests(_metadata, self, ops, 1, W_PSN);
	rx_hold_release(_metadata);
	/* Behind the held ACK in the queue: the sentinel's, and no completion. */
	expect_quiet_to(_metadata, self, self->x.qp->qp_num, W_PSN, self->x.cq);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

static int tx_packets_at_least(const char *want)
{
	return counter("tx_packets") >= atoll(want);
}

/*
 * A packet sent from the MR's pages holds them: deregistered and unmapped
 * while its packets wait in a queue (netem delaying them), the memory
 * used again at once, the packets still arrive with the data they were
 * sent with and their ICRC right.
 */
TEST_F(rcw, payload_pages_held_past_dereg_and_unmap)
{
	enum { LEN = 16 * 1024, OTHER = 8 << 20 };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	const size_t whole[1][2] = { { 0, LEN } };
	static uint8_t want[LEN];
	char at_least[32];
	struct ibv_mr *mr;
	uint8_t *buf, *other;

	net_spoil();
	if (sh("tc qdisc add dev " W_VETH "0 root netem delay 400ms 2>/dev/null"))
		SKIP(return, "no netem (sch_netem) to hold packets in");
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	for (size_t i = 0; i < LEN; i++)
		want[i] = buf[i] = zc_byte(i + 5);
	mr = ibv_reg_mr(self->e.pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	snprintf(at_least, sizeof(at_least), "%lld", counter("tx_packets") + LEN / mtu);
	ASSERT_EQ(0, post_write_sges(&self->x, 0, buf, whole, 1, mr->lkey));
	ASSERT_TRUE(wait_until(tx_packets_at_least, at_least, 1, WC_MS));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ(0, munmap(buf, LEN));
	other = mmap(NULL, OTHER, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, other);
	memset(other, 0xee, OTHER);
	for (uint32_t k = 0; k < LEN / mtu; k++)
		expect_write_packet(_metadata, self, W_PSN + k, !k, want + k * mtu, mtu);
	munmap(other, OTHER);
	sh("tc qdisc del dev " W_VETH "0 root");
}

/*
 * A connection's route, kept between packets, follows a change of the
 * routes: while the peer's address is routed through a gateway that is not
 * there (a blackhole would not do: srnic's lookups name the netdev, and the
 * stack then takes an unreachable destination to be on the link), what
 * srnic sends does not arrive; once that route is gone, the WRITE goes
 * again on its timer.
 */
TEST_F(rcw, route_changes_followed)
{
	const uint8_t wr[] = { OP_WRITE_ONLY };
	uint32_t psn = W_PSN;
	struct answer a;

	/*
	 * A Local ACK Timeout of 1 s: a few retries while the route is dead,
	 * not its seven (at 67 ms doubling, a slow kernel's dead route outlasted
	 * them, and the WRITE failed before the route came back).
	 */
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 18);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 0, 0, 64));
	expect_requests(_metadata, self, wr, 1, psn);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn, 0);
	expect_done(_metadata, self, 0, 1);
	net_spoil();
	ASSERT_EQ(0, sh("ip route add " W_PEER "/32 via " W_NOBODY " dev " W_VETH "0"));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 1, 0, 64));
	/* A sentinel's answer would take the same dead route: the last resort. */
	EXPECT_EQ(-1, next_answer(self->ans, &a, quiet_ms()))
		TH_LOG("answer %#x for PSN %#x through the dead route", a.op, a.psn);
	ASSERT_EQ(0, sh("ip route del " W_PEER "/32"));
	expect_requests(_metadata, self, wr, 1, psn + 1);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 1, 0);
	expect_done(_metadata, self, 1, 1);
}

/* ---- XRC on the wire: srnic's XRC QPs and the peer's packets ---- */

/* An XRC domain with one SRQ (its own CQ), for the XRC tests. */
struct xrc_side {
	struct ibv_xrcd *xrcd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint32_t srqn;
	struct ibv_qp *qp;
};

static void xrc_side_close(struct xrc_side *x)
{
	if (x->qp)
		ibv_destroy_qp(x->qp);
	if (x->srq)
		ibv_destroy_srq(x->srq);
	if (x->cq)
		ibv_destroy_cq(x->cq);
	if (x->xrcd)
		ibv_close_xrcd(x->xrcd);
}

/* @qp (XRC_RECV or XRC_SEND) through INIT and RTR to the peer, then RTS if @send. */
static int xrc_wire_connect(FIXTURE_DATA(rcw) *self, struct ibv_qp *qp, int send)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = self->e.port.active_mtu;
	a.dest_qp_num = W_PQPN;
	a.rq_psn = W_PSN;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr = ah_to_peer(&self->x);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  (send ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return -1;
	if (!send)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = W_PSN;
	a.timeout = 20;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The domain and its SRQ; a target QP (XRC_RECV) or an initiator (XRC_SEND). */
static int xrc_side_open(FIXTURE_DATA(rcw) *self, struct xrc_side *x, int send)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC, .pd = self->e.pd,
	};
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD,
	};

	x->xrcd = ibv_open_xrcd(self->e.ctx, &xa);
	x->cq = ibv_create_cq(self->e.ctx, 64, NULL, NULL, 0);
	if (!x->xrcd || !x->cq)
		return -1;
	sa.xrcd = x->xrcd;
	sa.cq = x->cq;
	x->srq = ibv_create_srq_ex(self->e.ctx, &sa);
	if (!x->srq || ibv_get_srq_num(x->srq, &x->srqn))
		return -1;
	qa.xrcd = x->xrcd;
	if (send)
		qa = (struct ibv_qp_init_attr_ex){
			.qp_type = IBV_QPT_XRC_SEND, .comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = self->e.pd, .send_cq = x->cq,
			.cap = { .max_send_wr = 16, .max_send_sge = 1 },
		};
	x->qp = ibv_create_qp_ex(self->e.ctx, &qa);
	return x->qp ? xrc_wire_connect(self, x->qp, send) : -1;
}

/* A request of the peer to srnic's XRC target: @r with the XRCETH for @srqn first. */
static int xrc_send_pkt(FIXTURE_DATA(rcw) *self, struct rcpkt r, uint32_t dqpn,
			uint32_t srqn)
{
	uint32_t be = htonl(srqn);

	memmove(r.ext + 4, r.ext, r.ext_len);
	memcpy(r.ext, &be, 4);
	r.ext_len += 4;
	r.opcode |= OP_XRC;
	return rc_send_to(self, &r, dqpn);
}

/* srnic's next answer is @op (XRC's) for @psn, with AETH syndrome @syn (0xff: any ACK). */
static void expect_xrc_answer(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			      struct answer *a, uint8_t op, uint32_t psn, uint8_t syn)
{
	ASSERT_EQ(0, next_answer(self->ans, a, WC_MS)) TH_LOG("no answer for PSN %#x", psn);
	EXPECT_EQ(op | OP_XRC, a->op);
	EXPECT_EQ(psn, a->psn);
	if (syn == 0xff) {
		EXPECT_EQ(0, a->syn >> 5) TH_LOG("syndrome %#x", a->syn);
	} else {
		EXPECT_EQ(syn, a->syn);
	}
}

/*
 * srnic's XRC target across the wire: the peer's XRC SEND lands in the SRQ
 * its XRCETH names and is acknowledged with XRC's ACKNOWLEDGE; an XRC
 * WRITE is placed through the SRQ's PD and an XRC READ answered with XRC's
 * READ RESPONSE; an RC opcode sent to the target is not its service and is
 * dropped; an XRCETH naming no SRQ of the domain draws an invalid-request
 * NAK.
 */
TEST_F(rcw, xrc_target_on_the_wire)
{
	uint32_t psn = W_PSN, va = 64 * 4096;
	struct xrc_side x = {};
	struct ibv_sge sge = { (uintptr_t)self->x.buf, 4096, self->x.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct answer a;
	struct ibv_wc wc;
	struct rcpkt r;

	ASSERT_TRUE(self->e.dev.device_cap_flags & IBV_DEVICE_XRC) TH_LOG("srnic reports no XRC");
	ASSERT_EQ(0, xrc_side_open(self, &x, 0)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, ibv_post_srq_recv(x.srq, &rwr, &bad));
	/* RC's SEND ONLY to the target: not its service, dropped. */
	r = rc_send(psn, 100, 0x70);
	ASSERT_EQ(0, rc_send_to(self, &r, x.qp->qp_num));
	r = rc_send(psn, 100, 0x71);
	ASSERT_EQ(0, xrc_send_pkt(self, r, x.qp->qp_num, x.srqn));
	expect_xrc_answer(_metadata, self, &a, OP_ACK, psn, 0xff);
	ASSERT_EQ(1, poll_one(x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(100, wc.byte_len);
	EXPECT_EQ(-1, all_eq(self->x.buf, 100, 0x71));

	r = rc_reth(OP_WRITE_ONLY, psn + 1, (uintptr_t)self->x.buf + va, self->x.mr->rkey, 64);
	r.len = 64;
	r.fill = 0x72;
	ASSERT_EQ(0, xrc_send_pkt(self, r, x.qp->qp_num, x.srqn));
	expect_xrc_answer(_metadata, self, &a, OP_ACK, psn + 1, 0xff);
	EXPECT_EQ(-1, all_eq(self->x.buf + va, 64, 0x72));

	r = rc_reth(OP_READ_REQ, psn + 2, (uintptr_t)self->x.buf + va, self->x.mr->rkey, 64);
	ASSERT_EQ(0, xrc_send_pkt(self, r, x.qp->qp_num, x.srqn));
	expect_xrc_answer(_metadata, self, &a, OP_READ_ONLY, psn + 2, 0xff);
	EXPECT_EQ(64, a.plen);
	EXPECT_EQ(-1, all_eq(a.payload, 64, 0x72));

	r = rc_send(psn + 3, 16, 0x73);
	ASSERT_EQ(0, xrc_send_pkt(self, r, x.qp->qp_num, x.srqn + 1000));
	expect_xrc_answer(_metadata, self, &a, OP_ACK, psn + 3, SYN_NAK_INV);
	EXPECT_EQ(0, poll_one(x.cq, &wc, 0));
	xrc_side_close(&x);
}

/*
 * srnic's XRC initiator across the wire: its SEND and READ go as XRC's
 * opcodes with the XRCETH naming the remote SRQ first (then the RETH);
 * the peer's XRC ACKNOWLEDGE and READ RESPONSE complete them.
 */
TEST_F(rcw, xrc_initiator_on_the_wire)
{
	uint32_t psn = W_PSN, mtu = mtu_bytes(self->e.port.active_mtu), srqn;
	struct xrc_side x = {};
	struct ibv_sge sge = { (uintptr_t)self->x.buf, 64, self->x.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct rcpkt r = { .ext_len = 4, .fill = 0x5a };
	struct answer a;
	struct ibv_wc wc;

	ASSERT_TRUE(self->e.dev.device_cap_flags & IBV_DEVICE_XRC) TH_LOG("srnic reports no XRC");
	ASSERT_EQ(0, xrc_side_open(self, &x, 1)) TH_LOG("%s", strerror(errno));
	wr.qp_type.xrc.remote_srqn = 0x42;
	ASSERT_EQ(0, ibv_post_send(x.qp, &wr, &bad));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_XRC | OP_SEND_ONLY, a.op);
	EXPECT_EQ(psn, a.psn);
	memcpy(&srqn, a.payload, 4);
	EXPECT_EQ(0x42, ntohl(srqn) & 0xffffff);
	EXPECT_EQ(4 + 64, a.plen);
	r.opcode = OP_XRC | OP_ACK;
	r.psn = psn;
	r.ext[0] = SYN_ACK | 0x1f;
	ASSERT_EQ(0, rc_send_to(self, &r, x.qp->qp_num));
	ASSERT_EQ(1, poll_one(x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(1, wc.wr_id);

	sge.addr = (uintptr_t)self->x.buf + 4 * mtu;
	sge.length = mtu;
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				   .wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 } };
	wr.qp_type.xrc.remote_srqn = 0x43;
	ASSERT_EQ(0, ibv_post_send(x.qp, &wr, &bad));
	ASSERT_EQ(0, next_answer(self->ans, &a, WC_MS));
	EXPECT_EQ(OP_XRC | OP_READ_REQ, a.op);
	EXPECT_EQ(psn + 1, a.psn);
	memcpy(&srqn, a.payload, 4);
	EXPECT_EQ(0x43, ntohl(srqn) & 0xffffff);
	EXPECT_EQ(4 + 16, a.plen);
	r = (struct rcpkt){ .opcode = OP_XRC | OP_READ_ONLY, .psn = psn + 1, .ext_len = 4,
			    .len = mtu, .fill = 0x5b };
	r.ext[0] = SYN_ACK | 0x1f;
	ASSERT_EQ(0, rc_send_to(self, &r, x.qp->qp_num));
	ASSERT_EQ(1, poll_one(x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(-1, all_eq(self->x.buf + 4 * mtu, mtu, 0x5b));
	xrc_side_close(&x);
}

/*
 * FENCE: a SEND posted with IBV_SEND_FENCE behind a READ whose response
 * has not come does not leave, nor does the WRITE behind it; the READ's
 * response lets both go, in order.
 */
TEST_F(rcw, fenced_send_waits_for_read)
{
	const uint8_t rd[] = { OP_READ_REQ }, after[] = { OP_SEND_ONLY, OP_WRITE_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 4 * mtu, mtu));
	wr_init(&wr, &sge, &self->x, IBV_WR_SEND, 2, 0, 64,
		IBV_SEND_SIGNALED | IBV_SEND_FENCE, NULL, 0, 0);
	ASSERT_EQ(0, ibv_post_send(self->x.qp, &wr, &bad));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 3, 0, 64));
	expect_requests(_metadata, self, rd, 1, psn);
	expect_no_answer(_metadata, self, W_PSN);
	peer_answer(_metadata, self, OP_READ_ONLY, SYN_ACK | 0x1f, psn, mtu);
	expect_done(_metadata, self, 1, 1);
	expect_requests(_metadata, self, after, 2, psn + 1);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 2, 0);
	expect_done(_metadata, self, 2, 2);
}

/*
 * An implied NAK: an ACK for the WRITE sent after a READ says that the
 * responder answered the READ before it (it answers in order), so the
 * READ's response was lost.  The READ goes again at once, not at its
 * timer (minutes here), and the WRITE after it (go-back-N); the same ACK
 * again, once they went, names nothing new and sends nothing.  The READ's
 * response then completes both, its data in place.
 */
TEST_F(rcw, lost_read_response_implied_nak)
{
	const uint8_t ops[] = { OP_READ_REQ, OP_WRITE_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	long long implied = counter("implied_nak_seq_err");

	ep_destroy(&self->x);
	rc_connect(_metadata, self, 26);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 4 * mtu, mtu));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 2, 0, 64));
	expect_requests(_metadata, self, ops, 2, psn);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 1, 0);
	expect_requests(_metadata, self, ops, 2, psn);
	EXPECT_EQ(implied + 1, counter("implied_nak_seq_err"));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 1, 0);
	expect_no_answer(_metadata, self, W_PSN);
	peer_read_only(_metadata, self, psn, mtu, 0x3c);
	expect_done(_metadata, self, 1, 2);
	EXPECT_EQ(-1, all_eq(self->x.buf + 4 * mtu, mtu, 0x3c));
	/* Read anew: the core keeps a read for a few milliseconds. */
	EXPECT_EQ(implied + 1, dev_counter_now(W_DEV, "implied_nak_seq_err"));
}

/*
 * A READ whose responses take longer than its timeout in all, but come a
 * packet at a time well within it (a slow responder): they hold the
 * timer, as an ACK would, so the READ is not asked for again.  It
 * completes with its data, and the next thing srnic sends is the SEND
 * posted after it, at the next PSN.
 */
TEST_F(rcw, read_responses_as_they_come_hold_the_timer)
{
	const uint8_t rd[] = { OP_READ_REQ }, send[] = { OP_SEND_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN, n = 8;
	long long retransmits = counter("retransmits");
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	ep_destroy(&self->x);
	/*
	 * 134 ms; the responses 50 ms apart, 400 ms in all (both stretched
	 * alike on the debug kernel, where one response can take longer to
	 * send than 50 ms).
	 */
	rc_connect(_metadata, self, scaled_qp_timeout(15));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 0, n * mtu));
	expect_requests(_metadata, self, rd, 1, psn);
	for (uint32_t i = 0; i < n; i++) {
		usleep(scaled_ms(50) * 1000);
		peer_read_resp(_metadata, self, !i ? OP_READ_FIRST : i < n - 1 ?
				OP_READ_MIDDLE : OP_READ_LAST, psn + i, mtu, 0x40 + i);
	}
	expect_done(_metadata, self, 1, 1);
	for (uint32_t i = 0; i < n; i++)
		EXPECT_EQ(-1, all_eq(self->x.buf + (size_t)i * mtu, mtu, 0x40 + i));
	wr_init(&wr, &sge, &self->x, IBV_WR_SEND, 2, 0, 64, IBV_SEND_SIGNALED, NULL, 0, 0);
	ASSERT_EQ(0, ibv_post_send(self->x.qp, &wr, &bad));
	expect_requests(_metadata, self, send, 1, psn + n);
	EXPECT_EQ(retransmits, counter("retransmits"));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + n, 0);
	expect_done(_metadata, self, 2, 1);
}

/*
 * While the head waits, the peer sends answers to what it was asked before
 * (rxe answers each copy a go-back-N sent, in full: here the first READ's
 * response again), 50 ms apart for three times the head's timeout: the
 * peer is working through them, with the head's answer behind, so the
 * head is not asked for again.  Answered at last, it completes with its
 * data and no retransmission, and the next thing srnic sends is the SEND
 * posted after it.  (With a timer that only the head's own responses
 * restarted, a slow rxe drew copy after copy until RETRY_EXC_ERR.)
 */
TEST_F(rcw, stale_answers_hold_the_timer)
{
	const uint8_t rd[] = { OP_READ_REQ }, send[] = { OP_SEND_ONLY };
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), psn = W_PSN;
	long long retransmits = counter("retransmits");
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	/*
	 * 134 ms; the stale answers 50 ms apart, 400 ms in all.  A slow
	 * kernel takes longer to send and to take each: all times scaled.
	 */
	ep_destroy(&self->x);
	rc_connect(_metadata, self, scaled_qp_timeout(15));
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 0, mtu));
	expect_requests(_metadata, self, rd, 1, psn);
	peer_read_resp(_metadata, self, OP_READ_ONLY, psn, mtu, 0x50);
	expect_done(_metadata, self, 1, 1);
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 2, mtu, mtu));
	expect_requests(_metadata, self, rd, 1, psn + 1);
	for (int i = 0; i < 8; i++) {
		usleep(scaled_ms(50) * 1000);
		peer_read_resp(_metadata, self, OP_READ_ONLY, psn, mtu, 0x50);
	}
	peer_read_resp(_metadata, self, OP_READ_ONLY, psn + 1, mtu, 0x51);
	expect_done(_metadata, self, 2, 1);
	EXPECT_EQ(-1, all_eq(self->x.buf, mtu, 0x50));
	EXPECT_EQ(-1, all_eq(self->x.buf + mtu, mtu, 0x51));
	wr_init(&wr, &sge, &self->x, IBV_WR_SEND, 3, 0, 64, IBV_SEND_SIGNALED, NULL, 0, 0);
	ASSERT_EQ(0, ibv_post_send(self->x.qp, &wr, &bad));
	expect_requests(_metadata, self, send, 1, psn + 2);
	EXPECT_EQ(retransmits, counter("retransmits"));
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, psn + 2, 0);
	expect_done(_metadata, self, 3, 1);
}

/*
 * srnic as the requester under seeded random answers: WRITEs, SENDs, READs
 * of several packets and atomics in flight (max_rd_atomic 4), and the
 * peer answering with ACKs, NAKs and RNR NAKs of any code, READ responses
 * of any place in a message, lengths past the READ's, atomic ACKs, at PSNs
 * around those srnic sent.  Whatever it makes of them: READ data and
 * atomic values land only in their own WQE's buffer (the rest keeps its
 * canary), every WQE completes once the answers stop (by its answer, or
 * retries exhausted and the rest flushed), and a new QP works.
 */
#define RA_READ_AT (1u * MiB)		/* READ k's buffer: RA_READ_AT + k * 16 KiB */
#define RA_ATOMIC_AT (2u * MiB)		/* atomic k's 8 bytes: RA_ATOMIC_AT + k * 64 */
#define RA_CANARY 0xa5
#define RA_WR 1000			/* the sends' first wr_id */

static void ra_post(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		    uint64_t wr_id, unsigned int r, uint32_t mtu)
{
	unsigned int k = wr_id % 4;

	switch (r % 4) {
	case 0:
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, wr_id,
				       RA_READ_AT + k * 16384, (k + 1) * mtu - 7));
		break;
	case 1:
		ASSERT_EQ(0, post_atomic(&self->x, r % 8 == 1 ? IBV_WR_ATOMIC_FETCH_AND_ADD :
						IBV_WR_ATOMIC_CMP_AND_SWP,
					 wr_id, RA_ATOMIC_AT + k * 64, 1, 2));
		break;
	case 2:
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, wr_id, 0, 1 + r % (3 * mtu)));
		break;
	default: {
		struct ibv_send_wr wr, *bad;
		struct ibv_sge sge;

		wr_init(&wr, &sge, &self->x, IBV_WR_SEND, wr_id, 0, 1 + r % (2 * mtu),
			IBV_SEND_SIGNALED, NULL, 0, 0);
		ASSERT_EQ(0, ibv_post_send(self->x.qp, &wr, &bad));
	}
	}
}

/* One random answer about PSN @near (one srnic sent lately). */
static void ra_answer(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		      uint32_t near, uint32_t mtu)
{
	static const uint8_t ops[] = { OP_ACK, OP_ACK, OP_READ_FIRST, OP_READ_MIDDLE,
				       OP_READ_LAST, OP_READ_ONLY, OP_ATOMIC_ACK };
	/* Mostly ACKs, RNR and sequence NAKs: an error NAK ends the connection. */
	static const uint8_t syns[] = { SYN_ACK | 0x1f, SYN_ACK, SYN_ACK | 3, 0x20, 0x3f,
					SYN_NAK_SEQ, SYN_NAK_SEQ, SYN_ACK | 0x1f, 0x9f,
					SYN_ACK | 0x1f, SYN_ACK | 7, SYN_NAK_SEQ, 0x21,
					SYN_ACK | 0x1f, SYN_ACK | 0x1f, SYN_NAK_INV,
					SYN_NAK_ACCESS, 0x63, 0x64 };
	unsigned int r = rand();
	struct rcpkt a = { .opcode = ops[r % sizeof(ops)], .fill = r >> 8,
			   .psn = (near - 2 + (r >> 4) % 5) & 0xffffff };
	uint64_t orig = rand();

	a.ext[0] = syns[(r >> 12) % sizeof(syns)];
	a.ext[3] = r >> 16;			/* MSN */
	a.ext_len = a.opcode == OP_READ_MIDDLE ? 0 : 4;
	if (a.opcode == OP_ATOMIC_ACK) {
		memcpy(a.ext + 4, &orig, 8);
		a.ext_len = 12;
	} else if (a.opcode != OP_ACK) {
		a.len = (r >> 20) % 4 ? mtu : (r >> 22) % (mtu + 64);
	}
	if ((r >> 24) % 16 == 0)
		a.opcode = r >> 8;		/* any opcode at all */
	ASSERT_EQ(0, rc_send_pkt(self, &a));
}

/* The READs' and atomics' buffers kept their canaries past their lengths. */
static void ra_canaries(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
			uint32_t mtu)
{
	for (unsigned int k = 0; k < 4; k++) {
		uint8_t *rd = self->x.buf + RA_READ_AT + k * 16384;
		uint8_t *at = self->x.buf + RA_ATOMIC_AT + k * 64;
		uint32_t len = (k + 1) * mtu - 7;

		EXPECT_EQ(-1, all_eq(rd + len, 16384 - len, RA_CANARY)) TH_LOG("READ %u", k);
		EXPECT_EQ(-1, all_eq(at + 8, 56, RA_CANARY)) TH_LOG("atomic %u", k);
	}
}

/* A new connection for the random answers, its buffers' canaries set. */
static void ra_connect(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self)
{
	ep_destroy(&self->x);
	rc_connect_rd(_metadata, self, 12, 4);
	memset(self->x.buf + RA_READ_AT, RA_CANARY, 4 * 16384);
	memset(self->x.buf + RA_ATOMIC_AT, RA_CANARY, 4 * 64);
}

TEST_F(rcw, random_answers_survived)
{
	unsigned int seed = getenv("SRNIC_ADV_SEED") ? atoi(getenv("SRNIC_ADV_SEED")) : 4791;
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu), seen[32] = { W_PSN }, nseen = 1;
	uint64_t posted = 0, done = 0, errors = 0, total = 0, conns = 1;
	const uint8_t wr1[] = { OP_WRITE_ONLY };
	struct ibv_wc wc[16];
	struct answer a;

	srand(seed);
	ra_connect(_metadata, self);
	/* Six seconds of answers (in the full tier), a few every millisecond: timers run out too. */
	for (uint64_t end = now_ms() + fuzz_budget(6000); now_ms() < end; usleep(250)) {
		int n = ibv_poll_cq(self->x.cq, 16, wc);

		/* Receives (a random answer may be a SEND) have wr_ids below RA_WR. */
		for (int k = 0; k < n; k++) {
			done += wc[k].wr_id >= RA_WR;
			errors += wc[k].wr_id >= RA_WR && wc[k].status != IBV_WC_SUCCESS;
		}
		/* An error ended the connection, every WQE flushed: a new one. */
		if (errors && done == posted) {
			ra_canaries(_metadata, self, mtu);
			ra_connect(_metadata, self);
			total += posted;
			posted = done = errors = 0;
			seen[0] = W_PSN;
			nseen = 1;
			conns++;
		}
		/* Eight WQEs in flight while the QP lives; the wr_id picks the buffer. */
		while (!errors && posted - done < 8)
			ra_post(_metadata, self, RA_WR + posted++, rand(), mtu);
		/* The PSNs of srnic's latest requests: the answers are about them. */
		while (!next_answer(self->ans, &a, 0))
			seen[nseen++ % 32] = a.psn;
		ra_answer(_metadata, self, seen[rand() % (nseen < 32 ? nseen : 32)], mtu);
	}
	TH_LOG("seed %u: %llu WQEs on %llu connections under random answers",
	       seed, (unsigned long long)(total + posted), (unsigned long long)conns);
	/* Silence: every WQE ends, answered or with its retries spent. */
	while (done < posted) {
		int n = poll_one(self->x.cq, wc, 6 * WC_MS);

		ASSERT_EQ(1, n) TH_LOG("%llu of %llu WQEs never completed",
				       (unsigned long long)(posted - done),
				       (unsigned long long)posted);
		done += wc[0].wr_id >= RA_WR;
	}
	ra_canaries(_metadata, self, mtu);
	/* A new connection works. */
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	while (!next_answer(self->ans, &a, 0))
		;
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 77, 0, 64));
	expect_requests(_metadata, self, wr1, 1, W_PSN);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	expect_done(_metadata, self, 77, 1);
}

/*
 * ---- A seeded stateful hostile peer ----
 *
 * The peer keeps a connection with srnic's RC QP and does real work on it
 * both ways, with a random temperament: it answers srnic's requests as
 * random_answers_survived does, sends requests of its own (READs of
 * memory it knows, WRITEs, SENDs; and READs past the MR, too many READs at
 * once, duplicates, PSNs ahead, a bad P_Key, SENDs too long, garbage),
 * datagrams too long for QP1 and for a UD QP, resets the connection and
 * connects it again to another QPN, and has srnic's UD QP send and its
 * buffer rewritten at once after each completion.  It checks every packet
 * srnic sends, not only these instances:
 * - its ICRC covers the bytes that left (a buffer rewritten after its
 *   completion, or memory a later request rewrote, breaks it);
 * - it goes to the connection's QPN, or to one of the last few (packets
 *   built before a reset may still be on their way);
 * - a request is its WQE's at that PSN (the PSNs follow from the WQEs'
 *   lengths): the opcode's kind, a READ REQUEST's range within its WQE's;
 * - a READ response is for a READ the peer sent on this connection, at
 *   one of its PSNs, with the bytes of that memory, which nobody writes.
 * At the end: the READs' buffers kept their canaries, every WQE
 * completed, QP1 and the UD QP are in RTS and receive, and a new
 * connection works.  SRNIC_ADV_SEED picks the seed; it is printed.
 */
#define HP_RO (4u * MiB)		/* what the peer READs: rd_byte(offset), never written */
#define HP_RO_LEN (4u * MiB)
#define HP_WR (12u * MiB)		/* what the peer's WRITEs change */
#define HP_SRC (3u * MiB)		/* srnic's WRITEs and SENDs: 16 KiB each, by wr_id % 8 */
#define HP_MAX_WQE 4096
#define HP_MAX_RD 512
#define HP_OLD 4			/* earlier connections' QPNs still allowed */

enum { HP_READ, HP_ATOMIC, HP_WRITE, HP_SEND };

struct hp_wqe {
	uint8_t kind;
	uint32_t first, npsn, len;
	uint64_t raddr;
	size_t off;			/* its local buffer */
};

struct hp_read {
	uint32_t psn, npsn;
	uint64_t off;			/* of its first byte in srnic's buffer */
};

struct hp {
	uint32_t mtu, qpn, old[HP_OLD], conns;
	struct hp_wqe wqe[HP_MAX_WQE];	/* srnic's WQEs on this connection, posted */
	uint32_t nwqe, next_psn;
	uint64_t posted, done, total;
	int errors;
	uint32_t ppsn;			/* the PSN srnic's responder expects, as the peer sees it */
	struct hp_read rd[HP_MAX_RD];	/* the peer's READs on this connection */
	uint32_t nrd;
	uint32_t seen[32], nseen;
	uint64_t pkts, bad_icrc, stray, wrong_req, wrong_resp, bad_bytes;
	struct ep u;			/* srnic's UD QP */
};

static uint32_t hp_npsn(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

static int32_t psn_sub(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* srnic posts a WQE of a random kind; it is recorded with its PSNs. */
static void hp_post(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self, struct hp *h,
		    unsigned int r)
{
	uint64_t wr_id = RA_WR + h->posted;
	unsigned int k = wr_id % 4;
	struct hp_wqe *q = &h->wqe[h->nwqe];
	size_t off;

	q->kind = r % 4;
	switch (q->kind) {
	case HP_READ:
		off = RA_READ_AT + k * 16384;
		q->len = (k + 1) * h->mtu - 7;
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, wr_id, off, q->len));
		break;
	case HP_ATOMIC:
		off = RA_ATOMIC_AT + k * 64;
		q->len = 8;
		ASSERT_EQ(0, post_atomic(&self->x, r % 8 == 1 ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					 IBV_WR_ATOMIC_CMP_AND_SWP, wr_id, off, 1, 2));
		break;
	case HP_WRITE:
		off = HP_SRC + (wr_id % 8) * 16384;
		q->len = 1 + r % (3 * h->mtu);
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, wr_id, off, q->len));
		break;
	default: {
		struct ibv_send_wr wr, *bad;
		struct ibv_sge sge;

		off = HP_SRC + (wr_id % 8) * 16384;
		q->len = 1 + r % (2 * h->mtu);
		wr_init(&wr, &sge, &self->x, IBV_WR_SEND, wr_id, off, q->len, IBV_SEND_SIGNALED,
			NULL, 0, 0);
		ASSERT_EQ(0, ibv_post_send(self->x.qp, &wr, &bad));
	}
	}
	q->raddr = 0x10000 + off;	/* post_rdma()'s and post_atomic()'s remote address */
	q->off = off;
	q->first = h->next_psn;
	q->npsn = q->kind == HP_ATOMIC ? 1 : hp_npsn(q->len, h->mtu);
	h->next_psn = (h->next_psn + q->npsn) & 0xffffff;
	h->nwqe++;
	h->posted++;
}

/* Whether srnic's request packet @b (@n bytes, from next_packet()) is its WQE's at its PSN. */
static bool hp_request_ok(const struct hp *h, const uint8_t *b, size_t n)
{
	uint8_t op = b[28] & 0x1f;
	uint32_t psn = (uint32_t)b[37] << 16 | b[38] << 8 | b[39];
	const struct hp_wqe *q = NULL;
	uint64_t va = 0;

	for (uint32_t i = h->nwqe; i-- > 0;)
		if (psn_sub(psn, h->wqe[i].first) >= 0 &&
		    psn_sub(psn, h->wqe[i].first) < (int32_t)h->wqe[i].npsn) {
			q = &h->wqe[i];
			break;
		}
	if (!q)
		return false;
	if (n >= 28 + 12 + 8)
		for (int i = 0; i < 8; i++)
			va = va << 8 | b[40 + i];
	switch (op) {
	case OP_READ_REQ: {
		uint32_t len = n >= 28 + 12 + 16 ?
			(uint32_t)b[52] << 24 | b[53] << 16 | b[54] << 8 | b[55] : 0;

		return q->kind == HP_READ &&
		       va == q->raddr + (uint64_t)psn_sub(psn, q->first) * h->mtu &&
		       va + len == q->raddr + q->len;
	}
	case OP_CMP_SWAP:
	case OP_FETCH_ADD:
		return q->kind == HP_ATOMIC && va == q->raddr;
	case OP_WRITE_FIRST:
	case OP_WRITE_ONLY:
		return q->kind == HP_WRITE && psn == q->first && va == q->raddr;
	case OP_WRITE_MIDDLE:
	case OP_WRITE_LAST:
		return q->kind == HP_WRITE;
	case OP_SEND_FIRST:
	case OP_SEND_MIDDLE:
	case OP_SEND_LAST:
	case OP_SEND_ONLY:
		return q->kind == HP_SEND;
	default:
		return false;
	}
}

/*
 * Whether srnic's READ response @b is for one of the peer's READs on this
 * connection, at one of its PSNs, carrying that memory; *@bytes_ok says
 * whether its bytes are right.
 */
static bool hp_response_ok(const struct hp *h, FIXTURE_DATA(rcw) *self, const uint8_t *b,
			   size_t n, bool *bytes_ok)
{
	uint8_t op = b[28] & 0x1f;
	uint32_t psn = (uint32_t)b[37] << 16 | b[38] << 8 | b[39];
	uint32_t hdr = 28 + 12 + (op == OP_READ_MIDDLE ? 0 : 4), pad = b[29] >> 4 & 3;
	uint32_t plen = n - hdr - pad - 4;

	*bytes_ok = true;
	for (uint32_t i = h->nrd; i-- > 0;) {
		const struct hp_read *r = &h->rd[i];
		int32_t d = psn_sub(psn, r->psn);

		if (d < 0 || d >= (int32_t)r->npsn)
			continue;
		for (uint32_t j = 0; j < plen; j++)
			if (b[hdr + j] != rd_byte(r->off + (uint64_t)d * h->mtu + j)) {
				*bytes_ok = false;
				break;
			}
		(void)self;
		return true;
	}
	return false;
}

/* Every packet srnic sent since the last look, checked; the requests' PSNs kept in seen[]. */
static void hp_drain(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self, struct hp *h,
		     int ms)
{
	static uint8_t b[9000];
	size_t n;

	while ((n = next_packet(self->ans, b, sizeof(b), ms))) {
		uint32_t dqpn = (uint32_t)b[33] << 16 | b[34] << 8 | b[35];
		uint32_t psn = (uint32_t)b[37] << 16 | b[38] << 8 | b[39];
		uint8_t op = b[28];
		bool old = false, bytes_ok;

		ms = 0;
		h->pkts++;
		if (n < 28 + 12 + 4 || icrc(b, n) != get_le32(b + n - 4)) {
			h->bad_icrc++;
			TH_LOG("op %#x PSN %#x to QPN %#x: its ICRC does not cover its bytes", op,
			       psn, dqpn);
			continue;
		}
		if (op == 0x64 && dqpn == W_PQPN + 3)
			continue;		/* the UD QP's datagram: its ICRC was the check */
		for (int i = 0; i < HP_OLD; i++)
			old |= h->old[i] && dqpn == h->old[i];
		if (dqpn != h->qpn) {
			if (!old) {
				h->stray++;
				TH_LOG("op %#x PSN %#x to QPN %#x, no connection's", op, psn, dqpn);
			}
			continue;
		}
		if (op < OP_READ_FIRST || (op > OP_READ_ONLY && op != OP_ACK &&
					   op != OP_ATOMIC_ACK)) {
			h->seen[h->nseen++ % 32] = psn;
			if (!hp_request_ok(h, b, n)) {
				h->wrong_req++;
				TH_LOG("request %#x PSN %#x is not its WQE's", op, psn);
			}
		} else if (op >= OP_READ_FIRST && op <= OP_READ_ONLY && n > 28 + 12 + 4 + 4) {
			if (!hp_response_ok(h, self, b, n, &bytes_ok)) {
				h->wrong_resp++;
				TH_LOG("READ response %#x PSN %#x for no READ of the peer", op, psn);
			} else if (!bytes_ok) {
				h->bad_bytes++;
				TH_LOG("READ response %#x PSN %#x: not the memory's bytes", op, psn);
			}
		} else if (op == OP_ATOMIC_ACK) {
			h->wrong_resp++;
			TH_LOG("an ATOMIC ACK for PSN %#x: the peer sent no atomic", psn);
		}
	}
}

/*
 * A new connection of srnic's QP to the next QPN: the QP reset (what it
 * had posted is gone, without completions) and connected again.
 */
static void hp_connect(struct __test_metadata *_metadata, FIXTURE_DATA(rcw) *self,
		       struct hp *h)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS, .sq_psn = W_PSN, .timeout = 12,
				   .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	struct ibv_wc wc[16];

	memmove(h->old + 1, h->old, (HP_OLD - 1) * sizeof(h->old[0]));
	h->old[0] = h->qpn;
	h->qpn = W_PQPN + 0x1000 + h->conns++;
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &a, IBV_QP_STATE));
	/* After the reset nothing completes: what the CQ holds is all. */
	while (ibv_poll_cq(self->x.cq, 16, wc) > 0)
		;
	memset(self->x.buf + RA_READ_AT, RA_CANARY, 4 * 16384);
	memset(self->x.buf + RA_ATOMIC_AT, RA_CANARY, 4 * 64);
	ASSERT_EQ(0, ep_to_init(&self->x));
	ASSERT_EQ(0, ep_to_rtr(&self->x, h->qpn));
	ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN |
				   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC));
	for (int k = 0; k < 32; k++)
		ASSERT_EQ(0, post_recv(&self->x, k, (size_t)k * 4096, 4096));
	h->total += h->posted;
	h->posted = h->done = h->errors = 0;
	h->nwqe = h->nrd = h->nseen = 0;
	h->next_psn = h->ppsn = W_PSN;
	h->seen[h->nseen++] = W_PSN;
}

/* The peer's READ of @len bytes at @off of the memory it knows, at the PSN srnic expects. */
static void hp_read(FIXTURE_DATA(rcw) *self, struct hp *h, uint64_t off, uint32_t len)
{
	struct rcpkt r = rc_reth(OP_READ_REQ, h->ppsn, (uintptr_t)self->x.buf + off,
				 self->x.mr->rkey, len);

	if (h->nrd < HP_MAX_RD)
		h->rd[h->nrd++] = (struct hp_read){ h->ppsn, hp_npsn(len, h->mtu), off };
	rc_send_to(self, &r, self->x.qp->qp_num);
	h->ppsn = (h->ppsn + hp_npsn(len, h->mtu)) & 0xffffff;
}

/* One of the peer's own requests, or a hostile packet of a class the issue names. */
static void hp_request(FIXTURE_DATA(rcw) *self, struct hp *h, unsigned int r)
{
	uint32_t mtu = h->mtu, qpn = self->x.qp->qp_num;
	uint64_t base = (uintptr_t)self->x.buf;
	struct rcpkt p;

	switch (r % 12) {
	case 0: case 1: case 2:		/* a READ of the memory it knows */
		hp_read(self, h, HP_RO + (r >> 8) % (HP_RO_LEN - 65536), 1 + (r >> 4) % 65536);
		break;
	case 3:				/* a WRITE */
		p = rc_reth(OP_WRITE_ONLY, h->ppsn, base + HP_WR + (r >> 8) % 65536,
			    self->x.mr->rkey, 1 + (r >> 4) % mtu);
		p.len = be32toh(*(uint32_t *)(p.ext + 12));
		p.fill = r;
		rc_send_to(self, &p, qpn);
		h->ppsn = (h->ppsn + 1) & 0xffffff;
		break;
	case 4:				/* a SEND */
		p = rc_send(h->ppsn, (r >> 4) % mtu, r);
		rc_send_to(self, &p, qpn);
		h->ppsn = (h->ppsn + 1) & 0xffffff;
		break;
	case 5:				/* a READ past the MR's end: NAK, no data */
		p = rc_reth(OP_READ_REQ, h->ppsn, base + W_BUF - 100, self->x.mr->rkey, 4096);
		rc_send_to(self, &p, qpn);
		break;
	case 6:				/* too many READs: one long, 20 behind it */
		hp_read(self, h, HP_RO, 1 * MiB);
		for (int i = 0; i < 20; i++)
			hp_read(self, h, HP_RO + MiB + i * mtu, mtu);
		break;
	case 7:				/* a READ again (go-back-N), or one ahead */
		if (h->nrd && r & 0x100) {
			const struct hp_read *d = &h->rd[(r >> 9) % h->nrd];

			p = rc_reth(OP_READ_REQ, d->psn, base + d->off, self->x.mr->rkey,
				    d->npsn * mtu);
		} else {
			p = rc_send((h->ppsn + 1 + (r >> 9) % 8) & 0xffffff, 16, r);
		}
		rc_send_to(self, &p, qpn);
		break;
	case 8:				/* a READ of another partition */
		p = rc_reth(OP_READ_REQ, h->ppsn, base + HP_RO, self->x.mr->rkey, mtu);
		rc_send_pkey(self, &p, 0x8001);
		break;
	case 9: {			/* a SEND longer than the receive buffers */
		for (int i = 0; i < 5; i++) {
			p = rc_send(h->ppsn, mtu, r);
			p.opcode = i == 0 ? OP_SEND_FIRST : i == 4 ? OP_SEND_LAST : OP_SEND_MIDDLE;
			rc_send_to(self, &p, qpn);
			h->ppsn = (h->ppsn + 1) & 0xffffff;
		}
		break;
	}
	case 10: {			/* datagrams too long for QP1 and for the UD QP */
		struct dgram d = { .opcode = 0x64, .pad = -1, .dqpn = r & 0x100 ? 1 :
				   h->u.qp->qp_num, .qkey = r & 0x100 ? W_GSI_QKEY : QKEY,
				   .len = 256 + (r >> 9) % 1800, .fill = r };

		send_pkt(self->raw, &d);
		break;
	}
	default:			/* anything at the expected PSN */
		p = (struct rcpkt){ .opcode = r >> 8, .psn = h->ppsn, .len = (r >> 16) % 64,
				    .ext_len = (r >> 22) % 5 * 4, .fill = r };
		rc_send_to(self, &p, qpn);
	}
}

/* srnic's UD QP sends one datagram and its buffer is rewritten once it completes. */
static void hp_ud_send(struct __test_metadata *_metadata, struct hp *h, unsigned int r)
{
	uint32_t len = 512 + r % (h->mtu - 511);
	struct ibv_wc wc;

	for (uint32_t i = 0; i < len; i++)
		h->u.buf[65536 + i] = zc_byte(i + r);
	ASSERT_EQ(0, post_send1(&h->u, IBV_WR_SEND, 1, 65536, len, IBV_SEND_SIGNALED, NULL, 0, 0));
	ASSERT_EQ(1, poll_one(h->u.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	memset(h->u.buf + 65536, r, len);
}

TEST_F_TIMEOUT(rcw, stateful_hostile_peer_seeded, 600)
{
	unsigned int seed = getenv("SRNIC_ADV_SEED") ? atoi(getenv("SRNIC_ADV_SEED")) :
			    (unsigned int)time(NULL);
	struct qp_opts uo = qp_defaults(&self->e, IBV_QPT_UD);
	static struct hp h;
	struct ibv_wc wc[16];
	const uint8_t wr1[] = { OP_WRITE_ONLY };
	struct answer a;
	struct dgram d;

	memset(&h, 0, sizeof(h));
	h.mtu = mtu_bytes(self->e.port.active_mtu);
	TH_LOG("seed %u (SRNIC_ADV_SEED=%u to run it again)", seed, seed);
	srand(seed);
	for (size_t i = HP_RO; i < HP_RO + HP_RO_LEN; i++)
		self->x.buf[i] = rd_byte(i);
	uo.buf_len = 128 * KiB;
	ASSERT_EQ(0, ep_create(&self->e, &uo, &h.u));
	h.u.dgid = peer_gid();
	ASSERT_EQ(0, ep_connect(&h.u, W_PQPN + 3));
	for (int k = 0; k < 8; k++)
		ASSERT_EQ(0, post_recv(&h.u, k, k * 4096, 1024));
	h.qpn = W_PQPN;
	hp_connect(_metadata, self, &h);
	for (uint64_t end = now_ms() + fuzz_budget(20000); now_ms() < end; usleep(200)) {
		unsigned int r = rand();
		int n = ibv_poll_cq(self->x.cq, 16, wc);

		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id < RA_WR) {	/* the peer's SEND, received */
				if (wc[k].status == IBV_WC_SUCCESS)
					post_recv(&self->x, wc[k].wr_id, wc[k].wr_id * 4096, 4096);
				continue;
			}
			h.done++;
			h.errors += wc[k].status != IBV_WC_SUCCESS;
			/* A WRITE's or SEND's buffer is the application's again: rewritten. */
			if (wc[k].status == IBV_WC_SUCCESS && wc[k].wr_id - RA_WR < h.nwqe &&
			    h.wqe[wc[k].wr_id - RA_WR].kind >= HP_WRITE)
				memset(self->x.buf + h.wqe[wc[k].wr_id - RA_WR].off, rand(),
				       h.wqe[wc[k].wr_id - RA_WR].len);
		}
		n = ibv_poll_cq(h.u.cq, 16, wc);
		for (int k = 0; k < n; k++)
			post_recv(&h.u, wc[k].wr_id, wc[k].wr_id * 4096, 1024);
		hp_drain(_metadata, self, &h, 0);
		/* In error, every WQE flushed: a new connection; now and then one anyway. */
		if (((h.errors || qp_state(self->x.qp) == IBV_QPS_ERR) && h.done == h.posted) ||
		    r % 64 == 0) {
			ra_canaries(_metadata, self, h.mtu);
			hp_connect(_metadata, self, &h);
			continue;
		}
		while (!h.errors && h.posted - h.done < 8 && h.nwqe < HP_MAX_WQE)
			hp_post(_metadata, self, &h, rand());
		switch (r >> 8 & 3) {
		case 0:
		case 1:
			ra_answer(_metadata, self, h.seen[rand() % (h.nseen < 32 ? h.nseen : 32)],
				  h.mtu);
			break;
		case 2:
			hp_request(self, &h, rand());
			break;
		default:
			if ((r >> 10) % 8 == 0)
				hp_ud_send(_metadata, &h, rand());
		}
	}
	/* Silence: every WQE ends, answered or with its retries spent. */
	while (h.done < h.posted) {
		int n = poll_one(self->x.cq, wc, 6 * WC_MS);

		ASSERT_EQ(1, n) TH_LOG("%llu of %llu WQEs never completed",
				       (unsigned long long)(h.posted - h.done),
				       (unsigned long long)h.posted);
		h.done += wc[0].wr_id >= RA_WR;
	}
	hp_drain(_metadata, self, &h, 200);
	TH_LOG("seed %u: %llu WQEs on %u connections, %llu packets of srnic's checked",
	       seed, (unsigned long long)(h.total + h.posted), h.conns,
	       (unsigned long long)h.pkts);
	EXPECT_EQ(0u, h.bad_icrc);
	EXPECT_EQ(0u, h.stray);
	EXPECT_EQ(0u, h.wrong_req);
	EXPECT_EQ(0u, h.wrong_resp);
	EXPECT_EQ(0u, h.bad_bytes);
	ra_canaries(_metadata, self, h.mtu);
	/* QP1 and the UD QP go on: a datagram to the UD QP is received. */
	EXPECT_TRUE(qp1_in("RTS")) TH_LOG("QP1 left RTS");
	EXPECT_EQ(IBV_QPS_RTS, qp_state(h.u.qp));
	while (ibv_poll_cq(h.u.cq, 16, wc) > 0)
		;
	d = (struct dgram){ .opcode = 0x64, .pad = -1, .dqpn = h.u.qp->qp_num, .qkey = QKEY,
			    .len = 100, .fill = 0x77 };
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	ASSERT_EQ(1, poll_one(h.u.cq, wc, WC_MS)) TH_LOG("the UD QP receives nothing");
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	ep_destroy(&h.u);
	/* A new connection works. */
	ep_destroy(&self->x);
	rc_connect(_metadata, self, 20);
	while (!next_answer(self->ans, &a, 0))
		;
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 77, 0, 64));
	expect_requests(_metadata, self, wr1, 1, W_PSN);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	expect_done(_metadata, self, 77, 1);
}

/*
 * A child's flood of READ responses and ACKs for @ms, at the QPN the parent
 * keeps in *@qpn (its QP of the moment) and the seven before it.
 */
static void flood_answers(FIXTURE_DATA(rcw) *self, volatile uint32_t *qpn, uint32_t mtu,
			  uint64_t ms)
{
	static const uint8_t ops[] = { OP_ACK, OP_READ_ONLY, OP_READ_FIRST, OP_READ_MIDDLE };

	for (uint64_t end = now_ms() + ms, i = 0; now_ms() < end; i++) {
		uint8_t op = ops[i % sizeof(ops)];
		struct rcpkt r = { .opcode = op, .psn = W_PSN + i % 4,
				   .ext_len = op == OP_READ_MIDDLE ? 0 : 4,
				   .len = op == OP_ACK ? 0 : op == OP_READ_ONLY ? 64 : mtu,
				   .fill = i };

		r.ext[0] = SYN_ACK | 0x1f;
		if (rc_send_to(self, &r, *qpn - i / sizeof(ops) % 8))
			_exit(1);
	}
	_exit(0);
}

/*
 * A peer flooding READ responses and ACKs at the numbers of QPs that are
 * destroyed and made again meanwhile, each with a READ in flight, hurts
 * nothing (the debug kernel's KASAN and lockdep watch the receive path);
 * what finds no QP is dropped and counted, and a new connection works.
 */
TEST_F(rcw, answers_flood_qps_coming_and_going)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	volatile uint32_t *qpn;
	long long drop0 = counter("rx_dropped");
	const uint8_t wr1[] = { OP_WRITE_ONLY };
	int rounds = 0, st = -1;
	struct answer a;
	pid_t pid;

	qpn = mmap(NULL, sizeof(*qpn), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, qpn);
	*qpn = self->x.qp->qp_num;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		flood_answers(self, qpn, mtu, 3000);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_READ, 1, 0, 64));
		while (!next_answer(self->ans, &a, 1))
			;
		ep_destroy(&self->x);
		rc_connect(_metadata, self, 0);
		*qpn = self->x.qp->qp_num;
		rounds++;
	}
	munmap((void *)qpn, sizeof(*qpn));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TH_LOG("%d QPs made and destroyed under the flood", rounds);
	EXPECT_LT(1, rounds);
	EXPECT_LT(drop0, counter("rx_dropped"));
	while (!next_answer(self->ans, &a, 0))
		;
	ASSERT_EQ(0, post_rdma(&self->x, IBV_WR_RDMA_WRITE, 77, 0, 64));
	expect_requests(_metadata, self, wr1, 1, W_PSN);
	peer_answer(_metadata, self, OP_ACK, SYN_ACK | 0x1f, W_PSN, 0);
	expect_done(_metadata, self, 77, 1);
}

/* ---- multicast (fixture wire) ---- */

#define W_GROUP "239.77.0.5"

static union ibv_gid w_group_gid(const char *addr)
{
	union ibv_gid g = { .raw = { [10] = 0xff, [11] = 0xff } };

	inet_pton(AF_INET, addr, g.raw + 12);
	return g;
}

/*
 * Datagrams to a group from the wire reach the QPs attached to it, and
 * only with QPN 0xFFFFFF and the QP's Q_Key; nothing after detaching.
 */
TEST_F(wire, multicast_received_by_attached_qps)
{
	union ibv_gid g = w_group_gid(W_GROUP);
	struct dgram d = good(&self->x, 200, 0x61);
	uint8_t grp[4];
	struct ibv_wc wc;

	struct in_addr peer;

	inet_pton(AF_INET, W_PEER, &peer);
	ASSERT_EQ(0, setsockopt(self->raw, IPPROTO_IP, IP_MULTICAST_IF, &peer, sizeof(peer)));
	ASSERT_EQ(0, ibv_attach_mcast(self->x.qp, &g, 0));
	d.daddr = W_GROUP;
	d.dqpn = 0xffffff;
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS)) TH_LOG("nothing delivered; rx_dropped %lld", counter("rx_dropped"));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(40 + 200u, wc.byte_len);
	EXPECT_EQ(W_SQP, wc.src_qp);
	EXPECT_EQ(-1, all_eq(self->x.buf + wc.wr_id * 4096 + 40, 200, 0x61));
	/* The GRH's destination: the group's address. */
	inet_pton(AF_INET, W_GROUP, grp);
	EXPECT_EQ(0, memcmp(self->x.buf + wc.wr_id * 4096 + 36, grp, 4));
	ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));

	d.dqpn = self->x.qp->qp_num;		/* a QPN of ours, to a group */
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	d.dqpn = 0xffffff;
	d.qkey = W_QKEY + 1;			/* the wrong Q_Key */
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	d.qkey = W_QKEY;
	d.daddr = "239.77.0.6";			/* a group nobody joined */
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	ASSERT_EQ(0, ibv_detach_mcast(self->x.qp, &g, 0));
	d.daddr = W_GROUP;			/* no longer attached */
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	expect_sentinel_first(_metadata, self);
}

/* A datagram srnic sends to a group goes onto the wire as the spec has it. */
TEST_F(wire, multicast_sent_to_the_group)
{
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(4791) };
	union ibv_gid g = w_group_gid(W_GROUP);
	struct ip_mreq mr = {};
	struct ibv_send_wr wr, *bad;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint8_t b[2048];
	struct pollfd pfd;
	uint32_t qpn = self->x.qp->qp_num;
	int u;
	ssize_t n;

	ASSERT_EQ(0, ipv4_gid(&self->e));
	u = peer_socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, u);
	ASSERT_EQ(0, bind(u, (struct sockaddr *)&at, sizeof(at)));
	inet_pton(AF_INET, W_GROUP, &mr.imr_multiaddr);
	inet_pton(AF_INET, W_PEER, &mr.imr_interface);
	ASSERT_EQ(0, setsockopt(u, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)));
	aa = ah_to_self(&self->e);
	aa.grh.dgid = g;
	ah = ibv_create_ah(self->e.pd, &aa);
	ASSERT_NE(NULL, ah) TH_LOG("AH to " W_GROUP ": %s", strerror(errno));
	fill(self->x.buf + BUF_LEN - 4096, 300, 9);
	wr_init(&wr, &sge, &self->x, IBV_WR_SEND, 1, BUF_LEN - 4096, 300,
		IBV_SEND_SIGNALED, NULL, 0, 0);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = W_QKEY;
	ASSERT_EQ(0, ibv_post_send(self->x.qp, &wr, &bad));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	pfd = (struct pollfd){ .fd = u, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, WC_MS)) TH_LOG("nothing reached the group");
	n = recv(u, b, sizeof(b), 0);
	ASSERT_EQ(12 + 8 + 300 + 4, n);
	EXPECT_EQ(0x64, b[0]);					/* UD SEND ONLY */
	EXPECT_EQ(0xffffffu, (uint32_t)b[5] << 16 | b[6] << 8 | b[7]);
	EXPECT_EQ(W_QKEY, (uint32_t)b[12] << 24 | b[13] << 16 | b[14] << 8 | b[15]);
	EXPECT_EQ(qpn, (uint32_t)b[17] << 16 | b[18] << 8 | b[19]);
	EXPECT_EQ(-1, verify(b + 20, 300, 9));
	ibv_destroy_ah(ah);
	close(u);
}

TEST_HARNESS_MAIN
