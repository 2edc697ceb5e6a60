// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory: "on-NIC" memory, modelled as physically contiguous kernel
 * pages the provider maps into the process (ibv_memcpy_to_dm/from_dm are
 * plain copies in user space) and the engine reaches through zero-based
 * MRs (ibv_reg_dm_mr).  Each device has SRNIC_MAX_DM_SIZE of it.
 *
 * No driver data travels with alloc_dm, so the mapping's offset is derived
 * from the DM's uverbs handle, which both sides know (SRNIC_DM_MMAP_PGOFF).
 */
#include <linux/mm.h>

#include "srnic_loc.h"

struct srnic_dm {
	struct ib_dm ibdm;
	struct srnic_mmap_entry *entry;	/* the pages; freed with the entry */
	void *kva;
	size_t size;			/* allocated: 2^order pages */
};

static inline struct srnic_dm *to_sdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct srnic_dm, ibdm);
}

struct ib_dm *srnic_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibuc,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs)
{
	struct srnic_dev *sdev = to_sdev(ibdev);
	struct ib_uobject *uobj;
	struct srnic_dm *dm;
	u64 pgoff, map_len;
	unsigned int order;
	int err;

	if (attr->flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (!attr->length || attr->length > SRNIC_MAX_DM_SIZE ||
	    attr->alignment > ilog2(SRNIC_MAX_DM_SIZE))
		return ERR_PTR(-EINVAL);
	uobj = uverbs_attr_get_uobject(attrs, UVERBS_ATTR_ALLOC_DM_HANDLE);
	if (IS_ERR(uobj))
		return ERR_CAST(uobj);
	pgoff = SRNIC_DM_MMAP_PGOFF(uobj->id);
	if (pgoff > U32_MAX - SRNIC_DM_MAX_PAGES)
		return ERR_PTR(-ENOMEM);
	/* 2^order pages are aligned to their size: any asked alignment. */
	order = get_order(max_t(u64, attr->length, 1ULL << attr->alignment));
	map_len = PAGE_ALIGN(attr->length);
	if (atomic64_add_return(PAGE_SIZE << order, &sdev->dm_used) >
	    SRNIC_MAX_DM_SIZE) {
		err = -ENOMEM;
		goto err_account;
	}
	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	if (!dm) {
		err = -ENOMEM;
		goto err_account;
	}
	dm->size = PAGE_SIZE << order;
	dm->kva = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, order);
	if (!dm->kva) {
		err = -ENOMEM;
		goto err_dm;
	}
	dm->entry = srnic_mmap_insert_at(to_suc(ibuc), SRNIC_MMAP_DM,
					 virt_to_page(dm->kva), order, map_len,
					 pgoff);
	if (IS_ERR(dm->entry)) {
		/* The entry owned the pages and freed them. */
		err = PTR_ERR(dm->entry);
		goto err_dm;
	}
	/* From here the budget comes back when the pages go (srnic_mmap_free). */
	dm->entry->charge = dm->size;
	dm->entry->charged_to = &sdev->dm_used;
	return &dm->ibdm;

err_dm:
	kfree(dm);
err_account:
	atomic64_sub(PAGE_SIZE << order, &sdev->dm_used);
	return ERR_PTR(err);
}

int srnic_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct srnic_dm *dm = to_sdm(ibdm);

	/*
	 * The pages, and the budget they hold, go when the last mapping of
	 * them does: a process may keep one after freeing the DM.
	 */
	rdma_user_mmap_entry_remove(&dm->entry->rdma);
	kfree(dm);
	return 0;
}

/*
 * An MR over [offset, offset + length) of a DM, zero-based (the core
 * checked the range and ZERO_BASED): one MTT block, the DM being
 * contiguous in kernel memory.  While the MR exists the core keeps the DM.
 */
struct ib_mr *srnic_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct srnic_dm *dm = to_sdm(ibdm);
	void *kva = dm->kva + attr->offset;

	return srnic_reg_kernel_mr(ibpd, kva, attr->length,
				   attr->access_flags & ~IB_ZERO_BASED);
}
