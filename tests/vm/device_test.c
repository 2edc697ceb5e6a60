// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The srnic device as the standard verbs API and the raw uverbs interface see
 * it: discovery, queries, user contexts and their UAR/status mappings, PDs.
 * Runs in the VM against the device named by $SRNIC_DEV, bound to $SRNIC_NETDEV.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

#define PAGE 4096

static const char *test_netdev(void)
{
	const char *n = getenv("SRNIC_NETDEV");

	return n && *n ? n : "srnic_veth0";
}

FIXTURE(verbs) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(verbs)
{
	self->ctx = open_named(srnic_test_dev());
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", srnic_test_dev());
}

FIXTURE_TEARDOWN(verbs)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST(discovery_by_name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	char path[256], buf[64];

	ASSERT_NE(NULL, list);
	EXPECT_NE(NULL, find_ibv_device(list, srnic_test_dev()));
	ibv_free_device_list(list);

	/* The attribute the provider matches on, and the uverbs ABI. */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s",
		 srnic_test_dev(), SRNIC_SYSFS_ABI_ATTR);
	ASSERT_EQ(0, srnic_read_sysfs(path, buf, sizeof(buf)));
	EXPECT_EQ(SRNIC_ABI_VERSION, atoi(buf));
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/fw_ver",
		 srnic_test_dev());
	ASSERT_EQ(0, srnic_read_sysfs(path, buf, sizeof(buf)));
	EXPECT_STREQ("0.1.0", buf);
}

TEST_F(verbs, query_device)
{
	struct ibv_device_attr_ex ex = {};
	struct ibv_device_attr *a = &ex.orig_attr;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &ex));
	EXPECT_EQ(1, a->phys_port_cnt);
	EXPECT_NE(0, a->vendor_id);
	EXPECT_NE(0, a->sys_image_guid);
	EXPECT_EQ(a->sys_image_guid, a->node_guid);
	EXPECT_STREQ("0.1.0", a->fw_ver);
	EXPECT_GT(a->max_pd, 0);
	EXPECT_GT(a->max_mr_size, (uint64_t)PAGE);
	EXPECT_EQ(PAGE, a->page_size_cap & PAGE);
	EXPECT_EQ(1, a->max_pkeys);
	EXPECT_GT(a->max_srq, 0);
	EXPECT_GT(a->max_srq_wr, 0);
	EXPECT_GT(a->max_ah, 0);
	EXPECT_GT(a->max_qp_rd_atom, 0);
	/* 64-bit atomics, atomic against each other and the CPU. */
	EXPECT_EQ(IBV_ATOMIC_HCA, a->atomic_cap);
	/* Memory windows of type 1 and 2B, LOCAL_INV/SEND_WITH_INV. */
	EXPECT_LT(0, a->max_mw);
	EXPECT_EQ(IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
		  IBV_DEVICE_MEM_MGT_EXTENSIONS,
		  a->device_cap_flags & (IBV_DEVICE_MEM_WINDOW |
					 IBV_DEVICE_MEM_WINDOW_TYPE_2A |
					 IBV_DEVICE_MEM_WINDOW_TYPE_2B |
					 IBV_DEVICE_MEM_MGT_EXTENSIONS));
	/* On-demand paging, explicit and implicit. */
	EXPECT_EQ(IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT,
		  ex.odp_caps.general_caps);
	EXPECT_TRUE(a->device_cap_flags & IBV_DEVICE_XRC);
	/* Nothing the datapath does not implement yet is advertised. */
	EXPECT_EQ(0, a->device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
}

/* The netdev's MTU less the RoCEv2 headers, rounded down to an IB MTU. */
static enum ibv_mtu expected_mtu(int eth_mtu)
{
	int room = eth_mtu - (40 + 8 + 12 + 8 + 28 + 4);

