/* SPDX-License-Identifier: BSD-2-Clause */
// session.h - what `hwt load` opened for one LLDB target: the bundle, its
// image, per-thread histories (opened when first asked for) and the
// navigation cursor. All decoding is the C libraries'; this only owns the
// handles and ties them to a target.
#ifndef HWT_LLDB_SESSION_H
#define HWT_LLDB_SESSION_H

#include <lldb/API/LLDB.h>

#include <memory>
#include <string>
#include <vector>

#include "hwt-replay.h"

namespace hwt_lldb {

class Session {
public:
	Session() = default;
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;
	~Session();

	// Read the bundle at path and map its code; 0 or a negative errno.
	int Open(const char *path, hwt_err *err);
	const hwt_bundle *Bundle() const { return bundle_; }
	// The code thread i's history decodes with: its process's (made when
	// first asked for: History(i) says when it cannot be).
	hwt_image *Image(size_t i) const;
	hwt_bundle_images *Images() const { return images_; }
	const std::string &Path() const { return path_; }
	// How thread i is shown: its tid, or a CoreSight trace ID in hex.
	std::string ThreadName(size_t i) const;
	// Index of the thread with this tid (trace ID), or -1.
	long FindThread(int64_t tid) const;
	int History(size_t i, hwt_history **out, hwt_err *err);
	// The cursor of thread i, created at the newest instruction when the
	// thread is first navigated; one cursor per thread keeps positions.
	int Cursor(size_t i, hwt_cursor **out, hwt_err *err);

	// A live history: the bundle hwt-server saved into tmpdir (which the
	// session owns and removes) at the process's stop stop_id.
	void SetLive(const std::string &tmpdir, uint32_t stop_id)
	{
		tmpdir_ = tmpdir;
		live_ = true;
		stop_id_ = stop_id;
	}
	bool Live() const { return live_; }
	uint32_t StopId() const { return stop_id_; }
	// The plugin moved the process itself (navigation under hwt-server):
	// the history is still that of the process, at its new stop.
	void SetStopId(uint32_t stop_id) { stop_id_ = stop_id; }

private:
	hwt_bundle *bundle_ = nullptr;
	hwt_bundle_images *images_ = nullptr;
	std::string path_;
	std::vector<hwt_history *> histories_;
	std::vector<hwt_cursor *> cursors_;
	std::string tmpdir_;
	bool live_ = false;
	uint32_t stop_id_ = 0;
};

// The session of a target (nullptr when none is loaded), and replacing it.
Session *FindSession(lldb::SBTarget target);
void SetSession(lldb::SBTarget target, std::unique_ptr<Session> s);
// The target commands act on: the selected one, else LLDB's dummy target
// (a bundle can be examined without any target).
lldb::SBTarget CurrentTarget(lldb::SBDebugger &dbg);

} // namespace hwt_lldb
#endif
