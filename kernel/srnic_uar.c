// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The doorbell logic: UAR pages, doorbell slots and bell pages, and the
 * engine's reading of the marks producers leave in them (srnic-abi.h,
 * "Doorbells that name their queue").
 *
 * Each context starts with one UAR page and gains pages as its queues need
 * slots; every queue that rings (QP send side, CQ arm) owns one 64-byte
 * slot, and a QP's slot names it (srnic_uar.qp[]).  A context has one bell
 * page per engine thread that serves one of its QPs, made with that QP and
 * on its thread's list (srnic_thread.bells) until the context goes.
 *
 * So an engine pass costs a load per context with a QP on the thread, and
 * then work in proportion to the queues that rang: never a look at an idle
 * queue.  Everything in these pages is the user's: a mark is a hint, taken
 * only for a slot that holds a QP of the thread (srnic_bells_take_page).
 */
#include "srnic_loc.h"

static struct srnic_uar *srnic_uar_at(struct srnic_ucontext *suc,
				      unsigned int i)
{
	return xa_load(&suc->uars, i);
}

/* A zeroed page the context's process may map and write, at *@offset. */
static struct srnic_mmap_entry *srnic_user_page(struct srnic_ucontext *suc,
						u64 *offset)
{
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);

	if (!page)
		return ERR_PTR(-ENOMEM);
	/* The entry owns the page, on failure too. */
	return srnic_mmap_insert(suc, SRNIC_MMAP_UAR, page, true, offset);
}

/* Caller holds suc->uar_lock. */
static int srnic_uar_add(struct srnic_ucontext *suc)
{
	struct srnic_uar *uar;
	int err;

	if (suc->num_uars == SRNIC_MAX_UARS)
		return -ENOMEM;
	uar = kzalloc(sizeof(*uar), GFP_KERNEL);
	if (!uar)
		return -ENOMEM;
	uar->entry = srnic_user_page(suc, &uar->mmap_offset);
	if (IS_ERR(uar->entry)) {
		err = PTR_ERR(uar->entry);
		goto err;
	}
	uar->summary = page_address(uar->entry->page) + SRNIC_UAR_SUMMARY_OFFSET;
	err = xa_err(xa_store(&suc->uars, suc->num_uars, uar, GFP_KERNEL));
	if (err) {
		rdma_user_mmap_entry_remove(&uar->entry->rdma);
		goto err;
	}
	/* After the store: the engine bounds its lookups by the count. */
	smp_store_release(&suc->num_uars, suc->num_uars + 1);
	return 0;
err:
	kfree(uar);
	return err;
}

int srnic_uar_init(struct srnic_ucontext *suc)
{
	int err;

	mutex_init(&suc->uar_lock);
	xa_init(&suc->uars);
	mutex_lock(&suc->uar_lock);
	err = srnic_uar_add(suc);
	mutex_unlock(&suc->uar_lock);
	return err;
}

/*
 * Takes the context's bell pages off their threads' lists, waits for the
 * engine passes that may be reading them (one grace period for the whole
 * context), then lets its pages go.  Live mappings hold their own entry
 * references, so a page is freed by srnic_mmap_free() once the last
 * mapping of it is gone.
 */
void srnic_uar_cleanup(struct srnic_ucontext *suc)
{
	struct srnic_sched *s = &to_sdev(suc->ibuc.device)->sched;
	struct srnic_uar *uar;
	bool listed = false;
	unsigned long i;

	for (i = 0; i < SRNIC_MAX_ENGINES; i++) {
		struct srnic_bell_page *b = suc->bells[i];

		if (!b)
			continue;
		spin_lock_irq(&s->threads[i].run_lock);
		list_del_rcu(&b->node);
		spin_unlock_irq(&s->threads[i].run_lock);
		listed = true;
	}
	if (listed)
		synchronize_srcu(&srnic_engine_srcu);
	for (i = 0; i < SRNIC_MAX_ENGINES; i++) {
		if (!suc->bells[i])
			continue;
		rdma_user_mmap_entry_remove(&suc->bells[i]->entry->rdma);
		kfree(suc->bells[i]);
		suc->bells[i] = NULL;
	}
	xa_for_each(&suc->uars, i, uar) {
		rdma_user_mmap_entry_remove(&uar->entry->rdma);
		kfree(uar);
	}
	xa_destroy(&suc->uars);
	suc->num_uars = 0;
	mutex_destroy(&suc->uar_lock);
}

