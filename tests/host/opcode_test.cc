// The opcode table (kernel/srnic_opcode.c) and the header layouts
// (kernel/srnic_hdr.h), against IBTA vol. 1 table 38 and 9.3: the header
// sizes are BTH 12, RETH 16, AETH 4, AtomicETH 28, AtomicAckETH 8, ImmDt 4,
// IETH 4, DETH 8, FETH 4, XRCETH 4 (the brief's list, from rxe_hdr.h).
#include <cstdint>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "kernel_pure.h"

namespace {

enum : uint32_t { BTH = 12, RETH = 16, AETH = 4, ATMETH = 28, ATMACK = 8, IMM = 4, IETH = 4,
		  DETH = 8, FETH = 4, XRCETH = 4 };

// One opcode as the spec defines it: the headers after the BTH, and
// whether the packet carries payload, starts or ends its message.
struct Spec {
	uint8_t op;
	const char *name;	// without the service prefix
	uint32_t hdr_len;
	bool payload, first, last, request;
};

// The RC opcodes (service bits 000), table 38, plus FLUSH and ATOMIC WRITE
// (IBTA 1.5, "Memory Placement Extensions": 0x1C, 0x1D).
const Spec kRc[] = {
	{0x00, "SEND_FIRST", 0, true, true, false, true},
	{0x01, "SEND_MIDDLE", 0, true, false, false, true},
	{0x02, "SEND_LAST", 0, true, false, true, true},
	{0x03, "SEND_LAST_IMM", IMM, true, false, true, true},
	{0x04, "SEND_ONLY", 0, true, true, true, true},
	{0x05, "SEND_ONLY_IMM", IMM, true, true, true, true},
	{0x06, "WRITE_FIRST", RETH, true, true, false, true},
	{0x07, "WRITE_MIDDLE", 0, true, false, false, true},
	{0x08, "WRITE_LAST", 0, true, false, true, true},
	{0x09, "WRITE_LAST_IMM", IMM, true, false, true, true},
	{0x0a, "WRITE_ONLY", RETH, true, true, true, true},
	{0x0b, "WRITE_ONLY_IMM", RETH + IMM, true, true, true, true},
	{0x0c, "READ_REQUEST", RETH, false, true, true, true},
	{0x0d, "READ_RESPONSE_FIRST", AETH, true, true, false, false},
	{0x0e, "READ_RESPONSE_MIDDLE", 0, true, false, false, false},
	{0x0f, "READ_RESPONSE_LAST", AETH, true, false, true, false},
	{0x10, "READ_RESPONSE_ONLY", AETH, true, true, true, false},
	{0x11, "ACKNOWLEDGE", AETH, false, true, true, false},
	{0x12, "ATOMIC_ACKNOWLEDGE", AETH + ATMACK, false, true, true, false},
	{0x13, "COMPARE_SWAP", ATMETH, false, true, true, true},
	{0x14, "FETCH_ADD", ATMETH, false, true, true, true},
	{0x16, "SEND_LAST_INV", IETH, true, false, true, true},
	{0x17, "SEND_ONLY_INV", IETH, true, true, true, true},
	{0x1c, "FLUSH", FETH + RETH, false, true, true, true},
	// Its 8 bytes travel as payload after the RETH.
	{0x1d, "ATOMIC_WRITE", RETH, true, true, true, true},
};

// UC has the sends and writes only (opcodes 0x00-0x0b of its service).
constexpr uint8_t kUcLast = 0x0b;

void ExpectOpcode(uint8_t op, const std::string &name, uint32_t hdr_len, const Spec &s) {
	const srnic_opcode_info &o = srnic_opcode[op];

	SCOPED_TRACE(name);
	ASSERT_TRUE(o.flags & SRNIC_OPF_VALID);
	ASSERT_NE(o.name, nullptr);
	EXPECT_EQ(std::string(o.name), name);
	EXPECT_EQ(o.hdr_len, hdr_len);
	EXPECT_EQ(!!(o.flags & SRNIC_OPF_PAYLOAD), s.payload);
	EXPECT_EQ(!!(o.flags & SRNIC_OPF_FIRST), s.first);
	EXPECT_EQ(!!(o.flags & SRNIC_OPF_LAST), s.last);
	EXPECT_EQ(!!(o.flags & SRNIC_OPF_REQ), s.request);
}

// The sum of the header sizes the flags name, in the spec's sizes.
uint32_t HeadersOf(uint32_t f) {
	uint32_t n = 0;

	if (f & SRNIC_OPF_XRCETH) n += XRCETH;
	if (f & SRNIC_OPF_DETH) n += DETH;
	if (f & SRNIC_OPF_FETH) n += FETH;
	if (f & SRNIC_OPF_RETH) n += RETH;
	if (f & SRNIC_OPF_AETH) n += AETH;
	if (f & SRNIC_OPF_ATMETH) n += ATMETH;
	if (f & SRNIC_OPF_ATMACK) n += ATMACK;
	if (f & SRNIC_OPF_IMM) n += IMM;
	if (f & SRNIC_OPF_IETH) n += IETH;
	return n;
}

}  // namespace

