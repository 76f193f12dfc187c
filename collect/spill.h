/* SPDX-License-Identifier: BSD-2-Clause */
/* spill.h - one thread's whole history on disk (hwtrace record --whole).
 *
 * A thread's ring keeps its newest history in memory; with a spill, the
 * chunks it would drop go to a file instead, compressed into the frames
 * a bundle stores (common/sw_pack.c), so memory stays the ring's however
 * long the program runs. Past the spill's bound the oldest frames are
 * forgotten (their disk space given back): the newest history is kept,
 * never the oldest. Writing the bundle copies the file's kept frames and
 * packs the ring's chunks after them, with one index for all.
 */
#ifndef HWT_SPILL_H
#define HWT_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hwt-common.h"

struct hwt_sw_spill;

/* A spill file for thread tid in dir, keeping at most bound bytes of
 * compressed history (at least two frames' worth); compressing with
 * work, shared by the recording's spills (NULL: its own). exec tells
 * apart the histories of a thread that exec'd. */
int hwt_sw_spill_new(const char *dir, pid_t tid, uint32_t exec, uint64_t bound,
		     struct hwt_sw_pack_work *work, struct hwt_sw_spill **out,
		     struct hwt_err *err);
/* The name of the index beside a compressed hwt-sw trace file
 * ("threads/T.hwtsw.zst": "threads/T.hwtsw.idx"), malloc'd; NULL out of
 * memory. */
char *hwt_sw_index_name(const char *trace_file);
/* Room for one chunk the ring is about to drop (header and payload). */
uint8_t *hwt_sw_spill_scratch(struct hwt_sw_spill *s);
/* The chunk in the scratch (n bytes) into the file. Never fails the
 * caller: the first error is kept (hwt_sw_spill_stage reports it) and
 * the chunk, like every later one, is counted as lost. */
void hwt_sw_spill_chunk(struct hwt_sw_spill *s, size_t n);
/* Chunks that read only together (g, n bytes: a TABLE chunk and the
 * runs that name it, valgrind/keep.h) into the file, a frame of their
 * own; the frame buffer and the translations it read are given back
 * after it (a recording of 64 threads held 64 of each). Never fails the
 * caller, as hwt_sw_spill_chunk. */
void hwt_sw_spill_group(struct hwt_sw_spill *s, const uint8_t *g, size_t n);
/* Nothing more will come for a while, or at all (the thread's stream
 * has ended): the frame being filled goes to the file and the memory
 * only adding needs is given back (hwt_sw_packer_rest). */
void hwt_sw_spill_rest(struct hwt_sw_spill *s);
/* Why the spill stopped keeping history (its file could not be
 * written), or NULL. */
const char *hwt_sw_spill_failure(const struct hwt_sw_spill *s);
/* Chunks the spill lost (its bound, or after an error) so far. */
void hwt_sw_spill_lost(const struct hwt_sw_spill *s, uint64_t *insns,
		       uint64_t *bytes);
/* The thread's trace into staging/rel (and its index into
 * staging/idx_rel): the spilled frames, then the chunks of the sealed
 * ring (sealed, n bytes); bt's sizes, encoding, index and losses are
 * filled in. Once per spill. */
int hwt_sw_spill_stage(struct hwt_sw_spill *s, const uint8_t *sealed,
		       size_t n, const char *staging,
		       struct hwt_bundle_thread *bt, struct hwt_err *err);
/* Close and remove the file. */
void hwt_sw_spill_free(struct hwt_sw_spill *s);

#endif
