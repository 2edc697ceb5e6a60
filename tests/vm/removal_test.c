// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Removing a device under a process that uses it: "rdma link del" and
 * "rmmod srnic" must not wait for the process, which sees DEVICE_FATAL, finds
 * its mappings zapped, and can still release everything without harm.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

#define PAGE 4096

struct user_of_device {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int raw_fd;
	struct srnic_raw_ctx raw;
	volatile uint32_t *uar;
	const volatile struct srnic_engine_status *status;
};

/* A context through the provider and one raw, with a UAR page written. */
static int use_device(struct user_of_device *u, const char *name)
{
	u->ctx = open_named(name);
	if (!u->ctx)
		return -1;
	u->pd = ibv_alloc_pd(u->ctx);
	u->raw_fd = uverbs_open(name);
	if (!u->pd || u->raw_fd < 0 ||
	    uverbs_get_context(u->raw_fd, &u->raw, NULL, 0))
		return -1;
	u->uar = uverbs_mmap(u->raw_fd, PAGE, PROT_READ | PROT_WRITE,
			     u->raw.drv.uar_mmap_offset);
	if (u->uar == MAP_FAILED)
		return -1;
	u->uar[0] = 0xc0ffee;
	u->status = uverbs_mmap(u->raw_fd, PAGE, PROT_READ,
				u->raw.drv.status_mmap_offset);
	return u->status == MAP_FAILED ? -1 : 0;
}

/* After removal: fatal event, zapped mapping, harmless cleanup. */
static void check_after_removal(struct __test_metadata *_metadata,
				struct user_of_device *u)
{
	struct srnic_raw_pd pd;

	EXPECT_TRUE(wait_async_event(u->ctx, IBV_EVENT_DEVICE_FATAL, 10000));
	/* The page is no longer the device's: it reads as a fresh zero page. */
	EXPECT_EQ(0, u->uar[0]);
	u->uar[1] = 1;	/* writes land nowhere, and do not fault */
	/*
	 * The read-only status page keeps saying NEED_WAKEUP: a provider
	 * still posting makes the doorbell call and gets EIO.  (The core's
	 * zero page, which 6.12's debug mm reports as a bug, would say 0.)
	 */
	EXPECT_EQ(SRNIC_ENGINE_NEED_WAKEUP,
		  u->status[0].flags & SRNIC_ENGINE_NEED_WAKEUP);
	EXPECT_EQ(-EIO, uverbs_alloc_pd(u->raw_fd, &pd));
	ibv_dealloc_pd(u->pd);	/* fails (device gone) but must be safe */
	EXPECT_EQ(0, ibv_close_device(u->ctx));
	EXPECT_EQ(0, munmap((void *)u->uar, PAGE));
	EXPECT_EQ(0, munmap((void *)u->status, PAGE));
	close(u->raw.core.async_fd);
	close(u->raw_fd);
}

FIXTURE(removal) {
	char ifa[16], ifb[16];
};

FIXTURE_SETUP(removal)
{
	snprintf(self->ifa, sizeof(self->ifa), "rm%da", getpid() % 10000);
	snprintf(self->ifb, sizeof(self->ifb), "rm%db", getpid() % 10000);
	ASSERT_EQ(0, sh("ip link add %s type veth peer name %s && "
			"ip link set %s up && ip link set %s up",
			self->ifa, self->ifb, self->ifa, self->ifb));
}

FIXTURE_TEARDOWN(removal)
{
	sh("ip link del %s 2>/dev/null", self->ifa);
}

TEST_F(removal, link_del_with_open_context)
{
	struct user_of_device u = {};

	ASSERT_EQ(0, sh("rdma link add rmdev type srnic netdev %s", self->ifa));
	ASSERT_EQ(0, use_device(&u, "rmdev"));
	/* Returns without waiting for this process to close anything. */
	ASSERT_EQ(0, sh("rdma link del rmdev"));
	EXPECT_FALSE(ibdev_exists("rmdev"));
	check_after_removal(_metadata, &u);
	/* The name is free again. */
	ASSERT_EQ(0, sh("rdma link add rmdev type srnic netdev %s", self->ifa));
	EXPECT_EQ(0, sh("rdma link del rmdev"));
}

/* Removal while another process keeps its context and dies later. */
TEST_F(removal, link_del_then_process_exits)
{
	int to_child[2], from_child[2], status;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, sh("rdma link add rmdev2 type srnic netdev %s", self->ifa));
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(from_child));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct user_of_device u = {};

		if (use_device(&u, "rmdev2"))
			_exit(1);
		if (write(from_child[1], "r", 1) != 1)
			_exit(2);
		/* Waits for the removal, then exits with everything open. */
		if (read(to_child[0], &c, 1) != 1)
			_exit(3);
		_exit(u.uar[0] == 0 ? 0 : 4);
	}
	ASSERT_EQ(1, read(from_child[0], &c, 1));
	ASSERT_EQ(0, sh("rdma link del rmdev2"));
	ASSERT_EQ(1, write(to_child[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * rmmod with a context open (run last: it removes every srnic device).
 * Guarded so a plain run of this suite does not unload the module.
 */
/* Reads every debugfs file of device @arg's until told, counting the reads that got something. */
struct dbg_reader {
	const char *dev;
	volatile int stop;
	long reads;
};

static void *read_debugfs(void *arg)
{
	static const char *const files[] = { "engine", "mkeys", "mtt", "odp", "raw",
					     "pinned_pages" };
	struct dbg_reader *r = arg;
	char path[128], buf[4096];

	while (!r->stop)
		for (unsigned int i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			int fd;

			snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s/%s", r->dev,
				 files[i]);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				continue;
			while (read(fd, buf, sizeof(buf)) > 0)
				r->reads++;
			close(fd);
		}
	return NULL;
}

/*
 * The device's debugfs files read all the while it is made and removed:
 * they go before what they show.  (The engine's file once outlived the
 * engine threads it reads, and a read during "rdma link del" read their
 * freed array, or a NULL one.)
 */
TEST_F(removal, debugfs_read_while_removed)
{
	struct dbg_reader r = { .dev = "rmdev3" };
	int made, rounds;
	pthread_t th;

	if (access("/sys/kernel/debug/srnic", F_OK))
		SKIP(return, "no srnic debugfs (debugfs not mounted?)");
	ASSERT_EQ(0, pthread_create(&th, NULL, read_debugfs, &r));
	rounds = link_churn("rmdev3", self->ifa, fuzz_budget(40), fuzz_budget(10000), &made);
	r.stop = 1;
	pthread_join(th, NULL);
	EXPECT_EQ(rounds, made);
	EXPECT_LT(0, r.reads);
}

TEST(rmmod_with_open_context)
{
	struct user_of_device u = {};

	if (!getenv("SRNIC_TEST_RMMOD"))
		SKIP(return, "set SRNIC_TEST_RMMOD=1 to unload srnic in this test");
	ASSERT_EQ(0, use_device(&u, srnic_test_dev()));
	ASSERT_EQ(0, sh("rmmod srnic"));
	EXPECT_FALSE(ibdev_exists(srnic_test_dev()));
	check_after_removal(_metadata, &u);
	/* And it loads again, on demand. */
	EXPECT_EQ(0, sh("rdma link add %s type srnic netdev %s",
			srnic_test_dev(), getenv("SRNIC_NETDEV") ?: "srnic_veth0"));
	EXPECT_TRUE(ibdev_exists(srnic_test_dev()));
}

TEST_HARNESS_MAIN