TEST(Opcode, WireOpcodeNumbers) {
	EXPECT_EQ(SRNIC_OP_FLUSH, 0x1c);
	EXPECT_EQ(SRNIC_OP_ATOMIC_WRITE, 0x1d);
	EXPECT_EQ(SRNIC_OP_SEND_LAST_INV, 0x16);
	EXPECT_EQ(SRNIC_OP_UD_SEND_ONLY, 0x64);
	EXPECT_EQ(SRNIC_OP_UD_SEND_ONLY_IMM, 0x65);
	EXPECT_EQ(SRNIC_OP_UC, 0x20);
	EXPECT_EQ(SRNIC_OP_UD, 0x60);
	EXPECT_EQ(SRNIC_OP_XRC, 0xa0);
}

TEST(Opcode, HeaderStructSizes) {
	EXPECT_EQ(sizeof(srnic_bth), BTH);
	EXPECT_EQ(sizeof(srnic_reth), RETH);
	EXPECT_EQ(sizeof(srnic_aeth), AETH);
	EXPECT_EQ(sizeof(srnic_atmeth), ATMETH);
	EXPECT_EQ(sizeof(srnic_atmack), ATMACK);
	EXPECT_EQ(sizeof(srnic_deth), DETH);
	EXPECT_EQ(sizeof(srnic_feth), FETH);
	EXPECT_EQ(sizeof(srnic_xrceth), XRCETH);
}

TEST(Opcode, ReliableConnected) {
	for (const Spec &s : kRc)
		ExpectOpcode(s.op, std::string("RC_") + s.name, s.hdr_len, s);
}

TEST(Opcode, UnreliableConnectedHasSendsAndWritesOnly) {
	for (const Spec &s : kRc) {
		uint8_t op = SRNIC_OP_UC | s.op;

		if (s.op <= kUcLast)
			ExpectOpcode(op, std::string("UC_") + s.name, s.hdr_len, s);
		else
			EXPECT_FALSE(srnic_opcode[op].flags & SRNIC_OPF_VALID) << std::hex << int(op);
	}
}

// XRC is RC with the XRCETH first in every request (IBTA 14.2.2).
TEST(Opcode, XrcRequestsCarryTheXrceth) {
	for (const Spec &s : kRc) {
		uint8_t op = SRNIC_OP_XRC | s.op;
		uint32_t len = s.hdr_len + (s.request ? uint32_t{XRCETH} : 0);

		ExpectOpcode(op, std::string("XRC_") + s.name, len, s);
		EXPECT_EQ(!!(srnic_opcode[op].flags & SRNIC_OPF_XRCETH), s.request) << s.name;
	}
}

TEST(Opcode, UnreliableDatagram) {
	const Spec send = {0x04, "SEND_ONLY", DETH, true, true, true, true};
	const Spec imm = {0x05, "SEND_ONLY_IMM", DETH + IMM, true, true, true, true};

	ExpectOpcode(0x64, "UD_SEND_ONLY", DETH, send);
	ExpectOpcode(0x65, "UD_SEND_ONLY_IMM", DETH + IMM, imm);
	EXPECT_TRUE(srnic_opcode[0x64].flags & SRNIC_OPF_DETH);
}

TEST(Opcode, ReservedAndUnofferedOpcodesAreInvalid) {
	// Reserved in table 38 for every service: 0x15, 0x18-0x1b, 0x1e-0x1f.
	for (uint8_t svc : {SRNIC_OP_RC, SRNIC_OP_XRC})
		for (uint8_t op : {0x15, 0x18, 0x19, 0x1a, 0x1b, 0x1e, 0x1f})
			EXPECT_FALSE(srnic_opcode[svc | op].flags & SRNIC_OPF_VALID)
				<< std::hex << int(svc | op);
	// RD (0x40-0x5f) is not offered; UD has only SEND ONLY (with immediate).
	for (int op = 0x40; op < 0x80; op++) {
		if (op != 0x64 && op != 0x65) {
			EXPECT_FALSE(srnic_opcode[op].flags & SRNIC_OPF_VALID) << std::hex << op;
		}
	}
}

