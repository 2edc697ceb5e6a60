// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Scatter/gather lists resolved to MRs, and copies between them.  Every
 * entry is checked against its MR (PD, access, bounds) when it is resolved;
 * the copy then only walks kernel mappings of pinned pages.
 */
#include <linux/net.h>

#include "srnic_loc.h"

/*
 * srnic_sg_odp_check() found entry @i (and maybe more) on an ODP MR: checks
 * them from there, the bytes [@woff, @woff + @wlen) of the list only (the
 * piece of a message that moves now: checking the whole list for every
 * piece would cost the square of a large message's size).
 */
int srnic_sg_odp_fault(struct srnic_sg *sg, u32 i, bool write, u64 woff,
		       u64 wlen)
{
	u64 pos = 0, wend = wlen > U64_MAX - woff ? U64_MAX : woff + wlen;
	u32 j;

	for (j = 0; j < i; j++)
		pos += sg->e[j].len;
	for (; i < sg->n && pos < wend; pos += sg->e[i++].len) {
		struct srnic_sge_ref *e = &sg->e[i];
		u64 from = max(pos, woff), to = min(pos + e->len, wend);

		if (!e->mr->odp || from >= to ||
		    !srnic_odp_check(e->mr, e->iova + (from - pos), to - from,
				     write))
			continue;
		kref_get(&e->mr->ref);
		sg->fault = (struct srnic_fault){
			.mr = e->mr, .iova = e->iova + (from - pos),
			.len = to - from, .write = write,
		};
		srnic_sg_release(sg);
		return -EAGAIN;
	}
	return 0;
}

/*
 * Resolves user SGEs (already copied into kernel memory).  Zero-length
 * entries are skipped without a key check, as real NICs do.  Returns
 * -EACCES for a key/PD/access/bounds violation, -EMSGSIZE if the total
 * exceeds the largest message, -EAGAIN for an ODP page fault (@sg->fault).
 * @cache: the QP's cache for the keys (NULL: none).
 */
int srnic_sg_resolve(struct srnic_dev *sdev, struct srnic_pd *pd,
		     const struct srnic_wqe_data *sge, u32 n, int access,
		     struct srnic_sg *sg, struct srnic_mr_cache *cache)
{
	return srnic_sg_resolve_window(sdev, pd, sge, n, access, sg, cache, 0,
				       U64_MAX);
}

/*
 * srnic_sg_resolve(), with ODP pages checked only in the bytes [@woff,
 * @woff + @wlen) of the list: those a piece of a message moves.
 */
int srnic_sg_resolve_window(struct srnic_dev *sdev, struct srnic_pd *pd,
			    const struct srnic_wqe_data *sge, u32 n,
			    int access, struct srnic_sg *sg,
			    struct srnic_mr_cache *cache, u64 woff, u64 wlen)
{
	u32 i;

	srnic_sg_init(sg, NULL, 0);
	for (i = 0; i < n; i++) {
		struct srnic_mr *mr;
		u32 len = sge[i].length;
		bool borrowed;

		if (!len)
			continue;
		if (sg->total + len > SRNIC_MAX_MSG_SIZE) {
			srnic_sg_release(sg);
			return -EMSGSIZE;
		}
		/* The local_dma_lkey: kernel PDs, local access, no bounds. */
		if (unlikely(sge[i].lkey == SRNIC_LOCAL_DMA_LKEY) &&
		    !pd->ibpd.uobject && !(access & ~IB_ACCESS_LOCAL_WRITE)) {
			sg->e[sg->n++] = (struct srnic_sge_ref){
				.mr = &sdev->dma_mr, .borrowed = true,
				.iova = sge[i].addr, .len = len,
			};
			sg->total += len;
			continue;
		}
		mr = srnic_mr_get_cached(sdev, sge[i].lkey, cache, &borrowed);
		if (!mr || srnic_mr_check(mr, pd, access, sge[i].addr, len)) {
			if (mr && !borrowed)
				srnic_mr_put(mr);
			srnic_sg_release(sg);
			return -EACCES;
		}
		sg->e[sg->n++] = (struct srnic_sge_ref){
			.mr = mr, .borrowed = borrowed, .iova = sge[i].addr,
			.len = len,
		};
		sg->total += len;
	}
	for (i = 0; i < sg->n; i++)
		if (sg->e[i].mr->odp)
			return srnic_sg_odp_fault(sg, i,
						  access & IB_ACCESS_LOCAL_WRITE,
						  woff, wlen);
	return 0;
}

/* srnic_sg_ptr() in a received packet: out of line, the rarer case. */
static noinline u8 *srnic_sg_skb_ptr(const struct srnic_sg *sg, u64 off,
				     size_t *contig)
{
	u8 *p = (u8 *)srnic_skb_ptr(sg->skb, sg->skb_off + off, contig);

	*contig = min_t(u64, *contig, sg->total - off);
	return p;
}

