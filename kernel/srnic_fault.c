// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Fault injection, per device, from debugfs:
 *
 *	/sys/kernel/debug/srnic/<dev>/fault/seed
 *	/sys/kernel/debug/srnic/<dev>/fault/<kind>/{probability,interval,
 *						   times,qpn,events,injected}
 *
 * and fault/delay_us, with <kind> one of drop, rnr, odp, cq_overrun, alloc,
 * delay, duplicate, corrupt, odp_busy, odp_slow, rx_hold (enum
 * srnic_fault_kind).  An event of a kind is eligible if qpn is 0 or names
 * its QP; of the eligible events, every interval-th is a candidate, which
 * fails with the given probability while times (-1: no limit) lasts.
 *
 * Why not the kernel's fault_attr: distribution kernels (Debian's among
 * them) build without CONFIG_FAULT_INJECTION, and its random choice cannot
 * be seeded; a test that saw an application mishandle the third RNR NAK
 * must be able to make the same third NAK happen again.  Writing the seed
 * restarts the sequence.
 */
#include <linux/debugfs.h>

#include "srnic_loc.h"

static const char *const srnic_fault_names[SRNIC_FAULT_NUM] = {
	[SRNIC_FAULT_DROP] = "drop",
	[SRNIC_FAULT_RNR] = "rnr",
	[SRNIC_FAULT_ODP] = "odp",
	[SRNIC_FAULT_CQ_OVERRUN] = "cq_overrun",
	[SRNIC_FAULT_ALLOC] = "alloc",
	[SRNIC_FAULT_DELAY] = "delay",
	[SRNIC_FAULT_DUPLICATE] = "duplicate",
	[SRNIC_FAULT_CORRUPT] = "corrupt",
	[SRNIC_FAULT_ODP_BUSY] = "odp_busy",
	[SRNIC_FAULT_ODP_SLOW] = "odp_slow",
	[SRNIC_FAULT_RX_HOLD] = "rx_hold",
};

void srnic_fault_init(struct srnic_dev *sdev)
{
	struct srnic_faults *f = &sdev->faults;
	int k;

	spin_lock_init(&f->lock);
	f->seed = 1;
	f->delay_us = 1000;
	prandom_seed_state(&f->rnd, f->seed);
	for (k = 0; k < SRNIC_FAULT_NUM; k++)
		srnic_fault_knob_init(&f->knob[k]);
}

bool __srnic_should_fail(struct srnic_dev *sdev, enum srnic_fault_kind k,
			 u32 qpn)
{
	struct srnic_faults *f = &sdev->faults;
	unsigned long flags;
	bool fail;

	spin_lock_irqsave(&f->lock, flags);
	fail = srnic_fault_event(&f->knob[k], &f->rnd, qpn);
	spin_unlock_irqrestore(&f->lock, flags);
	return fail;
}

/* A knob file: which device, which kind, which field. */
enum srnic_fault_field {
	SRNIC_FF_PROBABILITY, SRNIC_FF_INTERVAL, SRNIC_FF_TIMES, SRNIC_FF_QPN,
	SRNIC_FF_EVENTS, SRNIC_FF_INJECTED, SRNIC_FF_SEED, SRNIC_FF_DELAY_US,
};

/* At most a second: a delay is a slow path, not a lost request. */
#define SRNIC_FAULT_MAX_DELAY_US	USEC_PER_SEC

#define SRNIC_FF_KIND_SHIFT 8

static int srnic_fault_get(struct srnic_dev *sdev, unsigned long which,
			   u64 *val)
{
	struct srnic_faults *f = &sdev->faults;
	struct srnic_fault_knob *kn = &f->knob[which >> SRNIC_FF_KIND_SHIFT];

	spin_lock_irq(&f->lock);
	switch (which & 0xff) {
	case SRNIC_FF_PROBABILITY: *val = kn->probability; break;
	case SRNIC_FF_INTERVAL: *val = kn->interval; break;
	case SRNIC_FF_TIMES: *val = (s64)kn->times; break;
	case SRNIC_FF_QPN: *val = kn->qpn; break;
	case SRNIC_FF_EVENTS: *val = kn->events; break;
	case SRNIC_FF_INJECTED: *val = kn->injected; break;
	case SRNIC_FF_DELAY_US: *val = f->delay_us; break;
	default: *val = f->seed; break;
	}
	spin_unlock_irq(&f->lock);
	return 0;
}

