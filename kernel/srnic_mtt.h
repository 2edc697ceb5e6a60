/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The arithmetic of MRs and their MTT (srnic_mr.h has the model): bounds,
 * block positions, the lengths a page list holds, what a queue pins.  All
 * of it takes user input, so every check is overflow-safe for any u64.
 * Kernel-independent, for the host tests: the page size is a parameter.
 */
#ifndef SRNIC_MTT_H
#define SRNIC_MTT_H

#include <linux/types.h>

/* Is [@iova, @iova + @len) inside [@base, @base + @length)? */
static inline bool srnic_range_within(u64 base, u64 length, u64 iova, u64 len)
{
	return iova >= base && len <= length && iova - base <= length - len;
}

/*
 * May [@start, @start + @length) of user memory be registered at @iova:
 * 1 to @max bytes, neither end past the address space, and @start and
 * @iova at the same place in their 2^@page_shift-byte pages (the core
 * enforces that too; the MTT's offset arithmetic relies on it)?
 */
static inline bool srnic_mr_range_ok(u64 start, u64 length, u64 iova, u64 max,
				     unsigned int page_shift)
{
	if (!length || length > max)
		return false;
	if (start + (length - 1) < start || iova + (length - 1) < iova)
		return false;
	return !((start ^ iova) & ((1ULL << page_shift) - 1));
}

/*
 * Byte @rel of a region whose first byte is at @offset of block 0 of an
 * MTT of 2^@shift-byte blocks: its block's index, and in *@in_block where
 * in that block it is.
 */
static inline u64 srnic_mtt_block(unsigned int shift, u64 offset, u64 rel,
				  u64 *in_block)
{
	u64 off = rel + offset;

	*in_block = off & ((1ULL << shift) - 1);
	return off >> shift;
}

/*
 * How many bytes from @in_block on are both in its 2^@shift-byte block
 * and among the @left bytes the region has from there.
 */
static inline u64 srnic_mtt_contig(unsigned int shift, u64 in_block, u64 left)
{
	u64 rest = (1ULL << shift) - in_block;

	return rest < left ? rest : left;
}

/*
 * Does a page list of @nblocks pages of 2^@shift bytes hold @length bytes
 * from @iova's place in its first page?  @nblocks << @shift must not
 * overflow (fast registration bounds both).
 */
static inline bool srnic_mtt_fits(u64 nblocks, unsigned int shift, u64 iova,
				  u64 length)
{
	return nblocks &&
	       length <= (nblocks << shift) - (iova & ((1ULL << shift) - 1));
}

/*
 * The block shift of a region of @length bytes in one block: the smallest
 * power of two holding it, a page (2^@page_shift) at least.
 */
static inline unsigned int srnic_mtt_one_block_shift(u64 length,
						     unsigned int page_shift)
{
	unsigned int s = page_shift;

	while (s < 64 && (1ULL << s) < length)
		s++;
	return s;
}

/* A queue's memory (a ring or a doorbell record): at most 1 GiB. */
#define SRNIC_UMEM_MAX_LEN	(1ULL << 30)

/*
 * How many bytes from @addr a queue of @len bytes pins: a ring (@ring)
 * must be page aligned and is pinned in whole pages; anything else (a
 * doorbell record) must lie within one page.  0: it may not be pinned.
 */
static inline u64 srnic_umem_pin_len(u64 addr, u64 len, bool ring,
				     unsigned int page_shift)
{
	u64 page = 1ULL << page_shift;

	if (!len || len > SRNIC_UMEM_MAX_LEN || addr + len < addr)
		return 0;
	if (ring)
		return addr & (page - 1) ? 0 : (len + page - 1) & ~(page - 1);
	return (addr & (page - 1)) + len > page ? 0 : len;
}

#endif /* SRNIC_MTT_H */
