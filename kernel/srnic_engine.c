// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The engine thread: the NIC of an srnic device, and the doorbell system
 * call that stands in for it while it sleeps.
 *
 * A device has one or more engine threads (srnic.engines), as a NIC has
 * processing units: each serves the QPs srnic_qp_engine() gives it, those
 * whose doorbells were marked (srnic_uar.c) and those made ready by the
 * kernel (srnic_qp_ready), and executes what they announce.  Each thread
 * has its own record in the status page and its own bell pages, so the
 * protocol below is that of one thread and its QPs.  It polls only
 * while it has its CPU to itself, for at most SRNIC_ENGINE_SPIN_NS without
 * work; then it sleeps with the NEED_WAKEUP protocol, modelled on io_uring's
 * SQPOLL:
 *
 *   engine:   flags = NEED_WAKEUP; smp_mb(); scan again; sleep if nothing
 *   provider: doorbell = producer; mark; full barrier; if (flags & NEED_WAKEUP)
 *             post_send(qp, NULL)  ->  srnic_engine_doorbell()
 *
 * Each side stores, fences, then loads what the other stored, so at least
 * one of them sees the other: either the engine's second scan finds the
 * mark, or the provider sees the flag and makes the call.  The call
 * executes the QP's work itself (io_uring without SQPOLL) and kicks the
 * engine for whatever it leaves.  A kick sets @kicked before waking, and
 * the engine's wait checks @kicked, so a kick that lands before the engine
 * sleeps is not lost either.
 *
 * Two reasons to sleep, two behaviours (docs/bench.md has the measurements
 * behind them):
 *  - idle: no work for SRNIC_ENGINE_SPIN_NS with a CPU to itself.  The next
 *    doorbell call runs its work and wakes the engine, which polls again.
 *  - yield: another task waits for the engine's CPU.  Polling would only
 *    delay it (at 2 CPUs, two busy-polling ping-pong peers and the engine
 *    share them: every WQE waited for a time slice).  The engine sleeps with
 *    the flag set and looks again every tick; meanwhile every post executes
 *    in its own doorbell call, on the CPU its poster already has.
 */
#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/sched/clock.h>
#include <linux/sched/stat.h>
#include <linux/tick.h>

#include "srnic_loc.h"
#include "srnic_transport.h"
#include "srnic_trace.h"

/*
 * How long the engine polls without work before it sleeps.  Posting
 * applications pause between bursts (polling completions, being
 * descheduled); sleeping at every such pause costs them a system call each.
 */
#define SRNIC_ENGINE_SPIN_NS	(1 * NSEC_PER_MSEC)
#define SRNIC_ENGINE_BUDGET	64	/* WQEs of one QP per scan or call */
#define SRNIC_ENGINE_IDLE_PASSES 16	/* idle scan passes per look around */

/*
 * How many engine threads a new device gets: 0 says one per two online
 * CPUs, as the posting processes need CPUs of their own.
 */
static unsigned int srnic_engines;
module_param_named(engines, srnic_engines, uint, 0644);
MODULE_PARM_DESC(engines, "engine threads of devices created from now on (0: one per two CPUs)");

static unsigned int srnic_engine_count(void)
{
	unsigned int n = READ_ONCE(srnic_engines);

	if (!n)
		n = num_online_cpus() / 2;
	return clamp_t(unsigned int, n, 1,
		       SRNIC_MAX_ENGINES);
}

struct srnic_thread *srnic_qp_thread(struct srnic_qp *qp)
{
	struct srnic_sched *s = &to_sdev(qp->ibqp.device)->sched;

	return &s->threads[srnic_qp_engine(qp->qpn, s->nthreads)];
}

void srnic_thread_kick(struct srnic_thread *t)
{
	unsigned long flags;

	spin_lock_irqsave(&t->wait.lock, flags);
	t->kicked = true;
	wake_up_locked(&t->wait);
	spin_unlock_irqrestore(&t->wait.lock, flags);
}

/*
 * Puts @qp at the end of its thread's run list, unless it is on it or
 * being destroyed (srnic_qp_unready); returns whether it is on it.  Any
 * context.  The lock orders what the caller wrote before against the
 * engine's look at the QP after it took it off the list.
 */
