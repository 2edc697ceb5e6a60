// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * On-demand paging, modelled on mlx5's: explicit ODP MRs (one ib_umem_odp
 * with its MMU interval notifier) and implicit ones (ibv_reg_mr(NULL,
 * SIZE_MAX): one key for the whole address space, with a child umem per
 * SRNIC_ODP_CHILD_SIZE chunk created by the first fault in it).
 *
 * The engine never faults.  srnic_odp_check() tells it whether every page
 * of a range is mapped with the rights it needs; if not, the QP's work stops
 * at that WQE and srnic_odp_fault() runs in a workqueue, against the owning
 * mm, after which the QP resumes from the same WQE.
 *
 * Invalidation (munmap, MADV_DONTNEED, migration, fork's COW protection):
 * the notifier marks the MR, waits for every engine reader of
 * srnic_engine_srcu, then unmaps the range.  A reader that began before the
 * mark has finished with the pages by then; one that began after sees the
 * mark and faults.  So no page is touched after its invalidation returns.
 */
#include <linux/delay.h>
#include <linux/sched/mm.h>
#include <linux/workqueue.h>

#include "srnic_loc.h"
#include "srnic_trace.h"

DEFINE_SRCU(srnic_engine_srcu);

#define SRNIC_ODP_CHILD_SHIFT	24	/* implicit MRs: 16 MiB children */
#define SRNIC_ODP_CHILD_SIZE	(1ULL << SRNIC_ODP_CHILD_SHIFT)

struct srnic_odp {
	struct srnic_dev *sdev;
	struct ib_umem_odp *umem;	/* explicit: the range; implicit: root */
	bool implicit;
	u64 va;				/* explicit: virtual address of mr->iova */
	struct xarray children;		/* implicit: chunk -> struct ib_umem_odp */
	struct mutex child_lock;	/* implicit: children made and mapped */
	atomic_t invalidating;		/* notifiers running on this MR */
};

bool srnic_odp_is_implicit(const struct srnic_mr *mr)
{
	return mr->odp && mr->odp->implicit;
}

static bool srnic_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *umem = container_of(mni, struct ib_umem_odp,
						notifier);
	/*
	 * The notifier is live from inside ib_umem_odp_get() and _alloc_child(),
	 * before the umem is ours: until it names its MR nothing of it is
	 * mapped, and the new sequence is all a later fault needs to see.
	 */
	struct srnic_mr *mr = smp_load_acquire(&umem->private);
	struct srnic_odp *odp;
	u64 start, end;

	/* Waiting for the engine sleeps; the caller will retry blockable. */
	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&umem->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	if (!mr) {
		mutex_unlock(&umem->umem_mutex);
		return true;
	}
	odp = mr->odp;
	start = max_t(u64, ib_umem_start(umem), range->start);
	end = min_t(u64, ib_umem_end(umem), range->end);
	atomic_inc(&odp->invalidating);
	/* Engine readers that missed the mark are done after this. */
	synchronize_srcu(&srnic_engine_srcu);
	ib_umem_odp_unmap_dma_pages(umem, start, end);
	atomic_dec(&odp->invalidating);
	mutex_unlock(&umem->umem_mutex);
	trace_srnic_odp_invalidate(mr, start, end);
	atomic64_inc(&odp->sdev->odp_stats.invalidations);
	atomic64_add((end - start) >> umem->page_shift,
		     &odp->sdev->odp_stats.pages_invalidated);
	return true;
}

static const struct mmu_interval_notifier_ops srnic_odp_ops = {
	.invalidate = srnic_odp_invalidate,
};

int srnic_odp_reg(struct srnic_dev *sdev, struct srnic_mr *mr, u64 start,
		  u64 length, u64 iova, int access)
{
	struct srnic_odp *odp;
	struct ib_umem_odp *umem;

	odp = kzalloc(sizeof(*odp), GFP_KERNEL);
	if (!odp)
		return -ENOMEM;
	odp->sdev = sdev;
	xa_init(&odp->children);
	mutex_init(&odp->child_lock);
	odp->implicit = !start && length == U64_MAX;
	if (odp->implicit) {
		if (iova)
			goto err_inval;
		umem = ib_umem_odp_alloc_implicit(&sdev->ibdev, access);
	} else {
		umem = ib_umem_odp_get(&sdev->ibdev, start, length, access,
				       &srnic_odp_ops);
	}
	if (IS_ERR(umem)) {
		kfree(odp);
		return PTR_ERR(umem);
	}
	odp->umem = umem;
	odp->va = start;
	mr->odp = odp;
	mr->ibmr.page_size = 1U << umem->page_shift;
	/* Last: the notifier may already run (srnic_odp_invalidate). */
	smp_store_release(&umem->private, mr);
	return 0;

err_inval:
	kfree(odp);
	return -EINVAL;
}

