/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Helpers shared by the VM suites that go through libibverbs. */
#ifndef SRNIC_TEST_H
#define SRNIC_TEST_H

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "uverbs_raw.h"

/*
 * A time limit chosen for Debian's kernel, stretched by SRNIC_TIME_SCALE:
 * on the debug kernel (make check-debug) every system call is many times
 * slower.
 */
static inline uint64_t scaled_ms(uint64_t ms)
{
	const char *s = getenv("SRNIC_TIME_SCALE");

	return s && atoi(s) > 0 ? ms * atoi(s) : ms;
}

/*
 * A QP's local ACK timeout exponent (4.096 us << @t) stretched as
 * scaled_ms() stretches a time limit: by the next power of two of
 * SRNIC_TIME_SCALE, at most the largest, 31.
 */
static inline uint8_t scaled_qp_timeout(uint8_t t)
{
	uint64_t scale = scaled_ms(1);

	while (scale > 1 && t < 31) {
		t++;
		scale = (scale + 1) / 2;
	}
	return t;
}

/*
 * The one wait for "nothing happens", of last resort: 300 ms, scaled.
 * Wherever one can exist, a check that something does not arrive is a
 * sentinel instead: a marker sent after what must not arrive, ordered
 * after it, whose arrival with nothing before it proves it (traffic.h,
 * wire_test.c).  This is for what nothing can be ordered after: events on
 * a channel, a QP in error or destroyed, a sender in another thread.
 */
static inline int quiet_ms(void)
{
	return (int)scaled_ms(300);
}

/*
 * The budget of a fuzzer, flood or soak loop (rounds, packets, seconds),
 * written at make check-full's size (SRNIC_TIER=full).  make check, the
 * short tier, runs a quarter of it: every path once, not for long.
 * SRNIC_FUZZ_SCALE, a percentage, sets any other share.  Never below 1.
 */
