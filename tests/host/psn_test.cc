// PSN arithmetic (kernel/srnic_psn.h): 24-bit PSNs that wrap (IBTA 9.7.1),
// so order is the sign of a distance modulo 2^24.  The expectations come
// from that definition, not from the code.
#include <cstdint>

#include <gtest/gtest.h>

#include "kernel_pure.h"

namespace {

constexpr uint32_t kPsnSpace = 1u << 24;
constexpr uint32_t kLast = kPsnSpace - 1;

// A small deterministic generator for property checks (Knuth's MMIX LCG).
struct Lcg {
	uint64_t s;
	uint32_t next() { return (s = s * 6364136223846793005ull + 1442695040888963407ull) >> 32; }
};

}  // namespace

TEST(Psn, MaskIs24Bits) {
	EXPECT_EQ(SRNIC_PSN_MASK, kLast);
}

TEST(Psn, AddWrapsAt24Bits) {
	EXPECT_EQ(srnic_psn_add(kLast, 1), 0u);
	EXPECT_EQ(srnic_psn_add(0xfffffe, 5), 3u);
	EXPECT_EQ(srnic_psn_add(0, kPsnSpace), 0u);
	EXPECT_EQ(srnic_psn_add(123, kPsnSpace + 1), 124u);
	// Adding -1 (as the callers do for "the PSN before") steps back across 0.
	EXPECT_EQ(srnic_psn_add(0, static_cast<uint32_t>(-1)), kLast);
	EXPECT_EQ(srnic_psn_add(5, static_cast<uint32_t>(-1)), 4u);
	// A PSN field with bits above 24 set (a hostile packet) lands in range.
	EXPECT_EQ(srnic_psn_add(0xff000010, 0), 0x10u);
}

TEST(Psn, DiffSignAcrossTheWrap) {
	EXPECT_EQ(srnic_psn_diff(5, 3), 2);
	EXPECT_EQ(srnic_psn_diff(3, 5), -2);
	EXPECT_EQ(srnic_psn_diff(7, 7), 0);
	// 0 comes right after 0xffffff: ahead by one, not 16 million behind.
	EXPECT_EQ(srnic_psn_diff(0, kLast), 1);
	EXPECT_EQ(srnic_psn_diff(kLast, 0), -1);
	EXPECT_EQ(srnic_psn_diff(2, 0xfffffe), 4);
	EXPECT_EQ(srnic_psn_diff(0xfffffe, 2), -4);
	// The two halves of the space: 2^23 - 1 ahead is the furthest "after".
	EXPECT_EQ(srnic_psn_diff(0x7fffff, 0), 0x7fffff);
	EXPECT_EQ(srnic_psn_diff(0x800000, 0), -0x800000);
	EXPECT_EQ(srnic_psn_diff(0x800001, 0), -0x7fffff);
	// Bits above the PSN's 24 do not count.
	EXPECT_EQ(srnic_psn_diff(0x01000005, 3), 2);
	EXPECT_EQ(srnic_psn_diff(5, 0xff000003), 2);
}

// For any PSN and any distance short of half the space, stepping that far
// and measuring back gives the distance, in both directions.
TEST(Psn, DiffUndoesAdd) {
	Lcg r{42};

	for (int i = 0; i < 100000; i++) {
		uint32_t a = r.next() & kLast;
		int32_t d = static_cast<int32_t>(r.next() % (kPsnSpace - 1)) - (int32_t)(kPsnSpace / 2 - 1);
		uint32_t b = srnic_psn_add(a, static_cast<uint32_t>(d));

		ASSERT_LT(b, kPsnSpace);
		ASSERT_EQ(srnic_psn_diff(b, a), d) << "a=" << a << " d=" << d;
		ASSERT_EQ(srnic_psn_diff(a, b), -d) << "a=" << a << " d=" << d;
	}
}

TEST(Psn, InclusiveRangeAcrossTheWrap) {
	// 0xfffffd .. 2 holds six PSNs, four of them after the wrap's 0.
	const uint32_t first = 0xfffffd, last = 2;
	for (uint32_t p : {0xfffffdu, 0xfffffeu, kLast, 0u, 1u, 2u})
		EXPECT_TRUE(srnic_psn_in(p, first, last)) << p;
	for (uint32_t p : {0xfffffcu, 3u, 0x800000u})
		EXPECT_FALSE(srnic_psn_in(p, first, last)) << p;
	// One PSN is a range of its own.
	EXPECT_TRUE(srnic_psn_in(9, 9, 9));
	EXPECT_FALSE(srnic_psn_in(10, 9, 9));
	EXPECT_FALSE(srnic_psn_in(8, 9, 9));
}

TEST(Psn, WindowMembership) {
	// The READ responses kept for a duplicate: n PSNs from the request's.
	EXPECT_TRUE(srnic_psn_in_window(0xfffffe, 0xfffffe, 4));
	EXPECT_TRUE(srnic_psn_in_window(kLast, 0xfffffe, 4));
	EXPECT_TRUE(srnic_psn_in_window(0, 0xfffffe, 4));
	EXPECT_TRUE(srnic_psn_in_window(1, 0xfffffe, 4));
	EXPECT_FALSE(srnic_psn_in_window(2, 0xfffffe, 4));	// one past
	EXPECT_FALSE(srnic_psn_in_window(0xfffffd, 0xfffffe, 4));	// one before
	EXPECT_TRUE(srnic_psn_in_window(77, 77, 1));
	EXPECT_FALSE(srnic_psn_in_window(78, 77, 1));
	EXPECT_FALSE(srnic_psn_in_window(77, 77, 0));	// an empty window
	// Behind the base by any distance is outside, however large n is.
	EXPECT_FALSE(srnic_psn_in_window(76, 77, 0xffffffff));
}

// Every PSN within 100 of a base near the wrap, against the definition:
// in the window iff (psn - base) mod 2^24 < n (n below half the space).
TEST(Psn, WindowMatchesModularDefinition) {
	for (uint32_t base : {0u, 50u, 0xffffc0u, kLast}) {
		for (uint32_t n : {0u, 1u, 7u, 64u}) {
			for (int32_t k = -100; k <= 100; k++) {
				uint32_t psn = (base + static_cast<uint32_t>(k)) & kLast;
				bool in = ((psn - base) & kLast) < n;

				ASSERT_EQ(srnic_psn_in_window(psn, base, n), in)
					<< "base=" << base << " n=" << n << " k=" << k;
				if (n) {
					ASSERT_EQ(srnic_psn_in(psn, base, (base + n - 1) & kLast), in)
						<< "base=" << base << " n=" << n << " k=" << k;
				}
			}
		}
	}
}

TEST(Psn, PacketsOfAMessage) {
	// A zero-length message still takes one PSN.
	EXPECT_EQ(srnic_psn_count(0, 1024), 1u);
	EXPECT_EQ(srnic_psn_count(1, 1024), 1u);
	EXPECT_EQ(srnic_psn_count(1024, 1024), 1u);
	EXPECT_EQ(srnic_psn_count(1025, 1024), 2u);
	EXPECT_EQ(srnic_psn_count(65536, 1024), 64u);
	EXPECT_EQ(srnic_psn_count(65536, 4096), 16u);
	// The largest message (2 GiB) at the smallest MTU: half the PSN space.
	EXPECT_EQ(srnic_psn_count(1ull << 31, 256), 1u << 23);
	EXPECT_EQ(srnic_psn_count((1ull << 31) + 1, 256), (1u << 23) + 1);
}