/* After the MR left the table and every engine reference is gone. */
void srnic_odp_dereg(struct srnic_mr *mr)
{
	struct srnic_odp *odp = mr->odp;
	struct ib_umem_odp *child;
	unsigned long idx;

	if (!odp)
		return;
	xa_for_each(&odp->children, idx, child) {
		ib_umem_odp_release(child);
		atomic64_dec(&odp->sdev->odp_stats.children);
	}
	xa_destroy(&odp->children);
	ib_umem_odp_release(odp->umem);
	mr->odp = NULL;
	kfree(odp);
}

/* The umem that holds @va, or NULL (an implicit MR's child not made yet). */
static struct ib_umem_odp *srnic_odp_umem(struct srnic_odp *odp, u64 va)
{
	if (!odp->implicit)
		return odp->umem;
	return xa_load(&odp->children, va >> SRNIC_ODP_CHILD_SHIFT);
}

static u64 srnic_odp_va(struct srnic_mr *mr, u64 iova)
{
	return mr->odp->va + (iova - mr->iova);
}

/*
 * Inside srnic_engine_srcu: are all pages of [iova, iova + len) mapped, with
 * write rights if @write?  0, or -EAGAIN for a fault.  The range was
 * checked against the MR already.
 */
int srnic_odp_check(struct srnic_mr *mr, u64 iova, u64 len, bool write)
{
	u64 need = write ? ODP_WRITE_ALLOWED_BIT : ODP_READ_ALLOWED_BIT;
	struct srnic_odp *odp = mr->odp;
	u64 va = srnic_odp_va(mr, iova), end = va + len;

	if (!len)
		return 0;
	if (atomic_read(&odp->invalidating))
		return -EAGAIN;
	while (va < end) {
		struct ib_umem_odp *umem = srnic_odp_umem(odp, va);
		u64 pgsz, idx;

		if (!umem)
			return -EAGAIN;
		pgsz = 1ULL << umem->page_shift;
		idx = (va - ib_umem_start(umem)) >> umem->page_shift;
		if (!(READ_ONCE(umem->dma_list[idx]) & need))
			return -EAGAIN;
		va = (va & ~(pgsz - 1)) + pgsz;
	}
	return 0;
}

/* Like srnic_mr_kva(), for a range srnic_odp_check() accepted. */
void *srnic_odp_kva(struct srnic_mr *mr, u64 iova, size_t *contig)
{
	struct srnic_odp *odp = mr->odp;
	u64 va = srnic_odp_va(mr, iova), left, pgsz, in_page;
	struct ib_umem_odp *umem = srnic_odp_umem(odp, va);
	dma_addr_t e;

	if (!umem)
		return NULL;
	pgsz = 1ULL << umem->page_shift;
	e = READ_ONCE(umem->dma_list[(va - ib_umem_start(umem)) >>
				     umem->page_shift]) & ODP_DMA_ADDR_MASK;
	if (!e)
		return NULL;
	in_page = va & (pgsz - 1);
	left = mr->length - (iova - mr->iova);
	*contig = srnic_mtt_contig(umem->page_shift, in_page, left);
	return (void *)(uintptr_t)e + in_page;
}

/*
 * An implicit MR's child for the chunk of @va, made if missing (*@made),
 * with odp->child_lock held.  Only user addresses of the owning mm.
 */
static struct ib_umem_odp *srnic_odp_child(struct srnic_mr *mr, u64 va,
					   bool *made)
{
	struct srnic_odp *odp = mr->odp;
	unsigned long idx = va >> SRNIC_ODP_CHILD_SHIFT;
	struct ib_umem_odp *child;
	int err;

	*made = false;
	child = xa_load(&odp->children, idx);
	if (child)
		return child;
	if (va >= odp->umem->umem.owning_mm->task_size)
		return ERR_PTR(-EFAULT);
	child = ib_umem_odp_alloc_child(odp->umem, idx << SRNIC_ODP_CHILD_SHIFT,
					SRNIC_ODP_CHILD_SIZE, &srnic_odp_ops);
	if (IS_ERR(child))
		return child;
	smp_store_release(&child->private, mr);
	err = xa_err(xa_store(&odp->children, idx, child, GFP_KERNEL));
	if (err) {
		ib_umem_odp_release(child);
		return ERR_PTR(err);
	}
	atomic64_inc(&odp->sdev->odp_stats.children);
	*made = true;
	return child;
}

/*
 * A child made for a fault that found nothing to map goes again, so that
 * addresses a process never mapped cost the kernel nothing.  Engine
 * readers may have looked it up: they are done after a grace period.
 */
static void srnic_odp_drop_child(struct srnic_odp *odp,
				 struct ib_umem_odp *child)
{
	xa_erase(&odp->children, ib_umem_start(child) >> SRNIC_ODP_CHILD_SHIFT);
	synchronize_srcu(&srnic_engine_srcu);
	ib_umem_odp_release(child);
	atomic64_dec(&odp->sdev->odp_stats.children);
}

