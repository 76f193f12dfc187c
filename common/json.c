// SPDX-License-Identifier: BSD-2-Clause
/* json.c - JSON through json-c, with the checks its tokener leaves out.
 *
 * json-c keeps integers exact over the whole uint64 range, which LLDB's
 * bundles need (tscPerfZeroConversion.timeZero is above 2^63 on real
 * machines). But its tokener, even with JSON_TOKENER_STRICT, takes what RFC
 * 8259 does not allow and hides some of it: a key given twice keeps only
 * its last value, an integer beyond 64 bits is clamped to the nearest
 * limit, a NUL inside a key cuts the key there; it also takes single-quoted
 * keys, NaN and Infinity, leading zeros, "1.", raw control characters in
 * strings and lone UTF-16 surrogates. Untrusted text is therefore first
 * run through the recognizer below: the RFC's grammar, building nothing
 * but each object's keys (to find repeats), with every bound checked.
 * Only text it accepts goes to json-c, which builds the values.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-json.h"
#include "array.h"
#include "util.h"

/* An object key, decoded (escapes resolved) into the scanner's arena. */
struct key {
	size_t off, len;         /* in the arena */
	size_t pos;              /* text offset of its opening quote */
};

/* An open object or array and the member being read in it. */
struct frame {
	bool object;
	size_t first_key;        /* object: its keys are keys[first_key..] */
	size_t key;              /* object: member's key index, or NO_KEY */
	size_t index;            /* array: member's index */
};

#define NO_KEY SIZE_MAX

struct scan {
	const char *t;
	size_t n, i;
	struct frame stack[HWT_JSON_MAX_DEPTH];
	size_t depth;
	struct key *keys;
	size_t nkeys, keys_cap;
	char *arena;
	size_t alen, acap;
	bool in_key;             /* the string being read is a key */
	struct hwt_err *err;
};

/* "a.b[2]" for the members open at the error, key (when not NULL) last. */
static void field_path(const struct scan *s, const struct key *last,
		       char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t d = 0; d <= s->depth && len < size; d++) {
		const struct key *k = NULL;
		int n = 0;

		if (d == s->depth)
			k = last;
		else if (s->stack[d].object && s->stack[d].key != NO_KEY)
			k = &s->keys[s->stack[d].key];
		else if (!s->stack[d].object)
			n = snprintf(out + len, size - len, "[%zu]",
				     s->stack[d].index);
		/* Long keys are cut; control characters are not printed. */
		for (size_t j = 0; k && j < k->len && j < 48 && len + 2 < size;
		     j++) {
			char c = s->arena[k->off + j];

			if (j == 0 && len)
				out[len++] = '.';
			out[len++] = (unsigned char)c < 0x20 ? '?' : c;
			out[len] = '\0';
		}
		if (n > 0)
			len += (size_t)n;
	}
}