bool srnic_qp_ready(struct srnic_qp *qp)
{
	struct srnic_thread *t = srnic_qp_thread(qp);
	unsigned long flags;
	bool on;

	spin_lock_irqsave(&t->run_lock, flags);
	on = !qp->gone;
	if (on && !qp->queued) {
		qp->queued = true;
		list_add_tail(&qp->run_node, &t->run);
		t->run_n++;
	}
	spin_unlock_irqrestore(&t->run_lock, flags);
	return on;
}

/*
 * Takes @qp off its thread's run list for good, before its destroy waits
 * for the engine's SRCU sections: a QP is taken off the list (and looked
 * at) inside one, so none is left that may use it.
 */
void srnic_qp_unready(struct srnic_qp *qp)
{
	struct srnic_thread *t = srnic_qp_thread(qp);

	spin_lock_irq(&t->run_lock);
	qp->gone = true;
	if (qp->queued) {
		list_del(&qp->run_node);
		qp->queued = false;
		t->run_n--;
	}
	if (qp->hot) {
		list_del_rcu(&qp->hot_node);
		qp->hot = false;
		t->nhot--;
	}
	spin_unlock_irq(&t->run_lock);
}

static bool srnic_qp_has_work(struct srnic_qp *qp);

/*
 * The hot list.  A user QP whose marks led to work stays hot: its rung bit
 * is set again and left set, so the provider's next posts stop at one
 * read-modify-write, and the engine reads its doorbell on every pass
 * instead of taking marks (srnic-abi.h).  A QP idle for a jiffy or more,
 * and every QP before the thread sleeps, is retired: its bit is cleared,
 * then its doorbell read once more.  At most SRNIC_HOT_MAX a thread, so
 * a pass's polls are bounded whatever a process marks.  Only the engine
 * thread adds, retires and walks (inside srnic_engine_srcu: destroy takes
 * a QP off with list_del_rcu, then waits for the sections).
 */
static void srnic_hot_add(struct srnic_thread *t, struct srnic_qp *qp)
{
	bool added = false;

	qp->hot_seen = jiffies;
	if (qp->hot || !qp->rung || t->nhot >= SRNIC_HOT_MAX)
		return;
	spin_lock_irq(&t->run_lock);
	if (!qp->gone) {
		list_add_tail_rcu(&qp->hot_node, &t->hot);
		qp->hot = true;
		t->nhot++;
		added = true;
	}
	spin_unlock_irq(&t->run_lock);
	if (added)
		atomic64_or(qp->rung_bit, (atomic64_t *)qp->rung);
}

/* Takes @qp off the hot list; returns whether its doorbell then shows work. */
static bool srnic_hot_retire(struct srnic_thread *t, struct srnic_qp *qp)
{
	spin_lock_irq(&t->run_lock);
	if (qp->hot) {
		list_del_rcu(&qp->hot_node);
		qp->hot = false;
		t->nhot--;
	}
	spin_unlock_irq(&t->run_lock);
	/* Cleared before the doorbell is read: a post after sets it again. */
	atomic64_fetch_andnot(qp->rung_bit, (atomic64_t *)qp->rung);
	return srnic_qp_has_work(qp);
}

static struct srnic_qp *srnic_run_pop(struct srnic_thread *t)
{
	struct srnic_qp *qp;

	spin_lock_irq(&t->run_lock);
	qp = list_first_entry_or_null(&t->run, struct srnic_qp, run_node);
	if (qp) {
		list_del(&qp->run_node);
		qp->queued = false;
		t->run_n--;
	}
	spin_unlock_irq(&t->run_lock);
	return qp;
}

/* Wakes the engine thread of @qp, for work of @qp. */
void srnic_engine_kick(struct srnic_qp *qp)
{
	srnic_qp_ready(qp);
	srnic_thread_kick(srnic_qp_thread(qp));
}

/*
 * Whether @qp, in RTS, has something for the engine: a send WQE announced,
 * a retry waited for, a rendezvous to read.  Read without the QP's lock: a
 * doorbell rung after the read is marked (or its producer calls), and
 * whoever changes the rest makes the QP ready again.
 */