/* Pages of [va, va + len) mapped in @umem, with its umem_mutex held. */
static int srnic_odp_count(struct ib_umem_odp *umem, u64 va, u64 len)
{
	u64 pgsz = 1ULL << umem->page_shift, end = va + len;
	int n = 0;

	for (va &= ~(pgsz - 1); va < end; va += pgsz)
		if (umem->dma_list[(va - ib_umem_start(umem)) >> umem->page_shift])
			n++;
	return n;
}

/*
 * Maps [iova, iova + len) of @mr in process context: faulting pages in, or
 * (!@fault, PREFETCH_NO_FAULT) only those the CPU has mapped.  Returns the
 * pages mapped or a negative errno (-EFAULT: nothing mapped there, -EPERM:
 * no write access).
 */
static int srnic_odp_map(struct srnic_mr *mr, u64 iova, u64 len, bool write,
			 bool fault)
{
	u64 mask = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	u64 va = srnic_odp_va(mr, iova), end = va + len;
	struct srnic_odp *odp = mr->odp;
	int pages = 0, ret = 0;

	/* Implicit MRs: faults (and prefetches) of the MR take turns. */
	if (odp->implicit)
		mutex_lock(&odp->child_lock);
	while (va < end) {
		struct ib_umem_odp *umem = odp->umem;
		bool made = false;
		u64 n;

		if (odp->implicit)
			umem = srnic_odp_child(mr, va, &made);
		if (IS_ERR(umem)) {
			ret = PTR_ERR(umem);
			break;
		}
		n = min_t(u64, end, ib_umem_end(umem)) - va;
		if (srnic_should_fail(odp->sdev, SRNIC_FAULT_ODP_BUSY, 0))
			ret = -EBUSY;
		else
			ret = ib_umem_odp_map_dma_and_lock(umem, va, n, mask,
							   fault);
		if (ret < 0) {
			if (made)
				srnic_odp_drop_child(odp, umem);
			break;
		}
		/* Without faulting, what counts is what got mapped. */
		if (!fault)
			ret = srnic_odp_count(umem, va, n);
		mutex_unlock(&umem->umem_mutex);
		pages += ret;
		va += n;
	}
	if (odp->implicit)
		mutex_unlock(&odp->child_lock);
	return ret < 0 ? ret : pages;
}

/*
 * The core gives a fault a second while its range keeps changing (-EBUSY);
 * under a storm of invalidations, or with the CPU stalled (a guest whose
 * host is busy), the second can pass with every page still there.  That is
 * no reason to fail the WQE: the fault goes again, a few times.
 */
#define SRNIC_ODP_BUSY_TRIES	8

/* A page fault of the engine (or a prefetch), resolved in process context. */
int srnic_odp_fault(struct srnic_mr *mr, u64 iova, u64 len, bool write,
		    bool prefetch)
{
	struct srnic_odp_stats *st = &mr->odp->sdev->odp_stats;
	int ret, tries = 0;

	if (srnic_mr_check(mr, mr->pd, 0, iova, len))
		return -EFAULT;
	if (srnic_should_fail(mr->odp->sdev, SRNIC_FAULT_ODP, 0))
		ret = -EFAULT;
	else
		while ((ret = srnic_odp_map(mr, iova, len, write, true)) ==
			       -EBUSY && ++tries < SRNIC_ODP_BUSY_TRIES)
			atomic64_inc(&st->busy_retries);
	trace_srnic_odp_fault(mr, iova, len, prefetch, ret);
	if (ret < 0)
		return ret;
	atomic64_inc(prefetch ? &st->prefetches : &st->page_faults);
	atomic64_add(ret, prefetch ? &st->pages_prefetched : &st->pages_faulted);
	return 0;
}

/* ---- ibv_advise_mr ---- */

struct srnic_prefetch {
	struct work_struct work;
	bool write, fault;
	u32 n;
	struct {
		struct srnic_mr *mr;
		u64 addr;
		u32 len;
	} sge[];
};

static struct workqueue_struct *srnic_odp_wq;

static void srnic_prefetch_run(struct srnic_prefetch *p)
{
	u32 i;

	for (i = 0; i < p->n; i++) {
		struct srnic_mr *mr = p->sge[i].mr;

		if (p->fault) {
			srnic_odp_fault(mr, p->sge[i].addr, p->sge[i].len,
					p->write, true);
		} else if (!srnic_mr_check(mr, mr->pd, 0, p->sge[i].addr,
					   p->sge[i].len)) {
			/* Only what is present: nothing is faulted in. */
			int ret = srnic_odp_map(mr, p->sge[i].addr,
						p->sge[i].len, false, false);

			if (ret >= 0) {
				atomic64_inc(&mr->odp->sdev->odp_stats.prefetches);
				atomic64_add(ret, &mr->odp->sdev->odp_stats.pages_prefetched);
			}
		}
		srnic_mr_put(mr);
	}
	kfree(p);
}

