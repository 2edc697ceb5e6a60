// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UAR pages and doorbell slots.  Each context starts with one UAR page and
 * gains pages as its queues need slots; every queue that rings (QP send
 * side, CQ arm) owns one 64-byte slot.  The engine only reads the slots of
 * live queues, so a store into a free slot, or into another queue's slot of
 * the same context, can at worst disturb the caller's own queues.
 */
#include "srnic_loc.h"

/* Caller holds suc->uar_lock. */
static int srnic_uar_add(struct srnic_ucontext *suc)
{
	struct srnic_uar *uar;
	struct page *page;

	if (suc->num_uars == SRNIC_MAX_UARS_PER_UCONTEXT)
		return -ENOMEM;
	uar = kzalloc(sizeof(*uar), GFP_KERNEL);
	page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!uar || !page) {
		kfree(uar);
		if (page)
			__free_page(page);
		return -ENOMEM;
	}
	uar->entry = srnic_mmap_insert(suc, SRNIC_MMAP_UAR, page, true,
				       &uar->mmap_offset);
	if (IS_ERR(uar->entry)) {
		int err = PTR_ERR(uar->entry);

		kfree(uar);
		return err;
	}
	suc->uars[suc->num_uars++] = uar;
	return 0;
}

int srnic_uar_init(struct srnic_ucontext *suc)
{
	int err;

	mutex_init(&suc->uar_lock);
	mutex_lock(&suc->uar_lock);
	err = srnic_uar_add(suc);
	mutex_unlock(&suc->uar_lock);
	return err;
}

/*
 * Live mappings hold their own entry references, so a UAR page is freed by
 * srnic_mmap_free() once the last mapping of it is gone.
 */
void srnic_uar_cleanup(struct srnic_ucontext *suc)
{
	unsigned int i;

	for (i = 0; i < suc->num_uars; i++) {
		rdma_user_mmap_entry_remove(&suc->uars[i]->entry->rdma);
		kfree(suc->uars[i]);
	}
	suc->num_uars = 0;
	mutex_destroy(&suc->uar_lock);
}

int srnic_db_alloc(struct srnic_ucontext *suc, struct srnic_db_ref *ref,
		   struct srnic_db_loc *loc)
{
	struct srnic_uar *uar;
	unsigned int i, slot;
	int err = 0;

	mutex_lock(&suc->uar_lock);
	for (i = 0; i < suc->num_uars; i++) {
		slot = find_first_zero_bit(suc->uars[i]->used,
					   SRNIC_DBS_PER_UAR);
		if (slot < SRNIC_DBS_PER_UAR)
			break;
	}
	if (i == suc->num_uars) {
		err = srnic_uar_add(suc);
		if (err)
			goto out;
		slot = 0;
	}
	uar = suc->uars[i];
	__set_bit(slot, uar->used);
	ref->suc = suc;
	ref->uar = i;
	ref->slot = slot;
	ref->kva = (struct srnic_db_slot *)page_address(uar->entry->page) + slot;
	/* A reused slot may hold an old queue's value. */
	WRITE_ONCE(ref->kva->value, 0);
	loc->uar_mmap_offset = uar->mmap_offset;
	loc->slot = slot;
	loc->reserved = 0;
out:
	mutex_unlock(&suc->uar_lock);
	return err;
}

void srnic_db_free(struct srnic_db_ref *ref)
{
	struct srnic_ucontext *suc = ref->suc;

	if (!suc)
		return;
	mutex_lock(&suc->uar_lock);
	__clear_bit(ref->slot, suc->uars[ref->uar]->used);
	mutex_unlock(&suc->uar_lock);
	ref->suc = NULL;
	ref->kva = NULL;
}
