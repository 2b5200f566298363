#include "program/isolation.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace torchbench {
namespace {

std::atomic<bool> interrupted{false};
std::atomic<int> signals_seen{0};
std::atomic<pid_t> running_child{0};  // Also its process group.
bool announce_interrupt = true;

void OnSignal(int sig) {
  // Only async-signal-safe calls here: kill, write, signal, raise.
  const pid_t child = running_child.load();
  if (signals_seen.fetch_add(1) >= 1) {
    if (child > 0) ::kill(-child, SIGKILL);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  interrupted.store(true);
  if (child > 0) ::kill(-child, SIGINT);
  if (announce_interrupt) {
    static const char kMessage[] =
        "\ntorchbench: interrupted: ending the current instance and writing "
        "what finished (again to stop at once)\n";
    [[maybe_unused]] const ssize_t n =
        ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  const size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

}  // namespace

void InstallInterruptHandler(bool announce) {
  announce_interrupt = announce;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

bool Interrupted() { return interrupted.load(); }

std::string DescribeChildEnd(int wait_status, long oom_kills,
                             const std::string& stderr_tail) {
  std::string text;
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = sigabbrev_np(sig);
    const std::string name =
        absl::StrCat("signal ", sig, " (SIG", abbrev ? abbrev : "?", ", ",
                     strsignal(sig), ")");
    if (sig == SIGKILL && oom_kills > 0) {
      text = absl::StrCat("killed by the kernel's out-of-memory killer (", name,
                          "; this cgroup's memory.events oom_kill rose by ",
                          oom_kills, ")");
    } else if (sig == SIGKILL) {
      text = absl::StrCat("killed by ", name,
                          " from outside the harness; the kernel's "
                          "out-of-memory killer is the usual sender");
    } else {
      text = absl::StrCat("crashed: ", name,
                          WCOREDUMP(wait_status) ? ", core dumped" : "");
    }
  } else if (WIFEXITED(wait_status)) {
    text = absl::StrCat("exited with status ", WEXITSTATUS(wait_status),
                        " before reporting a result");
  } else {
    text = absl::StrCat("ended with wait status ", wait_status);
  }
  if (!stderr_tail.empty()) {
    absl::StrAppend(&text, "; its last stderr line: ", stderr_tail);
  }
  return text;
}

long OomKillCount() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  std::string path;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.empty()) return -1;
  std::ifstream events("/sys/fs/cgroup" + path + "/memory.events");
  std::string key;
  long value = 0;
  while (events >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return -1;
}

absl::StatusOr<InstanceRecord> RunChild(const std::string& instance,
                                        const ChildOptions& options) {
  const std::string stderr_path = options.result_path + ".stderr";
  std::vector<std::string> args = {options.executable};
  args.insert(args.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const long oom_before = OomKillCount();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return absl::InternalError(
        absl::StrCat("cannot start a child process: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Its own process group, so that a terminal's Ctrl-C reaches the parent
    // only and the parent decides; and so a timeout kills all of it.
    ::setpgid(0, 0);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    const int err_fd =
        ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
    if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  running_child.store(pid);
  if (Interrupted()) ::kill(-pid, SIGINT);  // Raced with the handler.

  int status = 0;
  bool timed_out = false;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!timed_out && options.timeout_seconds > 0 &&
        elapsed > options.timeout_seconds) {
      ::kill(-pid, SIGKILL);
      timed_out = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  running_child.store(0);
  const long oom_after = OomKillCount();

  const std::string child_stderr = ReadAll(stderr_path);
  std::cerr << child_stderr << std::flush;
  ::unlink(stderr_path.c_str());
  auto journal = ReadJournal(options.result_path);
  ::unlink(options.result_path.c_str());
  if (journal.ok()) {
    for (auto& record : journal->records) {
      if (record.instance == instance) return std::move(record);
    }
  }
  if (Interrupted()) {
    return absl::CancelledError(absl::StrCat(instance, " was interrupted"));
  }
  std::string message;
  if (timed_out) {
    message =
        absl::StrCat("timed out: still running after ", options.timeout_seconds,
                     " s (--torchbench_instance_timeout); killed");
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    message = absl::StrCat("could not run ", options.executable, " (exit 127)");
  } else {
    message = DescribeChildEnd(
        status, oom_before >= 0 && oom_after >= 0 ? oom_after - oom_before : 0,
        LastLine(child_stderr));
  }
  return ErrorRecord(instance, std::move(message));
}

}  // namespace torchbench