static inline uint64_t fuzz_budget(uint64_t full)
{
	const char *s = getenv("SRNIC_FUZZ_SCALE"), *t = getenv("SRNIC_TIER");
	uint64_t pct = s && atoi(s) > 0 ? (uint64_t)atoi(s) :
		       t && !strcmp(t, "full") ? 100 : 25;

	return full * pct / 100 ?: 1;
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* A seeded generator: runs are reproducible from their seed. */
static inline uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The seed of a random test: SRNIC_ADV_SEED, or one from the clock; never 0. */
static inline uint64_t srnic_test_seed(void)
{
	const char *s = getenv("SRNIC_ADV_SEED");
	uint64_t seed = s && *s ? strtoull(s, NULL, 0) :
				  (uint64_t)time(NULL) * 2654435761u;

	return seed | 1;	/* xorshift never leaves 0 */
}

/* Runs a shell command quietly; returns its exit status (or -1). */
static inline int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* Like sh() but with stderr captured into @err (for error text checks). */
static inline int sh_err(char *err, size_t len, const char *fmt, ...)
{
	char cmd[1024], full[1200];
	va_list ap;
	FILE *f;
	size_t n;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s 2>&1 >/dev/null", cmd);
	f = popen(full, "r");
	if (!f)
		return -1;
	n = fread(err, 1, len - 1, f);
	err[n] = 0;
	st = pclose(f);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/*
 * Makes srnic device @dev on @netdev and removes it again, @max times or
 * for @budget_ms (scaled), whichever ends first; how many makes succeeded
 * in *@made.  Returns the rounds: a debug kernel does far fewer.
 */
static inline int link_churn(const char *dev, const char *netdev, int max,
			     uint64_t budget_ms, int *made)
{
	uint64_t end = now_ms() + scaled_ms(budget_ms);
	int i;

	*made = 0;
	for (i = 0; i < max && (!i || now_ms() < end); i++) {
		*made += !sh("rdma link add %s type srnic netdev %s", dev, netdev);
		sh("rdma link del %s 2>/dev/null", dev);
	}
	return i;
}

static inline struct ibv_device *find_ibv_device(struct ibv_device **list,
						 const char *name)
{
	for (; list && *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

/* Opens the named device through libibverbs and its provider. */
static inline struct ibv_context *open_named(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = find_ibv_device(list, name);
	struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;

	ibv_free_device_list(list);
	return ctx;
}

static inline int ibdev_exists(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	return access(path, F_OK) == 0;
}

/* Does /sys/class/infiniband/@dev/@file's first line hold @what? */
static inline int ibdev_file_has(const char *dev, const char *file, const char *what)
{
	char path[256], buf[128] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, what) != NULL;
}

/* The core has filled its RoCE GIDs (from a workqueue). */
static inline int gid_ready(const char *dev)
{
	return ibdev_file_has(dev, "ports/1/gids/0", "fe80");
}

static inline int port_active(const char *dev)
{
	return ibdev_file_has(dev, "ports/1/state", "ACTIVE");
}

/*
 * Waits, at most @ms, for a condition the kernel completes asynchronously
 * (e.g. a queued device unregistration).  Polls the state itself, so the
 * result never depends on timing when the condition is reached.
 */
static inline int wait_until(int (*cond)(const char *), const char *arg,
			     int want, int ms)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int waited = 0; waited <= ms; waited += 10) {
		if (!!cond(arg) == want)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/*
 * The pids of device @dev's engine threads, srnic/<dev>/N (as the kernel
 * keeps a thread's name: 15 characters at most), @max at most; how many.
 */
static inline int engine_pids(const char *dev, pid_t *pids, int max)
{
	char pre[64], comm[64], path[300];
	struct dirent *d;
	int n = 0;
	DIR *dir;
	FILE *f;

	snprintf(pre, sizeof(pre), "srnic/%s/", dev);
	pre[15] = 0;
	dir = opendir("/proc");
	while (dir && n < max && (d = readdir(dir))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, pre, strlen(pre)))
			pids[n++] = atoi(d->d_name);
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return n;
}

/* Waits, at most @ms, for the next async event of @type, skipping others. */
static inline int wait_async_event(struct ibv_context *ctx,
				   enum ibv_event_type type, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	while (poll(&pfd, 1, ms) == 1) {
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		enum ibv_event_type got = ev.event_type;

		ibv_ack_async_event(&ev);
		if (got == type)
			return 1;
	}
	return 0;
}

/* ---- debugfs of the device under test ---- */

static inline const char *dbg_path(const char *file)
{
	static char path[256];

	snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s/%s",
		 srnic_test_dev(), file);
	return path;
}

/* A counter of the first line of debugfs "engine" ("key value ..."), or -1. */
static inline long long engine_stat(const char *key)
{
	char path[256], line[1024], *tok, *save = NULL;
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s/engine",
		 srnic_test_dev());
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		for (tok = strtok_r(line, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save)) {
			char *val = strtok_r(NULL, " \n", &save);

			if (val && !strcmp(tok, key)) {
				v = strtoll(val, NULL, 0);
				break;
			}
		}
	fclose(f);
	return v;
}

/* The whole of a (debugfs) file, NUL-terminated; NULL on error. */
static inline char *slurp(const char *path)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	/* Small reads on purpose: every read() resumes the seq_file. */
	while ((n = read(fd, buf + len, 4000)) > 0) {
		len += n;
		if (cap - len < 4001) {
			char *p = realloc(buf, cap *= 2);

			if (!p)
				break;
			buf = p;
		}
	}
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

static inline long long pinned_pages(void)
{
	char *s = slurp(dbg_path("pinned_pages"));
	long long v = s ? atoll(s) : -1;

	free(s);
	return v;
}

/*
 * A suite's main(): the harness's, with every test's time limit stretched
 * by SRNIC_TIME_SCALE.  On the debug kernel (make check-debug) each system
 * call costs many times what it costs on Debian's, and the limits the
 * tests registered were chosen for the latter.
 */
#ifdef TEST_HARNESS_MAIN
static inline void srnic_scale_timeouts(void)
{
	const char *s = getenv("SRNIC_TIME_SCALE");
	int scale = s && atoi(s) > 1 ? atoi(s) : 1;

	for (struct __fixture_metadata *f = __fixture_list; f; f = f->next)
		for (struct __test_metadata *t = f->tests; t; t = t->next)
			t->timeout *= scale;
}

/*
 * SRNIC_TEST_SHARD=K/N: the suite runs only its tests whose place in it
 * (counting every test of every fixture, in order) is K modulo N, so that
 * a long suite can be split over guest runs (make check-debug's parts)
 * with its slow and fast tests mixed in each.  The harness counts and
 * plans what is left.
 */
