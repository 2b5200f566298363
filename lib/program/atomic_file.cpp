#include "program/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"

namespace torchbench {
namespace {

std::string Named(const std::string& path, absl::string_view what) {
  return what.empty() ? absl::StrCat("'", path, "'")
                      : absl::StrCat(what, " '", path, "'");
}

absl::Status Failed(absl::string_view doing, const std::string& path,
                    int error) {
  return absl::InternalError(
      absl::StrCat(doing, " '", path, "' failed: ", ErrnoText(error)));
}

// A regular file, or nothing yet, is replaced by rename; anything else
// (a device, a FIFO, a symlink to one) is written where it is.
bool ReplaceableByRename(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;
  return S_ISREG(st.st_mode);
}

// The rename is durable only once the directory entry is on disk; a
// directory that cannot be opened or synced (some network file systems)
// still has the renamed file, so this is best effort.
void SyncDirectoryOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

absl::Status WriteAll(int fd, const std::string& path, absl::string_view text,
                      absl::string_view doing) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failed(doing, path, errno);
    }
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

std::string ErrnoText(int error) {
  const char* name = nullptr;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  name = ::strerrorname_np(error);
#endif
  return name != nullptr
             ? absl::StrCat(std::strerror(error), " (", name, ")")
             : absl::StrCat(std::strerror(error), " (errno ", error, ")");
}

void IgnoreFileSizeSignal() { ::signal(SIGXFSZ, SIG_IGN); }

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view text,
                                 absl::string_view what) {
  auto file = AtomicFile::Create(path);
  if (!file.ok()) {
    return absl::InternalError(absl::StrCat("writing ", Named(path, what), ": ",
                                            file.status().message()));
  }
  const int fd =
      ::open(file->temp_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    return Failed(absl::StrCat("writing ", Named(path, what), " to"),
                  file->temp_path(), errno);
  }
  absl::Status s =
      WriteAll(fd, file->temp_path(), text,
               absl::StrCat("writing ", Named(path, what), " through"));
  if (::close(fd) != 0 && s.ok()) {
    s = Failed(absl::StrCat("writing ", Named(path, what), " through"),
               file->temp_path(), errno);
  }
  if (!s.ok()) return s;  // `file` removes the temporary file.
  return file->Commit();
}

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& path) {
  IgnoreFileSizeSignal();
  if (!ReplaceableByRename(path)) return AtomicFile(path, path, true);
  std::string pattern = absl::StrCat(path, ".tmp-XXXXXX");
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create the temporary file '", pattern,
                     "': ", ErrnoText(errno)));
  }
  // mkostemp's 0600 would make the result unreadable to a group that reads
  // the results; a plain open would have given 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  return AtomicFile(path, std::move(pattern), false);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      in_place_(other.in_place_),
      done_(other.done_) {
  other.done_ = true;
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Discard();
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    in_place_ = other.in_place_;
    done_ = other.done_;
    other.done_ = true;
  }
  return *this;
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  if (done_) return;
  done_ = true;
  if (!in_place_) ::unlink(temp_path_.c_str());
}

absl::Status AtomicFile::Commit() {
  if (done_) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path_, "' was already committed or discarded"));
  }
  if (in_place_) {
    done_ = true;
    return absl::OkStatus();
  }
  const int fd = ::open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    Discard();
    return Failed(absl::StrCat("writing '", path_, "' through"), temp_path_,
                  error);
  }
  // A full disk or an I/O error can surface only here (delayed allocation).
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    Discard();
    return Failed(absl::StrCat("writing '", path_, "' through"), temp_path_,
                  error);
  }
  ::close(fd);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    Discard();
    return Failed(absl::StrCat("renaming '", temp_path_, "' to"), path_, error);
  }
  done_ = true;
  SyncDirectoryOf(path_);
  return absl::OkStatus();
}

absl::StatusOr<TornTail> CutTornTail(
    int fd, const std::string& path,
    const std::function<bool(const std::string&)>& whole) {
  TornTail tail;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Failed("reading", path, errno);
  if (!S_ISREG(st.st_mode) || st.st_size == 0) return tail;
  // Back from the end, a block at a time, to the last newline.
  const off_t size = st.st_size;
  off_t end = size;
  off_t cut = 0;
  bool found = false;
  char block[4096];
  while (end > 0 && !found) {
    const off_t start = std::max<off_t>(0, end - off_t{sizeof(block)});
    const ssize_t n =
        ::pread(fd, block, static_cast<size_t>(end - start), start);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failed("reading", path, errno);
    }
    if (n != end - start) {
      return absl::InternalError(
          absl::StrCat("reading '", path, "' failed: it shrank while read"));
    }
    for (ssize_t i = n - 1; i >= 0; --i) {
      if (block[i] == '\n') {
        cut = start + i + 1;
        found = true;
        break;
      }
    }
    end = start;
  }
  tail.size = size;
  if (cut == size) return tail;
  // A record is kilobytes; a torn line of megabytes is judged by its start.
  std::string text(std::min<size_t>(static_cast<size_t>(size - cut), 1 << 24),
                   '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), cut);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (whole != nullptr && static_cast<off_t>(text.size()) == size - cut &&
      whole(text)) {
    absl::Status s = WriteWholeLine(fd, path, "\n", /*can_take_back=*/true,
                                    /*sync=*/false);
    if (!s.ok()) return s;
    tail.size = size + 1;
    tail.completed = true;
    return tail;
  }
  tail.bytes = static_cast<size_t>(size - cut);
  tail.beginning = text.substr(0, 512);
  if (::ftruncate(fd, cut) != 0) {
    return Failed("cutting the torn last line of", path, errno);
  }
  tail.size = cut;
  return tail;
}

absl::Status WriteWholeLine(int fd, const std::string& path,
                            absl::string_view line, bool can_take_back,
                            bool sync) {
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  // With O_APPEND every write goes to the end; under the caller's lock the
  // end before it is where this line starts.
  const off_t before = regular ? st.st_size : 0;
  absl::Status s = WriteAll(fd, path, line, "writing");
  if (s.ok() && sync && regular && ::fsync(fd) != 0) {
    s = Failed("writing", path, errno);
  }
  if (!s.ok() && regular && can_take_back) {
    // Nothing of this line stays: the file ends with the last whole one.
    (void)::ftruncate(fd, before);
  }
  return s;
}

absl::StatusOr<bool> LockFile(int fd, const std::string& path, bool wait) {
  while (::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", path,
                       "' is being written by another process (it holds the "
                       "file's lock)"));
    }
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS ||
        errno == EINVAL) {
      return false;
    }
    return Failed("locking", path, errno);
  }
  return true;
}

}  // namespace torchbench
