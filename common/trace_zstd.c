// SPDX-License-Identifier: BSD-2-Clause
/* trace_zstd.c - compressed trace files in bundles.
 *
 * A software recorder's trace (hwt-sw) is one record per instruction
 * and repeats itself as programs loop: zstd at its default level keeps
 * about one byte in thirty (docs/bundle.md). The file is zstd frames
 * (one per chunk when indexed, sw_index.c); trace.json gives their decoded
 * size, which the reader checks exactly and bounds
 * (HWT_BUNDLE_MAX_DECODED) before allocating it.
 */
#include <errno.h>
#include <stdlib.h>
#include <zstd.h>

#include "array.h"
#include "hwt-common.h"
#include "sw_index_layout.h"

/* The decoded size of the frames of in, one after another (a bundle's
 * trace is one frame per chunk, sw_index.c), or -1 when they are not all
 * zstd frames that state their size. */
static long long frames_size(const uint8_t *in, size_t n)
{
	unsigned long long sum = 0;

	while (n) {
		unsigned long long content = ZSTD_getFrameContentSize(in, n);
		size_t len = ZSTD_findFrameCompressedSize(in, n);

		if (content == ZSTD_CONTENTSIZE_ERROR ||
		    content == ZSTD_CONTENTSIZE_UNKNOWN || ZSTD_isError(len) ||
		    content > HWT_BUNDLE_MAX_DECODED - sum)
			return -1;
		sum += content;
		in += len;
		n -= len;
	}
	return (long long)sum;
}

int hwt_trace_decompress(const uint8_t *in, size_t n, uint64_t decoded_size,
			 uint8_t **out, struct hwt_err *err)
{
	long long frames;
	size_t got;

	*out = NULL;
	if (decoded_size > HWT_BUNDLE_MAX_DECODED)
		return hwt_err_set(err, EFBIG, "a compressed trace of %llu "
				   "bytes decoded; at most %llu are read",
				   (unsigned long long)decoded_size,
				   HWT_BUNDLE_MAX_DECODED);
	frames = frames_size(in, n);
	if (frames < 0)
		return hwt_err_set(err, EINVAL, "the compressed trace is "
				   "damaged: its bytes are not zstd frames "
				   "that state their size");
	if ((unsigned long long)frames != decoded_size)
		return hwt_err_set(err, EINVAL, "the zstd frames hold %lld "
				   "bytes, trace.json says %llu", frames,
				   (unsigned long long)decoded_size);
	if (!(*out = malloc(decoded_size ? (size_t)decoded_size : 1)))
		return hwt_err_set(err, ENOMEM, "out of memory for %llu bytes "
				   "of trace", (unsigned long long)decoded_size);
	got = ZSTD_decompress(*out, (size_t)decoded_size, in, n);
	if (ZSTD_isError(got) || got != decoded_size) {
		free(*out);
		*out = NULL;
		if (ZSTD_isError(got))
			return hwt_err_set(err, EINVAL, "the compressed trace "
					   "is damaged: %s",
					   ZSTD_getErrorName(got));
		return hwt_err_set(err, EINVAL, "the compressed trace holds "
				   "%zu bytes, trace.json says %llu", got,
				   (unsigned long long)decoded_size);
	}
	return 0;
}

int hwt_bundle_load_trace(const struct hwt_bundle *b,
			  const struct hwt_bundle_thread *t, uint8_t **data,
			  size_t *size, struct hwt_err *err)
{
	uint8_t *file;
	size_t n;
	int rc = hwt_bundle_load_file(b, t->trace_file, t->trace_size, &file,
				      &n, err);

	if (rc || t->encoding == HWT_TRACE_RAW) {
		*data = rc ? NULL : file;
		*size = rc ? 0 : n;
		return rc;
	}
	rc = hwt_trace_decompress(file, n, t->decoded_size, data, err);
	free(file);
	if (rc) {
		hwt_err_prefix(err, "%s: ", t->trace_file);
		return rc;
	}
	*size = (size_t)t->decoded_size;
	return 0;
}

int hwt_zstd_pack(const void *in, size_t n, uint8_t **out, size_t *out_n,
		  struct hwt_err *err)
{
	size_t cap = ZSTD_compressBound(n), got = 0;
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	*out = NULL;
	*out_n = 0;
	if (!cc || !(*out = malloc(cap ? cap : 1))) {
		ZSTD_freeCCtx(cc);
		return hwt_err_set(err, ENOMEM, "out of memory compressing "
				   "%zu bytes", n);
	}
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
						HWT_SW_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(got = ZSTD_compress2(cc, *out, cap, in, n))) {
		ZSTD_freeCCtx(cc);
		free(*out);
		*out = NULL;
		return hwt_err_set(err, EIO, "compressing %zu bytes failed", n);
	}
	ZSTD_freeCCtx(cc);
	*out_n = got;
	return 0;
}

int hwt_zstd_unpack(const uint8_t *in, size_t n, uint64_t max, uint8_t **out,
		    size_t *out_n, struct hwt_err *err)
{
	unsigned long long len = ZSTD_getFrameContentSize(in, n);
	size_t got;

	*out = NULL;
	*out_n = 0;
	if (len == ZSTD_CONTENTSIZE_ERROR || len == ZSTD_CONTENTSIZE_UNKNOWN ||
	    ZSTD_findFrameCompressedSize(in, n) != n || n < 5 ||
	    !(in[4] & HWT_ZSTD_FHD_CHECKSUM))
		return hwt_err_set(err, EINVAL, "not one checksummed zstd "
				   "frame");
	if (len > max)
		return hwt_err_set(err, EINVAL, "it decodes to %llu bytes, "
				   "more than the %llu it can need", len,
				   (unsigned long long)max);
	if (!(*out = malloc(len ? (size_t)len : 1)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	hwt_advise_huge(*out, (size_t)len);
	got = ZSTD_decompress(*out, (size_t)len, in, n);
	if (ZSTD_isError(got) || got != len) {
		free(*out);
		*out = NULL;
		return hwt_err_set(err, EINVAL, "it is damaged (%s)",
				   ZSTD_isError(got) ? ZSTD_getErrorName(got) :
				   "short");
	}
	*out_n = (size_t)len;
	return 0;
}
