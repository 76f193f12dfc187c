// SPDX-License-Identifier: BSD-2-Clause
/* swtrace.c - the hwt-sw record format: chunk headers and step records.
 * Layout and rationale: docs/swtrace.md. */
#include <errno.h>
#include <string.h>

#include "hwt-common.h"

void hwt_sw_chunk_hdr_pack(const struct hwt_sw_chunk_hdr *hdr,
			   uint8_t out[HWT_SW_CHUNK_HDR_SIZE])
{
	memcpy(out, HWT_SW_CHUNK_MAGIC, 4);
	hwt_put_le32(out + 4, hdr->payload_size);
	hwt_put_le64(out + 8, hdr->first_pc);
	hwt_put_le64(out + 16, hdr->first_seq);
	hwt_put_le64(out + 24, hdr->last_pc);
	hwt_put_le32(out + 32, hdr->insn_count);
	hwt_put_le32(out + 36, hdr->flags);
}

int hwt_sw_chunk_hdr_unpack(const uint8_t *in, size_t avail,
			    struct hwt_sw_chunk_hdr *hdr, struct hwt_err *err)
{
	return hwt_sw_chunk_hdr_unpack_flags(in, avail, 0, hdr, err);
}

int hwt_sw_chunk_hdr_unpack_flags(const uint8_t *in, size_t avail,
				  uint32_t known,
				  struct hwt_sw_chunk_hdr *hdr,
				  struct hwt_err *err)
{
	if (avail < HWT_SW_CHUNK_HDR_SIZE)
		return hwt_err_set(err, EBADMSG,
				   "truncated chunk header (%zu of %u bytes)",
				   avail, HWT_SW_CHUNK_HDR_SIZE);
	if (memcmp(in, HWT_SW_CHUNK_MAGIC, 4) != 0)
		return hwt_err_set(err, EBADMSG, "bad chunk magic");
	hdr->payload_size = hwt_get_le32(in + 4);
	hdr->first_pc = hwt_get_le64(in + 8);
	hdr->first_seq = hwt_get_le64(in + 16);
	hdr->last_pc = hwt_get_le64(in + 24);
	hdr->insn_count = hwt_get_le32(in + 32);
	hdr->flags = hwt_get_le32(in + 36);
	if (hdr->payload_size <= HWT_SW_MAX_CHUNK_PAYLOAD &&
	    hdr->payload_size > avail - HWT_SW_CHUNK_HDR_SIZE)
		return hwt_err_set(err, EBADMSG,
				   "chunk payload of %u bytes runs past the end "
				   "of the trace (%zu bytes left)",
				   hdr->payload_size,
				   avail - HWT_SW_CHUNK_HDR_SIZE);
	return hwt_sw_chunk_hdr_check(hdr, known, err);
}

