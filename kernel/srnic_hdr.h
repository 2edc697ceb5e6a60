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
#define SRNIC_PSN_MASK		0x00ffffff
#define SRNIC_DEFAULT_PKEY	0xffff

/* Datagram extended transport header (UD), 8 bytes. */
struct srnic_deth {
	__be32 qkey;
	__be32 sqp;		/* 8 reserved bits | SrcQP */
} __packed;

/* The opcodes srnic understands on the wire. */
enum srnic_wire_opcode {
	SRNIC_OP_UD_SEND_ONLY		= 0x64,
	SRNIC_OP_UD_SEND_ONLY_IMM	= 0x65,
};

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

static inline void srnic_bth_set(struct srnic_bth *bth, u8 opcode, bool se,
				 u8 pad, u32 dqpn, u32 psn)
{
	bth->opcode = opcode;
	bth->flags = (se ? SRNIC_BTH_SE : 0) | (pad << SRNIC_BTH_PAD_SHIFT);
	bth->pkey = cpu_to_be16(SRNIC_DEFAULT_PKEY);
	bth->qpn = cpu_to_be32(dqpn & SRNIC_QPN_MASK);
	bth->apsn = cpu_to_be32(psn & SRNIC_PSN_MASK);
}

static inline u32 srnic_deth_sqp(const struct srnic_deth *deth)
{
	return be32_to_cpu(deth->sqp) & SRNIC_QPN_MASK;
}

/* srnic_icrc.c */
u32 srnic_icrc(const u8 *l3, bool ipv4, u32 l4_len);

#endif /* SRNIC_HDR_H */
