// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions: registration and its refusals, mkeys, the MTT (checked
 * page by page against /proc/self/pagemap), huge pages, pinned-page
 * accounting, re-registration and PD ordering.  Runs in the VM as root
 * against $SRNIC_DEV, with debugfs mounted.
 */
#include <signal.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

#define PAGE	4096UL
#define HUGE_2M	(2UL << 20)
#define GB	(1UL << 30)

struct mkey {
	unsigned int index, key, lkey, pdn, access;
	unsigned long long iova, length;
	unsigned long page_size, blocks, pages;
};

static int parse_mkey(const char *line, struct mkey *m)
{
	return sscanf(line,
		      "index %u key 0x%x lkey 0x%x pdn %u access 0x%x iova 0x%llx length %llu page_size %lu blocks %lu pages %lu",
		      &m->index, &m->key, &m->lkey, &m->pdn, &m->access,
		      &m->iova, &m->length, &m->page_size, &m->blocks,
		      &m->pages) == 10;
}

/* The mkeys line of @lkey: 1 if found, 0 if not, -1 if unreadable. */
static int find_mkey(uint32_t lkey, struct mkey *out)
{
	char *buf = slurp(dbg_path("mkeys")), *line, *save = NULL;
	struct mkey m;
	int found = 0;

	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save))
		if (parse_mkey(line, &m) && m.lkey == lkey) {
			*out = m;
			found = 1;
		}
	free(buf);
	return found;
}

static int count_mkeys(void)
{
	char *buf = slurp(dbg_path("mkeys")), *line, *save = NULL;
	struct mkey m;
	int n = 0;

	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		n += parse_mkey(line, &m);
	free(buf);
	return n;
}

/*
 * The PFNs of the MTT blocks of @lkey, from the mtt file; returns how many
 * block lines followed its header (-1 if the MR is not there).
 */
static long mtt_pfns(uint32_t lkey, uint64_t *pfns, long max)
{
	char *buf = slurp(dbg_path("mtt")), *line, *save = NULL;
	unsigned long block;
	unsigned long long pfn;
	long n = -1;
	struct mkey m;

	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (parse_mkey(line, &m)) {
			if (n >= 0)
				break;
			if (m.lkey == lkey)
				n = 0;
			continue;
		}
		if (n < 0)
			continue;
		if (sscanf(line, " block %lu pfn 0x%llx", &block, &pfn) != 2 ||
		    block != (unsigned long)n) {
			n = -2;
			break;
		}
		if (n < max)
			pfns[n] = pfn;
		n++;
	}
	free(buf);
	return n;
}

/* ---- what the MTT must be, from the pages' PFNs ---- */

/* PFN of each page of [addr, addr + len), 0 where not present. */
static uint64_t *page_pfns(const void *addr, size_t len, size_t *npages)
{
	uintptr_t first = (uintptr_t)addr / PAGE;
	size_t n = ((uintptr_t)addr + len + PAGE - 1) / PAGE - first;
	uint64_t *e = calloc(n, sizeof(*e));
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (!e || fd < 0 ||
	    pread(fd, e, n * 8, first * 8) != (ssize_t)(n * 8)) {
		free(e);
		e = NULL;
	}
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; e && i < n; i++)
		e[i] = e[i] >> 63 ? e[i] & ((1ULL << 55) - 1) : 0;
	*npages = n;
	return e;
}

/*
 * The block size ib_umem_find_best_pgsz() must pick for pages @pfn seen at
 * @iova: the largest of 4K/2M/1G not above the first size covering the
 * span of the range, such that within every block the pages are physically
 * contiguous and the block is aligned like iova (the kernel's direct map is
 * 1G aligned, so PFNs stand for the pages' kernel addresses).
 */
static unsigned long expect_pgsz(const uint64_t *pfn, size_t n, uint64_t iova,
				 size_t len)
{
	static const unsigned long sizes[] = { GB, HUGE_2M, PAGE };
	uint64_t span = iova ^ (iova + len - 1), v0 = iova & ~(PAGE - 1);
	unsigned int bits = span ? 64 - __builtin_clzll(span) : 1;
	unsigned long cap = PAGE;

	while (cap < (1UL << bits) && cap < GB)
		cap = cap == PAGE ? HUGE_2M : GB;
	for (int s = 0; s < 3; s++) {
		unsigned long sz = sizes[s];
		int ok = sz <= cap;

		for (size_t j = 0; ok && j < n; j++) {
			uint64_t v = v0 + j * PAGE;

			ok = ((pfn[j] * PAGE - v) & (sz - 1)) == 0 &&
			     (j == 0 || !(v & (sz - 1)) ||
			      pfn[j] == pfn[j - 1] + 1);
		}
		if (ok)
			return sz;
	}
	return PAGE;
}

/*
 * Checks the MR @lkey registered over [addr, addr + len) at @iova: its
 * mkeys line, and every MTT block against the pages' PFNs.  Returns the
 * block size.
 */
