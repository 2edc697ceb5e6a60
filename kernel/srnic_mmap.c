// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User mappings: each context's UAR (doorbell) pages, the device's engine
 * status page and device memory.  Every mapping is an rdma_user_mmap_entry, found by the mmap
 * offset the kernel handed out, so a process can only reach the entries of
 * its own context; and every mapping is made with rdma_user_mmap_io() so
 * that the core can zap it when the device goes away under a live process.
 */
#include <linux/mm.h>

#include "srnic_loc.h"

/*
 * A mapping of 2^@order pages from @page, @len bytes of them, at a free
 * offset in [@min_pgoff, @max_pgoff].  If @owns_page the pages are freed
 * with the entry (also on failure).
 */
static struct srnic_mmap_entry *
srnic_mmap_insert_range(struct srnic_ucontext *suc, enum srnic_mmap_type type,
			struct page *page, unsigned int order, bool owns_page,
			size_t len, u32 min_pgoff, u32 max_pgoff)
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
	entry->order = order;
	entry->owns_page = owns_page;
	err = rdma_user_mmap_entry_insert_range(&suc->ibuc, &entry->rdma, len,
						min_pgoff, max_pgoff);
	if (err) {
		kfree(entry);
		goto err_page;
	}
	return entry;

err_page:
	if (owns_page)
		__free_pages(page, order);
	return ERR_PTR(err);
}

struct srnic_mmap_entry *srnic_mmap_insert(struct srnic_ucontext *suc,
					   enum srnic_mmap_type type,
					   struct page *page, bool owns_page,
					   u64 *offset)
{
	struct srnic_mmap_entry *entry;

	/* Below the device-memory offsets (SRNIC_DM_MMAP_PGOFF). */
	entry = srnic_mmap_insert_range(suc, type, page, 0, owns_page,
					PAGE_SIZE, 0, SRNIC_DM_MMAP_PGOFF(0) - 1);
	if (!IS_ERR(entry))
		*offset = rdma_user_mmap_get_offset(&entry->rdma);
	return entry;
}

/* Device memory: @len bytes of 2^@order pages, exactly at @pgoff. */
struct srnic_mmap_entry *srnic_mmap_insert_at(struct srnic_ucontext *suc,
					      enum srnic_mmap_type type,
					      struct page *page,
					      unsigned int order, size_t len,
					      u32 pgoff)
{
	struct srnic_mmap_entry *entry;

	entry = srnic_mmap_insert_range(suc, type, page, order, true, len,
					pgoff, pgoff + SRNIC_DM_MAX_PAGES - 1);
	if (!IS_ERR(entry) && entry->rdma.start_pgoff != pgoff) {
		/* Another entry sits there: the provider could not find it. */
		rdma_user_mmap_entry_remove(&entry->rdma);
		return ERR_PTR(-EBUSY);
	}
	return entry;
}

void srnic_mmap_free(struct rdma_user_mmap_entry *rdma)
{
	struct srnic_mmap_entry *entry = to_smmap(rdma);

	if (entry->owns_page)
		__free_pages(entry->page, entry->order);
	if (entry->charged_to)
		atomic64_sub(entry->charge, entry->charged_to);
	kfree(entry);
}

/*
 * The status page is mapped as a page rather than through the core's I/O
 * mapping (rdma_user_mmap_io): at device removal the core zaps those and
 * then faults the system zero page into a read-only one, which 6.12's mm
 * reports as a bug (a zero page added to a shared file mapping's rmap).
 * The page is refcounted, so it outlives the device while mapped, and its
 * last words are NEED_WAKEUP (srnic_engine_stop): a process still posting
 * makes the doorbell call and learns that the device is gone.
 */
static int srnic_mmap_status(struct vm_area_struct *vma,
			     struct srnic_mmap_entry *entry)
{
	return vm_insert_page(vma, vma->vm_start, entry->page);
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

	if (entry->type == SRNIC_MMAP_STATUS) {
		err = srnic_mmap_status(vma, entry);
		goto out;
	}
	err = rdma_user_mmap_io(ibuc, vma, page_to_pfn(entry->page),
				(size_t)rdma->npages << PAGE_SHIFT,
				vma->vm_page_prot, rdma);
out:
	rdma_user_mmap_entry_put(rdma);
	return err;
}