	return room >= 4096 ? IBV_MTU_4096 : room >= 2048 ? IBV_MTU_2048 :
	       room >= 1024 ? IBV_MTU_1024 : room >= 512 ? IBV_MTU_512 :
							 IBV_MTU_256;
}

TEST_F(verbs, query_port)
{
	struct ibv_port_attr p;
	char path[256], buf[32];

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &p));
	EXPECT_EQ(IBV_PORT_ACTIVE, p.state);
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, p.link_layer);
	EXPECT_EQ(5, p.phys_state); /* LinkUp */
	EXPECT_EQ(IBV_MTU_4096, p.max_mtu);
	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", test_netdev());
	ASSERT_EQ(0, srnic_read_sysfs(path, buf, sizeof(buf)));
	EXPECT_EQ(expected_mtu(atoi(buf)), p.active_mtu);
	EXPECT_EQ(32, p.gid_tbl_len);
	EXPECT_EQ(1, p.pkey_tbl_len);
	EXPECT_GT(p.max_msg_sz, 0x1000u);
	EXPECT_NE(0, p.active_speed);

	errno = 0;
	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &p));
	EXPECT_NE(0, ibv_query_port(self->ctx, 0, &p));
}

TEST_F(verbs, roce_v2_gids)
{
	struct ibv_gid_entry e;
	union ibv_gid gid;

	/* GID 0 is the netdev's IPv6 link-local address, as RoCEv2. */
	ASSERT_EQ(0, ibv_query_gid_ex(self->ctx, 1, 0, &e, 0));
	EXPECT_EQ(IBV_GID_TYPE_ROCE_V2, e.gid_type);
	EXPECT_EQ(0xfe, e.gid.raw[0]);
	EXPECT_EQ(0x80, e.gid.raw[1]);
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &gid));
	EXPECT_EQ(0, memcmp(&gid, &e.gid, sizeof(gid)));

	/* An IPv4 address on the netdev appears as a mapped RoCEv2 GID. */
	ASSERT_EQ(0, sh("ip addr add 192.0.2.77/24 dev %s", test_netdev()));
	int found = 0;

	for (int tries = 0; tries < 200 && !found; tries++) {
		for (int i = 0; i < 32 && !found; i++) {
			if (ibv_query_gid_ex(self->ctx, 1, i, &e, 0))
				continue;
			found = e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff &&
				e.gid.raw[12] == 192 && e.gid.raw[15] == 77 &&
				e.gid_type == IBV_GID_TYPE_ROCE_V2;
		}
		if (!found)
			usleep(10000); /* the core adds GIDs from a workqueue */
	}
	EXPECT_TRUE(found);
	EXPECT_EQ(0, sh("ip addr del 192.0.2.77/24 dev %s", test_netdev()));
}

TEST_F(verbs, query_pkey)
{
	__be16 pkey;

	ASSERT_EQ(0, ibv_query_pkey(self->ctx, 1, 0, &pkey));
	EXPECT_EQ(0xffff, ntohs(pkey));
	EXPECT_NE(0, ibv_query_pkey(self->ctx, 1, 1, &pkey));
}

/* Port state follows the netdev, with async events. */
TEST_F(verbs, port_follows_netdev)
{
	struct ibv_port_attr p;

	ASSERT_EQ(0, sh("ip link set %s down", test_netdev()));
	EXPECT_TRUE(wait_async_event(self->ctx, IBV_EVENT_PORT_ERR, 5000));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &p));
	EXPECT_EQ(IBV_PORT_DOWN, p.state);
	EXPECT_EQ(3, p.phys_state); /* Disabled */

	ASSERT_EQ(0, sh("ip link set %s up", test_netdev()));
	EXPECT_TRUE(wait_async_event(self->ctx, IBV_EVENT_PORT_ACTIVE, 5000));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &p));
	EXPECT_EQ(IBV_PORT_ACTIVE, p.state);
}