static unsigned long check_mtt(struct __test_metadata *_metadata,
			       uint32_t lkey, const void *addr, size_t len,
			       uint64_t iova)
{
	size_t n;
	uint64_t *pfn = page_pfns(addr, len, &n);
	unsigned long pgsz;
	uint64_t base, *blk;
	struct mkey m;
	long nb;

	ASSERT_NE(NULL, pfn) TH_LOG("cannot read /proc/self/pagemap");
	for (size_t j = 0; j < n; j++) {
		ASSERT_NE(0, pfn[j]) TH_LOG("page %zu of the MR not present", j);
	}
	ASSERT_EQ(1, find_mkey(lkey, &m)) TH_LOG("lkey 0x%x not in mkeys", lkey);
	pgsz = expect_pgsz(pfn, n, iova, len);
	EXPECT_EQ(pgsz, m.page_size);
	EXPECT_EQ(iova, m.iova);
	EXPECT_EQ(len, m.length);
	EXPECT_EQ(n, m.pages);
	base = iova & ~(uint64_t)(pgsz - 1);
	ASSERT_EQ((iova + len - base + pgsz - 1) / pgsz, m.blocks);

	blk = calloc(m.blocks, sizeof(*blk));
	ASSERT_NE(NULL, blk);
	nb = mtt_pfns(lkey, blk, m.blocks);
	EXPECT_EQ((long)m.blocks, nb);
	for (long b = 0; b < nb && b < (long)m.blocks; b++) {
		/* First page of the MR in block b, and its place in the block. */
		uint64_t start = b ? base + b * pgsz : iova & ~(PAGE - 1);
		size_t j = (start - (iova & ~(PAGE - 1))) / PAGE;
		uint64_t want = pfn[j] - (start - (base + b * pgsz)) / PAGE;

		EXPECT_EQ(want, blk[b]) TH_LOG("block %ld of 0x%x", b, lkey);
		if (want != blk[b])
			break;
	}
	free(blk);
	free(pfn);
	return pgsz;
}

/* ---- memory ---- */

static void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* @len bytes at a 2M boundary (len + 2M mapped; the rest stays unused). */
static void *map_aligned_2m(size_t len)
{
	char *p = map_anon(len + HUGE_2M, PROT_READ | PROT_WRITE);

	if (!p)
		return NULL;
	return (void *)(((uintptr_t)p + HUGE_2M - 1) & ~(HUGE_2M - 1));
}

static int read_int_file(const char *path)
{
	char buf[64];

	return srnic_read_sysfs(path, buf, sizeof(buf)) ? -1 : atoi(buf);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* ---- raw uverbs, to see the kernel's own answers ---- */

static int raw_reg_mr(int fd, uint32_t pdh, uint64_t start, uint64_t len,
		      uint64_t iova, uint32_t access, const void *drv,
		      size_t drv_len, struct ib_uverbs_reg_mr_resp *resp)
{
	struct ib_uverbs_reg_mr cmd = {
		.response = (uintptr_t)resp,
		.start = start,
		.length = len,
		.hca_va = iova,
		.pd_handle = pdh,
		.access_flags = access,
	};

	memset(resp, 0, sizeof(*resp));
	return uverbs_write(fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd),
			    drv, drv_len, sizeof(*resp));
}

static int raw_rereg_mr(int fd, uint32_t mrh, uint32_t flags, uint64_t start,
			uint64_t len, uint64_t iova, uint32_t pdh,
			uint32_t access, struct ib_uverbs_rereg_mr_resp *resp)
{
	struct ib_uverbs_rereg_mr cmd = {
		.response = (uintptr_t)resp,
		.mr_handle = mrh,
		.flags = flags,
		.start = start,
		.length = len,
		.hca_va = iova,
		.pd_handle = pdh,
		.access_flags = access,
	};

	memset(resp, 0, sizeof(*resp));
	return uverbs_write(fd, IB_USER_VERBS_CMD_REREG_MR, &cmd, sizeof(cmd),
			    NULL, 0, sizeof(*resp));
}

static int raw_dereg_mr(int fd, uint32_t mrh)
{
	struct ib_uverbs_dereg_mr cmd = { .mr_handle = mrh };

	return uverbs_write(fd, IB_USER_VERBS_CMD_DEREG_MR, &cmd, sizeof(cmd),
			    NULL, 0, 0);
}

/* ---- through libibverbs and the provider ---- */

FIXTURE(mr) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	long long pinned0;
};

FIXTURE_SETUP(mr)
{
	self->ctx = open_named(srnic_test_dev());
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", srnic_test_dev());
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->pinned0 = pinned_pages();
	ASSERT_LE(0, self->pinned0) TH_LOG("no %s (debugfs mounted?)",
					   dbg_path("pinned_pages"));
}

FIXTURE_TEARDOWN(mr)
{
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/* errno of a registration expected to fail. */
static int reg_errno(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr_iova2(pd, addr, len, (uintptr_t)addr, access);
	if (mr) {
		ibv_dereg_mr(mr);
		return 0;
	}
	return errno;
}

TEST_F(mr, reg_dereg_lifecycle)
{
	size_t len = 16 * PAGE;
	char *buf = map_anon(len, PROT_READ | PROT_WRITE);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr;
	struct mkey m;

	ASSERT_NE(NULL, buf);
	mr = ibv_reg_mr(self->pd, buf, len, access);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_EQ(buf, mr->addr);
	EXPECT_EQ(len, mr->length);
	EXPECT_EQ(self->pd, mr->pd);
	/* index << 8 | key byte, index from 1. */
	EXPECT_LE(1, mr->lkey >> 8);

	ASSERT_EQ(1, find_mkey(mr->lkey, &m));
	EXPECT_EQ(mr->lkey >> 8, m.index);
	EXPECT_EQ(mr->lkey & 0xff, m.key);
	EXPECT_EQ(access, m.access);
	EXPECT_EQ(16, m.pages);
	EXPECT_EQ(self->pinned0 + 16, pinned_pages());
	check_mtt(_metadata, mr->lkey, buf, len, (uintptr_t)buf);

	uint32_t lkey = mr->lkey;

	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, find_mkey(lkey, &m));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, len);
}