int srnic_uar0_offset(struct srnic_ucontext *suc, u64 *offset)
{
	struct srnic_uar *uar = srnic_uar_at(suc, 0);

	if (!uar)
		return -EPROTO;
	*offset = uar->mmap_offset;
	return 0;
}

int srnic_db_alloc(struct srnic_ucontext *suc, struct srnic_db_ref *ref,
		   struct srnic_db_loc *loc)
{
	struct srnic_uar *uar = NULL;
	unsigned int i, slot = 0;
	int err = 0;

	mutex_lock(&suc->uar_lock);
	for (i = suc->uar_hint; i < suc->num_uars; i++) {
		uar = srnic_uar_at(suc, i);
		slot = find_first_zero_bit(uar->used, SRNIC_DBS_PER_UAR);
		if (slot < SRNIC_DBS_PER_UAR)
			break;
	}
	if (i == suc->num_uars) {
		err = srnic_uar_add(suc);
		if (err)
			goto out;
		uar = srnic_uar_at(suc, i);
		slot = 0;
	}
	/* Every page below is full: freeing a slot lowers the hint. */
	suc->uar_hint = i;
	__set_bit(slot, uar->used);
	ref->suc = suc;
	ref->uar = i;
	ref->slot = slot;
	ref->kva = (struct srnic_db_slot *)page_address(uar->entry->page) + slot;
	/* A reused slot may hold an old queue's value, and its mark. */
	WRITE_ONCE(ref->kva->value, 0);
	atomic64_andnot(BIT_ULL(slot), (atomic64_t *)&uar->summary->rung);
	loc->uar_mmap_offset = uar->mmap_offset;
	loc->slot = slot;
	loc->uar_index = i;
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
	__clear_bit(ref->slot, srnic_uar_at(suc, ref->uar)->used);
	suc->uar_hint = min_t(unsigned int, suc->uar_hint, ref->uar);
	mutex_unlock(&suc->uar_lock);
	ref->suc = NULL;
	ref->kva = NULL;
}

/* The bell page of thread @t in @suc, made and listed if it is not yet. */
static struct srnic_bell_page *srnic_bells_get(struct srnic_ucontext *suc,
					       struct srnic_thread *t)
{
	struct srnic_bell_page *b = suc->bells[t->idx];

	if (b)
		return b;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return ERR_PTR(-ENOMEM);
	b->entry = srnic_user_page(suc, &b->mmap_offset);
	if (IS_ERR(b->entry)) {
		int err = PTR_ERR(b->entry);

		kfree(b);
		return ERR_PTR(err);
	}
	b->suc = suc;
	b->kva = page_address(b->entry->page);
	suc->bells[t->idx] = b;
	spin_lock_irq(&t->run_lock);
	list_add_tail_rcu(&b->node, &t->bells);
	spin_unlock_irq(&t->run_lock);
	return b;
}

/*
 * Lets QP @qp, which owns the doorbell slot @ref, be found by its marks;
 * gives the provider the mmap offset of its thread's bell page.  The QP
 * must be ready to be looked at by its engine (srnic_qp_init).
 */
