// The ICRC (kernel/srnic_icrc.c), against a hardware-captured packet and
// against a reference written here from the definition (IBTA vol. 1
// 7.8.1 and Annex A17.3.3): CRC-32 as Ethernet's (zlib's crc32: start ~0,
// reflected 0xEDB88320, result inverted) over eight bytes of ones for the
// LRH, the IP header with TOS/TTL/checksum (IPv4) or class/flow/hop limit
// (IPv6) set to ones, the UDP header with its checksum set to ones, the
// BTH with byte 4 (FECN, BECN, reserved) set to ones, then everything up
// to the ICRC.  The ICRC goes on the wire least significant byte first.
#include <arpa/inet.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_pure.h"

namespace {

constexpr size_t kIpv4Hlen = 20, kIpv6Hlen = 40, kUdpHlen = 8, kBthLen = 12;

// A RoCEv2 packet from its IP header to its ICRC, both included.
struct Packet {
	std::vector<uint8_t> b;
	bool ipv4;

	size_t l3_len() const { return ipv4 ? kIpv4Hlen : kIpv6Hlen; }
	uint32_t l4_len() const { return static_cast<uint32_t>(b.size() - l3_len()); }
	uint32_t srnic() const { return srnic_icrc(b.data(), ipv4, l4_len()); }
	uint32_t wire_icrc() const {
		const uint8_t *p = &b[b.size() - 4];
		return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
	}
	void set_icrc(uint32_t v) {
		for (int i = 0; i < 4; i++)
			b[b.size() - 4 + i] = static_cast<uint8_t>(v >> (8 * i));
	}
};

uint32_t Zlib(const std::vector<uint8_t> &v) {
	return static_cast<uint32_t>(crc32(0, v.data(), static_cast<uInt>(v.size())));
}

void Put16(std::vector<uint8_t> &v, size_t at, uint16_t x) {
	v[at] = x >> 8;
	v[at + 1] = x & 0xff;
}

uint32_t Get32(const std::vector<uint8_t> &v, size_t at) {
	return static_cast<uint32_t>(v[at]) << 24 | v[at + 1] << 16 | v[at + 2] << 8 | v[at + 3];
}

void Put32(std::vector<uint8_t> &v, size_t at, uint32_t x) {
	for (int i = 0; i < 4; i++)
		v[at + i] = static_cast<uint8_t>(x >> (24 - 8 * i));
}

// What the ICRC covers, by the definition above: the LRH as ones, then a
// masked copy of the packet up to its ICRC.
std::vector<uint8_t> Covered(const Packet &p) {
	std::vector<uint8_t> m(p.b.begin(), p.b.end() - 4);
	size_t udp = p.l3_len();

	if (p.ipv4) {
		m[1] = 0xff;			// type of service
		m[8] = 0xff;			// time to live
		Put16(m, 10, 0xffff);		// header checksum
	} else {
		// Version (4 bits) | traffic class (8) | flow label (20).
		Put32(m, 0, (Get32(m, 0) & 0xf0000000u) | 0x0fffffffu);
		m[7] = 0xff;			// hop limit
	}
	Put16(m, udp + 6, 0xffff);		// UDP checksum
	m[udp + kUdpHlen + 4] = 0xff;		// BTH: FECN, BECN, reserved
	m.insert(m.begin(), 8, 0xff);		// the LRH, as ones
	return m;
}

uint32_t ReferenceIcrc(const Packet &p) { return Zlib(Covered(p)); }

// The bytes the ICRC leaves out, as offsets from the IP header.
std::set<size_t> MaskedBytes(const Packet &p) {
	size_t udp = p.l3_len();
	std::set<size_t> s = {udp + 6, udp + 7, udp + kUdpHlen + 4};

	if (p.ipv4)
		s.insert({1, 8, 10, 11});
	else
		s.insert({1, 2, 3, 7});	// byte 0 is half masked: see MaskedBit
	return s;
}

// Bit @bit (0 the most significant) of byte @at is left out of the ICRC.
bool MaskedBit(const Packet &p, size_t at, int bit) {
	if (!p.ipv4 && at == 0)
		return bit >= 4;	// the traffic class's high half; the version counts
	return MaskedBytes(p).count(at) > 0;
}

uint16_t Ipv4Checksum(const std::vector<uint8_t> &b) {
	uint32_t s = 0;

	for (size_t i = 0; i < kIpv4Hlen; i += 2)
		s += b[i] << 8 | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return static_cast<uint16_t>(~s);
}

// IP and UDP headers around @l4 (BTH on, without the ICRC), ICRC set to 0.
Packet Build(bool ipv4, const std::vector<uint8_t> &l4) {
	Packet p{{}, ipv4};
	uint16_t ulen = static_cast<uint16_t>(kUdpHlen + l4.size() + 4);

	p.b.assign(p.l3_len(), 0);
	if (ipv4) {
		p.b[0] = 0x45;
		p.b[1] = 0x02;			// ECT(0), as DCQCN senders mark
		Put16(p.b, 2, static_cast<uint16_t>(kIpv4Hlen + ulen));
		Put16(p.b, 4, 0x1234);
		Put16(p.b, 6, 0x4000);		// DF
		p.b[8] = 64;
		p.b[9] = 17;
		inet_pton(AF_INET, "192.0.2.1", &p.b[12]);
		inet_pton(AF_INET, "198.51.100.7", &p.b[16]);
		Put16(p.b, 10, Ipv4Checksum(p.b));
	} else {
		Put32(p.b, 0, 6u << 28 | 0x2a << 20 | 0x12345);	// class 0x2a, a flow label
		Put16(p.b, 4, ulen);
		p.b[6] = 17;
		p.b[7] = 64;
		inet_pton(AF_INET6, "2001:db8::1", &p.b[8]);
		inet_pton(AF_INET6, "2001:db8:ffff::2", &p.b[24]);
	}
	std::vector<uint8_t> udp(kUdpHlen, 0);
	Put16(udp, 0, 0xc000 | 0x0123);		// source port from the QPN
	Put16(udp, 2, 4791);
	Put16(udp, 4, ulen);
	Put16(udp, 6, 0xbeef);			// a checksum a router rewrote
	p.b.insert(p.b.end(), udp.begin(), udp.end());
	p.b.insert(p.b.end(), l4.begin(), l4.end());
	p.b.insert(p.b.end(), 4, 0);
	return p;
}

std::vector<uint8_t> Bth(uint8_t op, uint8_t pad, uint32_t qpn, uint32_t psn, bool ackreq) {
	std::vector<uint8_t> b(kBthLen, 0);

	b[0] = op;
	b[1] = static_cast<uint8_t>(pad << 4);
	Put16(b, 2, 0xffff);
	Put32(b, 4, qpn & 0xffffff);
	b[4] = 0x40;				// BECN, as a congested path sets it
	Put32(b, 8, (ackreq ? 0x80000000u : 0) | (psn & 0xffffff));
	return b;
}

// An RC WRITE ONLY over IPv4: RETH, 37 bytes of payload, 3 of pad.
Packet Ipv4Write() {
	std::vector<uint8_t> l4 = Bth(0x0a, 3, 0x000321, 0xfffffe, true);
	std::vector<uint8_t> reth(16, 0);

	Put32(reth, 0, 0x00007f12);
	Put32(reth, 4, 0x34560000);
	Put32(reth, 8, 0x00012a05);		// rkey
	Put32(reth, 12, 37);			// DMA length
	l4.insert(l4.end(), reth.begin(), reth.end());
	for (int i = 0; i < 37; i++)
		l4.push_back(static_cast<uint8_t>(i * 7 + 1));
	l4.insert(l4.end(), 3, 0);
	return Build(true, l4);
}

// A UD SEND ONLY with immediate over IPv6: DETH, ImmDt, 5 bytes, 3 of pad.
Packet Ipv6UdSend() {
	std::vector<uint8_t> l4 = Bth(0x65, 3, 0x000045, 0x000010, false);
	std::vector<uint8_t> ext(12, 0);

	Put32(ext, 0, 0x11111111);		// Q_Key
	Put32(ext, 4, 0x000077);		// source QP
	Put32(ext, 8, 0xdeadbeef);		// immediate data
	l4.insert(l4.end(), ext.begin(), ext.end());
	for (uint8_t c : {'h', 'e', 'l', 'l', 'o'})
		l4.push_back(c);
	l4.insert(l4.end(), 3, 0);
	return Build(false, l4);
}

// A CNP captured on a ConnectX-4 Lx, from its IP header on (Scapy,
// test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"; Scapy's
// own check there reads its ICRC as 0x82fd002a, i.e. bytes 82 fd 00 2a).
// TOS 0xc2 (ECN bits 10) and BECN are set: both masked.
Packet CapturedCnp() {
	const uint8_t frame[] = {
		0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00,
		0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61,
		0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
		0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,
		0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x82, 0xfd, 0x00, 0x2a,
	};
	return Packet{std::vector<uint8_t>(frame + 14, frame + sizeof(frame)), true};
}

// Every bit of @p flipped alone: the ICRC changes exactly for the bits it covers.
void ExpectCoverage(const Packet &p) {
	const uint32_t base = p.srnic();

	for (size_t at = 0; at < p.b.size() - 4; at++) {
		for (int bit = 0; bit < 8; bit++) {
			Packet q = p;

			q.b[at] ^= static_cast<uint8_t>(0x80 >> bit);
			if (MaskedBit(p, at, bit))
				ASSERT_EQ(q.srnic(), base) << "byte " << at << " bit " << bit;
			else
				ASSERT_NE(q.srnic(), base) << "byte " << at << " bit " << bit;
		}
	}
}

}  // namespace