/* An MR that starts and ends inside pages: every page it touches is pinned. */
TEST_F(mr, unaligned_range)
{
	char *buf = map_anon(8 * PAGE, PROT_READ | PROT_WRITE);
	size_t len = 3 * PAGE + 100;
	struct ibv_mr *mr;
	struct mkey m;

	ASSERT_NE(NULL, buf);
	madvise(buf, 8 * PAGE, MADV_NOHUGEPAGE);
	mr = ibv_reg_mr(self->pd, buf + 4000, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	ASSERT_EQ(1, find_mkey(mr->lkey, &m));
	EXPECT_EQ(5, m.pages);	/* 4000 .. 4000 + 3 * 4096 + 100 */
	EXPECT_EQ(self->pinned0 + 5, pinned_pages());
	check_mtt(_metadata, mr->lkey, buf + 4000, len, (uintptr_t)buf + 4000);
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	/* One byte. */
	mr = ibv_reg_mr(self->pd, buf + 5 * PAGE + 7, 1, 0);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	ASSERT_EQ(1, find_mkey(mr->lkey, &m));
	EXPECT_EQ(PAGE, m.page_size);
	EXPECT_EQ(1, m.blocks);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, 8 * PAGE);
}

/* An MR seen at an iova other than its address (same offset in the page). */
TEST_F(mr, iova_differs_from_address)
{
	char *buf = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	uint64_t iova = 0x7000000000ULL + 0x123000;
	struct ibv_mr *mr;
	struct mkey m;

	ASSERT_NE(NULL, buf);
	mr = ibv_reg_mr_iova(self->pd, buf, 4 * PAGE, iova,
			     IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr_iova: %s", strerror(errno));
	ASSERT_EQ(1, find_mkey(mr->lkey, &m));
	EXPECT_EQ(iova, m.iova);
	check_mtt(_metadata, mr->lkey, buf, 4 * PAGE, iova);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, 4 * PAGE);
}

TEST_F(mr, key_changes_when_index_reused)
{
	char *buf = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr, *held[64];
	uint32_t old;
	struct mkey m;
	int n = 0, found = 0;

	ASSERT_NE(NULL, buf);
	mr = ibv_reg_mr(self->pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	old = mr->lkey;
	ASSERT_EQ(0, ibv_dereg_mr(mr));

	/* Register until the index comes back (kept, so others move on). */
	while (n < 64 && !found) {
		mr = ibv_reg_mr(self->pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
		ASSERT_NE(NULL, mr);
		held[n++] = mr;
		found = (mr->lkey >> 8) == (old >> 8);
	}
	ASSERT_TRUE(found) TH_LOG("index %u not reused in %d registrations",
				  old >> 8, n);
	EXPECT_NE(old, mr->lkey);
	EXPECT_NE(old & 0xff, mr->lkey & 0xff);
	EXPECT_EQ(mr->lkey, mr->rkey);
	/* The stale key names no MR; the new one does. */
	EXPECT_EQ(0, find_mkey(old, &m));
	EXPECT_EQ(1, find_mkey(mr->lkey, &m));
	while (n)
		EXPECT_EQ(0, ibv_dereg_mr(held[--n]));
	munmap(buf, PAGE);
}

TEST_F(mr, bad_access_refused)
{
	char *buf = map_anon(PAGE, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, buf);
	/* Remote write or atomic need local write. */
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, PAGE, IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, PAGE, IBV_ACCESS_REMOTE_ATOMIC));
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, PAGE,
				    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
	/* Unknown bits, and zero-based (for MWs, not MRs). */
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, PAGE,
				    IBV_ACCESS_LOCAL_WRITE | (1 << 12)));
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, PAGE, IBV_ACCESS_ZERO_BASED));
	/* Every valid combination is accepted (ODP too: odp_test). */
	EXPECT_EQ(0, reg_errno(self->pd, buf, PAGE,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND));
	EXPECT_EQ(0, reg_errno(self->pd, buf, PAGE, 0));
	EXPECT_EQ(0, reg_errno(self->pd, buf, PAGE, IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(0, reg_errno(self->pd, buf, PAGE,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			       IBV_ACCESS_MW_BIND));
	EXPECT_EQ(0, reg_errno(self->pd, buf, PAGE,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING));
	EXPECT_EQ(0, count_mkeys());
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, PAGE);
}

