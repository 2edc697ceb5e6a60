// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User memory that the engine reads and writes directly: queue rings and
 * doorbell records.  The provider allocates them; the kernel pins them with
 * ib_umem_get() at queue creation and maps them into kernel virtual memory,
 * so the engine touches them without faults or per-access translation.
 * The contents stay untrusted: the user can write them at any time.
 */
#include <linux/vmalloc.h>

#include "srnic_loc.h"

void srnic_pinned_add(struct srnic_dev *sdev, long npages)
{
	atomic64_add(npages, &sdev->pinned_pages);
}

static struct page **srnic_umem_pages(struct ib_umem *umem, unsigned int n)
{
	struct sg_page_iter it;
	struct page **pages;
	unsigned int i = 0;

	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return NULL;
	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (WARN_ON(i >= n))
			break;
		pages[i++] = sg_page_iter_page(&it);
	}
	if (i != n) {
		kvfree(pages);
		return NULL;
	}
	return pages;
}

/*
 * Pins [addr, addr + len) writable.  A ring (@ring) must be page aligned; it
 * is pinned in whole pages and gets a contiguous kernel mapping.  Anything
 * else must lie within one page (a doorbell record).
 */
int srnic_umem_pin(struct srnic_dev *sdev, u64 addr, size_t len, bool ring,
		   struct srnic_umem *out)
{
	struct ib_umem *umem;
	struct page **pages;
	unsigned int n;
	int err;

	memset(out, 0, sizeof(*out));
	len = srnic_umem_pin_len(addr, len, ring, PAGE_SHIFT);
	if (!len)
		return -EINVAL;

	umem = ib_umem_get(&sdev->ibdev, addr, len, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	n = ib_umem_num_pages(umem);
	pages = srnic_umem_pages(umem, n);
	if (!pages) {
		err = -ENOMEM;
		goto err_umem;
	}
	if (ring) {
		out->kva = vmap(pages, n, VM_MAP, PAGE_KERNEL);
		if (!out->kva) {
			err = -ENOMEM;
			goto err_pages;
		}
		out->vmapped = true;
	} else {
		out->kva = page_address(pages[0]) + (addr & ~PAGE_MASK);
	}
	kvfree(pages);
	out->umem = umem;
	out->len = len;
	out->npages = n;
	srnic_pinned_add(sdev, n);
	return 0;

err_pages:
	kvfree(pages);
err_umem:
	ib_umem_release(umem);
	return err;
}

/*
 * Queue memory of a kernel consumer: zeroed, in the same layout as a user
 * ring or doorbell record, and trusted no more than one (the engine's
 * checks do not ask whose memory a queue is in).
 */
int srnic_kmem_alloc(size_t len, struct srnic_umem *out)
{
	memset(out, 0, sizeof(*out));
	out->kva = kvzalloc(len, GFP_KERNEL);
	if (!out->kva)
		return -ENOMEM;
	out->len = len;
	out->kernel = true;
	return 0;
}

void srnic_umem_release(struct srnic_dev *sdev, struct srnic_umem *um)
{
	if (um->kernel) {
		kvfree(um->kva);
		memset(um, 0, sizeof(*um));
		return;
	}
	if (!um->umem)
		return;
	if (um->vmapped)
		vunmap(um->kva);
	ib_umem_release(um->umem);
	srnic_pinned_add(sdev, -(long)um->npages);
	memset(um, 0, sizeof(*um));
}
