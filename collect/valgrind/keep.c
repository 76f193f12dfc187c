// SPDX-License-Identifier: BSD-2-Clause
/* keep.c - a thread's log of runs as TABLE and RUNS chunks (keep.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "valgrind/keep.h"

/* The translations the items name, as a bitmap; false when an item is
 * not whole or names one that does not exist (the reader wrote and
 * checked each as it logged it: never). */
static bool mark_named(struct hwt_vg_log_chunk *const *v, size_t n,
		       uint32_t ntr, uint64_t *named)
{
	for (size_t i = 0; i < n; i++) {
		const struct hwt_vg_log_chunk *c = v[i];
		const uint8_t *p = c->items, *end = c->items + c->used;
		bool count_next = false;

		while (p < end) {
			uint64_t item;

			if (hwt_get_uleb128(&p, end, &item) != 1)
				return false;
			if (count_next) {
				count_next = false;
				continue;
			}
			if ((item & 3) == HWT_SW_RUNS_EXEC) {
				if (item >> 2 >= ntr)
					return false;
				named[item >> 8] |= 1ull << (item >> 2 & 63);
			} else if ((item & 3) == HWT_SW_RUNS_MARK &&
				   item >> 2 == HWT_SW_RUNS_TRUNC) {
				count_next = true;
			}
		}
	}
	return true;
}

/* A chunk header at out->n, its payload to follow; the header's offset. */
static int begin_chunk(struct hwt_bytes *out, size_t *at)
{
	*at = out->n;
	return hwt_bytes_put(out, NULL, HWT_SW_CHUNK_HDR_SIZE);
}

static void end_chunk(struct hwt_bytes *out, size_t at,
		      struct hwt_sw_chunk_hdr *h)
{
	h->payload_size = (uint32_t)(out->n - at - HWT_SW_CHUNK_HDR_SIZE);
	hwt_sw_chunk_hdr_pack(h, out->p + at);
}

/* The named translations, in TABLE chunks of at most the payload limit. */
static int put_table(const struct hwt_vg_keep_in *in, const uint64_t *named,
		     uint64_t seq, struct hwt_bytes *out)
{
	struct hwt_sw_chunk_hdr h = { .first_seq = seq,
				      .flags = HWT_SW_CHUNK_TABLE };
	size_t at = 0;
	bool open = false;

	for (uint32_t id = 0; id < in->ntr; id++) {
		const struct hwt_sw_tr *tr;
		size_t max;

		if (!(named[id / 64] >> (id % 64) & 1))
			continue;
		tr = in->tr_of(in->ctx, id);
		max = hwt_sw_tr_encoded_max(tr);
		if (open && out->n - at - HWT_SW_CHUNK_HDR_SIZE + max >
		    HWT_SW_MAX_CHUNK_PAYLOAD) {
			end_chunk(out, at, &h);
			open = false;
		}
		if (!open && begin_chunk(out, &at))
			return -ENOMEM;
		open = true;
		if (hwt_bytes_put(out, NULL, max))
			return -ENOMEM;
		out->n -= max;
		out->n += hwt_sw_tr_encode(id, tr, out->p + out->n);
	}
	if (open)
		end_chunk(out, at, &h);
	return 0;
}

/* Room in out for all that is appended and in->spare: made at once, as
 * a window's runs are tens of megabytes that doubling would copy again
 * and again, in memory the kernel may back with huge pages (a fault per
 * 4 KiB of them cost as much as the copy on a virtual machine). */
static int reserve(struct hwt_vg_log_chunk *const *v, size_t n,
		   const struct hwt_vg_keep_in *in, const uint64_t *named,
		   struct hwt_bytes *out)
{
	size_t need = in->spare, chunk_max = HWT_SW_MAX_CHUNK_PAYLOAD;
	size_t before = out->cap;

	for (uint32_t id = 0; id < in->ntr; id++)
		if (named[id / 64] >> (id % 64) & 1)
			need += hwt_sw_tr_encoded_max(in->tr_of(in->ctx, id));
	need += (need / chunk_max + 1) * HWT_SW_CHUNK_HDR_SIZE;
	for (size_t i = 0; i < n; i++)
		need += 2 * HWT_SW_CHUNK_HDR_SIZE + v[i]->used +
			(size_t)v[i]->ncuts * HWT_SW_CUT_BYTES;
	if (need > SIZE_MAX - out->n ||
	    HWT_ARRAY_RESERVE(out->p, out->cap, out->n + need, 4096))
		return -ENOMEM;
	if (out->cap != before)
		hwt_advise_huge(out->p + out->n, out->cap - out->n);
	return 0;
}

/* c's restart points as the CUTS chunk before it. */
static int put_cuts(const struct hwt_vg_log_chunk *c, uint64_t seq,
		    struct hwt_bytes *out)
{
	struct hwt_sw_chunk_hdr h = { .first_seq = seq,
				      .flags = HWT_SW_CHUNK_CUTS };
	size_t at;

	if (begin_chunk(out, &at))
		return -ENOMEM;
	for (uint32_t k = 0; k < c->ncuts; k++) {
		uint8_t cut[HWT_SW_CUT_BYTES];

		hwt_put_le32(cut, c->cuts[k].off);
		hwt_put_le32(cut + 4, c->cuts[k].insns);
		hwt_put_le64(cut + 8, c->cuts[k].pc);
		if (hwt_bytes_put(out, cut, sizeof(cut)))
			return -ENOMEM;
	}
	end_chunk(out, at, &h);
	return 0;
}