TEST_F(mr, bad_ranges_refused)
{
	struct ibv_device_attr attr;
	char *buf = map_anon(3 * PAGE, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, 0, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, attr.max_mr_size + PAGE,
				    IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, reg_errno(self->pd, buf, SIZE_MAX - 16,
				    IBV_ACCESS_LOCAL_WRITE));
	/* A hole in the middle. */
	ASSERT_EQ(0, munmap(buf + PAGE, PAGE));
	EXPECT_EQ(EFAULT, reg_errno(self->pd, buf, 3 * PAGE, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EFAULT, reg_errno(self->pd, buf, 3 * PAGE, 0));
	/* Nothing mapped at all. */
	EXPECT_EQ(EFAULT, reg_errno(self->pd, buf + PAGE, PAGE, 0));
	EXPECT_EQ(0, count_mkeys());
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, 3 * PAGE);
}

/* Pages the process may not write cannot be registered for writing. */
TEST_F(mr, read_only_mapping)
{
	char *buf = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, buf);
	memset(buf, 0x5a, 4 * PAGE);
	ASSERT_EQ(0, mprotect(buf, 4 * PAGE, PROT_READ));
	EXPECT_EQ(EFAULT, reg_errno(self->pd, buf, 4 * PAGE, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EFAULT, reg_errno(self->pd, buf, 4 * PAGE,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	/* Reading is allowed. */
	mr = ibv_reg_mr(self->pd, buf, 4 * PAGE, IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr) TH_LOG("read-only reg_mr: %s", strerror(errno));
	check_mtt(_metadata, mr->lkey, buf, 4 * PAGE, (uintptr_t)buf);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, 4 * PAGE);
}

/* A 128 MiB MR of small pages: 32768 pages, each in its MTT. */
TEST_F_TIMEOUT(mr, large_mr_small_pages, 300)
{
	size_t len = 128UL << 20;
	char *buf = map_anon(len, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;
	struct mkey m;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	mr = ibv_reg_mr(self->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	ASSERT_EQ(1, find_mkey(mr->lkey, &m));
	EXPECT_EQ(len / PAGE, m.pages);
	EXPECT_EQ(self->pinned0 + (long long)(len / PAGE), pinned_pages());
	check_mtt(_metadata, mr->lkey, buf, len, (uintptr_t)buf);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, len);
}

static const char thp_path[] = "/sys/kernel/mm/transparent_hugepage/enabled";

/* Transparent huge pages give 2M blocks; a misaligned iova cannot. */
TEST_F_TIMEOUT(mr, thp_gives_2m_blocks, 300)
{
	size_t len = 64UL << 20, n;
	char *buf, mode[128] = "";
	struct ibv_mr *mr;
	uint64_t *pfn;
	int huge = 1;

	if (srnic_read_sysfs(thp_path, mode, sizeof(mode)) ||
	    strstr(mode, "[never]"))
		SKIP(return, "transparent huge pages unavailable (%s)", mode);
	buf = map_aligned_2m(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_HUGEPAGE));
	memset(buf, 0x11, len);

	/* Whether the kernel found huge pages is outside srnic's control. */
	pfn = page_pfns(buf, len, &n);
	ASSERT_NE(NULL, pfn);
	for (size_t j = 0; j < n && huge; j += HUGE_2M / PAGE)
		huge = pfn[j] && pfn[j] % 512 == 0 &&
		       pfn[j + 511] == pfn[j] + 511;
	free(pfn);
	if (!huge)
		SKIP(return, "no huge pages were allocated (memory fragmented?)");

	mr = ibv_reg_mr(self->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	EXPECT_EQ(HUGE_2M, check_mtt(_metadata, mr->lkey, buf, len,
				     (uintptr_t)buf));
	EXPECT_EQ(self->pinned0 + (long long)(len / PAGE), pinned_pages());
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	/* Part of the THP region, not 2M aligned at its ends: still 2M blocks. */
	mr = ibv_reg_mr(self->pd, buf + 3 * PAGE, 5 * HUGE_2M, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(HUGE_2M, check_mtt(_metadata, mr->lkey, buf + 3 * PAGE,
				     5 * HUGE_2M, (uintptr_t)buf + 3 * PAGE));
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	/* An iova that is not 2M-congruent with the pages: 4K blocks only. */
	mr = ibv_reg_mr_iova(self->pd, buf, 4 * HUGE_2M, 0x40000000ULL + 16 * PAGE,
			     IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr_iova: %s", strerror(errno));
	EXPECT_EQ(PAGE, check_mtt(_metadata, mr->lkey, buf, 4 * HUGE_2M,
				  0x40000000ULL + 16 * PAGE));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, len);
}

/* hugetlbfs pages: 2M blocks. */
TEST_F_TIMEOUT(mr, hugetlb_gives_2m_blocks, 120)
{
	static const char nr_path[] = "/proc/sys/vm/nr_hugepages";
	size_t len = 4 * HUGE_2M;
	int old = read_int_file(nr_path);
	struct ibv_mr *mr;
	char val[32];
	void *buf;

	if (old < 0)
		SKIP(return, "no %s", nr_path);
	snprintf(val, sizeof(val), "%d", old + 4);
	if (write_file(nr_path, val) || read_int_file(nr_path) < old + 4) {
		snprintf(val, sizeof(val), "%d", old);
		write_file(nr_path, val);
		SKIP(return, "cannot reserve 4 huge pages");
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (buf == MAP_FAILED) {
		snprintf(val, sizeof(val), "%d", old);
		write_file(nr_path, val);
		SKIP(return, "MAP_HUGETLB: %s", strerror(errno));
	}
	memset(buf, 0x22, len);
	mr = ibv_reg_mr(self->pd, buf, len,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_HUGETLB);
	EXPECT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	if (mr) {
		EXPECT_EQ(HUGE_2M, check_mtt(_metadata, mr->lkey, buf, len,
					     (uintptr_t)buf));
		EXPECT_EQ(self->pinned0 + (long long)(len / PAGE),
			  pinned_pages());
		EXPECT_EQ(0, ibv_dereg_mr(mr));
	}
	munmap(buf, len);
	snprintf(val, sizeof(val), "%d", old);
	EXPECT_EQ(0, write_file(nr_path, val));
	EXPECT_EQ(self->pinned0, pinned_pages());
}

/* A process that dies with MRs registered gives its pinned pages back. */
TEST_F(mr, pinned_pages_return_when_process_exits)
{
	int pipefd[2], status;
	long long during = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct ibv_context *ctx = open_named(srnic_test_dev());
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		size_t len = 1 << 20;
		char *buf = map_anon(10 * len, PROT_READ | PROT_WRITE);
		long long v = -1;
		int i;

		for (i = 0; pd && buf && i < 10; i++)
			if (!ibv_reg_mr(pd, buf + i * len, len, IBV_ACCESS_LOCAL_WRITE))
				break;
		if (i == 10)
			v = pinned_pages();
		if (write(pipefd[1], &v, sizeof(v)) != sizeof(v))
			_exit(2);
		_exit(0);	/* no dereg, no close */
	}
	close(pipefd[1]);
	ASSERT_EQ(sizeof(during), read(pipefd[0], &during, sizeof(during)));
	close(pipefd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(self->pinned0 + 10 * 256, during);
	/* Released when the exiting process's uverbs file was closed. */
	EXPECT_EQ(self->pinned0, pinned_pages());
	EXPECT_EQ(0, count_mkeys());
}

TEST_F(mr, rereg_translation)
{
	char *a = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	char *b = map_anon(9 * PAGE, PROT_READ | PROT_WRITE);
	char *hole = map_anon(2 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;
	uint32_t lkey;
	struct mkey m;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, hole);
	ASSERT_EQ(0, munmap(hole, 2 * PAGE));
	mr = ibv_reg_mr(self->pd, a, 4 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	lkey = mr->lkey;

	ASSERT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				  b + 100, 8 * PAGE, 0))
		TH_LOG("rereg: %s", strerror(errno));
	EXPECT_EQ(lkey, mr->lkey);
	EXPECT_EQ(lkey, mr->rkey);
	EXPECT_EQ(b + 100, mr->addr);
	EXPECT_EQ(8 * PAGE, mr->length);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ((uintptr_t)b + 100, m.iova);
	EXPECT_EQ(8 * PAGE, m.length);
	EXPECT_EQ(IBV_ACCESS_LOCAL_WRITE, m.access);
	EXPECT_EQ(9, m.pages);
	/* The old pages were released, the new ones pinned. */
	EXPECT_EQ(self->pinned0 + 9, pinned_pages());
	check_mtt(_metadata, lkey, b + 100, 8 * PAGE, (uintptr_t)b + 100);

	/* A failed re-registration leaves the MR as it was. */
	EXPECT_NE(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				  hole, 2 * PAGE, 0));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ((uintptr_t)b + 100, m.iova);
	EXPECT_EQ(self->pinned0 + 9, pinned_pages());

	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(a, 4 * PAGE);
	munmap(b, 9 * PAGE);
}

TEST_F(mr, rereg_pd)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(self->ctx);
	char *buf = map_anon(2 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr, *probe;
	struct mkey m, on2;

	ASSERT_NE(NULL, pd2);
	ASSERT_NE(NULL, buf);
	/* pd2's number, as an MR registered on it shows it. */
	probe = ibv_reg_mr(pd2, buf, PAGE, 0);
	ASSERT_NE(NULL, probe);
	ASSERT_EQ(1, find_mkey(probe->lkey, &on2));
	ASSERT_EQ(0, ibv_dereg_mr(probe));

	mr = ibv_reg_mr(self->pd, buf, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	ASSERT_EQ(1, find_mkey(mr->lkey, &m));
	ASSERT_NE(on2.pdn, m.pdn);
	uint32_t lkey = mr->lkey;

	ASSERT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0))
		TH_LOG("rereg: %s", strerror(errno));
	EXPECT_EQ(lkey, mr->lkey);
	EXPECT_EQ(pd2, mr->pd);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ(on2.pdn, m.pdn);
	EXPECT_EQ((uintptr_t)buf, m.iova);
	EXPECT_EQ(self->pinned0 + 2, pinned_pages());

	/* The MR now holds pd2, not the first PD. */
	errno = 0;
	EXPECT_NE(0, ibv_dealloc_pd(pd2));
	EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	self->pd = NULL;
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	munmap(buf, 2 * PAGE);
}

TEST_F(mr, rereg_access)
{
	char *buf = map_anon(2 * PAGE, PROT_READ | PROT_WRITE);
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr;
	uint32_t lkey;
	struct mkey m;

	ASSERT_NE(NULL, buf);
	mr = ibv_reg_mr(self->pd, buf, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	lkey = mr->lkey;
	ASSERT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, rw))
		TH_LOG("rereg: %s", strerror(errno));
	EXPECT_EQ(lkey, mr->lkey);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ(rw, m.access);

	/* Invalid combinations are refused and change nothing. */
	EXPECT_NE(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_NE(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND));
	EXPECT_EQ(EOPNOTSUPP, errno);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ(rw, m.access);

	/* Down to read-only, then back: the pages were pinned writable. */
	ASSERT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_REMOTE_READ));
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ(IBV_ACCESS_REMOTE_READ, m.access);
	EXPECT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	/*
	 * Pages pinned for reading only cannot become writable in place (they
	 * may be shared copy-on-write); with a new translation they can.
	 */
	mr = ibv_reg_mr(self->pd, buf, 2 * PAGE, IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr);
	lkey = mr->lkey;
	EXPECT_NE(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS |
				  IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf,
				  2 * PAGE, IBV_ACCESS_LOCAL_WRITE))
		TH_LOG("rereg: %s", strerror(errno));
	EXPECT_EQ(lkey, mr->lkey);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ(IBV_ACCESS_LOCAL_WRITE, m.access);
	EXPECT_EQ(self->pinned0 + 2, pinned_pages());
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(buf, 2 * PAGE);
}