static bool srnic_qp_has_work(struct srnic_qp *qp)
{
	return READ_ONCE(qp->state) == IB_QPS_RTS && srnic_qp_has_sq(qp) &&
	       (READ_ONCE(qp->rnr_wait) ||
		READ_ONCE(qp->dbr.kva->value) != READ_ONCE(qp->sq_cons) ||
		READ_ONCE(qp->w.rndv_tail) != READ_ONCE(qp->w.rndv_head));
}

/*
 * Whether a visit to @qp that did @done (srnic_qp_process()) left work:
 * then @qp goes back to the end of the run list, after the others' turn.
 */
static bool srnic_qp_left_work(struct srnic_qp *qp, int done)
{
	return done < 0 || done >= SRNIC_ENGINE_BUDGET || srnic_qp_has_work(qp);
}

/*
 * Runs @qp, taken off the run list of @t: in RTS only if it has work (a
 * mark may name a QP with none), in any other state always (srnic_qp_process
 * flushes or does nothing).  Returns the work done, as srnic_qp_process().
 */
static int srnic_engine_visit(struct srnic_thread *t, struct srnic_qp *qp,
			      unsigned long *timer)
{
	int done = 0;

	if (READ_ONCE(qp->state) != IB_QPS_RTS || srnic_qp_has_work(qp))
		done = srnic_qp_process(t->sdev, &t->eng, qp,
					SRNIC_ENGINE_BUDGET,
					SRNIC_VISIT_BYTES, timer);
	/* One found locked counts as "busy" (srnic_qp_process). */
	if (done >= 0)
		t->visits++;
	/*
	 * A hot QP's doorbell work is found by its next poll; any other work
	 * left (a visit locked out, a budget spent on a retry, a flush) is
	 * found only on the list.
	 */
	if (srnic_qp_left_work(qp, done) &&
	    !(READ_ONCE(qp->hot) && srnic_qp_has_work(qp)))
		srnic_qp_ready(qp);
	return done;
}

/* Queues @qp to run in this pass (t->marked), or on the run list if that is full. */
static void srnic_engine_mark(struct srnic_thread *t, struct srnic_qp *qp)
{
	if (t->nmarked < SRNIC_MARKED)
		t->marked[t->nmarked++] = qp;
	else
		srnic_qp_ready(qp);
}

/*
 * Reads the doorbells of thread @t's hot QPs: those with work run in this
 * pass; those idle since the jiffy before last are retired.  Inside
 * srnic_engine_srcu.
 */
static void srnic_hot_poll(struct srnic_thread *t)
{
	struct srnic_qp *qp;

	list_for_each_entry_rcu(qp, &t->hot, hot_node,
				srcu_read_lock_held(&srnic_engine_srcu)) {
		if (READ_ONCE(qp->gone) || READ_ONCE(qp->queued))
			continue;	/* going, or run from the list */
		if (srnic_qp_has_work(qp)) {
			qp->hot_seen = jiffies;
			t->polls++;
			srnic_engine_mark(t, qp);
		} else if (time_after(jiffies, qp->hot_seen + 1) &&
			   srnic_hot_retire(t, qp)) {
			srnic_engine_mark(t, qp);
		}
	}
}

/*
 * Retires every hot QP, before the thread sleeps; returns whether one had
 * work (then the thread should not sleep: it is on the run list).
 */
static bool srnic_hot_retire_all(struct srnic_thread *t)
{
	struct srnic_qp *qp;
	bool work = false;
	int srcu;

	if (!READ_ONCE(t->nhot))
		return false;
	srcu = srcu_read_lock(&srnic_engine_srcu);
	list_for_each_entry_rcu(qp, &t->hot, hot_node,
				srcu_read_lock_held(&srnic_engine_srcu)) {
		if (srnic_hot_retire(t, qp)) {
			srnic_qp_ready(qp);
			work = true;
		}
	}
	srcu_read_unlock(&srnic_engine_srcu, srcu);
	return work;
}

/*
 * Runs the QPs the marks named (t->marked), inside the SRCU section in
 * which they were found; returns the work done.  Once the CPU has been
 * held for SRNIC_CPU_HOLD since @held, the rest wait on the run list,
 * which outlives the section, for the CPU to be offered.
 */
