// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: device memory.  The kernel allocates it and the provider maps
 * it (at the offset the ABI derives from the DM's handle); copies to and
 * from it are plain memcpy, 4-byte granular as on hardware.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "srnic.h"

struct srnic_dm {
	struct verbs_dm vdm;
	uint8_t *addr;
	size_t length;		/* what was asked for */
	size_t map_len;
};

static struct srnic_dm *to_sdm(struct ibv_dm *dm)
{
	return (struct srnic_dm *)((char *)dm - offsetof(struct srnic_dm, vdm.dm));
}

static int srnic_dm_range(const struct srnic_dm *dm, uint64_t off, size_t len)
{
	return (off & 3) || (len & 3) || off > dm->length ||
	       len > dm->length - off;
}

static void *srnic_dm_map(struct ibv_context *ctx, struct srnic_dm *dm)
{
	/*
	 * Not inherited: a child must not keep the pages mapped (nor their
	 * offset, which the DM's handle names and a later DM may reuse) past
	 * their free.
	 */
	void *addr = srnic_map_device(ctx->cmd_fd, dm->map_len,
				      PROT_READ | PROT_WRITE,
				      (off_t)SRNIC_DM_MMAP_PGOFF(dm->vdm.handle) *
					      SRNIC_PAGE_SIZE);

	if (!addr)
		return NULL;
	return addr;
}

static int srnic_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			      const void *host_addr, size_t length)
{
	struct srnic_dm *dm = to_sdm(ibdm);

	if (srnic_dm_range(dm, dm_offset, length))
		return EINVAL;
	memcpy(dm->addr + dm_offset, host_addr, length);
	return 0;
}

static int srnic_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				uint64_t dm_offset, size_t length)
{
	struct srnic_dm *dm = to_sdm(ibdm);

	if (srnic_dm_range(dm, dm_offset, length))
		return EINVAL;
	memcpy(host_addr, dm->addr + dm_offset, length);
	return 0;
}

struct ibv_dm *srnic_alloc_dm(struct ibv_context *ctx,
			      struct ibv_alloc_dm_attr *attr)
{
	struct srnic_dm *dm;
	void *addr;
	int err;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_dm(ctx, attr, &dm->vdm, NULL);
	if (err) {
		free(dm);
		errno = err;
		return NULL;
	}
	dm->length = attr->length;
	dm->map_len = (attr->length + SRNIC_PAGE_SIZE - 1) &
		      ~(size_t)(SRNIC_PAGE_SIZE - 1);
	addr = srnic_dm_map(ctx, dm);
	if (!addr) {
		err = errno;
		ibv_cmd_free_dm(&dm->vdm);
		free(dm);
		errno = err;
		return NULL;
	}
	dm->addr = addr;
	dm->vdm.dm.memcpy_to_dm = srnic_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = srnic_memcpy_from_dm;
	return &dm->vdm.dm;
}

int srnic_free_dm(struct ibv_dm *ibdm)
{
	struct srnic_dm *dm = to_sdm(ibdm);
	int err;

	/*
	 * Unmapped first: once freed, the handle (and with it the mapping's
	 * offset) may go to the next DM at once.
	 */
	munmap(dm->addr, dm->map_len);
	err = ibv_cmd_free_dm(&dm->vdm);
	if (err) {
		/* Still in use (an MR): map it again. */
		dm->addr = srnic_dm_map(ibdm->context, dm);
		return errno = err;
	}
	free(dm);
	return 0;
}

struct ibv_mr *srnic_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access)
{
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int err;

	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_reg_dm_mr(pd, &to_sdm(ibdm)->vdm, dm_offset, length,
				access, vmr, NULL);
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_import_dm: a DM of the shared context, by its handle.  Its mapping is
 * at the offset the handle gives; its length is the one size the kernel
 * accepts a mapping of, found by trying (a DM is at most 64 pages).
 */
struct ibv_dm *srnic_import_dm(struct ibv_context *ctx, uint32_t dm_handle)
{
	struct srnic_dm *dm = calloc(1, sizeof(*dm));
	size_t pages;

	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	dm->vdm.handle = dm_handle;
	dm->vdm.dm.handle = dm_handle;
	dm->vdm.dm.comp_mask = IBV_DM_MASK_HANDLE;
	dm->vdm.dm.context = ctx;
	for (pages = 1; pages <= SRNIC_DM_MAX_PAGES; pages++) {
		dm->map_len = pages * SRNIC_PAGE_SIZE;
		dm->addr = srnic_dm_map(ctx, dm);
		if (dm->addr)
			break;
	}
	if (!dm->addr) {
		free(dm);
		errno = EINVAL;
		return NULL;
	}
	/* Copies are bounded by the mapping: the length rounded to pages. */
	dm->length = dm->map_len;
	dm->vdm.dm.memcpy_to_dm = srnic_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = srnic_memcpy_from_dm;
	return &dm->vdm.dm;
}

void srnic_unimport_dm(struct ibv_dm *ibdm)
{
	struct srnic_dm *dm = to_sdm(ibdm);

	munmap(dm->addr, dm->map_len);
	free(dm);
}
