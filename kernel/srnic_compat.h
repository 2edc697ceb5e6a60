/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Differences between the kernels srnic builds against: Debian 12's 6.12
 * (the one the VM boots) and Debian 12's default 6.1.
 */
#ifndef SRNIC_COMPAT_H
#define SRNIC_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
/* vm_flags became read-only with accessors in 6.3. */
static inline void srnic_vm_flags_clear(struct vm_area_struct *vma,
					unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#else
static inline void srnic_vm_flags_clear(struct vm_area_struct *vma,
					unsigned long flags)
{
	vm_flags_clear(vma, flags);
}
#endif

/*
 * create_cq receives the whole attribute bundle since 6.11 (the udata is
 * inside it); before, only the udata.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define SRNIC_CREATE_CQ_ARGS struct uverbs_attr_bundle *attrs
#define srnic_create_cq_udata() (&attrs->driver_udata)
#else
#define SRNIC_CREATE_CQ_ARGS struct ib_udata *cq_udata
#define srnic_create_cq_udata() (cq_udata)
#endif

/* The ATOMIC WRITE capability bit (uapi IB_UVERBS_DEVICE_ATOMIC_WRITE), 6.2+. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define SRNIC_DEVICE_ATOMIC_WRITE IB_DEVICE_ATOMIC_WRITE
#else
#define SRNIC_DEVICE_ATOMIC_WRITE 0
#endif

/*
 * FLUSH (6.2+): the device's and an MR's or QP's global-visibility right,
 * and the FETH's values.  Before 6.2 no MR or QP can ask for the right,
 * so every FLUSH that arrives is refused.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define SRNIC_DEVICE_FLUSH_GLOBAL IB_DEVICE_FLUSH_GLOBAL
#define SRNIC_ACCESS_FLUSH_GLOBAL IB_ACCESS_FLUSH_GLOBAL
#define SRNIC_ACCESS_FLUSH_PERSISTENT IB_ACCESS_FLUSH_PERSISTENT
#else
#define SRNIC_DEVICE_FLUSH_GLOBAL 0
#define SRNIC_ACCESS_FLUSH_GLOBAL 0
#define SRNIC_ACCESS_FLUSH_PERSISTENT 0
#endif
#define SRNIC_FLUSH_GLOBAL	(1U << 0)	/* IB_FLUSH_GLOBAL */
#define SRNIC_FLUSH_PERSISTENT	(1U << 1)	/* IB_FLUSH_PERSISTENT */
#define SRNIC_FLUSH_RANGE	0		/* IB_FLUSH_RANGE */
#define SRNIC_FLUSH_MR		1		/* IB_FLUSH_MR */

/* get_unaligned_be*() moved from asm/ to linux/unaligned.h in 6.12. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#endif /* SRNIC_COMPAT_H */
