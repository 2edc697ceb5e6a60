// MR and MTT arithmetic (kernel/srnic_mtt.h).  Every input is a user's, so
// the bounds are checked against 128-bit arithmetic, which cannot overflow,
// at the values where 64-bit arithmetic would.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_pure.h"

namespace {

using u128 = unsigned __int128;
constexpr uint64_t kMax = UINT64_MAX;

// Values around the places where sums and differences wrap.
const std::vector<uint64_t> &Edges() {
	static const std::vector<uint64_t> v = {
		0, 1, 2, 0xfff, 0x1000, 0x1001, 0x7fffffffffffffffull, 0x8000000000000000ull,
		kMax - 0x1000, kMax - 2, kMax - 1, kMax,
	};
	return v;
}

// [iova, iova + len) inside [base, base + length), in exact arithmetic.
bool Within(uint64_t base, uint64_t length, uint64_t iova, uint64_t len) {
	return iova >= base && (u128)iova + len <= (u128)base + length;
}

}  // namespace

TEST(Mtt, RangeWithinBasics) {
	EXPECT_TRUE(srnic_range_within(0x1000, 0x1000, 0x1000, 0x1000));
	EXPECT_TRUE(srnic_range_within(0x1000, 0x1000, 0x1fff, 1));
	EXPECT_FALSE(srnic_range_within(0x1000, 0x1000, 0x1fff, 2));	// one past the end
	EXPECT_FALSE(srnic_range_within(0x1000, 0x1000, 0xfff, 1));	// one before
	EXPECT_TRUE(srnic_range_within(0x1000, 0x1000, 0x2000, 0));	// empty, at the end
	// A length that wraps iova + len around to inside the MR is refused.
	EXPECT_FALSE(srnic_range_within(0x1000, 0x1000, 0x1800, kMax));
	EXPECT_FALSE(srnic_range_within(0x1000, 0x1000, 0x1800, kMax - 0x7ff));
	// An MR up to the last byte of the address space.
	EXPECT_TRUE(srnic_range_within(kMax - 9, 10, kMax, 1));
	EXPECT_FALSE(srnic_range_within(kMax - 9, 10, kMax, 2));
	EXPECT_FALSE(srnic_range_within(0, kMax, kMax, 1));
}

TEST(Mtt, RangeWithinMatchesExactArithmetic) {
	const std::vector<uint64_t> &e = Edges();

	for (uint64_t base : e)
		for (uint64_t length : e)
			for (uint64_t iova : e)
				for (uint64_t len : e)
					ASSERT_EQ(srnic_range_within(base, length, iova, len),
						  Within(base, length, iova, len))
						<< base << " " << length << " " << iova << " " << len;
}

TEST(Mtt, RegistrationRange) {
	const uint64_t max = 1ull << 40;

	EXPECT_TRUE(srnic_mr_range_ok(0x7f0000001234, 0x10000, 0x1234, max, 12));
	EXPECT_FALSE(srnic_mr_range_ok(0x1000, 0, 0x1000, max, 12));	// empty
	EXPECT_TRUE(srnic_mr_range_ok(0, max, 0, max, 12));
	EXPECT_FALSE(srnic_mr_range_ok(0, max + 1, 0, max, 12));
	// The last byte may be the address space's last; one more wraps.
	EXPECT_TRUE(srnic_mr_range_ok(kMax - 0xfff, 0x1000, 0, max, 12));
	EXPECT_FALSE(srnic_mr_range_ok(kMax - 0xfff, 0x1001, 0, max, 12));
	EXPECT_TRUE(srnic_mr_range_ok(0, 0x1000, kMax - 0xfff, max, 12));
	EXPECT_FALSE(srnic_mr_range_ok(1, 0x1000, kMax - 0xffe, max, 12));
	// The address and the iova must share their offset in a page.
	EXPECT_FALSE(srnic_mr_range_ok(0x1000, 0x10, 0x2001, max, 12));
	EXPECT_TRUE(srnic_mr_range_ok(0x1234, 0x10, 0x7000234, max, 12));
	// In 64 KiB pages, 4 KiB apart is another offset.
	EXPECT_TRUE(srnic_mr_range_ok(0x1000, 0x10, 0x2000, max, 12));
	EXPECT_FALSE(srnic_mr_range_ok(0x1000, 0x10, 0x2000, max, 16));
	EXPECT_TRUE(srnic_mr_range_ok(0x11000, 0x10, 0x71000, max, 16));
}

TEST(Mtt, RegistrationRangeMatchesExactArithmetic) {
	const std::vector<uint64_t> &e = Edges();
	const uint64_t max = 1ull << 40;

	for (uint64_t start : e)
		for (uint64_t length : e)
			for (uint64_t iova : e) {
				bool ok = length && length <= max &&
					  (u128)start + length - 1 <= kMax &&
					  (u128)iova + length - 1 <= kMax &&
					  start % 4096 == iova % 4096;

				ASSERT_EQ(srnic_mr_range_ok(start, length, iova, max, 12), ok)
					<< start << " " << length << " " << iova;
			}
}

