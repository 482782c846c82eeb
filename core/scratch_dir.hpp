// What: a private temporary directory (mkdtemp under $TMPDIR, else /tmp) removed when the object
//       goes out of scope, and also when the process is ended by SIGINT, SIGTERM or SIGHUP while
//       it exists (a signal handler removes every live one, then re-raises the signal).
// Why: a launcher killed between or during launches (the terminal closed, `kill`) left its
//      gaccum-validate-* / gaccum-profile-* directory behind. comm/launcher.cpp handles SIGINT
//      and SIGTERM itself while ranks run (it stops them, then these destructors run); this
//      covers the rest of the process's life and SIGHUP.
//
// The handler is best effort: it removes the directory's entries (one level, as the users of
// this class write only plain files) with unlink/rmdir. It is installed only for signals whose
// disposition is the default (an ignored SIGHUP under nohup stays ignored).
#pragma once

#include <string>

namespace gaccum {

class ScratchDir {
 public:
  // `prefix` names the directory, e.g. "gaccum-validate" -> $TMPDIR/gaccum-validate-XXXXXX.
  // RuntimeFailure naming $TMPDIR when it cannot be created.
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int slot_ = -1;  // in the signal handler's table; -1 when it was full
};

}  // namespace gaccum
