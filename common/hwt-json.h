/* SPDX-License-Identifier: BSD-2-Clause */
/* hwt-json.h - JSON text in and out for trace.json and LLDB's trace
 * packets, through json-c (common/json.c).
 *
 * json-c keeps every integer of the uint64 range exact, read and written:
 * LLDB's bundles carry unsigned 64-bit values (tscPerfZeroConversion's
 * timeZero is above 2^63 on real machines). hwt_json_parse adds the checks
 * json-c's tokener leaves out, so that only plain RFC 8259 JSON with no
 * repeated key and no integer beyond 64 bits is accepted.
 */
#ifndef HWT_JSON_H
#define HWT_JSON_H

#include <json-c/json.h>

#include "hwt-common.h"

/* Containers nested deeper than this are refused. */
#define HWT_JSON_MAX_DEPTH 32

/* Parse len bytes of untrusted text (no NUL needed after them) into one
 * JSON value. Refused, with -EINVAL and "invalid JSON at line L column C,
 * in field 'a.b[2]': what", is anything that is not RFC 8259 JSON (also
 * what json-c alone would take: NaN, single quotes, leading zeros, raw
 * control characters, lone surrogates, invalid UTF-8), an object with a
 * key twice, a key with a NUL, an integer outside -2^63 .. 2^64-1 and
 * nesting deeper than HWT_JSON_MAX_DEPTH. The caller puts *out. */
int hwt_json_parse(const char *text, size_t len, struct json_object **out,
		   struct hwt_err *err);

/* v as an unsigned 64-bit integer: a JSON integer from 0 to UINT64_MAX,
 * or a string of one in decimal or "0x" hex (as LLDB writes addresses and
 * large values). 0, or -EINVAL with why (of whysize bytes) saying what v
 * is instead, e.g. "it is negative (-5)". */
int hwt_json_get_u64(struct json_object *v, uint64_t *out, char *why,
		     size_t whysize);
/* v as a signed 64-bit integer: a JSON integer from INT64_MIN to
 * INT64_MAX. */
int hwt_json_get_i64(struct json_object *v, int64_t *out, char *why,
		     size_t whysize);

/* Building: add v to obj under key (hwt_json_add) or to the array arr
 * (hwt_json_append). v may be NULL, the failed allocation of a value;
 * then, or when adding fails, v is put and -ENOMEM returned, so a chain of
 * adds needs one check at its end. */
int hwt_json_add(struct json_object *obj, const char *key,
		 struct json_object *v);
int hwt_json_append(struct json_object *arr, struct json_object *v);

/* root as text, NUL-terminated, the caller frees; NULL when out of
 * memory. indented: two spaces a level and "key": value, for files;
 * else one line with no spaces, for packets. */
char *hwt_json_text(struct json_object *root, bool indented);

#endif