TEST(Mtt, BlockAndOffset) {
	uint64_t in_block;

	// 4 KiB blocks, the MR's first byte at 0x234 of block 0.
	EXPECT_EQ(srnic_mtt_block(12, 0x234, 0, &in_block), 0u);
	EXPECT_EQ(in_block, 0x234u);
	EXPECT_EQ(srnic_mtt_block(12, 0x234, 0xdcb, &in_block), 0u);
	EXPECT_EQ(in_block, 0xfffu);
	EXPECT_EQ(srnic_mtt_block(12, 0x234, 0xdcc, &in_block), 1u);
	EXPECT_EQ(in_block, 0u);
	// 2 MiB blocks (huge pages).
	EXPECT_EQ(srnic_mtt_block(21, 0x1000, 0x1ff000 - 1, &in_block), 0u);
	EXPECT_EQ(in_block, 0x1fffffu);
	EXPECT_EQ(srnic_mtt_block(21, 0x1000, 0x1ff000 + 0x200000 * 3 + 5, &in_block), 4u);
	EXPECT_EQ(in_block, 5u);
	// 1 GiB blocks.
	EXPECT_EQ(srnic_mtt_block(30, 0, 3ull << 30, &in_block), 3u);
	EXPECT_EQ(in_block, 0u);

	EXPECT_EQ(srnic_mtt_contig(12, 0x234, 1ull << 40), 0x1000u - 0x234);
	EXPECT_EQ(srnic_mtt_contig(12, 0x234, 10), 10u);	// the MR ends first
	EXPECT_EQ(srnic_mtt_contig(12, 0, 0x1000), 0x1000u);
	EXPECT_EQ(srnic_mtt_contig(21, 0x1fffff, kMax), 1u);
}

// Walking an MR piece by piece, as the engine copies: the pieces follow one
// another, each inside one block, and together they are the MR.
TEST(Mtt, WalkCoversTheRegionOnce) {
	for (unsigned shift : {12u, 16u, 21u}) {
		for (uint64_t offset : {0ull, 1ull, 0x234ull, (1ull << shift) - 1}) {
			const uint64_t length = (5ull << shift) + 77;
			uint64_t rel = 0, pieces = 0;

			while (rel < length) {
				uint64_t in_block;
				uint64_t idx = srnic_mtt_block(shift, offset, rel, &in_block);
				uint64_t c = srnic_mtt_contig(shift, in_block, length - rel);

				ASSERT_EQ((idx << shift) + in_block, rel + offset);
				ASSERT_GT(c, 0u);
				ASSERT_LE(in_block + c, 1ull << shift);
				rel += c;
				pieces++;
			}
			EXPECT_EQ(rel, length);
			// As many pieces as blocks the region touches.
			EXPECT_EQ(pieces, (offset + length - 1) / (1ull << shift) + 1)
				<< "shift " << shift << " offset " << offset;
		}
	}
}

TEST(Mtt, PageListFits) {
	EXPECT_FALSE(srnic_mtt_fits(0, 12, 0, 0));		// no pages, nothing fits
	EXPECT_TRUE(srnic_mtt_fits(4, 12, 0x10000, 0x4000));
	EXPECT_FALSE(srnic_mtt_fits(4, 12, 0x10000, 0x4001));
	// Starting 0x100 into the first page leaves 0x100 less.
	EXPECT_TRUE(srnic_mtt_fits(4, 12, 0x10100, 0x4000 - 0x100));
	EXPECT_FALSE(srnic_mtt_fits(4, 12, 0x10100, 0x4000 - 0xff));
	// Only the offset in a page counts, whatever the iova's other bits.
	EXPECT_TRUE(srnic_mtt_fits(1, 21, kMax - 0x1fffff, 0x200000));
	EXPECT_FALSE(srnic_mtt_fits(512, 12, 0, kMax));
	EXPECT_TRUE(srnic_mtt_fits(512, 12, 0, 512ull << 12));
}

TEST(Mtt, OneBlockShift) {
	EXPECT_EQ(srnic_mtt_one_block_shift(0, 12), 12u);
	EXPECT_EQ(srnic_mtt_one_block_shift(1, 12), 12u);
	EXPECT_EQ(srnic_mtt_one_block_shift(4096, 12), 12u);
	EXPECT_EQ(srnic_mtt_one_block_shift(4097, 12), 13u);
	EXPECT_EQ(srnic_mtt_one_block_shift(1ull << 20, 12), 20u);
	EXPECT_EQ(srnic_mtt_one_block_shift((1ull << 20) + 1, 12), 21u);
	EXPECT_EQ(srnic_mtt_one_block_shift(100, 16), 16u);
	EXPECT_EQ(srnic_mtt_one_block_shift(1ull << 63, 12), 63u);
	EXPECT_EQ(srnic_mtt_one_block_shift((1ull << 63) + 1, 12), 64u);
	// The block holds the region and is the smallest power of two that does.
	for (uint64_t len = 1; len < (1u << 22); len = len * 3 + 1) {
		unsigned s = srnic_mtt_one_block_shift(len, 12);

		EXPECT_GE(1ull << s, len);
		if (s > 12) {
			EXPECT_LT(1ull << (s - 1), len);
		}
	}
}

TEST(Mtt, QueuePinning) {
	const uint64_t gib = 1ull << 30;

	// A ring: page aligned, pinned in whole pages.
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, 4096, true, 12), 4096u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, 1, true, 12), 4096u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, 4097, true, 12), 8192u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, 4097, true, 12) / 4096, 2u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000040, 4096, true, 12), 0u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, gib, true, 12), gib);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, gib + 1, true, 12), 0u);
	EXPECT_EQ(srnic_umem_pin_len(0x10000, 0x100, true, 16), 0x10000u);
	// A doorbell record: anywhere, within one page.
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000ff8, 8, false, 12), 8u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000ffc, 8, false, 12), 0u);
	EXPECT_EQ(srnic_umem_pin_len(0x7f0000000000, 4096, false, 12), 4096u);
	// Nothing, or past the address space's end.
	EXPECT_EQ(srnic_umem_pin_len(0x1000, 0, true, 12), 0u);
	EXPECT_EQ(srnic_umem_pin_len(0x1000, 0, false, 12), 0u);
	EXPECT_EQ(srnic_umem_pin_len(kMax - 0xfff, 0x1000, true, 12), 0u);
	EXPECT_EQ(srnic_umem_pin_len(kMax - 7, 8, false, 12), 0u);
}