static int srnic_engine_run_marked(struct srnic_thread *t,
				   unsigned long *timer, unsigned long held)
{
	unsigned int i;
	int work = 0, done;

	for (i = 0; i < t->nmarked; i++) {
		if (time_after_eq(jiffies, held + SRNIC_CPU_HOLD)) {
			srnic_qp_ready(t->marked[i]);
			continue;
		}
		done = srnic_engine_visit(t, t->marked[i], timer);
		if (done > 0)
			srnic_hot_add(t, t->marked[i]);
		work += done < 0 ? 1 : done;
	}
	t->nmarked = 0;
	return work;
}

/*
 * Runs thread @t's work, up to @passes times until a pass finds some;
 * returns the work done (a QP found locked counts), earliest timer in
 * @timer.  A pass takes the packets from the wire, then the marks of rung
 * doorbells and the doorbells of hot QPs, then each QP on the run list
 * once: those made ready during the pass (its own requeued ones included)
 * wait for the next.  So a pass costs what the QPs with work cost, and a
 * look at each context's bell page: idle QPs cost nothing (srnic_uar.c).
 * The QPs marked or hot with work run at once, before the list and
 * without its lock: a rung doorbell's WQEs
 * are the common case, and the lock's interrupts-off sections cost a
 * quarter of an 8-byte WRITE's latency under emulation (docs/bench.md).
 *
 * The QPs are neither locked nor referenced to be looked at: a QP is taken
 * off the list and run inside srnic_engine_srcu (srnic_qp_unready).  After
 * a batch of work the section is left and entered again, so that no
 * section holds more than one batch, as ODP invalidations and removals
 * wait for it, and the CPU is offered (srnic_offer_cpu()): a pass over
 * many busy QPs is as long as their batches together (26 s were seen on
 * the debug kernel).
 */
static int srnic_engine_scan(struct srnic_thread *t, unsigned long *timer,
			     unsigned int passes)
{
	unsigned long held = jiffies;
	struct srnic_qp *qp;
	int work = 0, done, srcu;
	unsigned int n;

	srcu = srcu_read_lock(&srnic_engine_srcu);
	while (!work && passes--) {
		/* Packets from the wire first: a NIC's receive ring. */
		if (!skb_queue_empty_lockless(&t->rxq) ||
		    xa_marked(&t->sdev->qps, SRNIC_QP_READING))
			work += srnic_net_rx(t, timer);
		t->marks += srnic_bells_take(t);
		srnic_hot_poll(t);
		if (t->nmarked) {
			work += srnic_engine_run_marked(t, timer, held);
			srcu_read_unlock(&srnic_engine_srcu, srcu);
			srnic_offer_cpu(&held);
			srcu = srcu_read_lock(&srnic_engine_srcu);
		}
		for (n = READ_ONCE(t->run_n); n && (qp = srnic_run_pop(t)); n--) {
			done = srnic_engine_visit(t, qp, timer);
			/*
			 * A QP locked by a doorbell call is busy, not idle:
			 * the engine must not take that for a pause and sleep.
			 */
			work += done < 0 ? 1 : done;
			if (done > 0) {
				srcu_read_unlock(&srnic_engine_srcu, srcu);
				srnic_offer_cpu(&held);
				srcu = srcu_read_lock(&srnic_engine_srcu);
			}
		}
		WRITE_ONCE(t->scans, t->scans + 1);
	}
	srcu_read_unlock(&srnic_engine_srcu, srcu);
	if (wq_has_sleeper(&t->scanned))
		wake_up_all(&t->scanned);
	return work;
}

/*
 * Waits until every engine thread has run two full scans that started
 * after this call, so that all work announced before it is executed (what
 * a hardware NIC would have done by now).  Bounded: a second at most.
 */
void srnic_engine_sync(struct srnic_dev *sdev)
{
	struct srnic_sched *s = &sdev->sched;
	unsigned long end = jiffies + HZ;
	unsigned int i;

	/* A thread's target is taken before its kick: its scans start after. */
	for (i = 0; i < s->nthreads; i++) {
		struct srnic_thread *t = &s->threads[i];
		u64 target = READ_ONCE(t->scans) + 2;

		srnic_thread_kick(t);
		wait_event_timeout(t->scanned, READ_ONCE(t->scans) >= target,
				   max_t(long, (long)(end - jiffies), 1));
	}
}

/* An engine of the pool, or NULL if every one is in use. */
static struct srnic_engine *srnic_engine_borrow(struct srnic_sched *s)
{
	unsigned int i, n = s->pool_size, first = raw_smp_processor_id() % n;

