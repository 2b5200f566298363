// File: program/atomic_file.h
//
// Files that a kill, a full disk or a file-size limit cannot leave half
// written. A file written in one go (a profile table, the op-coverage
// registry line, --benchmark_out) goes to a temporary file beside it, is
// fsync'd and renamed over it: a reader sees the old file or the new one,
// never a part. A file appended to line by line (the journal, op-coverage
// instance lines) is locked (LockFile), its torn tail left by a writer that
// died cut off (CutTornTail), and each line written whole or taken back
// (WriteWholeLine).
//
//   // A writer that takes a file name (Google Benchmark, Kineto):
//   auto out = AtomicFile::Create("run.json");
//   ... write out->temp_path() ...
//   absl::Status s = out->Commit();  // or destroy it: the temp file goes
//
// Every error is one message naming the file and the errno
// ("... 'run.json': File too large (EFBIG)").
#ifndef TORCHBENCH_PROGRAM_ATOMIC_FILE_H_
#define TORCHBENCH_PROGRAM_ATOMIC_FILE_H_

#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace torchbench {

// "File too large (EFBIG)": strerror and the errno's name.
std::string ErrnoText(int error);

// A write past a file-size limit (ulimit -f, RLIMIT_FSIZE) raises SIGXFSZ,
// whose default action kills the process mid-write; ignored, the write fails
// with EFBIG and the writer reports it. Idempotent; inherited by exec'd
// children.
void IgnoreFileSizeSignal();

// Writes `text` to `path` atomically (temporary file in the same directory,
// fsync, rename, fsync of the directory). An existing `path` that is not a
// regular file (/dev/stdout, a FIFO, /dev/full) is written in place: a
// rename would replace the device node. `what` names the file in errors
// ("the profile table"); "" for none.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view text,
                                 absl::string_view what = "");

class AtomicFile {
 public:
  // Reserves an empty temporary file beside `path` ("<path>.tmp-XXXXXX", so
  // a glob of *.json does not see it). For a non-regular existing `path`,
  // temp_path() is `path` itself and Commit only checks it.
  static absl::StatusOr<AtomicFile> Create(const std::string& path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary file unless committed: `path` keeps what it had.
  ~AtomicFile();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  // fsyncs the temporary file and renames it over path(). Fails (and leaves
  // path() as it was) when the temporary file is gone or cannot be synced
  // or renamed.
  absl::Status Commit();
  // Removes the temporary file now; path() keeps what it had.
  void Discard();

 private:
  AtomicFile(std::string path, std::string temp_path, bool in_place)
      : path_(std::move(path)),
        temp_path_(std::move(temp_path)),
        in_place_(in_place) {}
  std::string path_;
  std::string temp_path_;
  bool in_place_ = false;
  bool done_ = false;
};

// What CutTornTail found at the end of a file.
struct TornTail {
  off_t size = 0;          // The file's size after the repair.
  size_t bytes = 0;        // Bytes cut off; 0: the last line was whole.
  bool completed = false;  // A whole last line lacked only its newline.
  std::string beginning;   // The first bytes of what was cut (up to 512).
};

// For a file open read-write with O_APPEND (`fd`) and locked by the caller:
// a last line without its newline was cut short by a writer that died, and
// is cut off, so that the next line starts on a line of its own instead of
// being glued to the torn bytes. When `whole` says the last line is complete
// (the writer died between the line and its newline), the newline is added
// instead. Non-regular files (/dev/full, a FIFO) are left alone.
absl::StatusOr<TornTail> CutTornTail(
    int fd, const std::string& path,
    const std::function<bool(const std::string&)>& whole = nullptr);

// Writes `line` (which ends with '\n') at the end of `fd` whole, or not at
// all: a short write (EFBIG, ENOSPC, EIO) is taken back with ftruncate when
// `can_take_back` (the caller holds the file's lock, so the bytes after the
// old end are this call's). `sync`: fsync after the write, so that a machine
// crash keeps the line too.
absl::Status WriteWholeLine(int fd, const std::string& path,
                            absl::string_view line, bool can_take_back,
                            bool sync);

// Takes an exclusive flock on `fd`. Returns true when locked; false when the
// file system cannot lock (ENOLCK, EOPNOTSUPP: then no one else can either).
// `wait`: block until the lock is free; otherwise a lock held by another
// process is FailedPrecondition.
absl::StatusOr<bool> LockFile(int fd, const std::string& path, bool wait);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_ATOMIC_FILE_H_
