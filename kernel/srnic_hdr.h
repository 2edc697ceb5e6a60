/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * RoCEv2 wire headers (IBTA vol. 1 ch. 9, Annex A17): what follows the
 * UDP header of a packet to port 4791.  Every field of a received packet
 * is hostile: read them only through these accessors, after the length
 * checks of srnic_net.c.
 */
#ifndef SRNIC_HDR_H
#define SRNIC_HDR_H

#include <linux/types.h>
#include <asm/byteorder.h>

#include "srnic_psn.h"

#define SRNIC_ROCE_UDP_PORT	4791
#define SRNIC_ICRC_BYTES	4
/* The UDP source port: 0xC000 and up, from the QPN (entropy for ECMP). */
#define SRNIC_UDP_SPORT_BASE	0xc000

/* Base transport header, 12 bytes. */
struct srnic_bth {
	u8 opcode;
	u8 flags;		/* SE, M, PadCnt (2 bits), TVer (4 bits) */
	__be16 pkey;
	__be32 qpn;		/* FECN, BECN, 6 reserved bits | DestQP */
	__be32 apsn;		/* AckReq, 7 reserved bits | PSN */
} __packed;

#define SRNIC_BTH_SE		0x80
#define SRNIC_BTH_MIG		0x40
#define SRNIC_BTH_PAD_SHIFT	4
#define SRNIC_BTH_PAD_MASK	0x30
#define SRNIC_BTH_TVER_MASK	0x0f
#define SRNIC_QPN_MASK		0x00ffffff
#define SRNIC_DEFAULT_PKEY	0xffff	/* the port's one P_Key, every QP's */
#define SRNIC_PKEY_FULL		0x8000	/* membership: full, else limited */
#define SRNIC_PKEY_BASE		0x7fff

/* Datagram extended transport header (UD), 8 bytes. */
struct srnic_deth {
	__be32 qkey;
	__be32 sqp;		/* 8 reserved bits | SrcQP */
} __packed;

/* XRC extended transport header: the target's SRQ, 4 bytes, first after the BTH. */
struct srnic_xrceth {
	__be32 srqn;		/* 8 reserved bits | XRC SRQ number */
} __packed;

/* RDMA extended transport header: WRITE FIRST/ONLY, READ REQUEST, 16 bytes. */
struct srnic_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

/*
 * FLUSH extended transport header, 4 bytes before a FLUSH's RETH: the
 * selectivity level in bits 5-4, the placement type in bits 3-0.
 */
struct srnic_feth {
	__be32 bits;
} __packed;

#define SRNIC_FETH_TYPE_MASK	0x0f
#define SRNIC_FETH_LEVEL_SHIFT	4
#define SRNIC_FETH_LEVEL_MASK	0x30

static inline u8 srnic_feth_type(const struct srnic_feth *f)
{
	return be32_to_cpu(f->bits) & SRNIC_FETH_TYPE_MASK;
}

static inline u8 srnic_feth_level(const struct srnic_feth *f)
{
	return (be32_to_cpu(f->bits) & SRNIC_FETH_LEVEL_MASK) >>
	       SRNIC_FETH_LEVEL_SHIFT;
}

static inline void srnic_feth_set(struct srnic_feth *f, u8 type, u8 level)
{
	f->bits = cpu_to_be32((level << SRNIC_FETH_LEVEL_SHIFT &
			       SRNIC_FETH_LEVEL_MASK) |
			      (type & SRNIC_FETH_TYPE_MASK));
}

/* ACK extended transport header, 4 bytes: syndrome and MSN. */
struct srnic_aeth {
	__be32 smsn;
} __packed;

/* Atomic extended transport header, 28 bytes. */
struct srnic_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

/* Atomic acknowledge extended transport header: the original value. */
struct srnic_atmack {
	__be64 orig;
} __packed;

/* AETH syndromes (IBTA 9.7.5.2.1): the kind in bits 7-5, a value in 4-0. */
#define SRNIC_AETH_ACK		0x00	/* value: credits */
#define SRNIC_AETH_RNR		0x20	/* value: the RNR timer's code */
#define SRNIC_AETH_NAK		0x60	/* value: the NAK code */
#define SRNIC_AETH_KIND		0xe0
#define SRNIC_AETH_VALUE	0x1f
#define SRNIC_AETH_NO_CREDITS	0x1f	/* end-to-end credits not used */
#define SRNIC_NAK_PSN_SEQ	0
#define SRNIC_NAK_INV_REQ	1
#define SRNIC_NAK_REM_ACCESS	2
#define SRNIC_NAK_REM_OP	3
#define SRNIC_MSN_MASK		0x00ffffff

