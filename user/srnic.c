// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: device matching, context (UAR and engine status mappings),
 * device/port queries and protection domains.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "srnic.h"

/*
 * srnic's kernel driver id is RDMA_DRIVER_UNKNOWN, which other drivers share,
 * and its devices carry whatever name the user gave them.  What identifies
 * one is the srnic_abi_version attribute of the ib device; any other device,
 * including one of another driver whose provider is missing, is refused.
 */
static bool srnic_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	char buf[16];
	char *end;
	unsigned long ver;

	if (sysfs_dev->driver_id != RDMA_DRIVER_UNKNOWN)
		return false;
	if (ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs_dev, "%s",
				      SRNIC_SYSFS_ABI_ATTR) <= 0)
		return false;
	errno = 0;
	ver = strtoul(buf, &end, 10);
	return !errno && end != buf && *end == '\0' && ver == SRNIC_ABI_VERSION;
}

static int srnic_query_device_ex(struct ibv_context *ibctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t v;
	int err;

	err = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;
	v = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", SRNIC_FW_VER_MAJOR(v), SRNIC_FW_VER_MINOR(v),
		 SRNIC_FW_VER_SUB(v));
	/* The hash configuration is the driver's: the core does not carry it. */
	if (attr_size >= offsetof(struct ibv_device_attr_ex, rss_caps) +
			 sizeof(attr->rss_caps)) {
		attr->rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		attr->rss_caps.rx_hash_fields_mask = SRNIC_RX_HASH_FIELDS;
	}
	return 0;
}