int srnic_db_name_qp(struct srnic_db_ref *ref, struct srnic_qp *qp,
		     u64 *bells_offset)
{
	struct srnic_ucontext *suc = ref->suc;
	struct srnic_bell_page *b;
	int err = 0;

	mutex_lock(&suc->uar_lock);
	b = srnic_bells_get(suc, srnic_qp_thread(qp));
	if (IS_ERR(b)) {
		err = PTR_ERR(b);
		goto out;
	}
	*bells_offset = b->mmap_offset;
	qp->rung = &srnic_uar_at(suc, ref->uar)->summary->rung;
	qp->rung_bit = BIT_ULL(ref->slot);
	WRITE_ONCE(srnic_uar_at(suc, ref->uar)->qp[ref->slot], qp);
out:
	mutex_unlock(&suc->uar_lock);
	return err;
}

/*
 * Marks name @qp no more.  Its engine may still be taking a mark it read
 * before: the caller waits for the engine's SRCU sections (QP destroy).
 */
void srnic_db_unname_qp(struct srnic_db_ref *ref)
{
	if (ref->suc)
		WRITE_ONCE(srnic_uar_at(ref->suc, ref->uar)->qp[ref->slot], NULL);
}

/*
 * Marks of UAR page @p taken by thread @t: its QPs go to t->marked, or
 * become ready once that is full.
 */
static unsigned int srnic_bells_take_page(struct srnic_thread *t,
					  struct srnic_ucontext *suc,
					  unsigned int p)
{
	unsigned int nthreads = t->sdev->sched.nthreads, s, n = 0;
	struct srnic_uar *uar;
	struct srnic_qp *qp;
	u64 rung, mine = 0;

	/* Pairs with srnic_uar_add(): a page counted is in the xarray. */
	if (p >= smp_load_acquire(&suc->num_uars))
		return 0;		/* a mark of no page */
	uar = srnic_uar_at(suc, p);
	rung = READ_ONCE(uar->summary->rung) & GENMASK_ULL(SRNIC_DBS_PER_UAR - 1, 0);
	for_each_set_bit(s, (unsigned long *)&rung, SRNIC_DBS_PER_UAR) {
		qp = READ_ONCE(uar->qp[s]);
		/*
		 * A mark of no QP goes; another thread's stays for it, and a
		 * hot QP's for as long as it is hot (its doorbell is polled).
		 */
		if (!qp || (srnic_qp_engine(qp->qpn, nthreads) == t->idx &&
			    !READ_ONCE(qp->hot)))
			mine |= BIT_ULL(s);
	}
	if (!mine)
		return 0;
	/* Cleared before the doorbells are read (srnic-abi.h). */
	atomic64_fetch_andnot(mine, (atomic64_t *)&uar->summary->rung);
	for_each_set_bit(s, (unsigned long *)&mine, SRNIC_DBS_PER_UAR) {
		qp = READ_ONCE(uar->qp[s]);
		if (!qp || srnic_qp_engine(qp->qpn, nthreads) != t->idx ||
		    READ_ONCE(qp->hot))
			continue;
		if (t->nmarked < SRNIC_MARKED)
			t->marked[t->nmarked++] = qp;
		else
			srnic_qp_ready(qp);
		n++;
	}
	return n;
}

/*
 * Takes the marks of thread @t's bell pages; returns the QPs they name
 * (t->marked, then the run list).  Inside srnic_engine_srcu, which keeps
 * the bell pages, UAR pages and the QPs their slots name
 * (srnic_db_unname_qp) from going, until the caller has run t->marked.
 */
unsigned int srnic_bells_take(struct srnic_thread *t)
{
	struct srnic_bell_page *b;
	unsigned int n = 0, i, j;
	u64 top, w;

	list_for_each_entry_srcu(b, &t->bells, node,
				 srcu_read_lock_held(&srnic_engine_srcu)) {
		struct srnic_bells *bells = b->kva;

		if (!READ_ONCE(bells->top))
			continue;
		top = xchg(&bells->top, 0);
		for_each_set_bit(i, (unsigned long *)&top,
				 ARRAY_SIZE(bells->pages)) {
			w = xchg(&bells->pages[i], 0);
			for_each_set_bit(j, (unsigned long *)&w, 64)
				n += srnic_bells_take_page(t, b->suc, i * 64 + j);
		}
	}
	return n;
}