/*
 * Kernel address of byte @off of @sg, and how many bytes follow
 * contiguously.  Inlined into the copies, the packet's case apart: the
 * skb case had made gcc call this for every piece of every copy.
 */
static __always_inline u8 *srnic_sg_ptr(const struct srnic_sg *sg, u64 off,
					size_t *contig)
{
	u32 i;
	u8 *p;

	if (sg->kbuf) {
		*contig = sg->total - off;
		return sg->kbuf + off;
	}
	if (unlikely(sg->skb))
		return srnic_sg_skb_ptr(sg, off, contig);
	for (i = 0; i < sg->n && off >= sg->e[i].len; i++)
		off -= sg->e[i].len;
	if (WARN_ON_ONCE(i == sg->n))
		return NULL;
	p = srnic_mr_kva(sg->e[i].mr, sg->e[i].iova + off, contig);
	*contig = min_t(u64, *contig, sg->e[i].len - off);
	return p;
}

/* Copies @len bytes; both lists were resolved and hold at least that much. */
void srnic_sg_copy(const struct srnic_sg *dst, u64 doff,
		   const struct srnic_sg *src, u64 soff, u64 len)
{
	size_t since_resched = 0;

	while (len) {
		size_t dc, sc, c;
		u8 *d = srnic_sg_ptr(dst, doff, &dc);
		u8 *s = srnic_sg_ptr(src, soff, &sc);

		if (!d || !s || !dc || !sc)
			return;
		c = min3((size_t)len, dc, sc);
		memcpy(d, s, c);
		doff += c;
		soff += c;
		len -= c;
		/* Large messages: let others run every megabyte or so. */
		since_resched += c;
		if (len && since_resched >= SZ_1M) {
			since_resched = 0;
			cond_resched();
		}
	}
}

/*
 * Writes @len bytes of kernel memory at offset @doff of @dst (a short
 * result: an atomic's original value).  Not through srnic_sg_copy(): a
 * source list on the stack would be zeroed whole (~0.8 KiB) on each call.
 */
void srnic_sg_write(const struct srnic_sg *dst, u64 doff, const void *buf,
		    u64 len)
{
	while (len) {
		size_t c;
		u8 *d = srnic_sg_ptr(dst, doff, &c);

		if (!d || !c)
			return;
		c = min_t(u64, c, len);
		memcpy(d, buf, c);
		buf += c;
		doff += c;
		len -= c;
	}
}

/* Reads @len bytes at offset @soff of @src into kernel memory (a packet). */
void srnic_sg_read(const struct srnic_sg *src, u64 soff, void *buf, u64 len)
{
	while (len) {
		size_t c;
		const u8 *s = srnic_sg_ptr(src, soff, &c);

		if (!s || !c)
			return;
		c = min_t(u64, c, len);
		memcpy(buf, s, c);
		buf += c;
		soff += c;
		len -= c;
	}
}

/*
 * An atomic's original value into @dst (8 bytes, resolved): one store when
 * they are contiguous, which they are unless the buffer straddles a page.
 */
void srnic_sg_put_u64(const struct srnic_sg *dst, u64 val)
{
	size_t c;
	u8 *d = srnic_sg_ptr(dst, 0, &c);

	if (d && c >= sizeof(val))
		put_unaligned(val, (u64 *)d);
	else
		srnic_sg_write(dst, 0, &val, sizeof(val));
}

/*
 * The pages under @len bytes at @soff of @src, for zero-copy transmit:
 * pieces each within one page that the network stack may hold a reference
 * to (pinned user memory, the page cache, pages a kernel ULP allocated;
 * not slab, vmalloc or inline data: sendpage_ok()), at most @max of them.
 * Their number, or 0 when the bytes are not all in such pages or need more
 * pieces: then the caller copies them.
 */
u32 srnic_sg_pages(const struct srnic_sg *src, u64 soff, u32 len,
		   struct srnic_page_ref *f, u32 max)
{
	u32 n = 0;

	if (src->kbuf || src->skb)
		return 0;
	while (len) {
		size_t c;
		u8 *s = srnic_sg_ptr(src, soff, &c);
		struct page *pg;

		if (!s || !c || n == max || !virt_addr_valid(s))
			return 0;
		pg = virt_to_page(s);
		if (!sendpage_ok(pg))
			return 0;
		c = min3(c, (size_t)len, PAGE_SIZE - offset_in_page(s));
		f[n++] = (struct srnic_page_ref){
			.page = pg, .kva = s, .off = offset_in_page(s), .len = c,
		};
		soff += c;
		len -= c;
	}
	return n;
}
