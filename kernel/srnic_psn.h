/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * PSN arithmetic (IBTA 9.7.1): PSNs are 24 bits and wrap, so "before" and
 * "after" are the sign of a distance taken modulo 2^24, never a plain
 * comparison.  Kernel-independent (tests/host builds it with a shim).
 */
#ifndef SRNIC_PSN_H
#define SRNIC_PSN_H

#include <linux/types.h>

#define SRNIC_PSN_MASK		0x00ffffff

/* @psn + @n in the 24-bit PSN space. */
static inline u32 srnic_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SRNIC_PSN_MASK;
}

/* @a - @b as a signed distance in the 24-bit PSN space. */
static inline s32 srnic_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

/* Is @psn one of @first .. @last (both included), in PSN order? */
static inline bool srnic_psn_in(u32 psn, u32 first, u32 last)
{
	return srnic_psn_diff(psn, first) >= 0 && srnic_psn_diff(psn, last) <= 0;
}

/* Is @psn one of the @n PSNs from @base on? */
static inline bool srnic_psn_in_window(u32 psn, u32 base, u32 n)
{
	s32 d = srnic_psn_diff(psn, base);

	return d >= 0 && (u32)d < n;
}

/* The PSNs a message of @len bytes takes at @mtu: one per packet, at least one. */
static inline u32 srnic_psn_count(u64 len, u32 mtu)
{
	u32 n = (len + mtu - 1) / mtu;

	return n > 1 ? n : 1;
}

#endif /* SRNIC_PSN_H */