	for (i = 0; i < n; i++) {
		unsigned int b = (first + i) % n;

		if (!test_and_set_bit_lock(b, s->pool_used))
			return &s->pool[b];
	}
	return NULL;
}

static void srnic_engine_return(struct srnic_sched *s,
				struct srnic_engine *eng)
{
	clear_bit_unlock(eng - s->pool, s->pool_used);
}

/*
 * The doorbell system call of @qp: a zero-WR post_send, made by a provider
 * that found NEED_WAKEUP set after ringing the doorbell.  As io_uring does
 * without SQPOLL, the caller executes its QP's work itself, at once and on
 * the CPU it already has, instead of waiting for the engine thread to be
 * woken and scheduled (which, when every CPU is busy, is a time slice).
 *
 * It must not lose work: whatever it does not finish (QP locked by the
 * engine or by modify_qp, budget spent, RNR wait, no engine free in the
 * pool) is left to the engine thread, which is kicked.  So is the thread
 * when it went to sleep idle with a CPU to itself: work is back, and
 * polling on that CPU spares the following posts their system calls.
 */
void srnic_engine_doorbell(struct srnic_dev *sdev, struct srnic_qp *qp)
{
	struct srnic_sched *s = &sdev->sched;
	struct srnic_thread *t = srnic_qp_thread(qp);
	struct srnic_engine *eng;
	unsigned long timer = 0;
	int done, srcu;
	bool left;

	atomic64_inc(&s->doorbells);
	trace_srnic_doorbell(sdev, qp->qpn);
	eng = srnic_engine_borrow(s);
	if (!eng) {
		atomic64_inc(&s->pool_empty);
		srnic_engine_kick(qp);
		return;
	}
	eng->runs++;
	srcu = srcu_read_lock(&srnic_engine_srcu);
	done = srnic_qp_process(sdev, eng, qp, SRNIC_ENGINE_BUDGET,
				SRNIC_CALL_BYTES, &timer);
	srcu_read_unlock(&srnic_engine_srcu, srcu);
	srnic_engine_return(s, eng);
	left = srnic_qp_left_work(qp, done);
	if (left)
		srnic_qp_ready(qp);
	if (left || READ_ONCE(t->reason) == SRNIC_SLEEP_IDLE)
		srnic_thread_kick(t);
}

/*
 * Whether one of the CPUs the engine may run on was idle for most of the
 * last tick or more.  Sampled at most once a jiffy (idle times mean
 * nothing over less); the verdict is kept in between.
 */
static bool srnic_engine_cpu_free(struct srnic_thread *s)
{
	u64 now = ktime_get_ns(), elapsed = now - s->idle_at;
	bool free = false;
	int cpu;

	if (jiffies == s->idle_jiffy)
		return s->idle_free;
	for_each_cpu_and(cpu, current->cpus_ptr, cpu_online_mask) {
		u64 idle = get_cpu_idle_time_us(cpu, NULL);

		if (idle == (u64)-1)
			break;		/* no NOHZ accounting: say busy */
		/* Not monotonic: an iowait period counts once it ends. */
		if (idle > s->idle_us[cpu] &&
		    (idle - s->idle_us[cpu]) * NSEC_PER_USEC * 2 > elapsed)
			free = true;
		s->idle_us[cpu] = idle;
	}
	s->idle_at = now;
	s->idle_jiffy = jiffies;
	s->idle_free = free;
	return free;
}

/*
 * Whether others wait for this CPU and no other CPU is free.  Then polling
 * for work would only delay them, and with them the work they post or the
 * completions they wait for: better sleep and let the doorbell calls run
 * the work.  With a CPU free the engine keeps polling, runnable, and the
 * scheduler's load balancing moves it there (a wake-up may put it on a
 * busy CPU when the free one is in another cache domain).
 */
static bool srnic_engine_contended(struct srnic_thread *s)
{
	return !single_task_running() && !srnic_engine_cpu_free(s);
}

static bool srnic_engine_woken(struct srnic_thread *s)
{
	return READ_ONCE(s->kicked) || kthread_should_stop();
}