static void srnic_prefetch_work(struct work_struct *work)
{
	srnic_prefetch_run(container_of(work, struct srnic_prefetch, work));
}

int srnic_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_prefetch *p;
	u32 i;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	p = kzalloc(struct_size(p, sge, num_sge), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	p->fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	for (i = 0; i < num_sge; i++) {
		struct srnic_mr *mr = srnic_mr_get(sdev, sg_list[i].lkey);
		int access = p->write ? IB_ACCESS_LOCAL_WRITE : 0;

		if (!mr || !mr->odp ||
		    srnic_mr_check(mr, to_spd(ibpd), access, sg_list[i].addr,
				   sg_list[i].length)) {
			if (mr)
				srnic_mr_put(mr);
			p->n = i;
			while (p->n--)
				srnic_mr_put(p->sge[p->n].mr);
			kfree(p);
			return -EINVAL;
		}
		p->sge[i].mr = mr;
		p->sge[i].addr = sg_list[i].addr;
		p->sge[i].len = sg_list[i].length;
	}
	p->n = num_sge;
	if (flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH) {
		srnic_prefetch_run(p);
		return 0;
	}
	INIT_WORK(&p->work, srnic_prefetch_work);
	queue_work(srnic_odp_wq, &p->work);
	return 0;
}

/* ---- faults of the engine ---- */

static void srnic_fault_work(struct work_struct *work)
{
	struct srnic_qp *qp = container_of(work, struct srnic_qp, fault_work);
	struct srnic_fault *f = &qp->fault;
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);

	/* Injected: a fault as slow as one waiting for a disk. */
	if (srnic_should_fail(sdev, SRNIC_FAULT_ODP_SLOW, qp->qpn))
		fsleep(READ_ONCE(sdev->faults.delay_us));
	qp->fault_err = srnic_odp_fault(f->mr, f->iova, f->len, f->write,
					false);
	srnic_mr_put(f->mr);
	f->mr = NULL;
	/* The QP's engine may retry the WQE once it sees this. */
	smp_store_release(&qp->fault_wait, false);
	srnic_engine_kick(qp);
	srnic_qp_put(qp);
}

void srnic_qp_fault_init(struct srnic_qp *qp)
{
	INIT_WORK(&qp->fault_work, srnic_fault_work);
}

/*
 * The WQE at the head of @qp's send queue needs @f resolved (its reference
 * moves to the QP): the QP waits, the fault runs in the workqueue.
 * Returns false if that same fault already failed: the WQE then completes
 * in error (the fault's error is consumed).  While a fault is out, another
 * is dropped and the QP goes on waiting: the WQE is tried again after.
 */
bool srnic_qp_fault(struct srnic_qp *qp, struct srnic_fault *f)
{
	/* One at a time: the QP's fault record and work may be in use. */
	if (qp->fault_wait || qp->fault_err) {
		bool waiting = qp->fault_wait;

		if (!waiting)
			qp->fault_err = 0;
		srnic_mr_put(f->mr);
		f->mr = NULL;
		return waiting;
	}
	qp->fault = *f;
	f->mr = NULL;
	qp->fault_wait = true;
	refcount_inc(&qp->ref);
	queue_work(srnic_odp_wq, &qp->fault_work);
	return true;
}

int srnic_odp_init(void)
{
	srnic_odp_wq = alloc_workqueue("srnic_odp", WQ_UNBOUND, 0);
	return srnic_odp_wq ? 0 : -ENOMEM;
}

void srnic_odp_cleanup(void)
{
	destroy_workqueue(srnic_odp_wq);
}

/*
 * Faults in @f's range for a responder no requester waits for (a packet
 * from the wire, dropped meanwhile): in the workqueue, taking the fault's
 * MR reference.  Called inside srnic_engine_srcu: no sleeping allocation;
 * without memory the range is simply not faulted in now.
 */
void srnic_odp_fault_async(struct srnic_fault *f, bool write)
{
	struct srnic_prefetch *p;

	p = kzalloc(struct_size(p, sge, 1), GFP_NOWAIT | __GFP_NOWARN);
	if (!p) {
		srnic_mr_put(f->mr);
		f->mr = NULL;
		return;
	}
	p->write = write;
	p->fault = true;
	p->n = 1;
	p->sge[0].mr = f->mr;
	p->sge[0].addr = f->iova;
	p->sge[0].len = f->len;
	f->mr = NULL;
	INIT_WORK(&p->work, srnic_prefetch_work);
	queue_work(srnic_odp_wq, &p->work);
}
