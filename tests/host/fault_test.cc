// The fault-injection sequence (kernel/srnic_fault.h): which events of a
// kind fail for given knobs and seed, as srnic_fault.c documents it: an
// event is eligible if the knob's qpn is 0 or its QP's; every interval-th
// eligible event is a candidate; a candidate fails with the probability
// (percent, one draw from the device's generator unless 0 or 100) while
// times (-1: no limit) lasts.  Writing the seed restarts the sequence.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_pure.h"

namespace {

srnic_fault_knob Knob(uint32_t probability, uint32_t interval = 1, int32_t times = -1,
		      uint32_t qpn = 0) {
	srnic_fault_knob kn = {};

	srnic_fault_knob_init(&kn);
	kn.probability = probability;
	kn.interval = interval;
	kn.times = times;
	kn.qpn = qpn;
	return kn;
}

// Which of @n events (all on QP @qpn) fail.
std::vector<bool> Events(srnic_fault_knob &kn, rnd_state &rnd, int n, uint32_t qpn = 5) {
	std::vector<bool> v;

	for (int i = 0; i < n; i++)
		v.push_back(srnic_fault_event(&kn, &rnd, qpn));
	return v;
}

rnd_state Seeded(uint64_t seed) {
	rnd_state r;

	prandom_seed_state(&r, seed);
	return r;
}

bool SameState(const rnd_state &a, const rnd_state &b) {
	return a.s1 == b.s1 && a.s2 == b.s2 && a.s3 == b.s3 && a.s4 == b.s4;
}

}  // namespace

// The shim's generator (tests/host/kshim) is LFSR113: checked against the
// taus113 values of the GSL that Linux's lib/random32.c self-test carries
// (test1 and test2 there; seeded by its LCG chain, ten warm-up draws).
TEST(Fault, ShimGeneratorIsTaus113) {
	struct {
		uint32_t seed, iteration, result;
	} const v[] = {
		{1, 1, 3484351685u},
		{2, 1, 2623130059u},
		{931557656u, 959, 2975593782u},
		{1339693295u, 876, 3887776532u},
		{1545556285u, 961, 1615538833u},
	};
	auto at_least = [](uint32_t x, uint32_t m) { return x < m ? x + m : x; };

	for (const auto &t : v) {
		rnd_state s;

		s.s1 = at_least(t.seed * 69069u, 2);
		s.s2 = at_least(s.s1 * 69069u, 8);
		s.s3 = at_least(s.s2 * 69069u, 16);
		s.s4 = at_least(s.s3 * 69069u, 128);
		for (uint32_t i = 0; i < 10 + t.iteration - 1; i++)
			prandom_u32_state(&s);
		EXPECT_EQ(prandom_u32_state(&s), t.result) << t.seed;
	}
}

TEST(Fault, DefaultsNeverFail) {
	srnic_fault_knob kn = {};
	rnd_state rnd = Seeded(1), before = rnd;

	srnic_fault_knob_init(&kn);
	EXPECT_EQ(kn.interval, 1u);
	EXPECT_EQ(kn.times, -1);
	EXPECT_EQ(kn.probability, 0u);
	for (bool f : Events(kn, rnd, 1000))
		ASSERT_FALSE(f);
	EXPECT_EQ(kn.events, 1000u);	// counted all the same
	EXPECT_EQ(kn.injected, 0u);
	EXPECT_TRUE(SameState(rnd, before));	// and no draw taken
}

TEST(Fault, AlwaysFailsWithoutDrawing) {
	srnic_fault_knob kn = Knob(100);
	rnd_state rnd = Seeded(7), before = rnd;

	for (bool f : Events(kn, rnd, 50))
		ASSERT_TRUE(f);
	EXPECT_EQ(kn.events, 50u);
	EXPECT_EQ(kn.injected, 50u);
	EXPECT_EQ(kn.times, -1);	// no limit stays no limit
	EXPECT_TRUE(SameState(rnd, before));
}

TEST(Fault, EveryIntervalthEvent) {
	srnic_fault_knob kn = Knob(100, 3);
	rnd_state rnd = Seeded(1);
	std::vector<bool> v = Events(kn, rnd, 12);

	for (int i = 0; i < 12; i++)
		EXPECT_EQ(v[i], (i + 1) % 3 == 0) << "event " << i + 1;
	EXPECT_EQ(kn.injected, 4u);
}

