// SPDX-License-Identifier: BSD-2-Clause
/* spill.c - one thread's whole history on disk (see spill.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spill.h"

/* One restart point in this many of the spilled history's: 24 bytes of
 * index every 64 K instructions instead of every 4 K (64 threads of a
 * billion instructions each held 370 MB of index). */
#define SPILL_CUT_EVERY 16u

struct hwt_sw_spill {
	char *path;
	int fd;
	uint64_t bound;
	struct hwt_sw_packer *packer;
	uint8_t *scratch;
	uint64_t punched;        /* file bytes given back so far */
	/* Lost: forgotten past the bound, or everything once failed. */
	uint64_t lost_insns, lost_bytes;
	/* The first error writing the file: from then on the spill keeps
	 * nothing (its history is counted lost, the ring's is kept). */
	struct hwt_err failed;
	bool staged;
};

static int write_frame(void *ctx, const uint8_t *p, size_t n,
		       struct hwt_err *err)
{
	struct hwt_sw_spill *s = ctx;

	while (n) {
		ssize_t w = write(s->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return hwt_err_set(err, w < 0 ? errno : EIO,
					   "writing the whole history to %s: "
					   "%s", s->path, w < 0 ?
					   strerror(errno) : "no progress");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

char *hwt_sw_index_name(const char *trace_file)
{
	size_t n = strlen(trace_file);
	char *name;

	if (n >= 4 && !strcmp(trace_file + n - 4, ".zst"))
		n -= 4;
	return asprintf(&name, "%.*s.idx", (int)n, trace_file) < 0 ? NULL :
		name;
}

int hwt_sw_spill_new(const char *dir, pid_t tid, uint32_t exec, uint64_t bound,
		     struct hwt_sw_pack_work *work, struct hwt_sw_spill **out,
		     struct hwt_err *err)
{
	struct hwt_sw_spill *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s || asprintf(&s->path, "%s/whole-%d.%u.zst", dir, (int)tid,
			   exec) < 0 ||
	    !(s->scratch = malloc(HWT_SW_CHUNK_HDR_SIZE +
				  HWT_SW_MAX_CHUNK_PAYLOAD))) {
		if (s)
			s->path = NULL;
		hwt_sw_spill_free(s);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (s->fd < 0) {
		rc = hwt_err_set(err, errno, "cannot create %s: %s", s->path,
				 strerror(errno));
		hwt_sw_spill_free(s);
		return rc;
	}
	/* Two frames at least: one kept whole while the next is written. */
	s->bound = bound > 2ull * HWT_SW_INDEX_FRAME_MAX ? bound :
		2ull * HWT_SW_INDEX_FRAME_MAX;
	if ((rc = hwt_sw_packer_new(write_frame, s, &s->packer, err))) {
		hwt_sw_spill_free(s);
		return rc;
	}
	if (work)
		hwt_sw_packer_share(s->packer, work);
	/* Its index stays in memory as long as the recording runs. */
	hwt_sw_packer_thin(s->packer, SPILL_CUT_EVERY);
	*out = s;
	return 0;
}

uint8_t *hwt_sw_spill_scratch(struct hwt_sw_spill *s)
{
	return s->scratch;
}

/* Give the forgotten frames' disk space back. A file system that cannot
 * punch holes keeps it until the file is removed: the history kept is
 * the same. */
static void punch(struct hwt_sw_spill *s)
{
	uint64_t from = hwt_sw_packer_kept_from(s->packer);

	if (from <= s->punched)
		return;
	fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)s->punched, (off_t)(from - s->punched));
	s->punched = from;
}

static void fail(struct hwt_sw_spill *s, const struct hwt_err *e)
{
	s->failed = *e;
	if (!s->failed.code)
		s->failed.code = EIO;
	/* Nothing spilled is kept: count it all. */
	hwt_sw_packer_forget(s->packer, 0, &s->lost_insns, &s->lost_bytes);
}

static void lose(struct hwt_sw_spill *s, const uint8_t *c, size_t n)
{
	struct hwt_sw_chunk_hdr h;

	if (!hwt_sw_chunk_hdr_unpack_flags(c, n, HWT_SW_CHUNK_RUNS_FLAGS, &h,
					   NULL))
		s->lost_insns += h.insn_count;
	s->lost_bytes += n;
}

/* Chunk c (n bytes) into the file; false when it is lost. */
static bool add(struct hwt_sw_spill *s, const uint8_t *c, size_t n)
{
	struct hwt_err e = { 0 };

	if (s->failed.code || s->staged) {
		lose(s, c, n);
		return false;
	}
	if (hwt_sw_packer_add(s->packer, c, n, &e)) {
		/* A chunk the ring wrote wrong is lost alone; a write
		 * that failed loses all. */
		if (e.code != EBADMSG)
			fail(s, &e);
		lose(s, c, n);
		return false;
	}
	return true;
}

void hwt_sw_spill_chunk(struct hwt_sw_spill *s, size_t n)
{
	add(s, s->scratch, n);
	hwt_sw_packer_forget(s->packer, s->bound, &s->lost_insns,
			     &s->lost_bytes);
	punch(s);
}

void hwt_sw_spill_group(struct hwt_sw_spill *s, const uint8_t *g, size_t n)
{
	struct hwt_err e = { 0 };
	size_t off = 0;

	/* Its own frame: forgetting the frame before never takes its
	 * table (hwt_sw_packer_forget). */
	if (!s->failed.code && !s->staged &&
	    hwt_sw_packer_flush(s->packer, &e))
		fail(s, &e);
	while (off < n) {
		struct hwt_sw_chunk_hdr h;
		size_t len;

		if (hwt_sw_chunk_hdr_unpack_flags(g + off, n - off,
						  HWT_SW_CHUNK_RUNS_FLAGS, &h,
						  NULL)) {
			s->lost_bytes += n - off;
			break;
		}
		len = HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
		add(s, g + off, len);
		off += len;
	}
	/* The next group comes with its own table. */
	if (!s->failed.code && !s->staged &&
	    hwt_sw_packer_rest(s->packer, &e))
		fail(s, &e);
	hwt_sw_packer_forget(s->packer, s->bound, &s->lost_insns,
			     &s->lost_bytes);
	punch(s);
}

void hwt_sw_spill_rest(struct hwt_sw_spill *s)
{
	struct hwt_err e = { 0 };

	if (!s->failed.code && !s->staged &&
	    hwt_sw_packer_rest(s->packer, &e))
		fail(s, &e);
	punch(s);
}

const char *hwt_sw_spill_failure(const struct hwt_sw_spill *s)
{
	return s->failed.code ? s->failed.msg : NULL;
}

void hwt_sw_spill_lost(const struct hwt_sw_spill *s, uint64_t *insns,
		       uint64_t *bytes)
{
	*insns = s->lost_insns;
	*bytes = s->lost_bytes;
}

/* The kept frames of the file into staging/rel. */
static int copy_kept(struct hwt_sw_spill *s, const char *staging,
		     const char *rel, struct hwt_err *err)
{
	uint64_t from = hwt_sw_packer_kept_from(s->packer);
	uint64_t left = hwt_sw_packer_end(s->packer) - from;
	loff_t in = (loff_t)from;
	char *path;
	int fd, rc;

	if ((rc = hwt_bundle_stage_write(staging, rel, "", 0, err)))
		return rc;
	if (asprintf(&path, "%s/%s", staging, rel) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	rc = fd < 0 ? hwt_err_set(err, errno, "%s: %s", path,
				  strerror(errno)) : 0;
	while (!rc && left) {
		ssize_t got = copy_file_range(s->fd, &in, fd, NULL,
					      (size_t)(left > (1u << 30) ?
						       1u << 30 : left), 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			rc = hwt_err_set(err, got < 0 ? errno : EIO,
					 "copying the whole history to %s: %s",
					 path, got < 0 ? strerror(errno) :
					 "the spill file is short");
		else
			left -= (uint64_t)got;
	}
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = hwt_err_set(err, errno, "%s: %s", path, strerror(errno));
	free(path);
	return rc;
}

/* The sealed ring's chunks after the spilled ones, all written. */
static int add_sealed(struct hwt_sw_spill *s, const uint8_t *sealed,
		      size_t n, struct hwt_err *err)
{
	size_t off = 0;
	int rc;

	/* The newest history, which views open first: every restart
	 * point. */
	hwt_sw_packer_thin(s->packer, 1);
	while (off < n) {
		struct hwt_sw_chunk_hdr h;
		size_t len;

		if (hwt_sw_chunk_hdr_unpack_flags(sealed + off, n - off,
						  HWT_SW_CHUNK_RUNS_FLAGS, &h,
						  err))
			return -EBADMSG;
		len = HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
		if ((rc = hwt_sw_packer_add(s->packer, sealed + off, len, err)))
			return rc;
		off += len;
	}
	return hwt_sw_packer_flush(s->packer, err);
}

int hwt_sw_spill_stage(struct hwt_sw_spill *s, const uint8_t *sealed,
		       size_t n, const char *staging,
		       struct hwt_bundle_thread *bt, struct hwt_err *err)
{
	uint8_t *idx = NULL;
	size_t idx_n = 0;
	int rc;

	if (s->staged)
		return hwt_err_set(err, EINVAL, "a whole history is written "
				   "to one bundle only");
	s->staged = true;
	if (!s->failed.code) {
		struct hwt_err e = { 0 };

		if ((rc = hwt_sw_packer_flush(s->packer, &e)))
			fail(s, &e);
	}
	if (!s->failed.code) {
		/* Should the ring's part fail to join, it is stored alone
		 * and what was spilled is lost. */
		uint64_t spilled_insns = hwt_sw_packer_insns(s->packer);
		uint64_t spilled_bytes = hwt_sw_packer_decoded(s->packer);
		struct hwt_err e = { 0 };

		if ((rc = add_sealed(s, sealed, n, &e)) == 0)
			rc = hwt_sw_packer_index(s->packer, &idx, &idx_n, &e);
		if (rc) {
			s->failed = e;
			s->failed.code = s->failed.code ? s->failed.code : EIO;
			s->lost_insns += spilled_insns;
			s->lost_bytes += spilled_bytes;
		}
	}
	bt->lost_insns += s->lost_insns;
	bt->lost_bytes += s->lost_bytes;
	if (s->failed.code)
		return -ENOSPC;  /* the caller stores the ring's part alone */
	bt->encoding = HWT_TRACE_ZSTD;
	bt->decoded_size = hwt_sw_packer_decoded(s->packer);
	bt->trace_size = hwt_sw_packer_end(s->packer) -
		hwt_sw_packer_kept_from(s->packer);
	if (!(bt->index_file = hwt_sw_index_name(bt->trace_file))) {
		bt->index_file = NULL;
		free(idx);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	bt->index_size = idx_n;
	rc = copy_kept(s, staging, bt->trace_file, err);
	if (!rc)
		rc = hwt_bundle_stage_write(staging, bt->index_file, idx,
					    idx_n, err);
	free(idx);
	return rc;
}

void hwt_sw_spill_free(struct hwt_sw_spill *s)
{
	if (!s)
		return;
	if (s->fd > 0) {
		close(s->fd);
		unlink(s->path);
	}
	hwt_sw_packer_free(s->packer);
	free(s->scratch);
	free(s->path);
	free(s);
}
