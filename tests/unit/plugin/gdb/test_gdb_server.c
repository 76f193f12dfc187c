// SPDX-License-Identifier: BSD-2-Clause
/* test_gdb_server.c - hwt-server's resume, breakpoint and write packets
 * over a fake target: what reaches the target for each packet, and the
 * replies GDB gets, without a process or a trace; vFile over real files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "server.h"
#include "signals.h"

static struct srv_action got[8];
static size_t ngot;
static uint8_t mem[64];
static int64_t last_reg = -1;
static size_t reply_len;          /* of the last reply: binary has NULs */

static int fake_resume(struct server *s, const struct srv_action *a, size_t n,
		       char *reply, size_t cap)
{
	(void)s;
	ngot = n < 8 ? n : 8;
	memcpy(got, a, ngot * sizeof(*a));
	snprintf(reply, cap, "T05thread:2a;");
	return 0;
}

static long fake_mem_write(struct server *s, uint64_t addr, const void *buf,
			   size_t len)
{
	(void)s;
	if (addr + len > sizeof(mem))
		return -14;
	memcpy(mem + addr, buf, len);
	return (long)len;
}

static int fake_reg_set(struct server *s, size_t ti, int regno,
			const uint8_t *val, struct hwt_err *err)
{
	(void)s; (void)ti; (void)val; (void)err;
	last_reg = regno;
	return 0;
}

static struct target_ops ops = {
	.mode = "fake",
	.resume = fake_resume,
	.mem_write = fake_mem_write,
	.reg_set = fake_reg_set,
};

/* The payload of the one reply the server sent to peer. */
static const char *reply_of(int peer)
{
	static char buf[RSP_MAX_PAYLOAD + 8];
	ssize_t n = read(peer, buf, sizeof(buf) - 1);
	char *hash;

	if (n <= 0 || buf[0] != '$')
		return "(none)";
	buf[n] = '\0';
	hash = memrchr(buf, '#', (size_t)n);
	if (hash)
		*hash = '\0';
	reply_len = hash ? (size_t)(hash - buf - 1) : 0;
	return buf + 1;
}

static const char *send_pkt(struct server *s, int peer, const char *pkt)
{
	int rc = 0;
	bool mine = nonstop_handle(s, pkt, &rc) || vcont_handle(s, pkt, &rc) ||
		    breakpoints_handle(s, pkt, &rc) ||
		    writes_handle(s, pkt, strlen(pkt), &rc) ||
		    monitor_handle(s, pkt, &rc) || hostio_handle(s, pkt, &rc);

	return mine && rc == 0 ? reply_of(peer) : "(not handled)";
}

/* A vFile path argument: path in hex into out. */
static const char *hex_path(const char *path, char *out)
{
	for (size_t i = 0; path[i]; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)path[i]);
	return out;
}

/* A binary reply's escapes undone ('}' x^0x20), in place; its length. */
static size_t unescape(char *r, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++)
		r[o++] = r[i] == '}' && i + 1 < len ? (char)(r[++i] ^ 0x20) : r[i];
	return o;
}

