// SPDX-License-Identifier: BSD-2-Clause
/* breakpoints.c - Z/z packets. Execution breakpoints (Z0 software, Z1
 * hardware: the same here) are addresses: the replay cursor stops at them
 * and a live target's collector checks them at every step, so nothing is
 * ever written into the program and `m` reads its original bytes.
 * Watchpoints (Z2 write, Z3 read, Z4 access) need a target that sees data
 * accesses: a live process under the collector; a recording with a data
 * history answers write watchpoints from its stores (reverse.c). */
#include <stdio.h>
#include <string.h>

#include "server.h"

static int exec_bp(struct server *s, bool insert, bool hw, uint64_t addr)
{
	for (size_t i = 0; i < s->nbps; i++)
		if (s->bps[i] == addr) {
			if (!insert) {
				s->nbps--;
				s->bps[i] = s->bps[s->nbps];
				s->bp_hw[i] = s->bp_hw[s->nbps];
			}
			return rsp_send_str(&s->conn, "OK");
		}
	if (!insert)
		return rsp_send_str(&s->conn, "OK");
	if (s->nbps == SRV_MAX_BREAKPOINTS)
		return rsp_send_str(&s->conn, "E.Too many breakpoints.");
	s->bp_hw[s->nbps] = hw;
	s->bps[s->nbps++] = addr;
	return rsp_send_str(&s->conn, "OK");
}

static int watch(struct server *s, bool insert, int kind, uint64_t addr,
		 uint64_t len)
{
	/* An empty reply tells GDB the watchpoint type is not supported, so
	 * it falls back to software watchpoints (single-stepping) itself. */
	if (!s->ops->can_watch || s->no_watch)
		return rsp_send_str(&s->conn, "");
	if (kind != 2 && (s->ops->watch_writes_only || s->watch_past_only))
		return rsp_send_str(&s->conn, "E.A recording keeps the stores "
				    "of the past, not its reads: only write "
				    "watchpoints can be answered.");
	for (size_t i = 0; i < s->nwatches; i++) {
		struct srv_watch *w = &s->watches[i];

		if (w->addr == addr && w->len == len && w->kind == kind) {
			if (!insert)
				*w = s->watches[--s->nwatches];
			return rsp_send_str(&s->conn, "OK");
		}
	}
	if (!insert)
		return rsp_send_str(&s->conn, "OK");
	/* The debug registers' rules: 1, 2, 4 or 8 aligned bytes. */
	if ((len != 1 && len != 2 && len != 4 && len != 8) || addr % len)
		return rsp_send_str(&s->conn, "E.A watchpoint covers 1, 2, 4 or "
				    "8 aligned bytes.");
	if (s->nwatches == SRV_MAX_WATCHES)
		return rsp_send_str(&s->conn, "E.All 4 debug registers are in "
				    "use: delete a watchpoint first.");
	s->watches[s->nwatches++] = (struct srv_watch){ addr, (uint32_t)len,
							kind };
	return rsp_send_str(&s->conn, "OK");
}

bool breakpoints_hw_at(const struct server *s, uint64_t pc)
{
	for (size_t i = 0; i < s->nbps; i++)
		if (s->bps[i] == pc)
			return s->bp_hw[i];
	return false;
}

bool breakpoints_handle(struct server *s, const char *pkt, int *rc)
{
	uint64_t addr, kind;
	const char *rest;

	if ((pkt[0] != 'Z' && pkt[0] != 'z') || !pkt[1])
		return false;
	if (pkt[1] < '0' || pkt[1] > '4' || pkt[2] != ',') {
		*rc = rsp_send_str(&s->conn, "");
		return true;
	}
	/* Conditions and commands after ';' are evaluated by GDB. */
	if (!srv_parse_hex(pkt + 3, ',', &addr, &rest) ||
	    !srv_parse_hex(rest, strchr(rest, ';') ? ';' : '\0', &kind, NULL)) {
		*rc = rsp_send_str(&s->conn, "E.Malformed breakpoint packet.");
		return true;
	}
	if (pkt[1] <= '1')
		*rc = exec_bp(s, pkt[0] == 'Z', pkt[1] == '1', addr);
	else
		*rc = watch(s, pkt[0] == 'Z', pkt[1] - '0', addr, kind);
	return true;
}