TEST_F(verbs, pd_lifecycle)
{
	enum { N = 2000 };
	static struct ibv_pd *pds[N];

	for (int i = 0; i < N; i++) {
		pds[i] = ibv_alloc_pd(self->ctx);
		ASSERT_NE(NULL, pds[i]) TH_LOG("PD %d: %s", i, strerror(errno));
	}
	for (int i = 0; i < N; i++)
		ASSERT_EQ(0, ibv_dealloc_pd(pds[i]));
}

TEST(many_contexts)
{
	enum { N = 64 };
	struct ibv_context *ctx[N];
	struct ibv_pd *pd[N];

	for (int i = 0; i < N; i++) {
		ctx[i] = open_named(srnic_test_dev());
		ASSERT_NE(NULL, ctx[i]) TH_LOG("context %d", i);
		pd[i] = ibv_alloc_pd(ctx[i]);
		ASSERT_NE(NULL, pd[i]);
	}
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, ibv_dealloc_pd(pd[i]));
		EXPECT_EQ(0, ibv_close_device(ctx[i]));
	}
}

/* ---- The raw interface: what any process can send the kernel. ---- */

FIXTURE(raw) {
	int fd;
	struct srnic_raw_ctx c;
};

FIXTURE_SETUP(raw)
{
	self->fd = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, self->fd) TH_LOG("open uverbs: %s", strerror(-self->fd));
	ASSERT_EQ(0, uverbs_get_context(self->fd, &self->c, NULL, 0));
}

FIXTURE_TEARDOWN(raw)
{
	if (self->fd >= 0) {
		close(self->c.core.async_fd);
		close(self->fd);
	}
}

/* As uverbs_mmap() (kept from children), with any flags, to try them. */
static void *map(int fd, uint64_t off, size_t len, int prot, int flags)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p != MAP_FAILED)
		madvise(p, len, MADV_DONTFORK);
	return p;
}

TEST_F(raw, context_response)
{
	struct srnic_alloc_ucontext_resp *r = &self->c.drv;

	EXPECT_EQ(SRNIC_ABI_VERSION, r->abi_version);
	EXPECT_EQ(SRNIC_PAGE_SIZE, r->page_size);
	EXPECT_EQ(1, r->num_uars);
	EXPECT_EQ(SRNIC_DBS_PER_UAR, r->dbs_per_uar);
	EXPECT_EQ(1, r->num_engines);
	EXPECT_EQ(0, r->reserved);
	EXPECT_EQ(0, r->uar_mmap_offset % PAGE);
	EXPECT_EQ(0, r->status_mmap_offset % PAGE);
	EXPECT_NE(r->uar_mmap_offset, r->status_mmap_offset);
}

TEST_F(raw, second_context_on_one_file_refused)
{
	struct srnic_raw_ctx again;

	EXPECT_EQ(-EINVAL, uverbs_get_context(self->fd, &again, NULL, 0));
}

TEST(context_request_checked)
{
	struct srnic_alloc_ucontext_req req = {};
	struct {
		struct srnic_alloc_ucontext_req req;
		uint64_t extra;
	} longer = {};
	struct srnic_raw_ctx c;
	int fd;

	/* Unknown comp_mask, reserved bits, or unknown trailing data. */
	req.comp_mask = 1;
	fd = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EOPNOTSUPP, uverbs_get_context(fd, &c, &req, sizeof(req)));
	req.comp_mask = 0;
	req.reserved = 7;
	EXPECT_EQ(-EOPNOTSUPP, uverbs_get_context(fd, &c, &req, sizeof(req)));
	longer.extra = 1;
	EXPECT_EQ(-EOPNOTSUPP, uverbs_get_context(fd, &c, &longer, sizeof(longer)));
	/* A well-formed request, with zeroed extension, then works. */
	longer.extra = 0;
	EXPECT_EQ(0, uverbs_get_context(fd, &c, &longer, sizeof(longer)));
	EXPECT_EQ(SRNIC_ABI_VERSION, c.drv.abi_version);
	close(c.core.async_fd);
	close(fd);
}