static inline void srnic_shard_tests(void)
{
	const char *s = getenv("SRNIC_TEST_SHARD");
	unsigned int k, n, i = 0;

	if (!s || sscanf(s, "%u/%u", &k, &n) != 2 || !n || !k || k > n)
		return;
	for (struct __fixture_metadata *f = __fixture_list; f; f = f->next) {
		struct __test_metadata *t = f->tests, *next;

		for (; t; t = next, i++) {
			next = t->next;
			if (i % n == k - 1)
				continue;
			/* Out of the list (head->prev is its tail). */
			if (t == f->tests) {
				f->tests = next;
				if (next)
					next->prev = t->prev;
			} else {
				t->prev->next = next;
				if (next)
					next->prev = t->prev;
				else
					f->tests->prev = t->prev;
			}
		}
	}
}

/*
 * Without $SRNIC_DEV a suite makes its own device, as one run by the
 * kernel's kselftest runner must: a veth pair and `rdma link add` on one
 * end, removed when the suite's process exits (not its forked tests).
 */
static pid_t srnic_own_dev_owner;
static char srnic_own_netdev[16];

static inline void srnic_own_dev_remove(void)
{
	if (getpid() != srnic_own_dev_owner)
		return;
	sh("rdma link del %s 2>/dev/null", srnic_test_dev());
	sh("ip link del %s 2>/dev/null", srnic_own_netdev);
}

/* NULL when the device is ready, else why the suite cannot run. */
static inline const char *srnic_own_dev_make(void)
{
	int id = getpid() % 100000;
	struct ibv_context *ctx;
	char dev[32];

	if (geteuid())
		return "needs root to make an srnic device (or set SRNIC_DEV)";
	if (sh("command -v rdma ip modprobe >/dev/null"))
		return "iproute2's rdma and ip, or modprobe, are missing";
	if (sh("modprobe srnic"))
		return "the srnic module does not load (modprobe srnic)";
	/* The peer is named as tests/vm/lib.sh names it: a final 0 becomes 1. */
	snprintf(srnic_own_netdev, sizeof(srnic_own_netdev), "srk%d0", id);
	snprintf(dev, sizeof(dev), "srnic_k%d", id);
	if (sh("ip link add %s type veth peer name srk%d1 && ip link set %s up &&"
	       " ip link set srk%d1 up", srnic_own_netdev, id, srnic_own_netdev, id))
		return "no veth pair could be made (CONFIG_VETH)";
	srnic_own_dev_owner = getpid();
	atexit(srnic_own_dev_remove);
	if (sh("rdma link add %s type srnic netdev %s", dev, srnic_own_netdev))
		return "rdma link add ... type srnic failed (dmesg says why)";
	setenv("SRNIC_DEV", dev, 1);
	setenv("SRNIC_NETDEV", srnic_own_netdev, 1);
	/*
	 * The core fills RoCE GIDs from a workqueue, and rewrites the table as
	 * the netdev's IPv6 link-local address settles: wait for both.
	 */
	if (sh("for i in $(seq 1000); do grep -q fe80 /sys/class/infiniband/%s/ports/1/gids/0"
	       " && ip -6 addr show dev %s scope link -tentative | grep -q inet6 && exit 0;"
	       " sleep 0.01; done; exit 1", dev, srnic_own_netdev))
		return "the new device got no GID";
	ctx = open_named(dev);
	if (!ctx)
		return "libibverbs has no srnic provider (make install, or RDMAV_DRIVERS)";
	ibv_close_device(ctx);
	fprintf(stderr, "# made %s on %s for this suite (SRNIC_DEV unset)\n", dev,
		srnic_own_netdev);
	return NULL;
}

static inline void srnic_test_device(void)
{
	const char *name = getenv("SRNIC_DEV"), *why;

	if (name && *name)
		return;
	why = srnic_own_dev_make();
	if (why) {
		ksft_print_header();
		ksft_exit_skip("%s\n", why);
	}
}

#undef TEST_HARNESS_MAIN
#define TEST_HARNESS_MAIN \
	int main(int argc, char **argv) \
	{ \
		srnic_scale_timeouts(); \
		srnic_shard_tests(); \
		srnic_test_device(); \
		return test_harness_run(argc, argv); \
	}
#endif

#endif /* SRNIC_TEST_H */