static int fail_at(struct scan *s, size_t pos, const struct key *last,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(struct scan *s, size_t pos, const struct key *last,
		   const char *fmt, ...)
{
	char what[200], path[160];
	unsigned line = 1, col = 1;
	va_list ap;

	for (size_t j = 0; j < pos && j < s->n; j++) {
		col++;
		if (s->t[j] == '\n')
			line++, col = 1;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	field_path(s, last, path, sizeof(path));
	if (path[0])
		return hwt_err_set(s->err, EINVAL, "invalid JSON at line %u "
				   "column %u, in field '%s': %s", line, col,
				   path, what);
	return hwt_err_set(s->err, EINVAL, "invalid JSON at line %u column "
			   "%u: %s", line, col, what);
}

#define FAIL(s, ...) fail_at((s), (s)->i, NULL, __VA_ARGS__)

static int no_memory(struct scan *s)
{
	return hwt_err_set(s->err, ENOMEM, "out of memory reading JSON");
}

static void skip_ws(struct scan *s)
{
	while (s->i < s->n && (s->t[s->i] == ' ' || s->t[s->i] == '\t' ||
			       s->t[s->i] == '\n' || s->t[s->i] == '\r'))
		s->i++;
}

static bool at(const struct scan *s, char c)
{
	return s->i < s->n && s->t[s->i] == c;
}

/* Append to the key being decoded. */
static int key_bytes(struct scan *s, const void *p, size_t n)
{
	if (!s->in_key)
		return 0;
	if (HWT_ARRAY_RESERVE(s->arena, s->acap, s->alen + n, 256))
		return no_memory(s);
	memcpy(s->arena + s->alen, p, n);
	s->alen += n;
	return 0;
}

static int hex4(struct scan *s, unsigned *cp)
{
	*cp = 0;
	for (int k = 0; k < 4; k++, s->i++) {
		char c = s->i < s->n ? s->t[s->i] : '\0';
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) :
			c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;

		if (d == 16)
			return FAIL(s, "\\u must be followed by 4 hex digits");
		*cp = *cp << 4 | d;
	}
	return 0;
}

/* A \u escape (s->i after the 'u'), with the second half of a surrogate
 * pair, as UTF-8 into the key. */
static int unicode_escape(struct scan *s, size_t start)
{
	unsigned cp, lo;
	uint8_t u[4];
	size_t n;
	int rc = hex4(s, &cp);

	if (rc)
		return rc;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail_at(s, start, NULL, "\\u%04x is the second half of "
			       "a UTF-16 surrogate pair without the first", cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (s->n - s->i < 2 || s->t[s->i] != '\\' ||
		    s->t[s->i + 1] != 'u')
			return fail_at(s, start, NULL, "\\u%04x is the first "
				       "half of a UTF-16 surrogate pair "
				       "without the second", cp);
		s->i += 2;
		if ((rc = hex4(s, &lo)))
			return rc;
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail_at(s, start, NULL, "\\u%04x is the first "
				       "half of a UTF-16 surrogate pair but "
				       "\\u%04x is no second half", cp, lo);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0 && s->in_key)
		return fail_at(s, start, NULL, "an object key must not "
			       "contain a NUL character (\\u0000)");
	if (cp < 0x80) {
		u[0] = (uint8_t)cp, n = 1;
	} else if (cp < 0x800) {
		u[0] = (uint8_t)(0xc0 | cp >> 6);
		u[1] = (uint8_t)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		u[0] = (uint8_t)(0xe0 | cp >> 12);
		u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | cp >> 18);
		u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (uint8_t)(0x80 | (cp & 0x3f)), n = 4;
	}
	return key_bytes(s, u, n);
}

/* Bytes of the well-formed UTF-8 sequence at s->i (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const struct scan *s)
{
	const uint8_t *p = (const uint8_t *)s->t + s->i;
	size_t left = s->n - s->i, n;
	uint8_t lo = 0x80, hi = 0xbf;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if (p[k] < 0x80 || p[k] > 0xbf)
			return 0;
	return n;
}

static int string(struct scan *s)
{
	static const char esc_in[] = "\"\\/bfnrt";
	static const char esc_out[] = "\"\\/\b\f\n\r\t";
	size_t start = s->i++;
	int rc;

	for (;;) {
		unsigned char c;
		const char *e;
		size_t n;

		if (s->i >= s->n)
			return fail_at(s, start, NULL, "the string is not "
				       "closed by a '\"'");
		c = (unsigned char)s->t[s->i];
		if (c == '"') {
			s->i++;
			return 0;
		}
		if (c < 0x20)
			return FAIL(s, "control character 0x%02x inside a "
				    "string: it must be written as an escape",
				    c);
		if (c == '\\') {
			size_t esc = s->i++;

			if (s->i < s->n && s->t[s->i] == 'u') {
				s->i++;
				rc = unicode_escape(s, esc);
			} else if (s->i < s->n && s->t[s->i] &&
				   (e = strchr(esc_in, s->t[s->i]))) {
				s->i++;
				rc = key_bytes(s, &esc_out[e - esc_in], 1);
			} else {
				return fail_at(s, esc, NULL, "invalid escape "
					       "in a string (JSON has \\\" "
					       "\\\\ \\/ \\b \\f \\n \\r "
					       "\\t \\uXXXX)");
			}
			if (rc)
				return rc;
			continue;
		}
		n = c < 0x80 ? 1 : utf8_len(s);
		if (!n)
			return FAIL(s, "invalid UTF-8 byte 0x%02x inside a "
				    "string", c);
		if ((rc = key_bytes(s, s->t + s->i, n)))
			return rc;
		s->i += n;
	}
}

static bool digit(const struct scan *s)
{
	return s->i < s->n && s->t[s->i] >= '0' && s->t[s->i] <= '9';
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; an integer (no fraction,
 * no exponent) must fit in 64 bits, signed or unsigned. */
