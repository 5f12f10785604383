// What ag-demo, ag-bench, ag-replay and ag-runner share about their command lines: CAF's options
// with no configuration file read unless one is named, --version, and one convention of exit codes
// (README.md, "Exit codes").
#pragma once

#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include <sys/stat.h>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/config_option.hpp>
#include <caf/config_option_adder.hpp>
#include <caf/error.hpp>
#include <caf/pec.hpp>
#include <caf/sec.hpp>
#include <caf/settings.hpp>

#ifndef AG_VERSION
#error "AG_VERSION (the project's version) comes from apps/CMakeLists.txt"
#endif

namespace ag::app {

// The same codes in every program; ag-replay's and ag-runner's earlier ones are kept as they were.
enum exit_code : int {
  exit_ok = 0,
  exit_failed = 1,        // the run failed, diverged, or its results are wrong
  exit_usage = 2,         // a bad command line or configuration file (or ag-replay: trace)
  exit_cannot_run = 3,    // the environment: a runner did not start, a file cannot be written
  exit_stream_failed = 4, // ag-runner: its device's stream failed to start or stopped
};

// Printed after the options by --help.
inline constexpr const char* exit_codes_text =
  "exit codes: 0 success; 1 the run failed, diverged or gave wrong results; 2 a bad command line,\n"
  "configuration file or (ag-replay) trace; 3 cannot run here (a runner did not start, a file\n"
  "cannot be written); 4 (ag-runner) its device's stream failed or stopped\n"
  "configuration: none is read unless --config-file names one (CAF's help above says\n"
  "caf-application.ini, which is never read from the working directory)\n";

// The largest configuration file read (--config-file): far more than any real one, and a bound
// on what /dev/zero or a mistaken path can make the program read.
constexpr std::size_t max_config_file_bytes = std::size_t{1} << 20;

// "not an option" from caf::pec::not_an_option, "cannot open file" from caf::sec::cannot_open_file.
// The whole of each program's main(): runs `start`, and turns an exception that escaped it into a
// message naming the program and `code`, never into std::terminate.
inline int guarded_main(const char* name, int (*start)(int, char**), int argc, char** argv,
                        int code) {
  try {
    return start(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: an unknown exception\n", name);
  }
  return code;
}

inline std::string words(std::string name) {
  for (auto& c : name)
    if (c == '_')
      c = ' ';
  return name;
}

// A parse error as a sentence: "--size=abc: type mismatch", "line 3, column 8: unexpected
// character" (from a file).
inline std::string describe(const caf::error& err) {
  std::string what;
  if (err.category() == caf::atom("parser"))
    what = words(caf::to_string(static_cast<caf::pec>(err.code())));
  else if (err.category() == caf::atom("system"))
    what = words(caf::to_string(static_cast<caf::sec>(err.code())));
  else
    return caf::to_string(err);
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string>())
    return ctx.get_as<std::string>(0) + ": " + what;
  if (ctx.match_elements<caf::settings>()) {
    const auto& where = ctx.get_as<caf::settings>(0);
    if (const auto argument = caf::get_if<std::string>(&where, "argument"))
      return *argument + ": " + what;
    const auto line = caf::get_if<int64_t>(&where, "line");
    const auto column = caf::get_if<int64_t>(&where, "column");
    if (line && column)
      return "line " + std::to_string(*line) + ", column " + std::to_string(*column) + ": " + what;
  }
  return ctx.empty() ? what : what + " " + caf::to_string(ctx);
}

// Why `path` cannot be a configuration file, or empty.
inline std::string config_file_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return "not a regular file";
  if (static_cast<std::size_t>(st.st_size) > max_config_file_bytes)
    return "larger than " + std::to_string(max_config_file_bytes) + " bytes";
  return {};
}

// The base of each program's config: CAF's options (scheduler.*, logger.*), --version, and
// --config-file=FILE as the only way a configuration file is read. CAF 0.17 reads
// caf-application.ini from the working directory by default; a program started in someone's
// directory must not depend on what lies there.
class config : public caf::actor_system_config {
public:
  bool version = false;

  // `program`: the name messages begin with. `config_file_allowed`: false for ag-runner, whose
  // whole configuration comes from its controller.
  config(std::string program, bool config_file_allowed)
    : program_(std::move(program)), config_file_allowed_(config_file_allowed) {
    opt_group{custom_options_, "global"}.add(version, "version",
                                             "print the program's name and version, and exit");
  }

  const std::string& program() const noexcept { return program_; }

  // Reads the command line (`args` without the program's name). Returns the code to exit with
  // now (--help, --version, or a usage error, printed), or nothing to go on.
  std::optional<int> read(caf::actor_system_config::string_list args) {
    const auto* file_opt = custom_options_.qualified_name_lookup("global.config-file");
    const auto [at, named] = caf::find_by_long_name(*file_opt, args.begin(), args.end());
    caf::error err;
    if (at == args.end()) {
      std::istringstream no_file; // a stream that is not good() makes CAF read no file
      no_file.setstate(std::ios::failbit);
      err = parse(std::move(args), no_file);
    } else {
      const std::string path{named.begin(), named.end()};
      if (!config_file_allowed_)
        return usage(*at + ": " + program_ + " reads no configuration file");
      if (path.empty())
        return usage(*at + ": names no file");
      if (auto why = config_file_problem(path); !why.empty())
        return usage("--config-file=" + path + ": " + why);
      // The file's own errors first, so that they can name it; then the file and the command
      // line together, the command line winning.
      std::ifstream check{path};
      caf::settings scratch;
      if (auto file_err = parse_config(check, custom_options_, scratch))
        return usage("--config-file=" + path + ": " + describe(file_err));
      std::ifstream in{path};
      if (!in)
        return usage("--config-file=" + path + ": cannot open it");
      err = parse(std::move(args), in);
    }
    if (err)
      return usage(describe(err));
    // CAF 0.17 divides by these: a 0 ends the program by SIGFPE once the actor system starts.
    for (const char* name : {"scheduler.max-threads", "work-stealing.aggressive-steal-interval",
                             "work-stealing.moderate-steal-interval",
                             "work-stealing.relaxed-steal-interval"})
      if (const auto n = caf::get_if<size_t>(&content, name); n && *n == 0)
        return usage(std::string{name} + "=0: expected at least 1");
    if (version) {
      std::printf("%s actorgraph %s\n", program_.c_str(), AG_VERSION);
      return exit_ok;
    }
    if (cli_helptext_printed) { // --help, --long-help or --dump-config, printed by CAF
      if (caf::get_or(content, "help", false) || caf::get_or(content, "long-help", false))
        std::printf("%s", exit_codes_text);
      return exit_ok;
    }
    return std::nullopt;
  }

  std::optional<int> read(int argc, char** argv) {
    return read(caf::actor_system_config::string_list(argv + 1, argv + argc));
  }

  // Prints "PROGRAM: what (PROGRAM --help)" and gives the usage error's code.
  int usage(const std::string& what) const {
    std::fprintf(stderr, "%s: %s (%s --help)\n", program_.c_str(), what.c_str(), program_.c_str());
    return exit_usage;
  }

  // Prints "PROGRAM: what" and gives `code`.
  int fail(int code, const std::string& what) const {
    std::fprintf(stderr, "%s: %s\n", program_.c_str(), what.c_str());
    return code;
  }

private:
  std::string program_;
  bool config_file_allowed_;
};

} // namespace ag::app
