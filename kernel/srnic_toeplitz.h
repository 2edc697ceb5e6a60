/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The Toeplitz hash of RSS (Microsoft's "RSS hashing", as NICs implement
 * it): for every bit set in the input, the 32 key bits starting at that
 * bit's position are XORed into the hash.  Kernel-independent, for the
 * host tests (tests/host/toeplitz_test.cc runs the published vectors).
 */
#ifndef SRNIC_TOEPLITZ_H
#define SRNIC_TOEPLITZ_H

#include <linux/types.h>

/*
 * The hash of @n bytes at @in under the @key_len bytes at @key (at least
 * 4); key bits past the key's end count as zeros.
 */
static inline u32 srnic_toeplitz(const u8 *key, u32 key_len, const u8 *in,
				 u32 n)
{
	u32 v = key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3];
	u32 hash = 0, i, b;

	for (i = 0; i < n; i++) {
		for (b = 0; b < 8; b++) {
			if (in[i] & (0x80 >> b))
				hash ^= v;
			v <<= 1;
			if (i + 4 < key_len &&
			    (key[i + 4] & (0x80 >> b)))
				v |= 1;
		}
	}
	return hash;
}

#endif /* SRNIC_TOEPLITZ_H */
