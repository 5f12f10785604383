// The four programs (apps/) as a user runs them: --version and --help, a bad option of every kind
// is a usage error (exit 2) naming it and never a signal, the runtime failing to start is exit 3,
// no configuration file is read unless named (a broken caf-application.ini in the working directory
// changes nothing, for the programs and for ag-runner children), and ag-replay refuses what is not
// a regular file at once.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/sub_process.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/temp_files.hpp"

using namespace ag::test;
using Catch::Contains;

namespace {

struct program {
  std::string name;
  std::string path;
};

const program demo{"ag-demo", beside_this_program("ag-demo", AG_TEST_DEMO)};
const program bench{"ag-bench", beside_this_program("ag-bench", AG_TEST_BENCH)};
const program replay{"ag-replay", beside_this_program("ag-replay", AG_TEST_REPLAY)};
const program runner{"ag-runner", beside_this_program("ag-runner", AG_TEST_RUNNER)};
const program node{"ag-node", beside_this_program("ag-node", AG_TEST_NODE)};
const program keygen{"ag-keygen", beside_this_program("ag-keygen", AG_TEST_KEYGEN)};
const program trainer{"ag-train", beside_this_program("ag-train", AG_TEST_TRAIN)};

struct run_result {
  ag::exit_status status;
  std::string out;
  std::string err;
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return q + "'";
}

// `p` with `args` in the working directory `cwd`, its stdout and stderr captured in `scratch`;
// `limit` is the deadline of its exit.
run_result run(const program& p, const std::vector<std::string>& args, const std::string& cwd,
               const temp_dir& scratch,
               std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  std::string command = "cd " + quoted(cwd) + " && exec " + quoted(p.path);
  for (const auto& a : args)
    command += " " + quoted(a);
  command += " >" + quoted(scratch.file("out")) + " 2>" + quoted(scratch.file("err"));
  auto proc = ag::sub_process::spawn("/bin/sh", {"-c", command});
  const auto& st = proc.wait_for(limit); // past it, the sub_process kills it as it goes
  INFO(p.name << " did not exit within " << limit.count() << " ms");
  REQUIRE(st.has_value());
  const auto out = slurp(scratch.file("out"));
  const auto err = slurp(scratch.file("err"));
  return {*st, std::string(out.begin(), out.end()), std::string(err.begin(), err.end())};
}

// A working directory with a caf-application.ini that CAF cannot parse.
void plant_broken_ini(const temp_dir& dir) {
  spit(dir.file("caf-application.ini"), std::string{"this is [not an ini file\n"});
}

} // namespace

TEST_CASE("every program prints its name and the project's version for --version, and the exit "
          "codes for --help, even beside a broken caf-application.ini",
          "[apps]") {
  temp_dir cwd{"apps-test-cwd"}, scratch{"apps-test"};
  plant_broken_ini(cwd);
  for (const auto& p : {demo, bench, replay, runner}) {
    INFO(p.name);
    auto r = run(p, {"--version"}, cwd.path(), scratch);
    INFO(r.err);
    CHECK(r.status.signal == 0);
    CHECK(r.status.code == 0);
    CHECK(r.out == p.name + " actorgraph " + AG_TEST_VERSION + "\n");
    r = run(p, {"--help"}, cwd.path(), scratch);
    CHECK(r.status.code == 0);
    CHECK_THAT(r.out, Contains("--version") && Contains("exit codes: 0 success")
                        && Contains("2 a bad command line"));
  }
}