// The shim's crc32_le (tests/host/kshim) against the CRC-32 check value
// ("123456789" -> 0xCBF43926) and zlib; and the LRH seed the brief names.
TEST(Icrc, ShimCrc32IsTheKernels) {
	const char *check = "123456789";

	EXPECT_EQ(~crc32_le(~0u, reinterpret_cast<const unsigned char *>(check), 9), 0xcbf43926u);
	std::vector<uint8_t> v;
	for (int n = 0; n < 300; n++) {
		EXPECT_EQ(~crc32_le(~0u, v.data(), v.size()), Zlib(v)) << n;
		v.push_back(static_cast<uint8_t>(n * 31 + 7));
	}
	const std::vector<uint8_t> lrh(8, 0xff);
	EXPECT_EQ(crc32_le(~0u, lrh.data(), lrh.size()), 0xdebb20e3u);
}

TEST(Icrc, CapturedConnectX4LxCnp) {
	Packet p = CapturedCnp();

	EXPECT_EQ(p.l4_len(), 40u);
	EXPECT_EQ(p.wire_icrc(), 0x2a00fd82u);
	EXPECT_EQ(ReferenceIcrc(p), p.wire_icrc());
	EXPECT_EQ(p.srnic(), p.wire_icrc());
	// The same CNP unmarked (TOS 0, no BECN, fresh checksum) has the same ICRC.
	Packet q = p;
	q.b[1] = 0;
	q.b[kIpv4Hlen + kUdpHlen + 4] = 0;
	Put16(q.b, 10, 0);
	Put16(q.b, 10, Ipv4Checksum(q.b));
	EXPECT_EQ(q.srnic(), p.wire_icrc());
}