/*
 * Opcodes (IBTA 9.2.2 table 38): the service in bits 7-5 (RC 0, UC 1,
 * UD 3, XRC 5), the operation in 4-0: an XRC opcode is the RC one with
 * the service's bits.
 */
enum srnic_wire_opcode {
	SRNIC_OP_SEND_FIRST		= 0x00,
	SRNIC_OP_SEND_MIDDLE		= 0x01,
	SRNIC_OP_SEND_LAST		= 0x02,
	SRNIC_OP_SEND_LAST_IMM		= 0x03,
	SRNIC_OP_SEND_ONLY		= 0x04,
	SRNIC_OP_SEND_ONLY_IMM		= 0x05,
	SRNIC_OP_WRITE_FIRST		= 0x06,
	SRNIC_OP_WRITE_MIDDLE		= 0x07,
	SRNIC_OP_WRITE_LAST		= 0x08,
	SRNIC_OP_WRITE_LAST_IMM		= 0x09,
	SRNIC_OP_WRITE_ONLY		= 0x0a,
	SRNIC_OP_WRITE_ONLY_IMM		= 0x0b,
	SRNIC_OP_READ_REQUEST		= 0x0c,
	SRNIC_OP_READ_RESP_FIRST	= 0x0d,
	SRNIC_OP_READ_RESP_MIDDLE	= 0x0e,
	SRNIC_OP_READ_RESP_LAST		= 0x0f,
	SRNIC_OP_READ_RESP_ONLY		= 0x10,
	SRNIC_OP_ACK			= 0x11,
	SRNIC_OP_ATOMIC_ACK		= 0x12,
	SRNIC_OP_CMP_SWAP		= 0x13,
	SRNIC_OP_FETCH_ADD		= 0x14,
	SRNIC_OP_SEND_LAST_INV		= 0x16,
	SRNIC_OP_SEND_ONLY_INV		= 0x17,
	SRNIC_OP_FLUSH			= 0x1c,
	SRNIC_OP_ATOMIC_WRITE		= 0x1d,
	SRNIC_OP_UD_SEND_ONLY		= 0x64,
	SRNIC_OP_UD_SEND_ONLY_IMM	= 0x65,
};

#define SRNIC_OP_SERVICE_MASK	0xe0
#define SRNIC_OP_RC		0x00
#define SRNIC_OP_UC		0x20
#define SRNIC_OP_UD		0x60
#define SRNIC_OP_XRC		0xa0

/*
 * What an opcode's packet is (srnic_opcode.c): its headers after the BTH,
 * in wire order, and its place in a message.
 */
enum srnic_opf {
	SRNIC_OPF_RETH		= 1 << 0,
	SRNIC_OPF_AETH		= 1 << 1,
	SRNIC_OPF_ATMETH	= 1 << 2,
	SRNIC_OPF_ATMACK	= 1 << 3,
	SRNIC_OPF_IMM		= 1 << 4,
	SRNIC_OPF_IETH		= 1 << 5,
	SRNIC_OPF_DETH		= 1 << 6,
	SRNIC_OPF_PAYLOAD	= 1 << 7,	/* may carry payload */
	SRNIC_OPF_FIRST		= 1 << 8,
	SRNIC_OPF_LAST		= 1 << 9,
	SRNIC_OPF_REQ		= 1 << 10,	/* a request, for the responder */
	SRNIC_OPF_SEND		= 1 << 11,	/* takes a receive WQE */
	SRNIC_OPF_WRITE		= 1 << 12,
	SRNIC_OPF_READ		= 1 << 13,	/* READ REQUEST, or its response */
	SRNIC_OPF_ATOMIC	= 1 << 14,
	SRNIC_OPF_VALID		= 1 << 15,
	SRNIC_OPF_XRCETH	= 1 << 16,	/* an XRC request: XRCETH first */
	SRNIC_OPF_FETH		= 1 << 17,	/* FLUSH: a FETH, then its RETH */
};

struct srnic_opcode_info {
	const char *name;
	u32 flags;			/* enum srnic_opf */
	u8 hdr_len;			/* extension headers after the BTH */
};

