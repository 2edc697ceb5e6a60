// The RSS Toeplitz hash (kernel/srnic_toeplitz.h) against the published
// verification suite: Microsoft, "Verifying the RSS Hash Calculation"
// (learn.microsoft.com/windows-hardware/drivers/network/verifying-the-rss-hash-calculation),
// the same table as the Intel 82599 datasheet's 7.1.2.8.3 "RSS Verification
// Suite"; the rows were checked against DPDK's app/test/test_thash.c and
// Knot DNS's Toeplitz test, which carry the same values.  The input is the
// source address, destination address, source port, destination port, in
// network byte order: the order srnic_rss_hash() builds.
#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_pure.h"

namespace {

const uint8_t kKey[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

struct Row {
	const char *src, *dst;
	uint16_t sport, dport;
	uint32_t ip_only, with_ports;
};

const Row kIpv4[] = {
	{"66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178},
	{"199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea},
	{"24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
	{"38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f},
	{"153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2},
};

const Row kIpv6[] = {
	{"3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766, 0x2cc18cd5, 0x40207d3d},
	{"3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0x0f0c461c, 0xdde51bbf},
	{"3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 44251, 38024,
	 0x4b61e985, 0x02d1feef},
};

// The hash input of a row: addresses, then (with @ports) the two ports.
std::vector<uint8_t> Input(int af, const Row &r, bool ports) {
	const size_t alen = af == AF_INET ? 4 : 16;
	std::vector<uint8_t> in(2 * alen);

	EXPECT_EQ(inet_pton(af, r.src, &in[0]), 1) << r.src;
	EXPECT_EQ(inet_pton(af, r.dst, &in[alen]), 1) << r.dst;
	if (ports) {
		for (uint16_t p : {r.sport, r.dport}) {
			in.push_back(p >> 8);
			in.push_back(p & 0xff);
		}
	}
	return in;
}

uint32_t Hash(const std::vector<uint8_t> &in) {
	return srnic_toeplitz(kKey, sizeof(kKey), in.data(), static_cast<uint32_t>(in.size()));
}

// Every row of @rows hashes to its published value.
template <size_t N>
void ExpectRows(int af, const Row (&rows)[N], bool ports) {
	for (const Row &r : rows)
		EXPECT_EQ(Hash(Input(af, r, ports)), ports ? r.with_ports : r.ip_only)
			<< r.src << " -> " << r.dst;
}

}  // namespace

TEST(Toeplitz, Ipv4) { ExpectRows(AF_INET, kIpv4, false); }
TEST(Toeplitz, Ipv4Tcp) { ExpectRows(AF_INET, kIpv4, true); }
TEST(Toeplitz, Ipv6) { ExpectRows(AF_INET6, kIpv6, false); }
// 36 bytes of input use the key to its last bit.
TEST(Toeplitz, Ipv6Tcp) { ExpectRows(AF_INET6, kIpv6, true); }

// Toeplitz is linear: hash(a ^ b) == hash(a) ^ hash(b); no input, no hash.
TEST(Toeplitz, Linear) {
	std::vector<uint8_t> a = Input(AF_INET6, kIpv6[0], true);
	std::vector<uint8_t> b = Input(AF_INET6, kIpv6[2], true), x(a.size());

	for (size_t i = 0; i < a.size(); i++)
		x[i] = a[i] ^ b[i];
	EXPECT_EQ(Hash(x), Hash(a) ^ Hash(b));
	EXPECT_EQ(srnic_toeplitz(kKey, sizeof(kKey), a.data(), 0), 0u);
	EXPECT_EQ(Hash(std::vector<uint8_t>(36, 0)), 0u);
}

// The direction of a flow matters with this key (it is not symmetric).
TEST(Toeplitz, DirectionMatters) {
	const Row &r = kIpv4[0];
	const Row rev = {r.dst, r.src, r.dport, r.sport, 0, 0};

	EXPECT_NE(Hash(Input(AF_INET, rev, true)), r.with_ports);
}

// The definition itself: an input with only bit k set hashes to the 32 key
// bits from bit k on, key bits past its end being zeros; for every bit of
// an input as long as the key (36 bytes are the most RSS uses).
TEST(Toeplitz, OneBitSelectsAKeyWindow) {
	auto key_bit = [](unsigned k) -> uint32_t {
		return k < 8 * sizeof(kKey) ? kKey[k / 8] >> (7 - k % 8) & 1 : 0;
	};

	for (unsigned k = 0; k < 8 * sizeof(kKey); k++) {
		std::vector<uint8_t> in(sizeof(kKey), 0);
		uint32_t window = 0;

		in[k / 8] = static_cast<uint8_t>(0x80 >> (k % 8));
		for (unsigned j = 0; j < 32; j++)
			window = window << 1 | key_bit(k + j);
		ASSERT_EQ(Hash(in), window) << "bit " << k;
	}
}