static int srnic_query_port(struct ibv_context *ibctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *srnic_alloc_pd(struct ibv_context *ibctx)
{
	struct ibv_alloc_pd cmd = {};
	struct srnic_alloc_pd_cmd_resp resp = {};
	struct srnic_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_pd(ibctx, &pd->ibpd, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	pd->pdn = resp.drv_payload.pdn;
	return &pd->ibpd;
}

static int srnic_dealloc_pd(struct ibv_pd *ibpd)
{
	struct srnic_pd *pd = to_spd(ibpd);
	int err;

	/* A parent domain is the provider's alone. */
	if (pd->protection) {
		atomic_fetch_sub(&pd->protection->users, 1);
		free(pd);
		return 0;
	}
	if (atomic_load(&pd->users))
		return EBUSY;
	err = ibv_cmd_dealloc_pd(ibpd);
	if (err)
		return err;
	free(pd);
	return 0;
}

/*
 * Thread domains: a promise that one thread uses the objects made with
 * them.  The queues keep their locks (uncontended, they cost little).
 */
static struct ibv_td *srnic_alloc_td(struct ibv_context *ctx,
				     struct ibv_td_init_attr *attr)
{
	struct ibv_td *td;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->context = ctx;
	return td;
}

static int srnic_dealloc_td(struct ibv_td *td)
{
	free(td);
	return 0;
}

/*
 * A parent domain: the PD's handle (every command made with it names the
 * PD), a thread domain, and allocators the queues made with it take their
 * ring memory from.
 */
static struct ibv_pd *
srnic_alloc_parent_domain(struct ibv_context *ctx,
			  struct ibv_parent_domain_init_attr *attr)
{
	struct srnic_pd *pd, *prot;

	if (!attr->pd || attr->pd->context != ctx ||
	    to_spd(attr->pd)->protection ||
	    (attr->comp_mask & ~(uint32_t)(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
					   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)) ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}
	prot = to_spd(attr->pd);
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = ctx;
	pd->ibpd.handle = prot->ibpd.handle;
	pd->pdn = prot->pdn;
	pd->protection = prot;
	pd->td = attr->td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&prot->users, 1);
	return &pd->ibpd;
}

/* ibv_import_pd: a PD of the shared context, known by its handle. */
static struct ibv_pd *srnic_import_pd(struct ibv_context *ctx,
				      uint32_t pd_handle)
{
	struct srnic_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = ctx;
	pd->ibpd.handle = pd_handle;
	return &pd->ibpd;
}

static void srnic_unimport_pd(struct ibv_pd *pd)
{
	free(to_spd(pd));
}

/* ibv_import_mr: keys, address and length come from the kernel. */
static struct ibv_mr *srnic_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int err;

	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static void srnic_unimport_mr(struct ibv_mr *mr)
{
	free(verbs_get_mr(mr));
}

static void srnic_free_context(struct ibv_context *ibctx)
{
	struct srnic_context *ctx = to_sctx(ibctx);

	srnic_queues_cleanup(ctx);
	munmap((void *)ctx->status, SRNIC_PAGE_SIZE);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops srnic_ctx_ops = {
	.query_device_ex = srnic_query_device_ex,
	.query_rt_values = srnic_query_rt_values,
	.query_port = srnic_query_port,
	.alloc_pd = srnic_alloc_pd,
	.dealloc_pd = srnic_dealloc_pd,
	.alloc_td = srnic_alloc_td,
	.dealloc_td = srnic_dealloc_td,
	.alloc_parent_domain = srnic_alloc_parent_domain,
	.reg_mr = srnic_reg_mr,
	.rereg_mr = srnic_rereg_mr,
	.dereg_mr = srnic_dereg_mr,
	.alloc_mw = srnic_alloc_mw,
	.advise_mr = srnic_advise_mr,
	.alloc_dm = srnic_alloc_dm,
	.free_dm = srnic_free_dm,
	.reg_dm_mr = srnic_reg_dm_mr,
	.dealloc_mw = srnic_dealloc_mw,
	.bind_mw = srnic_bind_mw,
	.import_pd = srnic_import_pd,
	.unimport_pd = srnic_unimport_pd,
	.import_mr = srnic_import_mr,
	.unimport_mr = srnic_unimport_mr,
	.import_dm = srnic_import_dm,
	.unimport_dm = srnic_unimport_dm,
	.free_context = srnic_free_context,
};

/* Maps the pages the kernel described in the context response. */
static int srnic_map(struct srnic_context *ctx, int cmd_fd,
		     const struct srnic_alloc_ucontext_resp *r)
{
	void *uar, *status;
	uint32_t n;
	int err;

	if (r->abi_version != SRNIC_ABI_VERSION ||
	    r->page_size != SRNIC_PAGE_SIZE || r->num_uars != 1 ||
	    r->dbs_per_uar != SRNIC_DBS_PER_UAR ||
	    r->num_engines > SRNIC_MAX_ENGINES)
		return EPROTO;

	uar = srnic_map_device(cmd_fd, SRNIC_PAGE_SIZE, PROT_WRITE | PROT_READ,
			       r->uar_mmap_offset);
	if (!uar)
		return errno;
	status = srnic_map_device(cmd_fd, SRNIC_PAGE_SIZE, PROT_READ,
				  r->status_mmap_offset);
	if (!status) {
		err = errno;
		munmap(uar, SRNIC_PAGE_SIZE);
		return err;
	}
	/* Every record holds the count; a context imported has no response. */
	n = r->num_engines ? r->num_engines :
			     ((const volatile struct srnic_engine_status *)status)->num_engines;
	err = n && n <= SRNIC_MAX_ENGINES ? 0 : EPROTO;
	if (!err)
		err = srnic_queues_init(ctx, r->uar_mmap_offset, uar);
	if (err) {
		munmap(uar, SRNIC_PAGE_SIZE);
		munmap(status, SRNIC_PAGE_SIZE);
		return err;
	}
	ctx->status = status;
	ctx->dbs_per_uar = r->dbs_per_uar;
	ctx->num_engines = n;
	return 0;
}

/*
 * Maps @len bytes of the device at @offset of the command file, or NULL
 * (errno set).  A child does not inherit the mapping: it could ring its
 * parent's doorbells, and a device mapping copied by fork() takes the core's
 * disassociation lock under the mm's, the reverse of device removal's
 * order (lockdep reports it in 6.12).
 */
void *srnic_map_device(int cmd_fd, size_t len, int prot, off_t offset)
{
	void *addr = mmap(NULL, len, prot, MAP_SHARED, cmd_fd, offset);

	if (addr == MAP_FAILED)
		return NULL;
	madvise(addr, len, MADV_DONTFORK);
	return addr;
}

static struct verbs_context *srnic_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd, void *private_data)
{
	struct srnic_get_context cmd = {};
	struct srnic_get_context_resp resp = {};
	struct srnic_context *ctx;
	int err;

	(void)private_data;
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	err = ibv_cmd_get_context(&ctx->vctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free;
	err = srnic_map(ctx, cmd_fd, &resp.drv_payload);
	if (err) {
		verbs_err(&ctx->vctx, "srnic: cannot map context pages: %s\n",
			  strerror(err));
		goto err_free;
	}
	verbs_set_ops(&ctx->vctx, &srnic_ctx_ops);
	verbs_set_ops(&ctx->vctx, &srnic_queue_ops);
	verbs_set_ops(&ctx->vctx, &srnic_raw_ops);
	return &ctx->vctx;

err_free:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err;
	return NULL;
}

/*
 * ibv_import_device: another context on the same command FD (another
 * process's, passed over a socket, or a dup).  No response this time: the
 * ABI fixes where the first UAR page and the status page are.
 */
static struct verbs_context *srnic_import_context(struct ibv_device *ibdev,
						  int cmd_fd)
{
	struct srnic_alloc_ucontext_resp r = {
		.abi_version = SRNIC_ABI_VERSION,
		.page_size = SRNIC_PAGE_SIZE,
		.num_uars = 1,
		.dbs_per_uar = SRNIC_DBS_PER_UAR,
		.uar_mmap_offset = SRNIC_UAR0_MMAP_OFFSET,
		.status_mmap_offset = SRNIC_STATUS_MMAP_OFFSET,
		.num_engines = 0,	/* the status page says */
	};
	struct srnic_context *ctx;
	int err;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	err = ibv_cmd_query_context(&ctx->vctx.context, NULL);
	if (!err)
		err = srnic_map(ctx, cmd_fd, &r);
	if (err) {
		verbs_uninit_context(&ctx->vctx);
		free(ctx);
		errno = err;
		return NULL;
	}
	verbs_set_ops(&ctx->vctx, &srnic_ctx_ops);
	verbs_set_ops(&ctx->vctx, &srnic_queue_ops);
	verbs_set_ops(&ctx->vctx, &srnic_raw_ops);
	return &ctx->vctx;
}

static struct verbs_device *srnic_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct srnic_device *dev;

	(void)sysfs_dev;
	dev = calloc(1, sizeof(*dev));
	return dev ? &dev->vdev : NULL;
}

static void srnic_uninit_device(struct verbs_device *vdev)
{
	free((struct srnic_device *)vdev);
}

/*
 * Empty but required: libibverbs walks the table of every provider whenever
 * a device reports a known driver id.  Matching is srnic_match_device().
 */
static const struct verbs_match_ent srnic_match_table[] = {
	VERBS_MATCH_END,
};

static const struct verbs_device_ops srnic_dev_ops = {
	.name = "srnic",
	.match_min_abi_version = SRNIC_ABI_VERSION,
	.match_max_abi_version = SRNIC_ABI_VERSION,
	.match_table = srnic_match_table,
	.match_device = srnic_match_device,
	.alloc_device = srnic_alloc_device,
	.uninit_device = srnic_uninit_device,
	.alloc_context = srnic_alloc_context,
	.import_context = srnic_import_context,
};

VERBS_PROVIDER_REGISTER(srnic_dev_ops)