/* All three at once, the MR keeping its keys. */
TEST_F(mr, rereg_everything)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(self->ctx);
	char *a = map_anon(PAGE, PROT_READ | PROT_WRITE);
	char *b = map_anon(3 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;
	uint32_t lkey;
	struct mkey m;

	ASSERT_NE(NULL, pd2);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	mr = ibv_reg_mr(self->pd, a, PAGE, 0);
	ASSERT_NE(NULL, mr);
	lkey = mr->lkey;
	ASSERT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION |
				  IBV_REREG_MR_CHANGE_PD |
				  IBV_REREG_MR_CHANGE_ACCESS, pd2, b, 3 * PAGE,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))
		TH_LOG("rereg: %s", strerror(errno));
	EXPECT_EQ(lkey, mr->lkey);
	ASSERT_EQ(1, find_mkey(lkey, &m));
	EXPECT_EQ((uintptr_t)b, m.iova);
	EXPECT_EQ(3 * PAGE, m.length);
	EXPECT_EQ(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, m.access);
	check_mtt(_metadata, lkey, b, 3 * PAGE, (uintptr_t)b);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	EXPECT_EQ(self->pinned0, pinned_pages());
	munmap(a, PAGE);
	munmap(b, 3 * PAGE);
}

/* A PD with an MR cannot go; after the MR is deregistered it can. */
TEST_F(mr, dealloc_pd_with_mr_busy)
{
	char *buf = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, buf);
	mr = ibv_reg_mr(self->pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	self->pd = NULL;
	munmap(buf, PAGE);
}