// Over all 256 entries: a valid opcode's hdr_len is the sum of the spec's
// sizes of the headers its flags name; an invalid one has no name.
TEST(Opcode, HeaderLengthIsTheSumOfItsHeaders) {
	int valid = 0;

	for (int op = 0; op < 256; op++) {
		const srnic_opcode_info &o = srnic_opcode[op];

		if (!(o.flags & SRNIC_OPF_VALID)) {
			EXPECT_EQ(o.name, nullptr) << op;
			EXPECT_EQ(o.flags, 0u) << op;
			continue;
		}
		valid++;
		EXPECT_EQ(o.hdr_len, HeadersOf(o.flags)) << o.name;
		// A request is for the responder; a SEND takes a receive WQE.
		if (o.flags & SRNIC_OPF_SEND) {
			EXPECT_TRUE(o.flags & SRNIC_OPF_REQ) << o.name;
		}
	}
	// RC 25, UC 12, XRC 25, UD 2.
	EXPECT_EQ(valid, 25 + 12 + 25 + 2);
}

// The BTH as srnic_bth_set() writes it, byte by byte (IBTA 9.2).
TEST(Opcode, BthLayout) {
	srnic_bth bth;
	uint8_t b[12];

	srnic_bth_set(&bth, SRNIC_OP_RC | SRNIC_OP_SEND_ONLY, true, 3, 0xabcdef, 0x123456);
	srnic_bth_set_ackreq(&bth);
	memcpy(b, &bth, sizeof(b));
	const uint8_t want[12] = {0x04, 0x80 | 3 << 4, 0xff, 0xff, 0x00, 0xab, 0xcd, 0xef,
				  0x80, 0x12, 0x34, 0x56};
	for (int i = 0; i < 12; i++)
		EXPECT_EQ(b[i], want[i]) << "byte " << i;
	EXPECT_EQ(srnic_bth_pad(&bth), 3);
	EXPECT_TRUE(srnic_bth_se(&bth));
	EXPECT_TRUE(srnic_bth_ackreq(&bth));
	EXPECT_EQ(srnic_bth_qpn(&bth), 0xabcdefu);
	EXPECT_EQ(srnic_bth_psn(&bth), 0x123456u);
	EXPECT_EQ(srnic_bth_tver(&bth), 0);
	// QPN and PSN are masked to 24 bits on the way in.
	srnic_bth_set(&bth, 0, false, 0, 0xff000001, 0xff000002);
	EXPECT_EQ(srnic_bth_qpn(&bth), 1u);
	EXPECT_EQ(srnic_bth_psn(&bth), 2u);
	EXPECT_FALSE(srnic_bth_ackreq(&bth));
}

// The BTH of a CNP captured from a ConnectX-4 Lx (Scapy's
// test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"): BECN set
// in byte 4, which the accessors leave out of the QPN.
TEST(Opcode, BthOfACapturedCnp) {
	const uint8_t raw[12] = {0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18,
				 0x00, 0x00, 0x00, 0x00};
	srnic_bth bth;

	memcpy(&bth, raw, sizeof(bth));
	EXPECT_EQ(bth.opcode, 0x81);
	EXPECT_EQ(srnic_bth_qpn(&bth), 0x118u);
	EXPECT_EQ(srnic_bth_psn(&bth), 0u);
	EXPECT_FALSE(srnic_bth_ackreq(&bth));
	EXPECT_EQ(srnic_bth_pad(&bth), 0);
}

TEST(Opcode, AethAndFethFields) {
	srnic_aeth aeth;
	srnic_feth feth;
	uint8_t b[4];

	srnic_aeth_set(&aeth, SRNIC_AETH_NAK | SRNIC_NAK_REM_ACCESS, 0x1abcdef);
	memcpy(b, &aeth, 4);
	EXPECT_EQ(b[0], 0x62);	// NAK kind 011, code 2
	EXPECT_EQ(b[1], 0xab);	// the MSN, masked to 24 bits
	EXPECT_EQ(b[3], 0xef);
	EXPECT_EQ(srnic_aeth_syndrome(&aeth), 0x62);

	srnic_feth_set(&feth, 1, 2);	// placement type 1, selectivity level 2
	memcpy(b, &feth, 4);
	EXPECT_EQ(b[3], 0x21);
	EXPECT_EQ(srnic_feth_type(&feth), 1);
	EXPECT_EQ(srnic_feth_level(&feth), 2);
}