static int number(struct scan *s)
{
	static const char max_neg[] = "9223372036854775808";
	static const char max_pos[] = "18446744073709551615";
	size_t start = s->i, digits, ndigits;
	bool neg = at(s, '-'), integer = true;
	const char *max;

	if (neg)
		s->i++;
	digits = s->i;
	if (at(s, '0')) {
		s->i++;
		if (digit(s))
			return fail_at(s, start, NULL, "a number must not "
				       "start with 0 (no leading zeros)");
	} else if (digit(s)) {
		while (digit(s))
			s->i++;
	} else if (neg) {
		return FAIL(s, "a digit must follow the '-' of a number");
	} else {
		return FAIL(s, "a value was expected: an object, array, "
			    "string, number, true, false or null");
	}
	ndigits = s->i - digits;
	if (at(s, '.')) {
		s->i++;
		integer = false;
		if (!digit(s))
			return FAIL(s, "a digit must follow the '.' of a "
				    "number");
		while (digit(s))
			s->i++;
	}
	if (at(s, 'e') || at(s, 'E')) {
		s->i++;
		integer = false;
		if (at(s, '+') || at(s, '-'))
			s->i++;
		if (!digit(s))
			return FAIL(s, "a digit must follow the exponent of a "
				    "number");
		while (digit(s))
			s->i++;
	}
	max = neg ? max_neg : max_pos;
	if (integer && (ndigits > strlen(max) ||
			(ndigits == strlen(max) &&
			 memcmp(s->t + digits, max, ndigits) > 0)))
		return fail_at(s, start, NULL, "the integer %.*s%s does not "
			       "fit in 64 bits (-9223372036854775808 to "
			       "18446744073709551615)",
			       (int)(s->i - start > 40 ? 40 : s->i - start),
			       s->t + start, s->i - start > 40 ? "..." : "");
	return 0;
}

static int literal(struct scan *s, const char *word)
{
	size_t n = strlen(word);

	if (s->n - s->i < n || memcmp(s->t + s->i, word, n))
		return FAIL(s, "a value was expected: an object, array, "
			    "string, number, true, false or null");
	s->i += n;
	return 0;
}

static int key_bytes_cmp(const struct key *x, const struct key *y,
			 const char *arena)
{
	size_t n = x->len < y->len ? x->len : y->len;
	/* Empty keys may come before the arena has any memory. */
	int c = n ? memcmp(arena + x->off, arena + y->off, n) : 0;

	if (c || x->len == y->len)
		return c;
	return x->len < y->len ? -1 : 1;
}