int hwt_vg_keep_chunks(struct hwt_vg_log_chunk *const *v, size_t n,
		       const struct hwt_vg_keep_in *in, struct hwt_bytes *out,
		       struct hwt_err *err)
{
	size_t mark = out->n, words = in->ntr / 64 + 1;
	uint64_t *named, seq = in->first_seq;

	for (size_t i = 0; i < n; i++)
		if (v[i]->used > HWT_SW_MAX_CHUNK_PAYLOAD ||
		    v[i]->insns > UINT32_MAX)
			return hwt_err_set(err, E2BIG, "a log chunk of %u "
					   "bytes is past a RUNS chunk's "
					   "bounds", v[i]->used);
	if (!n)
		return 0;
	if (!(named = calloc(words, sizeof(*named))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (!mark_named(v, n, in->ntr, named)) {
		free(named);
		return hwt_err_set(err, EPROTO, "a logged run of no "
				   "translation");
	}
	if (reserve(v, n, in, named, out) || put_table(in, named, seq, out)) {
		free(named);
		out->n = mark;
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	free(named);
	/* Each chunk's last instruction is the next one's prev_pc, the
	 * last chunk's the caller's. */
	for (size_t i = 0; i < n; i++) {
		const struct hwt_vg_log_chunk *c = v[i];
		struct hwt_sw_chunk_hdr h = {
			.first_pc = c->prev_pc, .first_seq = seq,
			.last_pc = i + 1 < n ? v[i + 1]->prev_pc : in->last_pc,
			.insn_count = (uint32_t)c->insns,
			.flags = HWT_SW_CHUNK_RUNS |
				(c->prev_known ? HWT_SW_CHUNK_PREV : 0),
		};
		size_t at;

		if (c->insns) {
			if ((c->ncuts && c->ncuts <= HWT_SW_MAX_CHUNK_PAYLOAD /
			     HWT_SW_CUT_BYTES && put_cuts(c, seq, out)) ||
			    begin_chunk(out, &at) ||
			    hwt_bytes_put(out, c->items, c->used)) {
				out->n = mark;
				return hwt_err_set(err, ENOMEM, "out of memory");
			}
			end_chunk(out, at, &h);
		}
		seq += c->insns;
	}
	return 0;
}

int hwt_vg_keep_log(struct hwt_vg_runlog *l, const struct hwt_vg_keep_in *in,
		    struct hwt_bytes *out, struct hwt_err *err)
{
	struct hwt_vg_log_chunk **v = malloc((l->nchunks ? l->nchunks : 1) *
					     sizeof(*v));
	int rc;

	if (!v)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < l->nchunks; i++)
		v[i] = hwt_vg_log_chunk(l, i);
	rc = hwt_vg_keep_chunks(v, l->nchunks, in, out, err);
	free(v);
	if (rc)
		return rc;
	while (l->nchunks)
		hwt_vg_log_release_oldest(l);
	return 0;
}

/* The chunk at off of a group this file wrote: its flags and length. */
static void chunk_at(const struct hwt_bytes *kept, size_t off,
		     uint32_t *flags, size_t *len, uint32_t *insns)
{
	const uint8_t *h = kept->p + off;

	*len = HWT_SW_CHUNK_HDR_SIZE + hwt_get_le32(h + 4);
	*insns = hwt_get_le32(h + 32);
	*flags = hwt_get_le32(h + 36);
}

uint64_t hwt_vg_kept_weight(const struct hwt_bytes *kept)
{
	uint64_t w = 0;
	uint32_t flags, insns;
	size_t len;

	for (size_t off = 0; off + HWT_SW_CHUNK_HDR_SIZE <= kept->n;
	     off += len) {
		chunk_at(kept, off, &flags, &len, &insns);
		w += flags & HWT_SW_CHUNK_RUNS ?
			hwt_vg_log_weight_of(insns, len -
					     HWT_SW_CHUNK_HDR_SIZE) : len;
	}
	return w;
}

void hwt_vg_kept_drop_oldest(struct hwt_bytes *kept, uint64_t want,
			     struct hwt_vg_kept_drop *out)
{
	size_t table = 0, off, len;
	uint32_t flags, insns;
	bool cuts = false;

	*out = (struct hwt_vg_kept_drop){ 0 };
	for (; table + HWT_SW_CHUNK_HDR_SIZE <= kept->n; table += len) {
		chunk_at(kept, table, &flags, &len, &insns);
		if (!(flags & HWT_SW_CHUNK_TABLE))
			break;
	}
	/* A CUTS chunk goes with the RUNS chunk after it. */
	for (off = table; off + HWT_SW_CHUNK_HDR_SIZE <= kept->n &&
	     (out->weight < want || cuts); off += len) {
		chunk_at(kept, off, &flags, &len, &insns);
		cuts = flags & HWT_SW_CHUNK_CUTS;
		if (!(flags & HWT_SW_CHUNK_RUNS)) {
			out->weight += len;
			continue;
		}
		out->weight += hwt_vg_log_weight_of(insns, len -
						    HWT_SW_CHUNK_HDR_SIZE);
		out->insns += insns;
		out->bytes += len - HWT_SW_CHUNK_HDR_SIZE;
	}
	if (off + HWT_SW_CHUNK_HDR_SIZE > kept->n) {
		out->weight += table;
		hwt_bytes_free(kept);
		return;
	}
	memmove(kept->p + table, kept->p + off, kept->n - off);
	kept->n -= off - table;
	/* Dropped a piece at a time as the window is shared anew: memory
	 * goes back once a quarter more than what is left is held. */
	if (kept->cap - kept->n > kept->n / 4) {
		uint8_t *smaller = realloc(kept->p, kept->n);

		if (smaller) {
			kept->p = smaller;
			kept->cap = kept->n;
		}
	}
}