int hwt_sw_chunk_hdr_check(const struct hwt_sw_chunk_hdr *hdr, uint32_t known,
			   struct hwt_err *err)
{
	if (hdr->payload_size > HWT_SW_MAX_CHUNK_PAYLOAD)
		return hwt_err_set(err, EBADMSG,
				   "chunk payload size %u exceeds the %u limit",
				   hdr->payload_size, HWT_SW_MAX_CHUNK_PAYLOAD);
	/* A table holds no instruction; a run's item stands for up to a
	 * superblock's instructions; a step record for one. */
	if ((hdr->flags & (HWT_SW_CHUNK_TABLE | HWT_SW_CHUNK_CUTS)) ?
	    hdr->insn_count != 0 || ((hdr->flags & HWT_SW_CHUNK_CUTS) &&
				     hdr->payload_size % HWT_SW_CUT_BYTES) :
	    hdr->insn_count == 0 ||
	    hdr->insn_count - 1 > (uint64_t)hdr->payload_size *
	    ((hdr->flags & HWT_SW_CHUNK_RUNS) ? HWT_SW_TR_MAX_INSNS : 1))
		return hwt_err_set(err, EBADMSG,
				   "chunk claims %u instructions in %u bytes",
				   hdr->insn_count, hdr->payload_size);
	if (hdr->flags & ~known & HWT_SW_CHUNK_BRANCHES)
		return hwt_err_set(err, EBADMSG, "chunk of branch records "
				   "(flags 0x%x, block-step): read it with the "
				   "replay engine (hwt_history_open), which "
				   "expands them with the program image",
				   hdr->flags);
	if (hdr->flags & ~known)
		return hwt_err_set(err, EBADMSG, "unknown chunk flags 0x%x",
				   hdr->flags);
	if ((hdr->flags & HWT_SW_CHUNK_ASYNC) &&
	    !(hdr->flags & HWT_SW_CHUNK_BRANCHES))
		return hwt_err_set(err, EBADMSG, "chunk flags 0x%x: async "
				   "without branches", hdr->flags);
	if (hdr->flags & (HWT_SW_CHUNK_TABLE | HWT_SW_CHUNK_RUNS |
			  HWT_SW_CHUNK_CUTS) &&
	    (hdr->flags & ~(HWT_SW_CHUNK_RUNS | HWT_SW_CHUNK_PREV)) &&
	    hdr->flags != HWT_SW_CHUNK_TABLE && hdr->flags != HWT_SW_CHUNK_CUTS)
		return hwt_err_set(err, EBADMSG, "chunk flags 0x%x: a table, "
				   "runs or restart points with other kinds",
				   hdr->flags);
	if ((hdr->flags & HWT_SW_CHUNK_PREV) &&
	    !(hdr->flags & HWT_SW_CHUNK_RUNS))
		return hwt_err_set(err, EBADMSG, "chunk flags 0x%x: a "
				   "previous instruction without runs",
				   hdr->flags);
	return 0;
}

size_t hwt_sw_encode_step(uint64_t pc, uint64_t next, bool async,
			  uint8_t *out)
{
	int64_t delta = (int64_t)(next - pc);
	size_t n = 0, len;

	if (async)
		out[n++] = HWT_SW_TAG_ASYNC;
	if (!async && delta >= 1 && delta <= HWT_SW_TAG_STEP_MAX) {
		out[n++] = (uint8_t)delta;
		return n;
	}
	/* Smallest little-endian two's complement width that holds delta. */
	for (len = 1; len < 8; len++) {
		int64_t lim = (int64_t)1 << (8 * len - 1);

		if (delta >= -lim && delta < lim)
			break;
	}
	out[n++] = (uint8_t)(HWT_SW_TAG_JUMP_BASE + len);
	for (size_t i = 0; i < len; i++)
		out[n++] = (uint8_t)((uint64_t)delta >> (8 * i));
	return n;
}

void hwt_sw_reader_init(struct hwt_sw_reader *r, const uint8_t *payload,
			size_t size, uint64_t first_pc)
{
	r->p = payload;
	r->end = payload + size;
	r->pc = first_pc;
}

int hwt_sw_reader_next(struct hwt_sw_reader *r, bool *async,
		       struct hwt_err *err)
{
	const uint8_t *start = r->p;
	uint8_t tag;

	*async = false;
	if (r->p == r->end)
		return HWT_SW_END;
	tag = *r->p;
	if (tag == HWT_SW_TAG_ASYNC) {
		*async = true;
		if (++r->p == r->end)
			goto truncated;
		tag = *r->p;
	}
	if (tag >= 1 && tag <= HWT_SW_TAG_STEP_MAX && !*async) {
		r->p++;
		r->pc += tag;
		return HWT_SW_NEXT;
	}
	if (tag > HWT_SW_TAG_JUMP_BASE && tag <= HWT_SW_TAG_JUMP_BASE + 8) {
		size_t len = tag - HWT_SW_TAG_JUMP_BASE;
		uint64_t delta = 0;

		if ((size_t)(r->end - r->p) < len + 1)
			goto truncated;
		for (size_t i = 0; i < len; i++)
			delta |= (uint64_t)r->p[1 + i] << (8 * i);
		if (len < 8 && (delta >> (8 * len - 1)) & 1)
			delta |= ~(uint64_t)0 << (8 * len);
		r->p += len + 1;
		r->pc += delta;
		return HWT_SW_NEXT;
	}
	return hwt_err_set(err, EBADMSG, "bad record tag 0x%02x", tag);
truncated:
	r->p = start;
	return hwt_err_set(err, EBADMSG, "record truncated at end of chunk");
}
