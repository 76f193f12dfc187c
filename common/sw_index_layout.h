/* SPDX-License-Identifier: BSD-2-Clause */
/* sw_index_layout.h - the byte layout of an hwt-sw trace index, shared
 * by its writer (sw_pack.c) and reader (sw_index.c).
 *
 * Index file: one zstd frame with its content checksum (damage to the
 * index itself is found before any of it is believed) of, little-endian:
 *   header   32 bytes: "HWTI", u32 version, u64 decoded size,
 *            u32 frames, u32 chunks, u32 cuts, u32 stride
 *   frames   24 bytes each: u64 offset in the file, u32 length,
 *            u32 content checksum, u32 decoded length, u32 chunks
 *   chunks   40 bytes each: u64 first_pc, u64 first_seq, u64 last_pc,
 *            u32 payload_size, u32 insn_count, u32 flags, u32 cuts
 *   cuts     24 bytes each, chunk by chunk: u32 record offset in the
 *            payload, u8 record length, u8 flags (1 async, 2 the
 *            instruction before is known), u16 0, u64 pc, u32 the
 *            chunk's instructions before it, u32 0
 * Version 1 (still read) had 16-byte cuts, without their last 8 bytes,
 * and plain chunks only.
 */
#ifndef HWT_SW_INDEX_LAYOUT_H
#define HWT_SW_INDEX_LAYOUT_H

#define HWT_SWX_HDR_BYTES 32u
#define HWT_SWX_FRAME_BYTES 24u
#define HWT_SWX_CHUNK_BYTES 40u
#define HWT_SWX_CUT_BYTES 24u
#define HWT_SWX_CUT_BYTES_V1 16u
#define HWT_SWX_CUT_ASYNC 1u
#define HWT_SWX_CUT_PREV 2u
/* Frame_Header_Descriptor bit 2: the frame ends with a content checksum
 * (RFC 8878, 3.1.1.1.1). */
#define HWT_ZSTD_FHD_CHECKSUM 0x04u
/* zstd level of traces and their indexes: zstd's default. */
#define HWT_SW_ZSTD_LEVEL 3

#endif