/*
 * Sleeps with NEED_WAKEUP set, for @reason; returns whether the engine
 * should poll again.  After an idle sleep it should (work is back, or a
 * timer is due).  An engine that yielded its CPU looks again a tick later
 * (the scheduler's own granularity) and polls only if it then has its CPU
 * to itself; otherwise the flag stays set and doorbell calls keep running
 * the work.
 */
static bool srnic_engine_sleep(struct srnic_thread *s, int reason,
			       unsigned long timer)
{
	long timeout = MAX_SCHEDULE_TIMEOUT;
	bool kicked;

	if (timer)
		timeout = max_t(long, (long)(timer - jiffies), 1);
	if (reason == SRNIC_SLEEP_YIELD)
		timeout = min_t(long, timeout, 1);
	WRITE_ONCE(s->reason, reason);
	s->sleeps++;
	trace_srnic_engine_sleep(s->sdev, reason);
	wait_event_interruptible_timeout(s->wait, srnic_engine_woken(s),
					 timeout);
	spin_lock_irq(&s->wait.lock);
	kicked = s->kicked;
	s->kicked = false;
	spin_unlock_irq(&s->wait.lock);
	if (kicked)
		s->wakeups++;
	trace_srnic_engine_wake(s->sdev, kicked);
	return reason == SRNIC_SLEEP_IDLE || !srnic_engine_contended(s);
}

/*
 * With NEED_WAKEUP set (and the barrier after it), scans and sleeps until
 * the engine should poll again.  A yielding engine keeps the flag set while
 * it runs what it finds (a kick, an RNR retry): clearing it while others
 * want its CPU would send the next posts to an engine that waits for that
 * CPU, instead of running them in their doorbell calls.
 */
static void srnic_engine_rest(struct srnic_thread *s, int reason,
			      unsigned long timer)
{
	while (!kthread_should_stop()) {
		if (srnic_engine_scan(s, &timer, 1)) {
			if (reason == SRNIC_SLEEP_IDLE ||
			    !srnic_engine_contended(s))
				return;
			cond_resched();
		} else if (srnic_hot_retire_all(s)) {
			continue;	/* a hot QP's post: scan again */
		} else if (srnic_engine_sleep(s, reason, timer)) {
			return;
		}
		timer = 0;
	}
}

static int srnic_engine_thread(void *arg)
{
	struct srnic_thread *s = arg;
	u64 idle_since = 0;

	while (!kthread_should_stop()) {
		unsigned long timer = 0;
		int reason;

		/*
		 * Several idle passes per look at the clock, the CPU's other
		 * tasks and the scheduler: each costs as much as an idle
		 * pass over a few QPs, which it would delay.
		 */
		if (srnic_engine_scan(s, &timer, SRNIC_ENGINE_IDLE_PASSES)) {
			idle_since = 0;
			cond_resched();
			continue;
		}
		/* Bounded spinning: while nobody else wants the CPU. */
		if (srnic_engine_contended(s)) {
			reason = SRNIC_SLEEP_YIELD;
			s->yields++;
		} else {
			u64 now = local_clock();

			if (!idle_since)
				idle_since = now;
			if (now - idle_since < SRNIC_ENGINE_SPIN_NS) {
				cond_resched();
				continue;
			}
			reason = SRNIC_SLEEP_IDLE;
		}

		/* Hot QPs' producers mark nothing new: read them last. */
		if (srnic_hot_retire_all(s)) {
			idle_since = 0;
			continue;
		}
		WRITE_ONCE(s->status->flags, SRNIC_ENGINE_NEED_WAKEUP);
		/* Pairs with the provider's barrier between doorbell and flag. */
		smp_mb();
		srnic_engine_rest(s, reason, timer);
		WRITE_ONCE(s->status->flags, 0);
		idle_since = 0;
	}
	return 0;
}

/*
 * debugfs "engine": counters, then one line per engine thread, then one
 * line per QP the threads serve ("visits": QPs taken off the run list and
 * looked at, "busy" those found locked; "marks": QPs found by their
 * doorbells' marks; "run": on the list now; "polls": hot QPs found with
 * work by reading their doorbells; "hot": on the hot list now).
 * The threads' WQEs are "wqes", those run by doorbell system calls
 * "inline_wqes"; "yields" counts the threads' sleeps
 * for a busy CPU.  The first line sums the threads; its flags are those
 * every thread has (NEED_WAKEUP: all of them sleep).
 */