TEST_CASE("a bad option of any program is a usage error, exit 2, whose message names it",
          "[apps]") {
  temp_dir scratch{"apps-test"};
  struct bad {
    const program& p;
    std::vector<std::string> args;
    std::string named; // what stderr must contain
  };
  const std::vector<bad> cases{
    {demo, {"--size=-5"}, "--size=-5"},
    {demo, {"--size=0"}, "--size=0"},
    {demo, {"--size=99999999999999"}, "--size=99999999999999"},
    {demo, {"--size=99999999999999999999999"}, "--size=99999999999999999999999"},
    {demo, {"--size=abc"}, "--size=abc"},
    {demo, {"--nope"}, "--nope"},
    {demo, {"--mode=fast"}, "--mode=fast"},
    {demo, {"--devices=sim:0,,sim:1"}, "--devices=sim:0,,sim:1"},
    {demo, {"--devices=gpu:0"}, "--devices=gpu:0"},
    {demo, {"--devices=sim:0,sim:0"}, "sim:0 twice"},
    {demo, {"--devices=sim:-1"}, "--devices=sim:-1"},
    {demo, {"extra"}, "\"extra\""},
    {demo, {"--mode=thread", "extra", "--size=4"}, "\"extra\""},
    {bench, {"--mode=fast"}, "--mode=fast"},
    {bench, {"--devices=cpu"}, "--devices=cpu"},
    {bench, {"--devices=auto"}, "--devices=auto"},
    {bench, {"--devices=bogus"}, "--devices=bogus"},
    {bench, {"--quick=maybe"}, "--quick=maybe"},
    {bench, {"--nope"}, "--nope"},
    {bench, {"extra"}, "\"extra\""},
    {replay, {}, "expected one trace file"},
    {replay, {"a.trace", "b.trace"}, "got 2 arguments"},
    {replay, {"t", "--timeout=0"}, "--timeout=0"},
    {replay, {"t", "--timeout=-1"}, "--timeout=-1"},
    {replay, {"t", "--timeout=99999999999999"}, "--timeout=99999999999999"},
    {replay, {"t", "--tolerance=-1"}, "--tolerance=-1"},
    {replay, {"t", "--tolerance=x"}, "--tolerance=x"},
    {replay, {"t", "--devices=sim:x"}, "--devices=sim:x"},
    {replay, {"t", "--nope"}, "--nope"},
    {runner, {"--nope"}, "--nope"},
    {runner, {"extra"}, "\"extra\""},
    {runner, {"--remote-runner"}, "--shm-name=NAME"},
    {runner, {"--config-file=x.ini"}, "--config-file=x.ini"},
    {runner, {"--remote-runner", "--shm-name=x", "--spin-ns=-1"}, "--spin-ns=-1"},
    {runner, {"--remote-runner", "--shm-name=x", "--export-wait-ms=0"}, "--export-wait-ms=0"},
    {runner, {"--remote-runner", "--shm-name=x", "--export-wait-ms=-5"}, "--export-wait-ms=-5"},
  };
  for (const auto& c : cases) {
    std::string line = c.p.name;
    for (const auto& a : c.args)
      line += " " + a;
    const auto r = run(c.p, c.args, scratch.path(), scratch);
    INFO(line << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status.signal == 0);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Contains(c.named) && Contains(c.p.name + ": "));
  }
}

TEST_CASE("a runtime that cannot start is exit 3, naming why", "[apps]") {
  temp_dir scratch{"apps-test"};
  auto r = run(demo, {"--mode=thread", "--devices=sim:0", "--record-trace=" + scratch.file("no/t")},
               scratch.path(), scratch);
  INFO(r.err);
  CHECK(r.status.signal == 0);
  CHECK(r.status.code == 3);
  CHECK_THAT(r.err, Contains(scratch.file("no/t")));
  r = run(runner, {"--remote-runner", "--shm-name=ag-apps-test-no-such-segment"}, scratch.path(),
          scratch);
  INFO(r.err);
  CHECK(r.status.code == 3);
  CHECK_THAT(r.err, Contains("ag-apps-test-no-such-segment"));
}

TEST_CASE("a caf-application.ini in the working directory is not read, by the programs or by "
          "their ag-runner children",
          "[apps]") {
  temp_dir cwd{"apps-test-cwd"}, scratch{"apps-test"};
  plant_broken_ini(cwd);
  // Process mode: the children start in the same directory.
  auto r = run(demo, {"--mode=process", "--devices=sim:0", "--size=64"}, cwd.path(), scratch,
               std::chrono::seconds{120});
  INFO(r.out << r.err);
  CHECK(r.status.signal == 0);
  CHECK(r.status.code == 0);
  CHECK_THAT(r.out, Contains("all results match the reference"));
  r = run(runner, {"--remote-runner", "--shm-name=ag-apps-test-no-such-segment"}, cwd.path(),
          scratch);
  CHECK(r.status.code == 3); // the segment is missing: the ini file played no part
  CHECK_THAT(r.err, Contains("ag-apps-test-no-such-segment"));
  CHECK_THAT(r.err, !Contains("caf-application") && !Contains("parser"));
}

TEST_CASE("a config file is read when --config-file names it, and one that cannot be read is "
          "a usage error naming "
          "it",
          "[apps]") {
  temp_dir cwd{"apps-test-cwd"}, scratch{"apps-test"};
  plant_broken_ini(cwd);
  SECTION("a file it cannot parse, a missing one, a directory, a device") {
    for (const auto& p : {demo, bench, replay}) {
      for (const auto& [file, why] : std::vector<std::pair<std::string, std::string>>{
             {"caf-application.ini", "line 1"},
             {cwd.file("missing.ini"), "No such file"},
             {cwd.path(), "not a regular file"},
             {"/dev/zero", "not a regular file"},
             {"", "names no file"}}) {
        const auto r = run(p, {"--config-file=" + file, "t"}, cwd.path(), scratch);
        INFO(p.name << " --config-file=" << file << ": " << r.err);
        CHECK(r.status.signal == 0);
        CHECK(r.status.code == 2);
        CHECK_THAT(r.err, Contains("--config-file=" + file) && Contains(why));
      }
    }
  }
  SECTION("its options count, and the command line wins over them") {
    spit(cwd.file("demo.ini"), std::string{"[global]\nsize=-5\nmode=\"thread\"\n"});
    auto r = run(demo, {"--config-file=demo.ini"}, cwd.path(), scratch);
    INFO(r.err);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Contains("--size=-5"));
    r = run(demo, {"--config-file=demo.ini", "--size=8", "--devices=sim:0"}, cwd.path(), scratch,
            std::chrono::seconds{120});
    INFO(r.out << r.err);
    CHECK(r.status.code == 0);
    CHECK_THAT(r.out, Contains("thread mode") && !Contains("process mode")
                        && Contains("c = a + b [8]"));
  }
}