TEST(context_response_too_short)
{
	struct ib_uverbs_get_context cmd = {};
	struct srnic_raw_ctx c;
	int fd = uverbs_open(srnic_test_dev());

	ASSERT_LE(0, fd);
	cmd.response = (uintptr_t)&c;
	EXPECT_EQ(-EINVAL, uverbs_write(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &cmd,
					sizeof(cmd), NULL, 0,
					sizeof(c.core) + 8));
	close(fd);
}

TEST_F(raw, uar_map_read_write)
{
	volatile uint32_t *uar = map(self->fd, self->c.drv.uar_mmap_offset, PAGE,
				     PROT_READ | PROT_WRITE, MAP_SHARED);

	ASSERT_NE(MAP_FAILED, (void *)uar);
	EXPECT_EQ(0, uar[0]);	/* new pages are zeroed */
	uar[0] = 0x12345678;
	uar[PAGE / 4 - 1] = 0x9abcdef0;
	EXPECT_EQ(0x12345678, uar[0]);
	EXPECT_EQ(0x9abcdef0, uar[PAGE / 4 - 1]);
	EXPECT_EQ(0, munmap((void *)uar, PAGE));
}

TEST_F(raw, uar_bad_mappings_refused)
{
	uint64_t uar = self->c.drv.uar_mmap_offset;
	int rw = PROT_READ | PROT_WRITE;

	/* An offset the kernel never handed out. */
	EXPECT_EQ(MAP_FAILED, map(self->fd, uar + 64 * PAGE, PAGE, rw, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, map(self->fd, 1ull << 40, PAGE, rw, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	/* Longer or shorter than the entry. */
	EXPECT_EQ(MAP_FAILED, map(self->fd, uar, 2 * PAGE, rw, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	/* Private (COW) mappings of device pages. */
	EXPECT_EQ(MAP_FAILED, map(self->fd, uar, PAGE, rw, MAP_PRIVATE));
	EXPECT_EQ(EINVAL, errno);
	/* Executable. */
	EXPECT_EQ(MAP_FAILED, map(self->fd, uar, PAGE, rw | PROT_EXEC, MAP_SHARED));
	EXPECT_EQ(EPERM, errno);
}

TEST_F(raw, uar_mprotect_exec_refused)
{
	void *p = map(self->fd, self->c.drv.uar_mmap_offset, PAGE, PROT_READ,
		      MAP_SHARED);

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, PAGE, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, PAGE));
}

TEST_F(raw, status_page_read_only)
{
	uint64_t off = self->c.drv.status_mmap_offset;
	const volatile struct srnic_engine_status *st;
	void *p;

	EXPECT_EQ(MAP_FAILED, map(self->fd, off, PAGE, PROT_READ | PROT_WRITE,
				  MAP_SHARED));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(MAP_FAILED, map(self->fd, off, PAGE, PROT_WRITE, MAP_SHARED));
	EXPECT_EQ(EPERM, errno);

	p = map(self->fd, off, PAGE, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, p);
	st = p;
	EXPECT_EQ(0, st[0].flags & ~SRNIC_ENGINE_NEED_WAKEUP);
	/* Write access cannot be added afterwards. */
	EXPECT_EQ(-1, mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, PAGE));
}

TEST_F(raw, uar_unmap_remap_keeps_page)
{
	uint64_t off = self->c.drv.uar_mmap_offset;
	volatile uint32_t *a, *b;

	a = map(self->fd, off, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)a);
	a[5] = 0xfeedf00d;
	/* Two mappings of one entry share the page. */
	b = map(self->fd, off, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)b);
	EXPECT_EQ(0xfeedf00d, b[5]);
	EXPECT_EQ(0, munmap((void *)a, PAGE));
	EXPECT_EQ(0, munmap((void *)b, PAGE));
	a = map(self->fd, off, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)a);
	EXPECT_EQ(0xfeedf00d, a[5]);
	EXPECT_EQ(0, munmap((void *)a, PAGE));
}