/* By bytes, then by place in the text. */
static int key_order(const void *a, const void *b, void *arena)
{
	const struct key *x = a, *y = b;
	int c = key_bytes_cmp(x, y, arena);

	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The object just closed (frame f) has each key once. */
static int check_keys(struct scan *s, struct frame *f)
{
	size_t n = s->nkeys - f->first_key;
	struct key *k, *dup = NULL;

	if (n < 2)
		return 0;
	k = s->keys + f->first_key;
	qsort_r(k, n, sizeof(*k), key_order, s->arena);
	/* Each key equal to the one before it is a repeat; the message
	 * names the repeat that comes first in the text. */
	for (size_t j = 1; j < n; j++)
		if (!key_bytes_cmp(&k[j - 1], &k[j], s->arena) &&
		    (!dup || k[j].pos < dup->pos))
			dup = &k[j];
	if (!dup)
		return 0;
	/* The path ends at the object, then the key. */
	f->key = NO_KEY;
	return fail_at(s, dup->pos, dup, "this key is given twice in the "
		       "same object");
}

static int value(struct scan *s);

static int push(struct scan *s, bool object)
{
	if (s->depth == HWT_JSON_MAX_DEPTH)
		return FAIL(s, "objects and arrays nested more than %d deep",
			    HWT_JSON_MAX_DEPTH);
	s->stack[s->depth++] = (struct frame){
		.object = object, .first_key = s->nkeys, .key = NO_KEY,
	};
	s->i++;
	skip_ws(s);
	return 0;
}

static int object(struct scan *s)
{
	struct frame *f;
	size_t arena_at = s->alen;
	int rc = push(s, true);

	if (rc)
		return rc;
	f = &s->stack[s->depth - 1];
	if (at(s, '}'))
		goto close;
	for (;;) {
		struct key k = { .off = s->alen, .pos = s->i };

		if (!at(s, '"'))
			return FAIL(s, "an object key in double quotes was "
				    "expected");
		s->in_key = true;
		rc = string(s);
		s->in_key = false;
		if (rc)
			return rc;
		k.len = s->alen - k.off;
		if (HWT_ARRAY_RESERVE(s->keys, s->keys_cap, s->nkeys + 1, 64))
			return no_memory(s);
		s->keys[s->nkeys] = k;
		f->key = s->nkeys++;
		skip_ws(s);
		if (!at(s, ':'))
			return FAIL(s, "a ':' was expected after the key");
		s->i++;
		skip_ws(s);
		if ((rc = value(s)))
			return rc;
		skip_ws(s);
		if (at(s, '}'))
			break;
		if (!at(s, ','))
			return FAIL(s, "a ',' or '}' was expected after the "
				    "member");
		s->i++;
		skip_ws(s);
	}
close:
	s->i++;
	if ((rc = check_keys(s, f)))
		return rc;
	s->nkeys = f->first_key;
	s->alen = arena_at;
	s->depth--;
	return 0;
}

static int array(struct scan *s)
{
	struct frame *f;
	int rc = push(s, false);

	if (rc)
		return rc;
	f = &s->stack[s->depth - 1];
	if (!at(s, ']')) {
		for (;;) {
			if ((rc = value(s)))
				return rc;
			skip_ws(s);
			if (at(s, ']'))
				break;
			if (!at(s, ','))
				return FAIL(s, "a ',' or ']' was expected "
					    "after the element");
			s->i++;
			f->index++;
			skip_ws(s);
		}
	}
	s->i++;
	s->depth--;
	return 0;
}

static int value(struct scan *s)
{
	switch (s->i < s->n ? s->t[s->i] : '\0') {
	case '{':
		return object(s);
	case '[':
		return array(s);
	case '"':
		return string(s);
	case 't':
		return literal(s, "true");
	case 'f':
		return literal(s, "false");
	case 'n':
		return literal(s, "null");
	default:
		return number(s);
	}
}

/* The whole text is one JSON value and nothing json-c would take
 * differently from the RFC. */
static int recognize(const char *text, size_t len, struct hwt_err *err)
{
	struct scan s = { .t = text, .n = len, .err = err };
	int rc;

	skip_ws(&s);
	if (s.i == s.n)
		rc = FAIL(&s, "the text is empty; a JSON value was expected");
	else if (!(rc = value(&s))) {
		skip_ws(&s);
		if (s.i < s.n)
			rc = FAIL(&s, "text follows the JSON value");
	}
	free(s.keys);
	free(s.arena);
	return rc;
}

int hwt_json_parse(const char *text, size_t len, struct json_object **out,
		   struct hwt_err *err)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	struct json_object *root;
	int rc;

	*out = NULL;
	if (len > INT32_MAX)
		return hwt_err_set(err, EFBIG, "the JSON text is %zu bytes, "
				   "more than json-c reads", len);
	if ((rc = recognize(text, len, err)))
		return rc;
	tok = json_tokener_new_ex(HWT_JSON_MAX_DEPTH + 1);
	if (!tok)
		return hwt_err_set(err, ENOMEM, "out of memory reading JSON");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	/* A number at the top level ends only with the input. */
	if (!root && jerr == json_tokener_continue) {
		root = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
	}
	json_tokener_free(tok);
	if (!root && jerr == json_tokener_success)
		return hwt_err_set(err, ENOMEM, "out of memory reading JSON");
	if (!root)
		return hwt_err_set(err, EINVAL, "invalid JSON: %s",
				   json_tokener_error_desc(jerr));
	*out = root;
	return 0;
}