TEST(Icrc, Ipv4WriteMatchesReference) {
	Packet p = Ipv4Write();

	EXPECT_EQ(p.srnic(), ReferenceIcrc(p));
}

TEST(Icrc, Ipv6UdSendMatchesReference) {
	Packet p = Ipv6UdSend();

	EXPECT_EQ(p.srnic(), ReferenceIcrc(p));
}

// Flipping TOS/TTL/checksum, the UDP checksum or BTH byte 4 (every bit of
// them) leaves the ICRC alone; any other bit, payload and pad included,
// changes it (CRC-32 catches every single-bit error).
TEST(Icrc, CoversExactlyTheUnmaskedBitsIpv4) { ExpectCoverage(Ipv4Write()); }
TEST(Icrc, CoversExactlyTheUnmaskedBitsIpv6) { ExpectCoverage(Ipv6UdSend()); }
TEST(Icrc, CoversExactlyTheUnmaskedBitsCapturedCnp) { ExpectCoverage(CapturedCnp()); }

TEST(Icrc, OnePayloadBitChangesIt) {
	Packet p = Ipv4Write();
	const size_t payload = kIpv4Hlen + kUdpHlen + kBthLen + 16;
	Packet q = p;

	q.b[payload + 20] ^= 0x01;
	EXPECT_NE(q.srnic(), p.srnic());
	EXPECT_EQ(q.srnic(), ReferenceIcrc(q));
}

// The split srnic_net.c uses for page-fragment payloads: the masked headers
// and extension headers first, then the rest in pieces, then inverted.
TEST(Icrc, HeadersThenPiecesMatchesWhole) {
	for (const Packet &p : {Ipv4Write(), Ipv6UdSend()}) {
		const size_t hdrs = p.l3_len() + kUdpHlen + kBthLen;
		const size_t ext = p.ipv4 ? 16 : 12;
		const size_t end = p.b.size() - 4;

		for (size_t cut = hdrs + ext; cut <= end; cut++) {
			uint32_t crc = srnic_icrc_headers(p.b.data(), p.ipv4, static_cast<uint32_t>(ext));

			crc = crc32_le(crc, &p.b[hdrs + ext], cut - hdrs - ext);
			crc = crc32_le(crc, &p.b[cut], end - cut);
			ASSERT_EQ(~crc, p.srnic()) << "cut at " << cut;
		}
	}
}

// rxe's FLUSH ICRC (srnic_icrc.c): the CRC of the packet, then again over
// its BTH, FETH and RETH unmasked, before the inversion.
TEST(Icrc, RxeFlushVariant) {
	std::vector<uint8_t> l4 = Bth(0x1c, 0, 0x000100, 0x000200, true);
	std::vector<uint8_t> feth_reth(20, 0);

	Put32(feth_reth, 0, 0x00000011);	// selectivity 1, placement 1
	Put32(feth_reth, 8, 0x00001000);
	Put32(feth_reth, 12, 0x00000abc);
	Put32(feth_reth, 16, 4096);
	l4.insert(l4.end(), feth_reth.begin(), feth_reth.end());
	Packet p = Build(true, l4);

	std::vector<uint8_t> m = Covered(p);
	m.insert(m.end(), p.b.begin() + kIpv4Hlen + kUdpHlen, p.b.end() - 4);
	EXPECT_EQ(srnic_icrc_rxe_flush(p.b.data(), true, p.l4_len()), Zlib(m));
	EXPECT_NE(srnic_icrc_rxe_flush(p.b.data(), true, p.l4_len()), p.srnic());
	EXPECT_EQ(p.srnic(), ReferenceIcrc(p));
}