/*
 * Two contexts never share UAR pages: each context's offsets name its own
 * pages only, whether used by the same or by another process.
 */
TEST_F(raw, uar_isolated_between_contexts)
{
	volatile uint32_t *mine, *theirs;
	struct srnic_raw_ctx c2;
	int fd2, status;
	pid_t pid;

	mine = map(self->fd, self->c.drv.uar_mmap_offset, PAGE,
		   PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)mine);
	mine[0] = 0xa5a5a5a5;

	fd2 = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, uverbs_get_context(fd2, &c2, NULL, 0));
	/* Our offset used on the other file maps the other context's page. */
	theirs = map(fd2, self->c.drv.uar_mmap_offset, PAGE,
		     PROT_READ | PROT_WRITE, MAP_SHARED);
	if (theirs != MAP_FAILED) {
		EXPECT_EQ(0, theirs[0]);
		theirs[1] = 0x5a5a5a5a;
		EXPECT_EQ(0, mine[1]);
		munmap((void *)theirs, PAGE);
	}
	close(c2.core.async_fd);
	close(fd2);

	/* Another process with its own context cannot reach our page. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct srnic_raw_ctx c3;
		int fd3 = uverbs_open(srnic_test_dev());
		volatile uint32_t *p;

		if (fd3 < 0 || uverbs_get_context(fd3, &c3, NULL, 0))
			_exit(2);
		for (uint64_t pg = 0; pg < 8; pg++) {
			p = map(fd3, pg * PAGE, PAGE, PROT_READ, MAP_SHARED);
			if (p != MAP_FAILED && p[0] == 0xa5a5a5a5)
				_exit(1);
			if (p != MAP_FAILED)
				munmap((void *)p, PAGE);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0xa5a5a5a5, mine[0]);
	munmap((void *)mine, PAGE);
}

/* A mapping keeps its context alive after the file is closed. */
TEST(uar_mapping_outlives_fd)
{
	struct srnic_raw_ctx c;
	volatile uint32_t *p;
	int fd = uverbs_open(srnic_test_dev());

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, uverbs_get_context(fd, &c, NULL, 0));
	p = map(fd, c.drv.uar_mmap_offset, PAGE, PROT_READ | PROT_WRITE,
		MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)p);
	close(c.core.async_fd);
	close(fd);
	p[3] = 42;
	EXPECT_EQ(42, p[3]);
	EXPECT_EQ(0, munmap((void *)p, PAGE));
}

TEST_F(raw, pd_raw)
{
	struct srnic_raw_pd a, b;

	ASSERT_EQ(0, uverbs_alloc_pd(self->fd, &a));
	ASSERT_EQ(0, uverbs_alloc_pd(self->fd, &b));
	EXPECT_NE(a.core.pd_handle, b.core.pd_handle);
	EXPECT_NE(a.drv.pdn, b.drv.pdn);
	EXPECT_EQ(0, b.drv.reserved);
	EXPECT_EQ(0, uverbs_dealloc_pd(self->fd, a.core.pd_handle));
	/* Double free and unknown handles find no object. */
	EXPECT_EQ(-ENOENT, uverbs_dealloc_pd(self->fd, a.core.pd_handle));
	EXPECT_EQ(-ENOENT, uverbs_dealloc_pd(self->fd, 0xdeadbeef));
	/* b is left for the file's close to clean up. */
}

TEST(pd_left_open_at_exit)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ibv_context *ctx = open_named(srnic_test_dev());

		for (int i = 0; ctx && i < 100; i++)
			if (!ibv_alloc_pd(ctx))
				_exit(2);
		_exit(ctx ? 0 : 1); /* no dealloc, no close */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
