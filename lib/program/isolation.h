// File: program/isolation.h
//
// Running each instance in a child process (--torchbench_isolate=process) so
// that a segfault, an abort, an exit, a hang or an out-of-memory kill in one
// model becomes that instance's error and the run goes on; and Ctrl-C
// handling that ends the current instance and keeps what finished.
#ifndef TORCHBENCH_PROGRAM_ISOLATION_H_
#define TORCHBENCH_PROGRAM_ISOLATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/journal.h"

namespace torchbench {

// Installs a SIGINT/SIGTERM handler (Slurm and Kubernetes stop a job with
// SIGTERM): the first signal sets Interrupted() and is passed on to a running
// child; a second one kills the child and ends the process at once.
// `announce`: print what happens on the first signal (not in a child).
void InstallInterruptHandler(bool announce);
bool Interrupted();

// What a child's wait status means, as an instance's error message:
// "crashed: signal 11 (SIGSEGV, Segmentation fault)", "exited with status
// 3 before reporting a result", ... `oom_kills` is how many processes the
// kernel's out-of-memory killer ended in this cgroup while the child ran (a
// SIGKILL is then blamed on it). `stderr_tail` (the child's last stderr
// line) is appended when not empty.
std::string DescribeChildEnd(int wait_status, long oom_kills,
                             const std::string& stderr_tail);

// This cgroup's count of out-of-memory kills (cgroup v2 memory.events), or
// -1 when unknown.
long OomKillCount();

struct ChildOptions {
  std::string executable;         // Usually /proc/self/exe.
  std::vector<std::string> args;  // argv[1...].
  double timeout_seconds = 0;     // 0: none.
  std::string result_path;        // The child's one-record journal.
};

// Runs one child and returns its instance record: the one it journaled, or
// one error run named `instance` that says how the child ended (crash,
// exit, timeout, out-of-memory kill). The child runs in its own process
// group with stdout discarded; its stderr is passed on when it ends. Returns
// Cancelled when Interrupted() became true while it ran.
absl::StatusOr<InstanceRecord> RunChild(const std::string& instance,
                                        const ChildOptions& options);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_ISOLATION_H_
