/* hwtdemo.h - interface of libhwtdemo.so (tests/programs/hwtdemo.c). */
#ifndef HWTDEMO_H
#define HWTDEMO_H

int hwt_demo_sum(int n);
int hwt_demo_apply(int (*fn)(int), int n);

#endif
/* SPDX-License-Identifier: BSD-2-Clause */