TEST_F_TIMEOUT(mr, many_mrs, 300)
{
	enum { N = 2000 };
	static struct ibv_mr *mrs[N];
	char *buf = map_anon(N * PAGE, PROT_READ | PROT_WRITE);
	char *seen = calloc(1 << 24, 1);

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, seen);
	for (int i = 0; i < N; i++) {
		mrs[i] = ibv_reg_mr(self->pd, buf + i * PAGE, PAGE,
				    IBV_ACCESS_LOCAL_WRITE);
		ASSERT_NE(NULL, mrs[i]) TH_LOG("MR %d: %s", i, strerror(errno));
		/* Every index is distinct. */
		ASSERT_EQ(0, seen[mrs[i]->lkey >> 8]);
		seen[mrs[i]->lkey >> 8] = 1;
	}
	EXPECT_EQ(N, count_mkeys());
	EXPECT_EQ(self->pinned0 + N, pinned_pages());
	/* The mtt file, read in small pieces, lists each MR and its block. */
	EXPECT_EQ(1, mtt_pfns(mrs[0]->lkey, NULL, 0));
	EXPECT_EQ(1, mtt_pfns(mrs[N - 1]->lkey, NULL, 0));
	for (int i = 0; i < N; i++)
		ASSERT_EQ(0, ibv_dereg_mr(mrs[i]));
	EXPECT_EQ(0, count_mkeys());
	EXPECT_EQ(self->pinned0, pinned_pages());
	free(seen);
	munmap(buf, N * PAGE);
}

/*
 * The table holds max_mr MRs; one more is refused with ENOMEM, and once one
 * is deregistered there is room again.
 */
