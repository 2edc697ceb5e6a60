// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * debugfs: /sys/kernel/debug/srnic/<device>/
 *   pinned_pages	pages pinned for user memory (MRs, rings, records)
 *   mkeys		one line per MR
 *   mtt		per MR: its mkeys line, then one line per MTT block
 *
 * The MR files hold a reference on the MR being printed, never across
 * read() calls, so deregistration waits at most for one buffer's worth of
 * output.  Block addresses are shown as PFNs: kernel virtual addresses
 * would give away the kernel's layout.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "srnic_loc.h"

static struct dentry *srnic_debugfs_root;

void srnic_debugfs_init(void)
{
	srnic_debugfs_root = debugfs_create_dir(SRNIC_DRV_NAME, NULL);
}

void srnic_debugfs_cleanup(void)
{
	debugfs_remove_recursive(srnic_debugfs_root);
}

static int srnic_pinned_show(struct seq_file *s, void *unused)
{
	struct srnic_dev *sdev = s->private;

	/* What deregistered MRs still hold is on its way back: count it out. */
	srnic_mr_flush_released(sdev);
	seq_printf(s, "%lld\n", (long long)atomic64_read(&sdev->pinned_pages));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(srnic_pinned);

/* Iterator of the mkeys and mtt files: the MR being shown, referenced. */
struct srnic_mr_iter {
	struct srnic_dev *sdev;
	struct srnic_mr *mr;
	u32 line;		/* mtt: 0 for the MR's line, then 1 + block */
};

static void srnic_mr_iter_put(struct srnic_mr_iter *it)
{
	if (it->mr)
		srnic_mr_put(it->mr);
	it->mr = NULL;
}

static void srnic_show_mr(struct seq_file *s, const struct srnic_mr *mr)
{
	seq_printf(s,
		   "index %u key 0x%02x lkey 0x%08x pdn %u access 0x%x iova 0x%llx length %llu page_size %lu blocks %lu pages %lu\n",
		   mr->index, mr->ibmr.lkey & SRNIC_MKEY_KEY_MASK,
		   mr->ibmr.lkey, mr->pd->pdn, mr->access, mr->iova,
		   mr->length, 1UL << mr->mtt.page_shift, mr->mtt.nblocks,
		   mr->mtt.npages);
}

/*
 * mkeys: position 0 is the header line, position N > 0 the first MR at an
 * index >= N (positions jump over free indices).
 */
static void *srnic_mkeys_start(struct seq_file *s, loff_t *pos)
{
	struct srnic_mr_iter *it = s->private;
	u32 index;

	if (!*pos)
		return SEQ_START_TOKEN;
	if (*pos > SRNIC_MAX_MR)
		return NULL;
	index = *pos;
	it->mr = srnic_mr_get_next(it->sdev, &index);
	if (!it->mr)
		return NULL;
	*pos = index;
	return it->mr;
}

static void *srnic_mkeys_next(struct seq_file *s, void *v, loff_t *pos)
{
	struct srnic_mr_iter *it = s->private;
	u32 index = v == SEQ_START_TOKEN ? 1 : it->mr->index + 1;

	srnic_mr_iter_put(it);
	it->mr = srnic_mr_get_next(it->sdev, &index);
	*pos = it->mr ? index : SRNIC_MAX_MR + 1;
	return it->mr;
}

static void srnic_mkeys_stop(struct seq_file *s, void *v)
{
	srnic_mr_iter_put(s->private);
}

static int srnic_mkeys_show(struct seq_file *s, void *v)
{
	if (v == SEQ_START_TOKEN)
		seq_puts(s, "# index key lkey pdn access iova length page_size blocks pages\n");
	else
		srnic_show_mr(s, v);
	return 0;
}

static const struct seq_operations srnic_mkeys_sops = {
	.start = srnic_mkeys_start,
	.next = srnic_mkeys_next,
	.stop = srnic_mkeys_stop,
	.show = srnic_mkeys_show,
};

/* mtt: position (index << 32) | line, so a read can resume mid-MR. */
#define SRNIC_MTT_POS(index, line)	(((loff_t)(index) << 32) | (line))

static void *srnic_mtt_start(struct seq_file *s, loff_t *pos)
{
	struct srnic_mr_iter *it = s->private;
	u32 want = *pos >> 32, index = max(want, 1U);

	if (*pos < 0 || want > SRNIC_MAX_MR)
		return NULL;
	it->line = index == want ? (u32)*pos : 0;
	it->mr = srnic_mr_get_next(it->sdev, &index);
	if (it->mr && (index != want || it->line > it->mr->mtt.nblocks)) {
		/* Another MR than the one left off at (or it shrank). */
		if (index == want) {
			srnic_mr_iter_put(it);
			index++;
			it->mr = srnic_mr_get_next(it->sdev, &index);
		}
		it->line = 0;
	}
	if (!it->mr)
		return NULL;
	*pos = SRNIC_MTT_POS(index, it->line);
	return it;
}

static void *srnic_mtt_next(struct seq_file *s, void *v, loff_t *pos)
{
	struct srnic_mr_iter *it = s->private;
	u32 index = it->mr->index;

	if (++it->line > it->mr->mtt.nblocks) {
		srnic_mr_iter_put(it);
		index++;
		it->mr = srnic_mr_get_next(it->sdev, &index);
		it->line = 0;
	}
	*pos = it->mr ? SRNIC_MTT_POS(index, it->line) :
			SRNIC_MTT_POS(SRNIC_MAX_MR + 1, 0);
	return it->mr ? it : NULL;
}

static int srnic_mtt_show(struct seq_file *s, void *v)
{
	struct srnic_mr_iter *it = v;
	const struct srnic_mtt *mtt = &it->mr->mtt;
	unsigned long block;

	if (!it->line) {
		srnic_show_mr(s, it->mr);
		return 0;
	}
	block = it->line - 1;
	seq_printf(s, "  block %lu pfn 0x%lx\n", block,
		   (unsigned long)page_to_pfn(virt_to_page(mtt->blocks[block])));
	return 0;
}

static const struct seq_operations srnic_mtt_sops = {
	.start = srnic_mtt_start,
	.next = srnic_mtt_next,
	.stop = srnic_mkeys_stop,
	.show = srnic_mtt_show,
};

static int srnic_mr_file_open(struct inode *inode, struct file *file,
			      const struct seq_operations *sops)
{
	struct srnic_mr_iter *it;

	it = __seq_open_private(file, sops, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->sdev = inode->i_private;
	return 0;
}

static int srnic_mkeys_open(struct inode *inode, struct file *file)
{
	return srnic_mr_file_open(inode, file, &srnic_mkeys_sops);
}

static int srnic_mtt_open(struct inode *inode, struct file *file)
{
	return srnic_mr_file_open(inode, file, &srnic_mtt_sops);
}

static const struct file_operations srnic_mkeys_fops = {
	.owner = THIS_MODULE,
	.open = srnic_mkeys_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release_private,
};

static const struct file_operations srnic_mtt_fops = {
	.owner = THIS_MODULE,
	.open = srnic_mtt_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release_private,
};

/* "odp": the on-demand paging counters, one "name value" per line. */
static int srnic_odp_show(struct seq_file *s, void *unused)
{
	struct srnic_odp_stats *st = &((struct srnic_dev *)s->private)->odp_stats;

	seq_printf(s, "page_faults %lld\npages_faulted %lld\n"
		   "invalidations %lld\npages_invalidated %lld\n"
		   "prefetches %lld\npages_prefetched %lld\n"
		   "implicit_children %lld\nbusy_retries %lld\n",
		   atomic64_read(&st->page_faults),
		   atomic64_read(&st->pages_faulted),
		   atomic64_read(&st->invalidations),
		   atomic64_read(&st->pages_invalidated),
		   atomic64_read(&st->prefetches),
		   atomic64_read(&st->pages_prefetched),
		   atomic64_read(&st->children),
		   atomic64_read(&st->busy_retries));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(srnic_odp);

/* debugfs "cq_events": completion events raised on each CPU ("cpu N events M"). */
static int srnic_cq_events_show(struct seq_file *s, void *unused)
{
	struct srnic_dev *sdev = s->private;
	int cpu;

	for_each_possible_cpu(cpu)
		seq_printf(s, "cpu %d events %llu\n", cpu,
			   *per_cpu_ptr(sdev->cq_events, cpu));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(srnic_cq_events);

void srnic_debugfs_add_dev(struct srnic_dev *sdev, const char *name)
{
	sdev->debugfs = debugfs_create_dir(name, srnic_debugfs_root);
	debugfs_create_file("pinned_pages", 0400, sdev->debugfs, sdev,
			    &srnic_pinned_fops);
	debugfs_create_file("mkeys", 0400, sdev->debugfs, sdev,
			    &srnic_mkeys_fops);
	debugfs_create_file("mtt", 0400, sdev->debugfs, sdev,
			    &srnic_mtt_fops);
	debugfs_create_file("odp", 0400, sdev->debugfs, sdev,
			    &srnic_odp_fops);
	debugfs_create_file("cq_events", 0400, sdev->debugfs, sdev,
			    &srnic_cq_events_fops);
	srnic_fault_debugfs(sdev);
}

void srnic_debugfs_remove_dev(struct srnic_dev *sdev)
{
	debugfs_remove_recursive(sdev->debugfs);
	sdev->debugfs = NULL;
}
