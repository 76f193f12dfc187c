/* trace_zstd.c - compressed trace files in bundles.
 *
 * A software recorder's trace (hwt-sw) is one record per instruction
 * and repeats itself as programs loop: zstd at its default level keeps
 * about one byte in thirty (docs/bundle.md). The file is one zstd frame;
 * trace.json gives its decoded size, which the reader checks exactly and
 * bounds (HWT_BUNDLE_MAX_DECODED) before allocating it.
 */
#include <errno.h>
#include <stdlib.h>
#include <zstd.h>

#include "hwt-common.h"

#define LEVEL 3

int hwt_trace_compress(const uint8_t *in, size_t n, uint8_t **out,
		       size_t *out_n, struct hwt_err *err)
{
	size_t cap = ZSTD_compressBound(n), got;

	*out = NULL;
	if (ZSTD_isError(cap) || !(*out = malloc(cap ? cap : 1)))
		return hwt_err_set(err, ENOMEM, "out of memory compressing "
				   "%zu bytes of trace", n);
	got = ZSTD_compress(*out, cap, in, n, LEVEL);
	if (ZSTD_isError(got)) {
		free(*out);
		*out = NULL;
		return hwt_err_set(err, EIO, "compressing the trace: %s",
				   ZSTD_getErrorName(got));
	}
	*out_n = got;
	return 0;
}

int hwt_trace_decompress(const uint8_t *in, size_t n, uint64_t decoded_size,
			 uint8_t **out, struct hwt_err *err)
{
	unsigned long long frame = ZSTD_getFrameContentSize(in, n);
	size_t got;

	*out = NULL;
	if (decoded_size > HWT_BUNDLE_MAX_DECODED)
		return hwt_err_set(err, EFBIG, "a compressed trace of %llu "
				   "bytes decoded; at most %llu are read",
				   (unsigned long long)decoded_size,
				   HWT_BUNDLE_MAX_DECODED);
	if (frame == ZSTD_CONTENTSIZE_ERROR)
		return hwt_err_set(err, EINVAL, "not a zstd frame");
	if (frame != ZSTD_CONTENTSIZE_UNKNOWN && frame != decoded_size)
		return hwt_err_set(err, EINVAL, "the zstd frame holds %llu "
				   "bytes, trace.json says %llu", frame,
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
