#include "program/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace torchbench {
namespace atomic_file_test {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory per test: leftover temporary files are visible.
std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/atomic_file_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

int FilesIn(const std::string& dir) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++n;
  }
  return n;
}

// RLIMIT_FSIZE for this process while alive, as `ulimit -f` sets it.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() { ::setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  rlimit saved_{};
};

TEST(AtomicFileTest, ErrnoTextNamesTheErrno) {
  EXPECT_EQ(ErrnoText(EFBIG), "File too large (EFBIG)");
  EXPECT_EQ(ErrnoText(ENOSPC), "No space left on device (ENOSPC)");
}

TEST(AtomicFileTest, WritesAndReplacesLeavingNoTemporaryFile) {
  const std::string dir = FreshDir("replace");
  const std::string path = dir + "/out.json";
  ASSERT_TRUE(WriteFileAtomically(path, "first\n").ok());
  EXPECT_EQ(Slurp(path), "first\n");
  ASSERT_TRUE(WriteFileAtomically(path, "second\n").ok());
  EXPECT_EQ(Slurp(path), "second\n");
  EXPECT_EQ(FilesIn(dir), 1);
}

TEST(AtomicFileTest, UncommittedLeavesTheOldFile) {
  const std::string dir = FreshDir("discard");
  const std::string path = dir + "/out.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old\n").ok());
  {
    auto file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_NE(file->temp_path(), path);
    EXPECT_EQ(file->temp_path().rfind(path + ".tmp-", 0), 0u);
    std::ofstream(file->temp_path()) << "half of the ne";
    // Destroyed without Commit: a run that failed or was stopped.
  }
  EXPECT_EQ(Slurp(path), "old\n");
  EXPECT_EQ(FilesIn(dir), 1);

  auto file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok());
  std::ofstream(file->temp_path()) << "new\n";
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Slurp(path), "new\n");
  EXPECT_FALSE(file->Commit().ok());  // Once.
  EXPECT_EQ(FilesIn(dir), 1);
}

TEST(AtomicFileTest, ADeviceIsWrittenInPlace) {
  auto file = AtomicFile::Create("/dev/null");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->temp_path(), "/dev/null");
  EXPECT_TRUE(file->Commit().ok());
  EXPECT_TRUE(WriteFileAtomically("/dev/null", "x").ok());
  // A full disk is one message naming the file and the errno.
  const absl::Status full = WriteFileAtomically("/dev/full", "x", "the table");
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.message().find("the table '/dev/full'"), std::string::npos)
      << full;
  EXPECT_NE(full.message().find("(ENOSPC)"), std::string::npos) << full;
}

TEST(AtomicFileTest, AMissingDirectoryIsOneMessage) {
  const absl::Status s =
      WriteFileAtomically("/nonexistent/dir/out.json", "x", "the output");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the output '/nonexistent/dir/out.json'"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("(ENOENT)"), std::string::npos) << s;
}

TEST(AtomicFileTest, AFileSizeLimitLeavesTheOldFile) {
  IgnoreFileSizeSignal();
  const std::string dir = FreshDir("limit");
  const std::string path = dir + "/out.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old\n").ok());
  absl::Status s;
  {
    FileSizeLimit limit(100);
    s = WriteFileAtomically(path, std::string(1000, 'x'));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("(EFBIG)"), std::string::npos) << s;
  EXPECT_EQ(Slurp(path), "old\n");
  EXPECT_EQ(FilesIn(dir), 1);
}

TEST(AtomicFileTest, CutTornTailCutsOnlyAPartialLastLine) {
  const std::string dir = FreshDir("torn");
  const std::string path = dir + "/lines.jsonl";
  auto cut = [&](const std::string& text, auto whole) {
    std::ofstream(path, std::ios::trunc) << text;
    const int fd = ::open(path.c_str(), O_RDWR | O_APPEND);
    auto tail = CutTornTail(fd, path, whole);
    ::close(fd);
    return tail;
  };
  auto tail = cut("{\"a\": 1}\n{\"b\": 2}\n{\"c\": ", nullptr);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(tail->bytes, 6u);
  EXPECT_EQ(tail->beginning, "{\"c\": ");
  EXPECT_EQ(Slurp(path), "{\"a\": 1}\n{\"b\": 2}\n");

  tail = cut("{\"a\": 1}\n", nullptr);  // Whole: untouched.
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->bytes, 0u);
  EXPECT_EQ(Slurp(path), "{\"a\": 1}\n");

  tail = cut("no newline at all", nullptr);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->size, 0);
  EXPECT_EQ(Slurp(path), "");

  // Killed between a whole line and its newline: the newline is added.
  tail = cut("{\"a\": 1}\n{\"b\": 2}",
             [](const std::string& line) { return line == "{\"b\": 2}"; });
  ASSERT_TRUE(tail.ok());
  EXPECT_TRUE(tail->completed);
  EXPECT_EQ(tail->bytes, 0u);
  EXPECT_EQ(Slurp(path), "{\"a\": 1}\n{\"b\": 2}\n");

  // Longer than one read block.
  const std::string big(10000, 'x');
  tail = cut("{\"a\": 1}\n" + big, nullptr);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->bytes, big.size());
  EXPECT_EQ(Slurp(path), "{\"a\": 1}\n");
}

TEST(AtomicFileTest, ALineThatDoesNotFitIsTakenBack) {
  IgnoreFileSizeSignal();
  const std::string dir = FreshDir("whole_line");
  const std::string path = dir + "/lines.jsonl";
  std::ofstream(path) << "one\n";
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND);
  ASSERT_GE(fd, 0);
  absl::Status s;
  {
    FileSizeLimit limit(10);  // Room for part of the line only.
    s = WriteWholeLine(fd, path, "two two two two\n", /*can_take_back=*/true,
                       /*sync=*/true);
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'" + path + "'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("(EFBIG)"), std::string::npos) << s;
  EXPECT_EQ(Slurp(path), "one\n");
  EXPECT_TRUE(WriteWholeLine(fd, path, "two\n", true, true).ok());
  ::close(fd);
  EXPECT_EQ(Slurp(path), "one\ntwo\n");
}

TEST(AtomicFileTest, ASecondLockIsRefused) {
  const std::string dir = FreshDir("lock");
  const std::string path = dir + "/lines.jsonl";
  std::ofstream(path) << "";
  const int a = ::open(path.c_str(), O_RDWR | O_APPEND);
  const int b = ::open(path.c_str(), O_RDWR | O_APPEND);
  auto first = LockFile(a, path, /*wait=*/false);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  auto second = LockFile(b, path, /*wait=*/false);
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  ::close(a);
  EXPECT_TRUE(LockFile(b, path, /*wait=*/false).ok());
  ::close(b);
}

}  // namespace
}  // namespace atomic_file_test
}  // namespace torchbench
