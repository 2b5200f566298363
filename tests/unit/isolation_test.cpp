#include "program/isolation.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace torchbench {
namespace {

// A real wait status: a child that ends as `end` says.
int StatusOf(void (*end)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    end();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(IsolationTest, DescribesHowAChildEnded) {
  const int segv = StatusOf([] {
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  });
  EXPECT_NE(DescribeChildEnd(segv, 0, "").find("crashed: signal 11 (SIGSEGV"),
            std::string::npos)
      << DescribeChildEnd(segv, 0, "");
  const int exit3 = StatusOf([] { _exit(3); });
  EXPECT_EQ(DescribeChildEnd(exit3, 0, "boom"),
            "exited with status 3 before reporting a result; its last stderr "
            "line: boom");
  const int killed = StatusOf([] { raise(SIGKILL); });
  EXPECT_NE(
      DescribeChildEnd(killed, 1, "").find("out-of-memory killer (signal 9"),
      std::string::npos);
  EXPECT_NE(DescribeChildEnd(killed, 0, "").find("from outside the harness"),
            std::string::npos);
}

TEST(IsolationTest, RunChildReportsCrashesAndTimeouts) {
  ChildOptions options;
  options.executable = "/bin/sh";
  options.result_path = ::testing::TempDir() + "/child.jsonl";
  options.args = {"-c", "echo dying >&2; kill -ABRT $$"};
  auto record = RunChild("m/Eval/batch_size:1", options);
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ(record->runs.size(), 1u);
  EXPECT_TRUE(record->runs[0].error_occurred);
  EXPECT_NE(record->runs[0].error_message.find("SIGABRT"), std::string::npos);
  EXPECT_NE(record->runs[0].error_message.find("dying"), std::string::npos);

  options.args = {"-c", "sleep 30"};
  options.timeout_seconds = 0.3;
  record = RunChild("m/Eval/batch_size:1", options);
  ASSERT_TRUE(record.ok());
  EXPECT_NE(record->runs[0].error_message.find("timed out"), std::string::npos);

  // A child that journals its record is believed, whatever its exit status.
  options.timeout_seconds = 0;
  BenchmarkRun ran;
  ran.run_name.function_name = "m/Eval/batch_size:1";
  const std::string record_line = RecordToJson({"m/Eval/batch_size:1", {ran}});
  options.args = {"-c",
                  "printf '%s\\n%s\\n' '{\"torchbench_journal\": 1, "
                  "\"context\": {}}' '" +
                      record_line + "' > " + options.result_path + "; exit 1"};
  record = RunChild("m/Eval/batch_size:1", options);
  ASSERT_TRUE(record.ok());
  EXPECT_FALSE(record->runs[0].error_occurred);
}

}  // namespace
}  // namespace torchbench