TEST(Fault, TimesLimitsTheFailures) {
	srnic_fault_knob kn = Knob(100, 2, 2);
	rnd_state rnd = Seeded(1);
	std::vector<bool> v = Events(kn, rnd, 10);

	// Events 2 and 4 fail, then times is spent.
	for (int i = 0; i < 10; i++)
		EXPECT_EQ(v[i], i == 1 || i == 3) << "event " << i + 1;
	EXPECT_EQ(kn.times, 0);
	EXPECT_EQ(kn.injected, 2u);
	EXPECT_EQ(kn.events, 10u);
}

TEST(Fault, OnlyTheNamedQp) {
	srnic_fault_knob kn = Knob(100, 2, -1, 7);
	rnd_state rnd = Seeded(1);

	// Another QP's events are not eligible: not counted, never failed.
	EXPECT_FALSE(srnic_fault_event(&kn, &rnd, 8));
	EXPECT_FALSE(srnic_fault_event(&kn, &rnd, 0));
	EXPECT_EQ(kn.events, 0u);
	EXPECT_FALSE(srnic_fault_event(&kn, &rnd, 7));
	EXPECT_FALSE(srnic_fault_event(&kn, &rnd, 9));
	EXPECT_TRUE(srnic_fault_event(&kn, &rnd, 7));	// QP 7's second
	EXPECT_EQ(kn.events, 2u);
	// qpn 0 names every QP, and events with no QP.
	srnic_fault_knob any = Knob(100);
	EXPECT_TRUE(srnic_fault_event(&any, &rnd, 0));
	EXPECT_TRUE(srnic_fault_event(&any, &rnd, 12345));
}

// A probability between: each candidate takes one draw r and fails if
// r % 100 < probability; non-candidates take none.
TEST(Fault, ProbabilityFollowsTheGenerator) {
	for (uint64_t seed : {1ull, 2ull, 0xdeadbeefcafeull}) {
		for (uint32_t interval : {1u, 4u}) {
			srnic_fault_knob kn = Knob(30, interval, 50);
			rnd_state rnd = Seeded(seed), ref = Seeded(seed);
			std::vector<bool> v = Events(kn, rnd, 2000);
			int left = 50;

			for (int i = 0; i < 2000; i++) {
				bool want = false;

				if ((i + 1) % interval == 0 && left)
					want = prandom_u32_state(&ref) % 100 < 30;
				left -= want;
				ASSERT_EQ(v[i], want) << "seed " << seed << " event " << i + 1;
			}
			EXPECT_EQ(kn.times, left);
			EXPECT_EQ(kn.injected, 50u - left);
			EXPECT_TRUE(SameState(rnd, ref));
		}
	}
}

TEST(Fault, ProbabilityIsRoughlyHonoured) {
	srnic_fault_knob kn = Knob(25);
	rnd_state rnd = Seeded(12345);

	Events(kn, rnd, 20000);
	EXPECT_GT(kn.injected, 4500u);
	EXPECT_LT(kn.injected, 5500u);
}

// The same seed gives the same failures again; the reseed zeroes every
// knob's counts but keeps its settings.
TEST(Fault, ReseedRestartsTheSequence) {
	srnic_fault_knob knobs[3] = {Knob(40), Knob(60, 3), Knob(10)};
	rnd_state rnd;

	srnic_fault_reseed(&rnd, 99, knobs, 3);
	std::vector<bool> first = Events(knobs[0], rnd, 300);
	Events(knobs[1], rnd, 30);
	srnic_fault_reseed(&rnd, 99, knobs, 3);
	for (const srnic_fault_knob &k : knobs) {
		EXPECT_EQ(k.events, 0u);
		EXPECT_EQ(k.injected, 0u);
	}
	EXPECT_EQ(knobs[1].probability, 60u);
	EXPECT_EQ(knobs[1].interval, 3u);
	EXPECT_EQ(Events(knobs[0], rnd, 300), first);

	srnic_fault_reseed(&rnd, 100, knobs, 3);
	EXPECT_NE(Events(knobs[0], rnd, 300), first);
}
