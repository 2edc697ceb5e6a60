// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User mappings: each context's UAR (doorbell) page and the device's engine
 * status page.  Every mapping is an rdma_user_mmap_entry, found by the mmap
 * offset the kernel handed out, so a process can only reach the entries of
 * its own context; and every mapping is made with rdma_user_mmap_io() so
 * that the core can zap it when the device goes away under a live process.
 */
#include <linux/mm.h>

#include "srnic_loc.h"

struct srnic_mmap_entry *srnic_mmap_insert(struct srnic_ucontext *suc,
					   enum srnic_mmap_type type,
					   struct page *page, bool owns_page,
					   u64 *offset)
{
	struct srnic_mmap_entry *entry;
	int err;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_page;
	}
	entry->type = type;
	entry->page = page;
	entry->owns_page = owns_page;
	err = rdma_user_mmap_entry_insert(&suc->ibuc, &entry->rdma, PAGE_SIZE);
	if (err) {
		kfree(entry);
		goto err_page;
	}
	*offset = rdma_user_mmap_get_offset(&entry->rdma);
	return entry;

err_page:
	if (owns_page)
		__free_page(page);
	return ERR_PTR(err);
}

void srnic_mmap_free(struct rdma_user_mmap_entry *rdma)
{
	struct srnic_mmap_entry *entry = to_smmap(rdma);

	if (entry->owns_page)
		__free_page(entry->page);
	kfree(entry);
}

int srnic_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma;
	struct srnic_mmap_entry *entry;
	unsigned long forbidden, never;
	int err;

	/* Checks the offset, MAP_SHARED and that the length is the entry's. */
	rdma = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma)
		return -EINVAL;
	entry = to_smmap(rdma);

	/*
	 * Nothing srnic maps is code; the status page is the engine's and
	 * read-only to users.  Clearing the VM_MAY* bits makes a later
	 * mprotect() unable to grant what mmap() refused.
	 */
	forbidden = VM_EXEC;
	never = VM_MAYEXEC;
	if (entry->type == SRNIC_MMAP_STATUS) {
		forbidden |= VM_WRITE;
		never |= VM_MAYWRITE;
	}
	if (vma->vm_flags & forbidden) {
		err = -EPERM;
		goto out;
	}
	srnic_vm_flags_clear(vma, never);

	err = rdma_user_mmap_io(ibuc, vma, page_to_pfn(entry->page), PAGE_SIZE,
				vma->vm_page_prot, rdma);
out:
	rdma_user_mmap_entry_put(rdma);
	return err;
}