/* ---- integers --------------------------------------------------------- */

static void describe(struct json_object *v, char *why, size_t size)
{
	const char *text = json_object_to_json_string_ext(v,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	switch (json_object_get_type(v)) {
	case json_type_int:
		snprintf(why, size, "it is negative (%.40s)", text);
		break;
	case json_type_double:
		snprintf(why, size, "it is %.40s, not an integer", text);
		break;
	case json_type_string:
		snprintf(why, size, "it is the string %.40s%s", text,
			 strlen(text) > 40 ? "..." : "");
		break;
	default:
		snprintf(why, size, "it is %s", json_type_to_name(
				 json_object_get_type(v)));
		break;
	}
}

int hwt_json_get_u64(struct json_object *v, uint64_t *out, char *why,
		     size_t whysize)
{
	/* json-c holds 0..INT64_MAX as int64, the rest as uint64; only
	 * negative values read below 0 as int64. */
	if (json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) >= 0) {
		*out = json_object_get_uint64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_string) &&
	    hwt_parse_u64(json_object_get_string(v), out) == 0 &&
	    strlen(json_object_get_string(v)) ==
	    (size_t)json_object_get_string_len(v))
		return 0;
	describe(v, why, whysize);
	return -EINVAL;
}

int hwt_json_get_i64(struct json_object *v, int64_t *out, char *why,
		     size_t whysize)
{
	if (json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) < 0) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_int)) {
		uint64_t u = json_object_get_uint64(v);

		if (u <= INT64_MAX) {
			*out = (int64_t)u;
			return 0;
		}
		snprintf(why, whysize, "it is %" PRIu64 ", above the largest "
			 "signed 64-bit integer", u);
		return -EINVAL;
	}
	describe(v, why, whysize);
	return -EINVAL;
}

/* ---- writing ---------------------------------------------------------- */

int hwt_json_add(struct json_object *obj, const char *key,
		 struct json_object *v)
{
	if (v && obj && json_object_object_add(obj, key, v) == 0)
		return 0;
	json_object_put(v);
	return -ENOMEM;
}

int hwt_json_append(struct json_object *arr, struct json_object *v)
{
	if (v && arr && json_object_array_add(arr, v) == 0)
		return 0;
	json_object_put(v);
	return -ENOMEM;
}

char *hwt_json_text(struct json_object *root, bool indented)
{
	const char *t = json_object_to_json_string_ext(root,
		JSON_C_TO_STRING_NOSLASHESCAPE | (indented ?
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED :
		JSON_C_TO_STRING_PLAIN));

	return t ? strdup(t) : NULL;
}
