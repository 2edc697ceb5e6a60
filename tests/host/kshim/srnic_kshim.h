/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the module's kernel-independent sources (kernel/srnic_psn.h,
 * srnic_hdr.h, srnic_opcode.c, srnic_icrc.c, srnic_toeplitz.h,
 * srnic_mtt.h, srnic_fault.h) take from the kernel, for building them
 * unchanged on the host.  The forwarding headers beside this one stand in
 * for the kernel's of the same names.  Each function is written from its
 * definition; nothing here is srnic's logic.  A kernel file that needs
 * more than this is not kernel-independent.
 */
#ifndef SRNIC_KSHIM_H
#define SRNIC_KSHIM_H

#include <linux/types.h>	/* the uapi __u8, __be32, ... (kshim/linux/types.h) */
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#define __packed __attribute__((__packed__))

/* <asm/byteorder.h> */
#define cpu_to_be16(x) ((__be16)htobe16(x))
#define cpu_to_be32(x) ((__be32)htobe32(x))
#define cpu_to_be64(x) ((__be64)htobe64(x))
#define be16_to_cpu(x) ((u16)be16toh(x))
#define be32_to_cpu(x) ((u32)be32toh(x))
#define be64_to_cpu(x) ((u64)be64toh(x))
#define cpu_to_le32(x) ((__le32)htole32(x))
#define le32_to_cpu(x) ((u32)le32toh(x))

/*
 * <linux/crc32.h>: the kernel's crc32_le is the reflected CRC-32
 * (polynomial 0xEDB88320) from the state @crc, without a final inversion.
 */
static inline u32 crc32_le(u32 crc, const unsigned char *p, size_t len)
{
	while (len--) {
		int k;

		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return crc;
}

/*
 * <linux/prandom.h>: the kernel's seeded generator is L'Ecuyer's LFSR113
 * ("Tables of maximally equidistributed combined LFSR generators", 1999):
 * four Tausworthe components, each state at least 2, 8, 16 or 128.
 * prandom_seed_state() folds a 64-bit seed into one 32-bit start for all four.
 */
struct rnd_state {
	u32 s1, s2, s3, s4;
};

static inline u32 srnic_kshim_seed_min(u32 x, u32 m)
{
	return x < m ? x + m : x;
}

static inline void prandom_seed_state(struct rnd_state *state, u64 seed)
{
	u32 i = (u32)((seed >> 32) ^ (seed << 10) ^ seed);

	state->s1 = srnic_kshim_seed_min(i, 2);
	state->s2 = srnic_kshim_seed_min(i, 8);
	state->s3 = srnic_kshim_seed_min(i, 16);
	state->s4 = srnic_kshim_seed_min(i, 128);
}

/* One Tausworthe step: parameters (q, s, k) of L'Ecuyer's table, @mask the kept bits. */
static inline u32 srnic_kshim_taus(u32 z, unsigned int q, unsigned int s,
				   unsigned int k_shift, u32 mask)
{
	return ((z & mask) << k_shift) ^ (((z << q) ^ z) >> s);
}

static inline u32 prandom_u32_state(struct rnd_state *state)
{
	state->s1 = srnic_kshim_taus(state->s1, 6, 13, 18, 0xfffffffeu);
	state->s2 = srnic_kshim_taus(state->s2, 2, 27, 2, 0xfffffff8u);
	state->s3 = srnic_kshim_taus(state->s3, 13, 21, 7, 0xfffffff0u);
	state->s4 = srnic_kshim_taus(state->s4, 3, 12, 13, 0xffffff80u);
	return state->s1 ^ state->s2 ^ state->s3 ^ state->s4;
}

#endif /* SRNIC_KSHIM_H */