static int srnic_engine_show(struct seq_file *m, void *unused)
{
	struct srnic_dev *sdev = m->private;
	struct srnic_sched *s = &sdev->sched;
	u64 inline_wqes = 0, inline_runs = 0, busy = 0;
	u64 wqes = 0, sleeps = 0, wakeups = 0, scans = 0, yields = 0;
	u64 visits = 0, marks = 0, polls = 0, run = 0, hot = 0;
	u32 flags = ~0U;
	unsigned long idx;
	struct srnic_qp *qp;
	unsigned int i;

	for (i = 0; i < s->pool_size; i++) {
		inline_wqes += READ_ONCE(s->pool[i].wqes);
		inline_runs += READ_ONCE(s->pool[i].runs);
		busy += READ_ONCE(s->pool[i].busy);
	}
	for (i = 0; i < s->nthreads; i++) {
		struct srnic_thread *t = &s->threads[i];

		wqes += READ_ONCE(t->eng.wqes);
		busy += READ_ONCE(t->eng.busy);
		sleeps += READ_ONCE(t->sleeps);
		wakeups += READ_ONCE(t->wakeups);
		scans += READ_ONCE(t->scans);
		yields += READ_ONCE(t->yields);
		visits += READ_ONCE(t->visits);
		marks += READ_ONCE(t->marks);
		polls += READ_ONCE(t->polls);
		run += READ_ONCE(t->run_n);
		hot += READ_ONCE(t->nhot);
		flags &= READ_ONCE(t->status->flags);
	}
	seq_printf(m, "wqes %llu sleeps %llu wakeups %llu scans %llu busy %llu flags %#x yields %llu doorbells %lld inline_runs %llu inline_wqes %llu pool_empty %lld reason %d threads %u visits %llu marks %llu run %llu polls %llu hot %llu\n",
		   wqes, sleeps, wakeups, scans, busy, flags, yields,
		   atomic64_read(&s->doorbells), inline_runs, inline_wqes,
		   atomic64_read(&s->pool_empty), READ_ONCE(s->threads[0].reason),
		   s->nthreads, visits, marks, run, polls, hot);
	for (i = 0; i < s->nthreads; i++) {
		struct srnic_thread *t = &s->threads[i];

		seq_printf(m, "thread %u wqes %llu sleeps %llu wakeups %llu scans %llu flags %#x yields %llu reason %d wire_ahead %d visits %llu marks %llu run %u polls %llu hot %u\n",
			   i, READ_ONCE(t->eng.wqes), READ_ONCE(t->sleeps),
			   READ_ONCE(t->wakeups), READ_ONCE(t->scans),
			   READ_ONCE(t->status->flags), READ_ONCE(t->yields),
			   READ_ONCE(t->reason), atomic_read(&t->wire_ahead),
			   READ_ONCE(t->visits), READ_ONCE(t->marks),
			   READ_ONCE(t->run_n), READ_ONCE(t->polls),
			   READ_ONCE(t->nhot));
	}
	xa_lock(&sdev->qps);
	xa_for_each_marked(&sdev->qps, idx, qp, SRNIC_QP_ACTIVE)
		seq_printf(m, "qp %u state %d sq_cons %u doorbell %u rq_cons %u peer %d/%u rnr %d locked %d visits %u ref %u thread %u\n",
			   qp->qpn, READ_ONCE(qp->state), qp->sq_cons,
			   srnic_qp_has_sq(qp) ? READ_ONCE(qp->dbr.kva->value) : 0,
			   qp->rq_cons,
			   qp->peer_dev, qp->attr.dest_qp_num, qp->rnr_wait,
			   mutex_is_locked(&qp->lock), qp->visits,
			   refcount_read(&qp->ref),
			   srnic_qp_engine(qp->qpn, s->nthreads));
	xa_for_each(&sdev->qps, idx, qp)
		if (READ_ONCE(qp->xport) == &srnic_wire)
			seq_printf(m, "wire %u psn %u out %d first %u last %u answered %d ahead %u una %u epsn %u msn %u rx %u nak %d\n",
				   qp->qpn, qp->w.psn, qp->w.out,
				   qp->w.out_first, qp->w.out_last,
				   qp->w.answered, qp->w.ahead_n, qp->w.una,
				   qp->w.epsn, qp->w.msn,
				   qp->w.rx_kind, qp->w.nak_sent);
	xa_unlock(&sdev->qps);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(srnic_engine);

static int srnic_engine_init(struct srnic_engine *eng)
{
	eng->wqe = kzalloc(SRNIC_SEND_WQE_MAX, GFP_KERNEL);
	eng->rwqe = kzalloc(SRNIC_RECV_WQE_MAX, GFP_KERNEL);
	return eng->wqe && eng->rwqe ? 0 : -ENOMEM;
}

static void srnic_engine_free(struct srnic_engine *eng)
{
	kfree(eng->wqe);
	kfree(eng->rwqe);
	eng->wqe = NULL;
	eng->rwqe = NULL;
}

static int srnic_thread_init(struct srnic_dev *sdev, unsigned int idx)
{
	struct srnic_thread *t = &sdev->sched.threads[idx];
	struct srnic_engine_status *status = page_address(sdev->status_page);

	t->sdev = sdev;
	t->idx = idx;
	init_waitqueue_head(&t->wait);
	init_waitqueue_head(&t->scanned);
	skb_queue_head_init(&t->rxq);
	spin_lock_init(&t->run_lock);
	INIT_LIST_HEAD(&t->run);
	INIT_LIST_HEAD(&t->hot);
	INIT_LIST_HEAD(&t->bells);
	t->status = &status[idx];
	/* Every record says how many there are: an imported context reads it. */
	t->status->num_engines = sdev->sched.nthreads;
	t->idle_us = kcalloc(nr_cpu_ids, sizeof(*t->idle_us), GFP_KERNEL);
	if (!t->idle_us)
		return -ENOMEM;
	return srnic_engine_init(&t->eng);
}

int srnic_engine_start(struct srnic_dev *sdev, const char *name)
{
	struct srnic_sched *s = &sdev->sched;
	unsigned int i;
	int err;

	s->threads = kcalloc(srnic_engine_count(), sizeof(*s->threads),
			     GFP_KERNEL);
	if (!s->threads)
		return -ENOMEM;
	s->nthreads = srnic_engine_count();	/* srnic_engine_stop() frees */
	for (i = 0; i < s->nthreads; i++) {
		err = srnic_thread_init(sdev, i);
		if (err)
			return err;
	}
	/* One engine per CPU: no more doorbell calls can run at once. */
	s->pool = kcalloc(num_possible_cpus(), sizeof(*s->pool), GFP_KERNEL);
	s->pool_used = bitmap_zalloc(num_possible_cpus(), GFP_KERNEL);
	if (!s->pool || !s->pool_used)
		return -ENOMEM;
	s->pool_size = num_possible_cpus();
	for (i = 0; i < s->pool_size; i++) {
		err = srnic_engine_init(&s->pool[i]);
		if (err)
			return err;
	}
	debugfs_create_file("engine", 0400, sdev->debugfs, sdev,
			    &srnic_engine_fops);
	for (i = 0; i < s->nthreads; i++) {
		struct task_struct *task;

		task = kthread_run(srnic_engine_thread, &s->threads[i],
				   "srnic/%s/%u", name, i);
		if (IS_ERR(task))
			return PTR_ERR(task);
		s->threads[i].task = task;
	}
	return 0;
}

void srnic_engine_stop(struct srnic_dev *sdev)
{
	struct srnic_sched *s = &sdev->sched;
	unsigned int i;

	for (i = 0; i < s->nthreads; i++) {
		struct srnic_thread *t = &s->threads[i];

		if (t->task)
			kthread_stop(t->task);
		t->task = NULL;
		skb_queue_purge(&t->rxq);
		/* For mappings that outlive the device (srnic_mmap_status()). */
		if (t->status)
			WRITE_ONCE(t->status->flags, SRNIC_ENGINE_NEED_WAKEUP);
		srnic_engine_free(&t->eng);
		kfree(t->idle_us);
	}
	kfree(s->threads);
	s->threads = NULL;
	s->nthreads = 0;
	for (i = 0; i < s->pool_size; i++)
		srnic_engine_free(&s->pool[i]);
	kfree(s->pool);
	bitmap_free(s->pool_used);
	s->pool = NULL;
	s->pool_used = NULL;
	s->pool_size = 0;
}