/* vFile over the connection: read-only, bounded, with GDB's errnos. */
static void test_hostio(struct server *s, int peer)
{
	char dir[] = "/tmp/hwt-hostio-XXXXXX", file[64], link[64], hex[200],
	     pkt[300];
	static const char data[] = "one}#$*two";   /* every byte to escape */
	const char *r;
	size_t n;
	FILE *f;

	ops.host_files = false;
	r = send_pkt(s, peer, "vFile:setfs:0");
	CHECK("vFile: not offered by a target without host files", !strcmp(r, ""),
	      "'%s'", r);
	ops.host_files = true;
	if (!mkdtemp(dir))
		return;
	snprintf(file, sizeof(file), "%s/f", dir);
	snprintf(link, sizeof(link), "%s/l", dir);
	f = fopen(file, "w");
	if (f) {
		fputs(data, f);
		fclose(f);
	}
	if (symlink(file, link))
		return;
	s->pid = 4242;
	r = send_pkt(s, peer, "vFile:setfs:0");
	CHECK("vFile:setfs 0 is the server's filesystem", !strcmp(r, "F0"), "%s", r);
	r = send_pkt(s, peer, "vFile:setfs:1092");
	CHECK("vFile:setfs of the process served is the same", !strcmp(r, "F0"), "%s", r);
	r = send_pkt(s, peer, "vFile:setfs:1");
	CHECK("vFile:setfs of another process is refused (EACCES)",
	      !strcmp(r, "F-1,d"), "%s", r);
	snprintf(pkt, sizeof(pkt), "vFile:open:%s,1,1a4", hex_path(file, hex));
	r = send_pkt(s, peer, pkt);
	CHECK("vFile:open for writing is refused (EACCES)", !strcmp(r, "F-1,d"), "%s", r);
	snprintf(pkt, sizeof(pkt), "vFile:open:%s00,0,0", hex_path(file, hex));
	r = send_pkt(s, peer, pkt);
	CHECK("vFile:open of a path with a NUL is refused (EINVAL)",
	      !strcmp(r, "F-1,16"), "%s", r);
	snprintf(pkt, sizeof(pkt), "vFile:open:%s,0,0", hex_path("/nonexistent/x", hex));
	r = send_pkt(s, peer, pkt);
	CHECK("vFile:open of a missing file gives ENOENT", !strcmp(r, "F-1,2"), "%s", r);
	snprintf(pkt, sizeof(pkt), "vFile:open:%s,0,0", hex_path(file, hex));
	r = send_pkt(s, peer, pkt);
	CHECK("vFile:open for reading gives descriptor 0", !strcmp(r, "F0"), "%s", r);
	r = send_pkt(s, peer, "vFile:pread:0,100000,0");
	{
		char body[64];

		n = strlen(r);
		memcpy(body, r, n < sizeof(body) ? n : sizeof(body) - 1);
		n = unescape(body, n < sizeof(body) ? n : sizeof(body) - 1);
		CHECK("vFile:pread returns the bytes, escaped, with their count",
		      n == 3 + strlen(data) && !memcmp(body, "Fa;", 3) &&
		      !memcmp(body + 3, data, strlen(data)), "%.*s", (int)n, body);
	}
	r = send_pkt(s, peer, "vFile:pread:0,3,4");
	CHECK("vFile:pread at an offset", !strncmp(r, "F3;", 3) && r[3] == '}',
	      "%s", r);
	r = send_pkt(s, peer, "vFile:fstat:0");
	{
		char body[160];
		uint64_t size = 0;

		n = reply_len < sizeof(body) ? reply_len : sizeof(body) - 1;
		memcpy(body, r, n);
		n = unescape(body, n);
		for (int i = 0; n == 4 + 64 && i < 8; i++)
			size = size << 8 | (uint8_t)body[4 + 28 + i];
		CHECK("vFile:fstat gives File-I/O's 64-byte stat with the size",
		      n == 4 + 64 && !strncmp(body, "F40;", 4) &&
		      size == strlen(data), "%zu bytes, size %llu", n,
		      (unsigned long long)size);
	}
	r = send_pkt(s, peer, "vFile:pwrite:0,0,41");
	CHECK("vFile:pwrite is refused (EACCES)", !strcmp(r, "F-1,d"), "%s", r);
	r = send_pkt(s, peer, "vFile:size:0");
	CHECK("other vFile requests are unsupported", !strcmp(r, ""), "'%s'", r);
	r = send_pkt(s, peer, "vFile:close:0");
	CHECK("vFile:close", !strcmp(r, "F0"), "%s", r);
	r = send_pkt(s, peer, "vFile:close:0");
	CHECK("vFile:close twice gives EBADF", !strcmp(r, "F-1,9"), "%s", r);
	r = send_pkt(s, peer, "vFile:pread:ffffffffffffffff,1,0");
	CHECK("vFile:pread of a descriptor never opened gives EBADF",
	      !strcmp(r, "F-1,9"), "%s", r);
	snprintf(pkt, sizeof(pkt), "vFile:open:%s,0,0", hex_path(file, hex));
	for (int i = 0; i < SRV_HOSTIO_FILES; i++)
		send_pkt(s, peer, pkt);
	r = send_pkt(s, peer, pkt);
	CHECK("vFile:open past the open-file bound gives EMFILE",
	      !strcmp(r, "F-1,18"), "%s", r);
	hostio_close_all(s);
	r = send_pkt(s, peer, pkt);
	CHECK("a new session's descriptors start again at 0", !strcmp(r, "F0"), "%s", r);
	hostio_close_all(s);
	snprintf(pkt, sizeof(pkt), "vFile:readlink:%s", hex_path(link, hex));
	r = send_pkt(s, peer, pkt);
	n = strlen(file);
	CHECK("vFile:readlink gives the link's target",
	      !strncmp(r, "F", 1) && strchr(r, ';') &&
	      !strcmp(strchr(r, ';') + 1, file), "%s", r);
	unlink(link);
	unlink(file);
	rmdir(dir);
	ops.host_files = false;
}

