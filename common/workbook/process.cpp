// Running a child process with a timeout (see process.h).
#include "common/workbook/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/platform/errors.h"

namespace vramlab::workbook {

std::string ProcessResult::describe() const {
  if (!started) return "could not be started";
  if (timed_out) return "timed out after " + std::to_string(static_cast<long>(seconds)) + " s";
  if (signal != 0)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& output_file, double timeout_seconds) {
  if (argv.empty()) throw UsageError("run_process: no program given");
  if (!(timeout_seconds > 0))
    throw UsageError("run_process: timeout must be > 0, got " + std::to_string(timeout_seconds));
  const int out_fd = ::open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0)
    throw std::runtime_error("cannot write " + output_file.string() + ": " + std::strerror(errno));

  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  // A pipe closed on exec tells the parent whether exec succeeded.
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    ::close(out_fd);
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out_fd);
    ::close(exec_pipe[0]);
    ::close(exec_pipe[1]);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execvp(args[0], args.data());
    const char failed = 1;
    const ssize_t written = ::write(exec_pipe[1], &failed, 1);
    ::_exit(written == 1 ? 127 : 126);
  }
  ::setpgid(pid, pid);
  ::close(out_fd);
  ::close(exec_pipe[1]);
  char exec_failed = 0;
  const bool exec_error = ::read(exec_pipe[0], &exec_failed, 1) == 1;
  ::close(exec_pipe[0]);

  ProcessResult result;
  result.started = !exec_error;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    result.seconds = elapsed;
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (elapsed > timeout_seconds) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.timed_out = true;
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(elapsed < 1.0 ? 5 : 25));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string tail_of_file(const std::filesystem::path& file, size_t max_lines) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

}  // namespace vramlab::workbook