TEST_F_TIMEOUT(mr, mr_limit, 900)
{
	enum { NBUF = 64 };
	char *buf = map_anon(NBUF * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_device_attr attr;
	struct ibv_mr **mrs;
	int n, err = 0;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	mrs = calloc(attr.max_mr + 1, sizeof(*mrs));
	ASSERT_NE(NULL, mrs);
	for (n = 0; n <= attr.max_mr; n++) {
		mrs[n] = ibv_reg_mr(self->pd, buf + (n % NBUF) * PAGE, PAGE, 0);
		if (!mrs[n]) {
			err = errno;
			break;
		}
	}
	EXPECT_EQ(attr.max_mr, n);
	EXPECT_EQ(ENOMEM, err);
	EXPECT_EQ(self->pinned0 + n, pinned_pages());
	if (n > 0) {
		ASSERT_EQ(0, ibv_dereg_mr(mrs[--n]));
		mrs[n] = ibv_reg_mr(self->pd, buf, PAGE, 0);
		EXPECT_NE(NULL, mrs[n]) TH_LOG("after a dereg: %s", strerror(errno));
		if (mrs[n])
			n++;
	}
	while (n)
		ASSERT_EQ(0, ibv_dereg_mr(mrs[--n]));
	EXPECT_EQ(self->pinned0, pinned_pages());
	free(mrs);
	munmap(buf, NBUF * PAGE);
}

/* Registration cycles of one process, for the concurrency test below. */
static int mr_churn(int iters, int seed)
{
	struct ibv_context *ctx = open_named(srnic_test_dev());
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_pd *pd2 = ctx ? ibv_alloc_pd(ctx) : NULL;
	char *buf = map_anon(64 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr[4] = {};

	if (!pd || !pd2 || !buf)
		return 1;
	srand(seed);
	for (int i = 0; i < iters; i++) {
		int k = rand() % 4, off = rand() % 32;
		size_t len = (1 + rand() % 32) * PAGE - rand() % 64;

		if (!mr[k]) {
			mr[k] = ibv_reg_mr(pd, buf + off * PAGE, len,
					   IBV_ACCESS_LOCAL_WRITE);
			if (!mr[k])
				return 2;
		} else if (rand() % 2) {
			if (ibv_rereg_mr(mr[k], IBV_REREG_MR_CHANGE_TRANSLATION |
					 IBV_REREG_MR_CHANGE_PD, rand() % 2 ? pd : pd2,
					 buf + off * PAGE, len, 0))
				return 3;
		} else {
			if (ibv_dereg_mr(mr[k]))
				return 4;
			mr[k] = NULL;
		}
	}
	/* Half the time, leave the rest to process exit. */
	for (int k = 0; k < 4 && seed % 2; k++)
		if (mr[k] && ibv_dereg_mr(mr[k]))
			return 5;
	return 0;
}

/*
 * Processes registering, re-registering and deregistering at once, with
 * the debugfs files read all the while: each MR is printed consistently,
 * and everything is given back at the end.
 */
TEST_F_TIMEOUT(mr, concurrent_churn_and_debugfs, 600)
{
	enum { WRITERS = 3, ITERS = 1500 };
	pid_t reader, writer[WRITERS];
	int status;

	reader = fork();
	ASSERT_LE(0, reader);
	if (!reader) {
		for (;;) {
			char *s = slurp(dbg_path("mkeys"));
			char *t = slurp(dbg_path("mtt"));

			if (!s || !t)
				_exit(1);
			free(s);
			free(t);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		writer[w] = fork();
		ASSERT_LE(0, writer[w]);
		if (!writer[w])
			_exit(mr_churn(ITERS, w + 1));
	}
	for (int w = 0; w < WRITERS; w++) {
		ASSERT_EQ(writer[w], waitpid(writer[w], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("writer %d: status 0x%x", w, status);
	}
	/* The reader never failed. */
	EXPECT_EQ(0, waitpid(reader, &status, WNOHANG));
	kill(reader, SIGKILL);
	waitpid(reader, &status, 0);
	EXPECT_EQ(0, count_mkeys());
	EXPECT_EQ(self->pinned0, pinned_pages());
}

/*
 * Removing a device under a process with MRs: the core destroys them (the
 * pages are unpinned; a leak would trip a warning when the device is
 * freed), and the process can still deregister and close.
 */
TEST(device_removal_with_mrs)
{
	static const char dev[] = "srnic_mrt1", nd[] = "srnic_mrv0";
	char *buf = map_anon(64 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_context *ctx = NULL;
	struct ibv_mr *mr[3];
	struct ibv_pd *pd;
	char path[256];

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, sh("ip link add %s type veth peer name srnic_mrv1 && "
			"ip link set %s up && ip link set srnic_mrv1 up && "
			"rdma link add %s type srnic netdev %s",
			nd, nd, dev, nd));
	for (int i = 0; i < 500 && !ctx; i++) {
		ctx = open_named(dev);
		if (!ctx)
			usleep(10000);
	}
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	for (int i = 0; i < 3; i++) {
		mr[i] = ibv_reg_mr(pd, buf + i * 16 * PAGE, 16 * PAGE,
				   IBV_ACCESS_LOCAL_WRITE);
		ASSERT_NE(NULL, mr[i]);
	}
	snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s/pinned_pages", dev);
	ASSERT_EQ(0, srnic_read_sysfs(path, path + 128, 64));
	EXPECT_EQ(48, atoi(path + 128));

	EXPECT_EQ(0, sh("rdma link del %s", dev));
	EXPECT_FALSE(ibdev_exists(dev));
	snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s", dev);
	EXPECT_NE(0, access(path, F_OK));
	EXPECT_TRUE(wait_async_event(ctx, IBV_EVENT_DEVICE_FATAL, 5000));
	/* The MRs are gone in the kernel; releasing them here still works. */
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, ibv_dereg_mr(mr[i]));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));
	EXPECT_EQ(0, sh("ip link del %s", nd));
	munmap(buf, 64 * PAGE);
}

/* ---- the raw interface ---- */

FIXTURE(raw) {
	int fd;
	struct srnic_raw_ctx c;
	struct srnic_raw_pd pd;
	char *buf;
};

FIXTURE_SETUP(raw)
{
	self->fd = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, self->fd) TH_LOG("open uverbs: %s", strerror(-self->fd));
	ASSERT_EQ(0, uverbs_get_context(self->fd, &self->c, NULL, 0));
	ASSERT_EQ(0, uverbs_alloc_pd(self->fd, &self->pd));
	self->buf = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(raw)
{
	if (self->fd >= 0) {
		close(self->c.core.async_fd);
		close(self->fd);
	}
}

TEST_F(raw, reg_checks)
{
	struct ib_uverbs_reg_mr_resp r;
	uint64_t a = (uintptr_t)self->buf;
	uint32_t pdh = self->pd.core.pd_handle, zero[2] = {}, junk[2] = { 0, 1 };
	int lw = IB_UVERBS_ACCESS_LOCAL_WRITE;

	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, 0, a, lw, NULL, 0, &r));
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, (1ULL << 40) + 1, a, lw,
				      NULL, 0, &r));
	/* start + length, or iova + length, wrapping. */
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, -PAGE, 2 * PAGE, -PAGE, lw,
				      NULL, 0, &r));
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, 2 * PAGE, -PAGE, lw,
				      NULL, 0, &r));
	/* start and iova at different offsets in their pages (core). */
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, PAGE, a + 8, lw, NULL, 0, &r));
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, PAGE, a,
				      IB_UVERBS_ACCESS_REMOTE_WRITE, NULL, 0, &r));
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, PAGE, a,
				      IB_UVERBS_ACCESS_ZERO_BASED, NULL, 0, &r));
	/* ODP without local write: remote write is refused the same way. */
	EXPECT_EQ(-EINVAL, raw_reg_mr(self->fd, pdh, a, PAGE, a,
				      IB_UVERBS_ACCESS_ON_DEMAND |
				      IB_UVERBS_ACCESS_REMOTE_WRITE, NULL, 0, &r));
	/* No driver data is defined: non-zero data is refused, zeros pass. */
	EXPECT_EQ(-EOPNOTSUPP, raw_reg_mr(self->fd, pdh, a, PAGE, a, lw, junk,
					  sizeof(junk), &r));
	ASSERT_EQ(0, raw_reg_mr(self->fd, pdh, a, PAGE, a, lw, zero, sizeof(zero), &r));
	EXPECT_EQ(r.lkey, r.rkey);
	EXPECT_EQ(0, raw_dereg_mr(self->fd, r.mr_handle));
	EXPECT_EQ(0, count_mkeys());
}