TEST_CASE("ag-replay refuses a device, a FIFO and a directory at once, naming the path",
          "[apps][trace]") {
  temp_dir scratch{"apps-test"};
  const auto fifo = scratch.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{
         {"/dev/zero", "not a regular file"},
         {fifo, "not a regular file"},
         {scratch.path(), "is a directory"}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run(replay, {path, "--mode=inproc"}, scratch.path(), scratch);
    INFO(path << ": " << r.out << r.err);
    CHECK(r.status.signal == 0);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Contains("trace " + path + ": " + why));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds{10});
  }
  // A FIFO with a writer that never writes nor closes: refused all the same, without a read.
  const int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(writer >= 0);
  auto r = run(replay, {fifo}, scratch.path(), scratch);
  ::close(writer);
  INFO(r.err);
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Contains("trace " + fifo + ": not a regular file"));
  // --expect is bounded the same way.
  r = run(replay, {AG_TEST_TRACES "/random-thread.trace", "--expect=/dev/zero"},
                     scratch.path(), scratch);
  INFO(r.err);
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Contains("--expect=/dev/zero: not a regular file"));
}

TEST_CASE("ag-node refuses a --runner that is not a program at start, naming --runner, and a public "
          "key given as --key, naming its .secret, and ag-keygen names itself once",
          "[apps]") {
  temp_dir scratch{"apps-test"};
  auto r = run(keygen, {scratch.file("n1")}, scratch.path(), scratch);
  REQUIRE(r.status.code == 0);
  r = run(keygen, {scratch.file("ctl")}, scratch.path(), scratch);
  REQUIRE(r.status.code == 0);
  const std::vector<std::string> base{"--name=n1", "--listen=tcp://127.0.0.1:0",
                                      "--allow=" + scratch.file("ctl.public")};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string not_executable = scratch.file("plain-file");
  std::ofstream{not_executable} << "#!/bin/sh\n"; // mode 0644 (umask permitting): not a program
  ::chmod(not_executable.c_str(), 0644);
  for (const std::string& bad :
       std::vector<std::string>{"/nonexistent/ag-runner", scratch.path(), not_executable}) {
    r = run(node, with({"--key=" + scratch.file("n1.secret"), "--runner=" + bad}), scratch.path(),
            scratch);
    INFO("--runner=" << bad << ": " << r.err);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Contains("ag-node: --runner " + bad + " is not an executable file")
                        && !Contains("graph_option"));
  }
  r = run(node, with({"--key=" + scratch.file("n1.public")}), scratch.path(), scratch);
  INFO(r.err);
  CHECK(r.status.code == 3);
  CHECK_THAT(r.err, Contains("public half") && Contains(scratch.file("n1.secret"))
                      && !Contains("chmod"));
  // A second identity of the same name: the files exist. The program's name comes once.
  r = run(keygen, {scratch.file("n1")}, scratch.path(), scratch);
  INFO(r.err);
  CHECK(r.status.code != 0);
  CHECK_THAT(r.err, Contains("ag-keygen: ") && !Contains("ag-keygen: ag-keygen"));
}

TEST_CASE("ag-train learns the digits past 95% on sim devices, with the same losses in both modes",
          "[apps]") {
  temp_dir cwd{"apps-test-cwd"}, scratch{"apps-test"};
  std::string losses[2];
  for (int process = 0; process < 2; ++process) {
    const auto r = run(trainer,
                       {"--devices=sim:0,sim:1", process ? "--mode=process" : "--mode=thread",
                        "--epochs=12", "--min-accuracy=0.95"},
                       cwd.path(), scratch, std::chrono::seconds{120});
    INFO(r.out << r.err);
    REQUIRE(r.status.code == 0);
    CHECK_THAT(r.out, Contains("epoch  12  loss") && Contains("test accuracy 0.9"));
    std::istringstream lines{r.out};
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("epoch", 0) == 0)
        losses[process] += line + "\n";
  }
  CHECK(!losses[0].empty());
  CHECK(losses[0] == losses[1]); // printed to 9 digits: the same float bits
  // bfloat16 trains too, and a file that is not the digits is refused naming it.
  auto r = run(trainer, {"--devices=sim:0", "--dtype=bfloat16", "--epochs=12",
                         "--min-accuracy=0.9"},
               cwd.path(), scratch, std::chrono::seconds{120});
  INFO(r.out << r.err);
  CHECK(r.status.code == 0);
  spit(scratch.file("not-digits.gz"), std::string{"plain text, not gzip\n1,2,3\n"});
  r = run(trainer, {"--data=" + scratch.file("not-digits.gz"), "--epochs=1"}, cwd.path(), scratch);
  CHECK(r.status.code == 3);
  CHECK_THAT(r.err, Contains("not-digits.gz: line 1: not a number"));
  r = run(trainer, {"--devices=sim:0,sim:1", "--batch=127"}, cwd.path(), scratch);
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Contains("--batch=127: a multiple of the 2 devices"));
}