static int srnic_fault_set(struct srnic_dev *sdev, unsigned long which,
			   u64 val)
{
	unsigned int kind = which >> SRNIC_FF_KIND_SHIFT;
	struct srnic_faults *f = &sdev->faults;
	struct srnic_fault_knob *kn = &f->knob[kind];
	int err = 0;

	spin_lock_irq(&f->lock);
	switch (which & 0xff) {
	case SRNIC_FF_PROBABILITY:
		if (val > 100)
			err = -EINVAL;
		else
			kn->probability = val;
		break;
	case SRNIC_FF_INTERVAL:
		if (!val || val > U32_MAX)
			err = -EINVAL;
		else
			kn->interval = val;
		break;
	case SRNIC_FF_TIMES:
		if ((s64)val < -1 || (s64)val > S32_MAX)
			err = -EINVAL;
		else
			kn->times = (s32)(s64)val;
		break;
	case SRNIC_FF_QPN:
		if (val > IB_QPN_MASK)
			err = -EINVAL;
		else
			kn->qpn = val;
		break;
	case SRNIC_FF_DELAY_US:
		if (val > SRNIC_FAULT_MAX_DELAY_US)
			err = -EINVAL;
		else
			f->delay_us = val;
		break;
	case SRNIC_FF_SEED:
		/* A new seed restarts every sequence, counts included. */
		f->seed = val;
		srnic_fault_reseed(&f->rnd, val, f->knob, SRNIC_FAULT_NUM);
		break;
	default:
		err = -EPERM;
	}
	if (!err && (which & 0xff) == SRNIC_FF_PROBABILITY) {
		if (kn->probability)
			set_bit(kind, &f->armed);
		else
			clear_bit(kind, &f->armed);
	}
	spin_unlock_irq(&f->lock);
	return err;
}

static int srnic_fault_attr_get(void *data, u64 *val)
{
	struct srnic_fault_file *ff = data;

	return srnic_fault_get(ff->sdev, ff->which, val);
}

static int srnic_fault_attr_set(void *data, u64 val)
{
	struct srnic_fault_file *ff = data;

	return srnic_fault_set(ff->sdev, ff->which, val);
}

DEFINE_DEBUGFS_ATTRIBUTE_SIGNED(srnic_fault_fops, srnic_fault_attr_get,
				srnic_fault_attr_set, "%lld\n");

static void srnic_fault_file(struct srnic_dev *sdev, struct dentry *dir,
			     const char *name, umode_t mode,
			     unsigned long which)
{
	struct srnic_fault_file *ff;

	if (WARN_ON(sdev->faults.nfiles >= SRNIC_FAULT_FILES))
		return;
	ff = &sdev->faults.file[sdev->faults.nfiles++];
	ff->sdev = sdev;
	ff->which = which;
	debugfs_create_file_unsafe(name, mode, dir, ff, &srnic_fault_fops);
}

void srnic_fault_debugfs(struct srnic_dev *sdev)
{
	static const struct {
		const char *name;
		umode_t mode;
		enum srnic_fault_field field;
	} files[] = {
		{ "probability", 0600, SRNIC_FF_PROBABILITY },
		{ "interval", 0600, SRNIC_FF_INTERVAL },
		{ "times", 0600, SRNIC_FF_TIMES },
		{ "qpn", 0600, SRNIC_FF_QPN },
		{ "events", 0400, SRNIC_FF_EVENTS },
		{ "injected", 0400, SRNIC_FF_INJECTED },
	};
	struct dentry *top = debugfs_create_dir("fault", sdev->debugfs);
	unsigned int k, i;

	BUILD_BUG_ON(SRNIC_FAULT_FILES != 2 + SRNIC_FAULT_NUM * ARRAY_SIZE(files));
	sdev->faults.nfiles = 0;
	srnic_fault_file(sdev, top, "seed", 0600, SRNIC_FF_SEED);
	srnic_fault_file(sdev, top, "delay_us", 0600, SRNIC_FF_DELAY_US);
	for (k = 0; k < SRNIC_FAULT_NUM; k++) {
		struct dentry *dir = debugfs_create_dir(srnic_fault_names[k],
							top);

		for (i = 0; i < ARRAY_SIZE(files); i++)
			srnic_fault_file(sdev, dir, files[i].name,
					 files[i].mode,
					 (k << SRNIC_FF_KIND_SHIFT) |
					 files[i].field);
	}
}
