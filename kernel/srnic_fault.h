/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The fault-injection sequence (srnic_fault.c has the debugfs side): which
 * events of a kind fail, from its knob and the device's seeded generator.
 * Kernel-independent, for the host tests: a test that made the third RNR
 * NAK happen must be able to tell which events a seed and knobs will fail.
 */
#ifndef SRNIC_FAULT_H
#define SRNIC_FAULT_H

#include <linux/types.h>
#include <linux/prandom.h>

struct srnic_fault_knob {
	u32 probability;		/* percent of the eligible events */
	u32 interval;			/* only every interval-th one */
	s32 times;			/* failures left; -1: no limit */
	u32 qpn;			/* only this QP's events; 0: any */
	u64 events, injected;
};

/* A knob as a device starts: every eligible event a candidate, no limit. */
static inline void srnic_fault_knob_init(struct srnic_fault_knob *kn)
{
	kn->interval = 1;
	kn->times = -1;
}

/*
 * An event of @kn's kind on QP @qpn (0: none): does it fail?  An event is
 * eligible if the knob names no QP or this one; of the eligible events,
 * every interval-th is a candidate, which fails with the knob's probability
 * (one draw from @rnd, unless it is 0 or 100) while times lasts.
 */
static inline bool srnic_fault_event(struct srnic_fault_knob *kn,
				     struct rnd_state *rnd, u32 qpn)
{
	if (kn->qpn && kn->qpn != qpn)
		return false;
	kn->events++;
	if (!kn->times || !kn->probability ||
	    (kn->interval > 1 && kn->events % kn->interval))
		return false;
	if (kn->probability < 100 &&
	    prandom_u32_state(rnd) % 100 >= kn->probability)
		return false;
	if (kn->times > 0)
		kn->times--;
	kn->injected++;
	return true;
}

/* A new seed restarts every sequence, the @n knobs' counts included. */
static inline void srnic_fault_reseed(struct rnd_state *rnd, u64 seed,
				      struct srnic_fault_knob *knob,
				      unsigned int n)
{
	unsigned int k;

	prandom_seed_state(rnd, seed);
	for (k = 0; k < n; k++)
		knob[k].events = knob[k].injected = 0;
}

#endif /* SRNIC_FAULT_H */
