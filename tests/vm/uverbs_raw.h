/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Raw uverbs access for the VM suites: open an srnic device's uverbs file
 * and issue legacy write() commands with srnic's driver data, bypassing
 * libibverbs and the provider.  This is how a hostile or buggy process sees
 * the kernel, so the kernel's checks are tested without the provider's help.
 */
#ifndef SRNIC_UVERBS_RAW_H
#define SRNIC_UVERBS_RAW_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <rdma/ib_user_verbs.h>

#include "srnic-abi.h"

/* The device every suite works on; run-all.sh creates it. */
static inline const char *srnic_test_dev(void)
{
	const char *name = getenv("SRNIC_DEV");

	return name && *name ? name : "srnic0";
}

static inline int srnic_read_sysfs(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/*
 * mmap() of a uverbs file (UAR, status page, device memory), kept out of
 * fork()ed children as the provider keeps its own (MADV_DONTFORK): in Linux
 * 6.12 a fork that copies such a mapping takes the file's disassociation
 * lock under mmap_lock (rdma_umap_open), the reverse of device removal's
 * order, and lockdep reports the cycle on the debug kernel.
 */
static inline void *uverbs_mmap(int fd, size_t len, int prot, off_t off)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, off);

	if (p != MAP_FAILED && madvise(p, len, MADV_DONTFORK)) {
		munmap(p, len);
		return MAP_FAILED;
	}
	return p;
}

/* Opens /dev/infiniband/uverbsN of the ib device called @ibdev. */
static inline int uverbs_open(const char *ibdev)
{
	char path[512], name[128];
	struct dirent *de;
	int fd = -ENODEV;
	DIR *dir;

	dir = opendir("/sys/class/infiniband_verbs");
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/%s/ibdev", de->d_name);
		if (srnic_read_sysfs(path, name, sizeof(name)) ||
		    strcmp(name, ibdev))
			continue;
		snprintf(path, sizeof(path), "/dev/infiniband/%s", de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		break;
	}
	closedir(dir);
	return fd;
}

/*
 * One legacy command: header, core request, then driver request; the core
 * response is followed by the driver response in the same user buffer.
 */
static inline int uverbs_write(int fd, uint32_t cmd, void *core_req,
			       size_t core_len, const void *drv_req,
			       size_t drv_len, size_t out_len)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		uint8_t body[256];
	} buf;
	size_t in_len = sizeof(buf.hdr) + core_len + drv_len;

	if (core_len + drv_len > sizeof(buf.body) || in_len % 4 || out_len % 4)
		return -EINVAL;
	buf.hdr.command = cmd;
	buf.hdr.in_words = in_len / 4;
	buf.hdr.out_words = out_len / 4;
	memcpy(buf.body, core_req, core_len);
	if (drv_len)
		memcpy(buf.body + core_len, drv_req, drv_len);
	if (write(fd, &buf, in_len) != (ssize_t)in_len)
		return -errno;
	return 0;
}

struct srnic_raw_ctx {
	struct ib_uverbs_get_context_resp core;
	struct srnic_alloc_ucontext_resp drv;
};

static inline int uverbs_get_context(int fd, struct srnic_raw_ctx *out,
				     const void *drv_req, size_t drv_len)
{
	struct ib_uverbs_get_context cmd = {};

	memset(out, 0, sizeof(*out));
	cmd.response = (uintptr_t)out;
	return uverbs_write(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &cmd,
			    sizeof(cmd), drv_req, drv_len, sizeof(*out));
}

struct srnic_raw_pd {
	struct ib_uverbs_alloc_pd_resp core;
	struct srnic_alloc_pd_resp drv;
};

static inline int uverbs_alloc_pd(int fd, struct srnic_raw_pd *out)
{
	struct ib_uverbs_alloc_pd cmd = {};

	memset(out, 0, sizeof(*out));
	cmd.response = (uintptr_t)out;
	return uverbs_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, &cmd, sizeof(cmd),
			    NULL, 0, sizeof(*out));
}

static inline int uverbs_dealloc_pd(int fd, uint32_t handle)
{
	struct ib_uverbs_dealloc_pd cmd = { .pd_handle = handle };

	return uverbs_write(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &cmd,
			    sizeof(cmd), NULL, 0, 0);
}

struct srnic_raw_cq {
	struct ib_uverbs_create_cq_resp core;
	struct srnic_create_cq_resp drv;
};

/* create_cq with any driver request, as a hostile process could send it. */
static inline int uverbs_create_cq(int fd, int cqe, const void *drv_req,
				   size_t drv_len, struct srnic_raw_cq *out)
{
	struct ib_uverbs_create_cq cmd = {};

	memset(out, 0, sizeof(*out));
	cmd.response = (uintptr_t)out;
	cmd.cqe = cqe;
	cmd.comp_channel = -1;
	return uverbs_write(fd, IB_USER_VERBS_CMD_CREATE_CQ, &cmd, sizeof(cmd),
			    drv_req, drv_len, sizeof(*out));
}

static inline int uverbs_destroy_cq(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq cmd = { .cq_handle = handle };

	cmd.response = (uintptr_t)&resp;
	return uverbs_write(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &cmd, sizeof(cmd),
			    NULL, 0, sizeof(resp));
}

/* reg_mr: the MR's handle and keys in @out, or -errno. */
static inline int uverbs_reg_mr(int fd, uint32_t pd_handle, uint64_t start,
				uint64_t length, uint64_t iova, uint32_t access,
				struct ib_uverbs_reg_mr_resp *out)
{
	struct ib_uverbs_reg_mr cmd = {
		.start = start, .length = length, .hca_va = iova,
		.pd_handle = pd_handle, .access_flags = access,
	};

	memset(out, 0, sizeof(*out));
	cmd.response = (uintptr_t)out;
	return uverbs_write(fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd),
			    NULL, 0, sizeof(*out));
}

static inline int uverbs_dereg_mr(int fd, uint32_t handle)
{
	struct ib_uverbs_dereg_mr cmd = { .mr_handle = handle };

	return uverbs_write(fd, IB_USER_VERBS_CMD_DEREG_MR, &cmd, sizeof(cmd),
			    NULL, 0, 0);
}

/* resize_cq with any driver request. */
static inline int uverbs_resize_cq(int fd, uint32_t handle, int cqe,
				   const void *drv_req, size_t drv_len)
{
	struct {
		struct ib_uverbs_resize_cq_resp core;
		uint64_t drv[2];
	} resp;
	struct ib_uverbs_resize_cq cmd = { .cq_handle = handle, .cqe = cqe };

	cmd.response = (uintptr_t)&resp;
	return uverbs_write(fd, IB_USER_VERBS_CMD_RESIZE_CQ, &cmd, sizeof(cmd),
			    drv_req, drv_len, sizeof(resp));
}

/* Pages srnic has pinned for @dev, from debugfs; -1 if unreadable. */
static inline long srnic_pinned_pages(const char *dev)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s/pinned_pages",
		 dev);
	if (srnic_read_sysfs(path, buf, sizeof(buf)))
		return -1;
	return atol(buf);
}

#endif /* SRNIC_UVERBS_RAW_H */