TEST_F(raw, rereg_checks)
{
	struct ib_uverbs_rereg_mr_resp rr;
	struct ib_uverbs_reg_mr_resp r;
	uint64_t a = (uintptr_t)self->buf;
	uint32_t pdh = self->pd.core.pd_handle;
	int lw = IB_UVERBS_ACCESS_LOCAL_WRITE;
	struct mkey m;

	ASSERT_EQ(0, raw_reg_mr(self->fd, pdh, a, PAGE, a, lw, NULL, 0, &r));
	/* Without the TRANS flag, start/length/iova are not looked at. */
	EXPECT_EQ(0, raw_rereg_mr(self->fd, r.mr_handle, IBV_REREG_MR_CHANGE_ACCESS, 1, 0,
				  3, 0, lw | IB_UVERBS_ACCESS_REMOTE_READ, &rr));
	EXPECT_EQ(r.lkey, rr.lkey);
	EXPECT_EQ(r.rkey, rr.rkey);
	ASSERT_EQ(1, find_mkey(r.lkey, &m));
	EXPECT_EQ(a, m.iova);
	EXPECT_EQ(PAGE, m.length);
	/* Without the ACCESS flag, access_flags are not looked at. */
	EXPECT_EQ(0, raw_rereg_mr(self->fd, r.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION,
				  a + PAGE, 2 * PAGE, 0x5000000000ULL, 0, ~0U, &rr));
	ASSERT_EQ(1, find_mkey(r.lkey, &m));
	EXPECT_EQ(0x5000000000ULL, m.iova);
	EXPECT_EQ(2 * PAGE, m.length);
	EXPECT_EQ(lw | IB_UVERBS_ACCESS_REMOTE_READ, m.access);
	/* Bad translations: zero length, too long, wrapping iova. */
	EXPECT_EQ(-EINVAL, raw_rereg_mr(self->fd, r.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION,
					a, 0, a, 0, 0, &rr));
	EXPECT_EQ(-EINVAL, raw_rereg_mr(self->fd, r.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION,
					a, (1ULL << 40) + PAGE, a, 0, 0, &rr));
	EXPECT_EQ(-EINVAL, raw_rereg_mr(self->fd, r.mr_handle, IBV_REREG_MR_CHANGE_TRANSLATION,
					a, 2 * PAGE, -PAGE, 0, 0, &rr));
	/* Unknown flags. */
	EXPECT_EQ(-EOPNOTSUPP, raw_rereg_mr(self->fd, r.mr_handle, 1 << 5, 0, 0,
					    0, 0, 0, &rr));
	ASSERT_EQ(1, find_mkey(r.lkey, &m));
	EXPECT_EQ(0x5000000000ULL, m.iova);
	EXPECT_EQ(0, raw_dereg_mr(self->fd, r.mr_handle));
}

TEST_HARNESS_MAIN