int main(void)
{
	static struct server s;
	static struct srv_thread th[2] = { { .tid = 0x2a }, { .tid = 0x2b } };
	int sv[2];
	const char *r;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	s.ops = &ops;
	s.threads = th;
	s.nthreads = 2;
	rsp_conn_init(&s.conn, sv[0]);
	s.conn.noack = true;

	r = send_pkt(&s, sv[1], "vCont?");
	CHECK("vCont? lists c, C, s, S, t", !strcmp(r, "vCont;c;C;s;S;t"), "%s", r);
	ngot = 0;
	r = send_pkt(&s, sv[1], "vCont;t:2a");
	CHECK("all-stop: vCont;t alone leaves the threads stopped, resumes nothing",
	      !strcmp(r, "OK") && ngot == 0, "%s, %zu actions", r, ngot);
	r = send_pkt(&s, sv[1], "vCont;t:2b;c");
	CHECK("all-stop: a t action is dropped, the others resume",
	      ngot == 1 && got[0].kind == 'c' && got[0].tid == -1, "%zu actions",
	      ngot);
	r = send_pkt(&s, sv[1], "QNonStop:1");
	CHECK("QNonStop:1 is refused by a target whose threads never run",
	      r[0] == 'E' && !s.non_stop, "%s", r);
	ops.non_stop = true;
	r = send_pkt(&s, sv[1], "QNonStop:1");
	CHECK("QNonStop:1 on a live target", !strcmp(r, "OK") && s.non_stop, "%s", r);
	ngot = 0;
	r = send_pkt(&s, sv[1], "vCont;c:2a");
	CHECK("non-stop: vCont is answered OK at once, nothing resumed yet",
	      !strcmp(r, "OK") && ngot == 0 && nonstop_running(&s), "%s", r);
	r = send_pkt(&s, sv[1], "vCont;t:2a");
	CHECK("non-stop: t stops the running thread (OK, then a T00 notification)",
	      !strncmp(r, "OK", 2) && strstr(r, "%Stop:T00thread:2a;") &&
	      !nonstop_running(&s), "%s", r);
	r = send_pkt(&s, sv[1], "vStopped");
	CHECK("non-stop: vStopped after the last stop is OK", !strcmp(r, "OK"),
	      "%s", r);
	r = send_pkt(&s, sv[1], "QNonStop:0");
	CHECK("QNonStop:0 back to all-stop", !strcmp(r, "OK") && !s.non_stop, "%s",
	      r);
	ops.non_stop = false;
	r = send_pkt(&s, sv[1], "vCont;s:2a;c");
	CHECK("vCont;s:2a;c reaches the target as two actions",
	      ngot == 2 && got[0].tid == 0x2a && got[0].kind == 's' &&
	      got[1].tid == -1 && got[1].kind == 'c' && !strcmp(r, "T05thread:2a;"),
	      "%zu actions, reply %s", ngot, r);
	send_pkt(&s, sv[1], "vCont;C1e:2b");
	CHECK("C with GDB's SIGUSR1 (0x1e) delivers Linux's 10",
	      ngot == 1 && got[0].signal == 10 && got[0].tid == 0x2b && got[0].kind == 'c',
	      "signal %d", got[0].signal);
	send_pkt(&s, sv[1], "S0b");
	CHECK("S0b steps with SIGSEGV", ngot == 1 && got[0].kind == 's' && got[0].signal == 11,
	      "kind %c signal %d", got[0].kind, got[0].signal);
	ngot = 0;
	r = send_pkt(&s, sv[1], "vCont;x");
	CHECK("an unknown vCont action is refused", r[0] == 'E' && ngot == 0, "%s", r);
	r = send_pkt(&s, sv[1], "vCont;c:zz");
	CHECK("a bad thread id is refused", r[0] == 'E' && ngot == 0, "%s", r);
	r = send_pkt(&s, sv[1], "vCont;C2:1");
	CHECK("a one-digit signal is refused", r[0] == 'E' && ngot == 0, "%s", r);
	r = send_pkt(&s, sv[1], "c 1000");
	CHECK("c ADDR is refused", r[0] == 'E' && ngot == 0, "%s", r);

	r = send_pkt(&s, sv[1], "Z0,401000,1");
	CHECK("Z0 adds an address", !strcmp(r, "OK") && s.nbps == 1 && s.bps[0] == 0x401000,
	      "%s, %zu", r, s.nbps);
	send_pkt(&s, sv[1], "Z0,401000,1");
	CHECK("the same Z0 twice is one address", s.nbps == 1, "%zu", s.nbps);
	send_pkt(&s, sv[1], "z0,401000,1");
	CHECK("z0 removes it", s.nbps == 0, "%zu", s.nbps);
	r = send_pkt(&s, sv[1], "Z2,1000,4");
	CHECK("Z2 on a target without watchpoints gets the empty reply",
	      !strcmp(r, "") && s.nwatches == 0, "'%s'", r);
	ops.can_watch = true;
	r = send_pkt(&s, sv[1], "Z2,1001,4");
	CHECK("an unaligned watchpoint is refused", r[0] == 'E' && s.nwatches == 0, "%s", r);
	for (int i = 0; i < 4; i++) {
		char pkt[32];

		snprintf(pkt, sizeof(pkt), "Z%d,%x,8", 2 + i % 3, 0x1000 + 8 * i);
		send_pkt(&s, sv[1], pkt);
	}
	r = send_pkt(&s, sv[1], "Z2,2000,8");
	CHECK("a fifth watchpoint is refused", r[0] == 'E' && s.nwatches == 4, "%s, %zu", r,
	      s.nwatches);
	r = send_pkt(&s, sv[1], "Z9,1000,1");
	CHECK("an unknown Z type gets the empty reply", !strcmp(r, ""), "'%s'", r);

	r = send_pkt(&s, sv[1], "M8,2:abcd");
	CHECK("M writes its bytes", !strcmp(r, "OK") && mem[8] == 0xab && mem[9] == 0xcd, "%s", r);
	r = send_pkt(&s, sv[1], "M8,2:abc");
	CHECK("M with too few digits is refused", r[0] == 'E', "%s", r);
	r = send_pkt(&s, sv[1], "M100,1:00");
	CHECK("M beyond the target's memory is an error", r[0] == 'E', "%s", r);
	r = send_pkt(&s, sv[1], "P10=0010400000000000");
	CHECK("P writes rip (register 16)", !strcmp(r, "OK") && last_reg == 16, "%s %lld", r,
	      (long long)last_reg);
	r = send_pkt(&s, sv[1], "P10=00");
	CHECK("P with a value of the wrong size is refused", r[0] == 'E', "%s", r);

	/* ymm0h-ymm15h (60-75) exist only in the AVX description. */
	last_reg = -1;
	r = send_pkt(&s, sv[1], "P3c=000102030405060708090a0b0c0d0e0f");
	CHECK("P of ymm0h is refused without AVX", r[0] == 'E' && last_reg == -1, "%s", r);
	s.avx = true;
	r = send_pkt(&s, sv[1], "P4b=000102030405060708090a0b0c0d0e0f");
	CHECK("P writes ymm15h (register 75) with AVX", !strcmp(r, "OK") && last_reg == 75,
	      "%s %lld", r, (long long)last_reg);
	r = send_pkt(&s, sv[1], "P4c=000102030405060708090a0b0c0d0e0f");
	CHECK("register 76 does not exist", r[0] == 'E', "%s", r);
	s.avx = false;

	/* The XSAVE layout: XCR0 at 464, XSTATE_BV at 512, ymm upper
	 * halves from 576. */
	static uint8_t xs[1024];
	uint8_t v[16], want[16];
	xs[464] = 7;
	CHECK("an XSAVE area whose XCR0 enables AVX has ymm registers",
	      tdesc_xstate_has_avx(xs, sizeof(xs)) && !tdesc_xstate_has_avx(xs, 700),
	      "short areas must not count");
	xs[464] = 3;
	CHECK("XCR0 without AVX has none", !tdesc_xstate_has_avx(xs, sizeof(xs)), "xcr0 3");
	memset(xs + 576 + 16, 0x55, 16);
	tdesc_ymmh_value(xs, 1, v);
	memset(want, 0, sizeof(want));
	CHECK("ymm1h in the initial state (XSTATE_BV bit 2 clear) reads zero",
	      !memcmp(v, want, 16), "stale bytes served");
	memset(want, 0xa5, sizeof(want));
	tdesc_ymmh_store(xs, 3, want);
	tdesc_ymmh_value(xs, 3, v);
	CHECK("storing ymm3h marks the AVX state in use and reads back",
	      (xs[512] & 4) && !memcmp(v, want, 16) && xs[576 + 16] == 0,
	      "bv %#x", xs[512]);

	int bad = 0;
	for (int sig = 1; sig <= 64; sig++)
		if (sig != 16 && hwt_linux_signal(hwt_gdb_signal(sig)) != sig)
			bad = sig;
	CHECK("Linux signals map to GDB's and back", bad == 0, "signal %d", bad);
	CHECK("SIGSTKFLT has no GDB number", hwt_gdb_signal(16) == 143, "%d", hwt_gdb_signal(16));

	/* Thread ids of the multiprocess extension. */
	{
		int64_t tid = 99;
		char buf[48];
		bool ok;

		s.pid = 0x2a;
		ok = srv_parse_tid(&s, "p2a.2b", &tid) && tid == 0x2b;
		ok = ok && srv_parse_tid(&s, "p2a.-1", &tid) && tid == -1;
		ok = ok && srv_parse_tid(&s, "p-1.-1", &tid) && tid == -1;
		ok = ok && srv_parse_tid(&s, "p0.0", &tid) && tid == 0;
		ok = ok && srv_parse_tid(&s, "p2a", &tid) && tid == -1;
		ok = ok && srv_parse_tid(&s, "2b", &tid) && tid == 0x2b;
		CHECK("thread ids pPID.TID, pPID, p-1.-1, p0.0 and plain TID "
		      "read", ok, "tid %lld", (long long)tid);
		CHECK("a thread id of another process, or malformed, is refused",
		      !srv_parse_tid(&s, "p2c.2b", &tid) &&
		      !srv_parse_tid(&s, "p2a.", &tid) &&
		      !srv_parse_tid(&s, "p.2b", &tid) &&
		      !srv_parse_tid(&s, "pzz.1", &tid), "accepted");
		s.multiprocess = true;
		CHECK("with the extension ids are written pPID.TID",
		      !strcmp(srv_tid_str(&s, 0x2b, buf, sizeof(buf)), "p2a.2b"),
		      "%s", buf);
		s.multiprocess = false;
		CHECK("without it, TID", !strcmp(srv_tid_str(&s, 0x2b, buf,
							     sizeof(buf)), "2b"),
		      "%s", buf);
	}

	/* Monitor commands: malformed hex, a NUL inside, and one that only
	 * changes state (its reply is OK alone). */
	r = send_pkt(&s, sv[1], "qRcmd,657");
	CHECK("qRcmd with odd hex is refused", !strcmp(r, "E.Malformed monitor command."),
	      "%s", r);
	r = send_pkt(&s, sv[1], "qRcmd,650078");
	CHECK("qRcmd with a NUL is refused", r[0] == 'E', "%s", r);
	r = send_pkt(&s, sv[1], "qRcmd,65786974");
	CHECK("monitor exit asks the session to end",
	      !strcmp(r, "OK") && s.exit_requested, "%s, %d", r, s.exit_requested);

	ops.reg_set = NULL;
	r = send_pkt(&s, sv[1], "M8,1:00");
	CHECK("a read-only target refuses writes", r[0] == 'E', "%s", r);
	test_hostio(&s, sv[1]);
	rsp_conn_free(&s.conn);
	close(sv[0]);
	close(sv[1]);
	return check_exit();
}