extern const struct srnic_opcode_info srnic_opcode[256];

static inline u8 srnic_bth_pad(const struct srnic_bth *bth)
{
	return (bth->flags & SRNIC_BTH_PAD_MASK) >> SRNIC_BTH_PAD_SHIFT;
}

static inline u8 srnic_bth_tver(const struct srnic_bth *bth)
{
	return bth->flags & SRNIC_BTH_TVER_MASK;
}

static inline bool srnic_bth_se(const struct srnic_bth *bth)
{
	return bth->flags & SRNIC_BTH_SE;
}

static inline u32 srnic_bth_qpn(const struct srnic_bth *bth)
{
	return be32_to_cpu(bth->qpn) & SRNIC_QPN_MASK;
}

static inline u32 srnic_bth_psn(const struct srnic_bth *bth)
{
	return be32_to_cpu(bth->apsn) & SRNIC_PSN_MASK;
}

static inline u16 srnic_bth_pkey(const struct srnic_bth *bth)
{
	return be16_to_cpu(bth->pkey);
}

/*
 * Whether P_Keys @a and @b match (IBTA 10.9.3, as rxe's pkey_match()):
 * neither is invalid (base 0), their 15-bit bases are equal, and at least
 * one of them is a full member (bit 15).  A limited member may talk to a
 * full member, two limited members may not.
 */
static inline bool srnic_pkey_match(u16 a, u16 b)
{
	return (a & SRNIC_PKEY_BASE) &&
	       (a & SRNIC_PKEY_BASE) == (b & SRNIC_PKEY_BASE) &&
	       ((a | b) & SRNIC_PKEY_FULL);
}

static inline void srnic_bth_set(struct srnic_bth *bth, u8 opcode, bool se,
				 u8 pad, u32 dqpn, u32 psn)
{
	bth->opcode = opcode;
	bth->flags = (se ? SRNIC_BTH_SE : 0) | (pad << SRNIC_BTH_PAD_SHIFT);
	bth->pkey = cpu_to_be16(SRNIC_DEFAULT_PKEY);
	bth->qpn = cpu_to_be32(dqpn & SRNIC_QPN_MASK);
	bth->apsn = cpu_to_be32(psn & SRNIC_PSN_MASK);
}

static inline bool srnic_bth_ackreq(const struct srnic_bth *bth)
{
	return be32_to_cpu(bth->apsn) & 0x80000000;
}

static inline u8 srnic_aeth_syndrome(const struct srnic_aeth *aeth)
{
	return be32_to_cpu(aeth->smsn) >> 24;
}

static inline void srnic_aeth_set(struct srnic_aeth *aeth, u8 syndrome,
				  u32 msn)
{
	aeth->smsn = cpu_to_be32((u32)syndrome << 24 | (msn & SRNIC_MSN_MASK));
}

static inline u32 srnic_xrceth_srqn(const struct srnic_xrceth *x)
{
	return be32_to_cpu(x->srqn) & SRNIC_QPN_MASK;
}

static inline u32 srnic_deth_sqp(const struct srnic_deth *deth)
{
	return be32_to_cpu(deth->sqp) & SRNIC_QPN_MASK;
}

static inline void srnic_bth_set_ackreq(struct srnic_bth *bth)
{
	bth->apsn |= cpu_to_be32(0x80000000);
}

/*
 * The IP and UDP headers' lengths and the fields the ICRC masks, by byte
 * offset, so that srnic_icrc.c needs no kernel header (srnic_net.c checks
 * them against struct iphdr, ipv6hdr and udphdr).
 */
#define SRNIC_IPV4_HLEN		20	/* no options */
#define SRNIC_IPV4_TOS		1
#define SRNIC_IPV4_TTL		8
#define SRNIC_IPV4_CHECK	10
#define SRNIC_IPV6_HLEN		40
#define SRNIC_IPV6_HOP_LIMIT	7
#define SRNIC_UDP_HLEN		8
#define SRNIC_UDP_CHECK		6

/* srnic_icrc.c */
u32 srnic_icrc(const u8 *l3, bool ipv4, u32 l4_len);
u32 srnic_icrc_headers(const u8 *l3, bool ipv4, u32 after);
u32 srnic_icrc_rxe_flush(const u8 *l3, bool ipv4, u32 l4_len);

#endif /* SRNIC_HDR_H */
