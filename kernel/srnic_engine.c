// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The engine thread: the NIC of an srnic device.
 *
 * It scans the send doorbells of the device's active QPs (xarray mark
 * SRNIC_QP_ACTIVE) and executes what they announce.  When it finds nothing
 * for SRNIC_ENGINE_SPIN_NS it goes to sleep with the NEED_WAKEUP protocol,
 * modelled on io_uring's SQPOLL:
 *
 *   engine:   flags = NEED_WAKEUP; smp_mb(); scan again; sleep if nothing
 *   provider: doorbell = producer;  full barrier; if (flags & NEED_WAKEUP)
 *             post_send(qp, NULL)  ->  srnic_engine_kick()
 *
 * Each side stores, fences, then loads what the other stored, so at least
 * one of them sees the other: either the engine's second scan finds the
 * doorbell, or the provider sees the flag and kicks.  A kick sets @kicked
 * before waking, and the engine's wait checks @kicked, so a kick that lands
 * before the engine sleeps is not lost either.
 */
#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/sched/clock.h>

#include "srnic_loc.h"

/*
 * How long the engine polls without work before it sleeps.  Posting
 * applications pause between bursts (polling completions, being
 * descheduled); sleeping at every such pause costs them a system call each.
 */
#define SRNIC_ENGINE_SPIN_NS	(1 * NSEC_PER_MSEC)
#define SRNIC_ENGINE_BUDGET	64	/* WQEs of one QP per scan */

void srnic_engine_kick(struct srnic_dev *sdev)
{
	struct srnic_engine *eng = &sdev->engine;
	unsigned long flags;

	spin_lock_irqsave(&eng->wait.lock, flags);
	eng->kicked = true;
	wake_up_locked(&eng->wait);
	spin_unlock_irqrestore(&eng->wait.lock, flags);
}

/* Scans every active QP once; returns the work done, earliest timer in @timer. */
static int srnic_engine_scan(struct srnic_dev *sdev, unsigned long *timer)
{
	unsigned long idx = 0;
	struct srnic_qp *qp;
	int work = 0;

	for (;;) {
		xa_lock(&sdev->qps);
		qp = xa_find(&sdev->qps, &idx, ULONG_MAX, SRNIC_QP_ACTIVE);
		while (qp && !refcount_inc_not_zero(&qp->ref)) {
			idx++;
			qp = xa_find(&sdev->qps, &idx, ULONG_MAX,
				     SRNIC_QP_ACTIVE);
		}
		xa_unlock(&sdev->qps);
		if (!qp)
			break;
		work += srnic_qp_process(sdev, qp, SRNIC_ENGINE_BUDGET, timer);
		srnic_qp_put(qp);
		idx++;
	}
	WRITE_ONCE(sdev->engine.scans, sdev->engine.scans + 1);
	if (wq_has_sleeper(&sdev->engine.scanned))
		wake_up_all(&sdev->engine.scanned);
	return work;
}

/*
 * Waits until the engine has run two full scans that started after this
 * call, so that all work announced before it is executed (what a hardware
 * NIC would have done by now).  Bounded: a second at most.
 */
void srnic_engine_sync(struct srnic_dev *sdev)
{
	struct srnic_engine *eng = &sdev->engine;
	u64 target = READ_ONCE(eng->scans) + 2;

	srnic_engine_kick(sdev);
	wait_event_timeout(eng->scanned, READ_ONCE(eng->scans) >= target, HZ);
}

static bool srnic_engine_woken(struct srnic_engine *eng)
{
	return READ_ONCE(eng->kicked) || kthread_should_stop();
}

static int srnic_engine_thread(void *arg)
{
	struct srnic_dev *sdev = arg;
	struct srnic_engine *eng = &sdev->engine;
	u64 idle_since = 0;

	while (!kthread_should_stop()) {
		unsigned long timer = 0;
		long timeout;

		if (srnic_engine_scan(sdev, &timer)) {
			idle_since = 0;
			cond_resched();
			continue;
		}
		if (!idle_since)
			idle_since = local_clock();
		if (local_clock() - idle_since < SRNIC_ENGINE_SPIN_NS) {
			cond_resched();
			continue;
		}

		WRITE_ONCE(eng->status->flags, SRNIC_ENGINE_NEED_WAKEUP);
		/* Pairs with the provider's barrier between doorbell and flag. */
		smp_mb();
		if (srnic_engine_scan(sdev, &timer)) {
			WRITE_ONCE(eng->status->flags, 0);
			idle_since = 0;
			continue;
		}
		timeout = MAX_SCHEDULE_TIMEOUT;
		if (timer)
			timeout = max_t(long, (long)(timer - jiffies), 1);
		eng->sleeps++;
		wait_event_interruptible_timeout(eng->wait,
						 srnic_engine_woken(eng),
						 timeout);
		spin_lock_irq(&eng->wait.lock);
		if (eng->kicked)
			eng->wakeups++;
		eng->kicked = false;
		spin_unlock_irq(&eng->wait.lock);
		WRITE_ONCE(eng->status->flags, 0);
		idle_since = 0;
	}
	return 0;
}

/* debugfs "engine": counters, then one line per QP the engine scans. */
static int srnic_engine_show(struct seq_file *s, void *unused)
{
	struct srnic_dev *sdev = s->private;
	struct srnic_engine *eng = &sdev->engine;
	unsigned long idx;
	struct srnic_qp *qp;

	seq_printf(s, "wqes %llu sleeps %llu wakeups %llu scans %llu busy %llu flags %#x\n",
		   eng->wqes, eng->sleeps, eng->wakeups, eng->scans, eng->busy,
		   READ_ONCE(eng->status->flags));
	xa_lock(&sdev->qps);
	xa_for_each_marked(&sdev->qps, idx, qp, SRNIC_QP_ACTIVE)
		seq_printf(s, "qp %u state %d sq_cons %u doorbell %u rq_cons %u peer %d/%u rnr %d locked %d visits %u ref %u\n",
			   qp->qpn, READ_ONCE(qp->state), qp->sq_cons,
			   READ_ONCE(qp->dbr.kva->value), qp->rq_cons,
			   qp->peer_dev, qp->attr.dest_qp_num, qp->rnr_wait,
			   mutex_is_locked(&qp->lock), qp->visits,
			   refcount_read(&qp->ref));
	xa_unlock(&sdev->qps);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(srnic_engine);

int srnic_engine_start(struct srnic_dev *sdev, const char *name)
{
	struct srnic_engine *eng = &sdev->engine;

	init_waitqueue_head(&eng->wait);
	init_waitqueue_head(&eng->scanned);
	eng->status = page_address(sdev->status_page);
	eng->wqe = kzalloc(SRNIC_SEND_WQE_MAX, GFP_KERNEL);
	eng->rwqe = kzalloc(SRNIC_RECV_WQE_MAX, GFP_KERNEL);
	if (!eng->wqe || !eng->rwqe)
		return -ENOMEM;
	debugfs_create_file("engine", 0400, sdev->debugfs, sdev,
			    &srnic_engine_fops);
	eng->task = kthread_run(srnic_engine_thread, sdev, "srnic/%s", name);
	if (IS_ERR(eng->task)) {
		int err = PTR_ERR(eng->task);

		eng->task = NULL;
		return err;
	}
	return 0;
}

void srnic_engine_stop(struct srnic_dev *sdev)
{
	struct srnic_engine *eng = &sdev->engine;

	if (eng->task)
		kthread_stop(eng->task);
	eng->task = NULL;
	kfree(eng->wqe);
	kfree(eng->rwqe);
	eng->wqe = NULL;
	eng->rwqe = NULL;
}
