// SPDX-License-Identifier: BSD-2-Clause
// session.cpp - lifetime of the library handles behind `hwt load`.
#include "session.h"

#include <ftw.h>
#include <stdio.h>

#include <utility>

namespace hwt_lldb {

namespace {
int RemoveEntry(const char *path, const struct stat *, int, struct FTW *)
{
	// Best effort: a temporary copy that cannot be removed is left in
	// the temporary directory, nothing depends on it.
	remove(path);
	return 0;
}
} // namespace

Session::~Session()
{
	for (hwt_cursor *c : cursors_)
		hwt_cursor_free(c);
	for (hwt_history *h : histories_)
		hwt_history_free(h);
	hwt_bundle_images_free(images_);
	hwt_bundle_free(bundle_);
	// After the handles: the image maps the module copies in it.
	if (!tmpdir_.empty())
		nftw(tmpdir_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

int Session::Open(const char *path, hwt_err *err)
{
	hwt_image *program;
	int rc;

	if ((rc = hwt_bundle_read(path, &bundle_, err)) ||
	    (rc = hwt_bundle_images_new(bundle_, &images_, err)))
		return rc;
	path_ = path;
	histories_.assign(bundle_->nthreads, nullptr);
	cursors_.assign(bundle_->nthreads, nullptr);
	// A module that cannot be mapped fails the load, as in `hwtrace
	// dump`: a history read without its code would mislead.
	return hwt_bundle_images_program(images_, &program, err);
}

hwt_image *Session::Image(size_t i) const
{
	hwt_image *img;
	hwt_err err = {};

	hwt_bundle_images_thread(images_, i, &img, &err);
	return img;
}

std::string Session::ThreadName(size_t i) const
{
	char buf[32];

	return hwt_bundle_thread_name(bundle_, i, buf, sizeof(buf));
}

long Session::FindThread(int64_t tid) const
{
	long found = -1;

	/* The program's, else a child's last: a history of the same tid
	 * before its exec ran other code. */
	for (size_t i = 0; i < bundle_->nthreads; i++) {
		if (bundle_->threads[i].tid != tid)
			continue;
		if (bundle_->threads[i].process == 0)
			return (long)i;
		found = (long)i;
	}
	return found;
}

int Session::History(size_t i, hwt_history **out, hwt_err *err)
{
	int rc;

	hwt_image *img;

	if (!histories_[i] &&
	    ((rc = hwt_bundle_images_thread(images_, i, &img, err)) ||
	     (rc = hwt_history_open(bundle_, i, img, &histories_[i], err)))) {
		histories_[i] = nullptr;
		return hwt_err_prefix(err, "thread %s: ",
				      ThreadName(i).c_str()), rc;
	}
	*out = histories_[i];
	return 0;
}

int Session::Cursor(size_t i, hwt_cursor **out, hwt_err *err)
{
	hwt_history *h;
	int rc;

	if (!cursors_[i]) {
		if ((rc = History(i, &h, err)))
			return rc;
		if ((rc = hwt_cursor_new(h, Image(i), &cursors_[i], err))) {
			cursors_[i] = nullptr;
			return rc;
		}
	}
	*out = cursors_[i];
	return 0;
}

namespace {
// Sessions by target; a handful at most, so a list is enough.
std::vector<std::pair<lldb::SBTarget, std::unique_ptr<Session>>> &Registry()
{
	static std::vector<std::pair<lldb::SBTarget, std::unique_ptr<Session>>> r;
	return r;
}
} // namespace

Session *FindSession(lldb::SBTarget target)
{
	for (auto &e : Registry())
		if (e.first == target)
			return e.second.get();
	return nullptr;
}

void SetSession(lldb::SBTarget target, std::unique_ptr<Session> s)
{
	for (auto &e : Registry())
		if (e.first == target) {
			e.second = std::move(s);
			return;
		}
	Registry().emplace_back(target, std::move(s));
}

lldb::SBTarget CurrentTarget(lldb::SBDebugger &dbg)
{
	lldb::SBTarget t = dbg.GetSelectedTarget();

	return t.IsValid() ? t : dbg.GetDummyTarget();
}

} // namespace hwt_lldb
