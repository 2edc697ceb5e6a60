/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Helpers shared by the VM suites that go through libibverbs. */
#ifndef SRNIC_TEST_H
#define SRNIC_TEST_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "uverbs_raw.h"

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

#undef TEST_HARNESS_MAIN
#define TEST_HARNESS_MAIN \
	int main(int argc, char **argv) \
	{ \
		srnic_scale_timeouts(); \
		return test_harness_run(argc, argv); \
	}
#endif

#endif /* SRNIC_TEST_H */
