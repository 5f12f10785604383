// ag-soak: floods runtimes as a hostile user would and shows that the controller's memory stays
// bounded, that backpressure holds the work in flight, that a stopped child is failed and killed
// while the other devices go on, and that every value read back is right (docs/BENCHMARKS.md,
// "Flooding: memory stays bounded").
//
//   ag-soak [--scenarios=all|flood-thread,flood-process,flood-stopped,uploads] [--iterations=N]
//           [--uploads=N] [--quick] [--json=FILE] [--config-file=FILE] [--version] [--help]
//
// Each scenario runs in a fresh process (this program with --scenario=NAME), so that its memory
// peak is its own; it prints one JSON line of figures, which this process collects, with a
// deadline, into a table and --json.
// Exit codes (README.md, "Exit codes"): 0 every scenario ran and every value was right, 1 a
// scenario failed, gave a wrong value, or a child was missing or left over, 2 a bad command line,
// 3 a runtime could not start or --json could not be written.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include "apps/ag-soak/flat_json.hpp"
#include "apps/ag-soak/scenario_process.hpp"
#include "apps/ag-soak/scenarios.hpp"
#include "apps/app_config.hpp"

namespace {

class soak_config : public ag::app::config {
public:
  std::string scenarios = "all";
  int64_t iterations = 0; // 0: by --quick
  int64_t uploads = 0;    // 0: by --quick
  bool quick = false;
  std::string json;
  std::string scenario; // internal: run this one scenario in this process

  soak_config() : ag::app::config("ag-soak", true) {
    opt_group{custom_options_, "global"}
      .add(scenarios, "scenarios,s",
           "all, or a list of flood-thread, flood-process, flood-stopped, uploads")
      .add(iterations, "iterations,n",
           "iterations of each flood loop (default 3000000; --quick 200000)")
      .add(uploads, "uploads", "1 MiB uploads of the uploads scenario (default 2000; --quick 200)")
      .add(quick, "quick,q", "fewer iterations and uploads (well under a minute on 2 cores)")
      .add(json, "json", "write every figure to this file as JSON")
      .add(scenario, "scenario", "(internal) run one scenario in this process");
  }
};

constexpr long long full_iterations = 3'000'000;
constexpr long long quick_iterations = 200'000;
constexpr long long full_uploads = 2000;
constexpr long long quick_uploads = 200;

// How long one scenario process may take.
constexpr std::chrono::seconds full_deadline{600};
constexpr std::chrono::seconds quick_deadline{120};

// The processes a name on --scenarios stands for.
std::vector<std::string> processes_of(const std::string& name) {
  if (name == "uploads")
    return {"uploads-thread", "uploads-process"};
  const auto& all = ag::soak::scenario_names();
  if (std::find(all.begin(), all.end(), name) != all.end())
    return {name};
  return {};
}

struct outcome {
  std::string name;
  ag::soak::scenario_outcome run;
  ag::soak::flat_json figures;
  bool parsed = false;
  int code = 0; // this scenario's contribution to the exit code
  std::string problems;
};

std::string fixed(double x, int precision) {
  if (std::isnan(x))
    return "n/a";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

std::string mib(double kib) { return kib < 0 || std::isnan(kib) ? "n/a" : fixed(kib / 1024, 1); }

std::string count(double x) { return std::isnan(x) ? "n/a" : fixed(x, 0); }

const char* verdict(int code) {
  return code == ag::app::exit_ok ? "done" : code == ag::app::exit_cannot_run ? "CANNOT RUN" : "FAILED";
}

void print_table(const std::vector<outcome>& rows) {
  std::printf("\n%-16s %-8s %10s %10s %8s %10s %8s %8s %8s %8s %9s %8s %-6s\n", "scenario",
              "mode", "iterations", "submitted", "wall s", "ops/s", "VmHWM", "RssAnon", "start",
              "blocked", "in-flight", "children", "values");
  std::printf("%-16s %-8s %10s %10s %8s %10s %8s %8s %8s %8s %9s %8s %-6s\n", "", "", "", "",
              "", "", "MiB", "peak MiB", "MiB", "submits", "peak ops", "alive/exp", "");
  for (const auto& o : rows) {
    const auto& f = o.figures;
    const bool ran = o.parsed && f.num("children_alive") >= 0; // the runtime started
    const std::string children =
      ran ? count(f.num("children_alive")) + "/" + count(f.num("children_expected")) : "n/a";
    const std::string values = !ran ? "n/a" : f.flag("values_right") ? "right" : "WRONG";
    std::printf("%-16s %-8s %10s %10s %8s %10s %8s %8s %8s %8s %9s %8s %-6s\n", o.name.c_str(),
                o.parsed ? f.text("mode").c_str() : "", count(f.num("iterations")).c_str(),
                count(f.num("submitted")).c_str(), fixed(f.num("wall_s"), 2).c_str(),
                count(f.num("ops_per_s")).c_str(), mib(f.num("vm_hwm_kib")).c_str(),
                mib(f.num("rss_anon_peak_kib")).c_str(), mib(f.num("rss_anon_start_kib")).c_str(),
                count(f.num("blocked_submits")).c_str(), count(f.num("in_flight_ops_peak")).c_str(),
                children.c_str(), values.c_str());
  }
  for (const auto& o : rows) {
    if (o.parsed && !o.figures.text("sync_error").empty())
      std::printf("%s: sync() threw: %s\n", o.name.c_str(), o.figures.text("sync_error").c_str());
    if (!o.problems.empty())
      std::printf("%s: %s: %s\n", o.name.c_str(), verdict(o.code), o.problems.c_str());
  }
}

std::string json_string(const std::string& s) {
  ag::soak::flat_json j;
  j.add("s", s);
  const std::string line = j.str(); // {"s": "..."}
  return line.substr(6, line.size() - 7);
}

bool write_json(const std::string& path, const soak_config& cfg, long long iterations,
                long long uploads, const std::vector<outcome>& rows, int exit_code) {
  std::ostringstream o;
  o << "{\n  \"program\": \"ag-soak\",\n  \"version\": \"" << AG_VERSION << "\",\n"
    << "  \"quick\": " << (cfg.quick ? "true" : "false") << ",\n  \"iterations\": " << iterations
    << ",\n  \"uploads\": " << uploads << ",\n  \"cores\": " << std::thread::hardware_concurrency()
    << ",\n  \"exit_code\": " << exit_code << ",\n  \"scenarios\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    o << (i ? "," : "") << "\n    {\"name\": " << json_string(r.name)
      << ", \"exit_code\": " << r.code << ", \"process_wall_s\": " << fixed(r.run.wall_s, 3)
      << ", \"problems\": " << json_string(r.problems)
      << ", \"figures\": " << (r.parsed ? r.figures.str() : "null") << "}";
  }
  o << "\n  ]\n}\n";
  std::ofstream out{path};
  out << o.str();
  return static_cast<bool>(out.flush());
}

int start(int argc, char** argv) {
  soak_config cfg;
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (!cfg.remainder.empty())
    return cfg.usage("unexpected argument \"" + cfg.remainder.front() + "\"");
  if (cfg.iterations < 0)
    return cfg.usage("--iterations=" + std::to_string(cfg.iterations) + ": expected at least 1");
  if (cfg.uploads < 0)
    return cfg.usage("--uploads=" + std::to_string(cfg.uploads) + ": expected at least 1");
  const ag::soak::sizes n{
    cfg.iterations > 0 ? cfg.iterations : cfg.quick ? quick_iterations : full_iterations,
    cfg.uploads > 0 ? cfg.uploads : cfg.quick ? quick_uploads : full_uploads};

  if (!cfg.scenario.empty()) {
    const auto& all = ag::soak::scenario_names();
    if (std::find(all.begin(), all.end(), cfg.scenario) == all.end())
      return cfg.usage("--scenario=" + cfg.scenario + ": not a scenario");
    return ag::soak::run_scenario(cfg.scenario, n);
  }

  std::vector<std::string> names;
  std::string list = cfg.scenarios == "all" ? "flood-thread,flood-process,flood-stopped,uploads"
                                            : cfg.scenarios;
  for (std::size_t at = 0; at <= list.size();) {
    const auto comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    const auto procs = processes_of(name);
    if (procs.empty())
      return cfg.usage("--scenarios=" + cfg.scenarios + ": \"" + name
                       + "\" is not a scenario (all, flood-thread, flood-process, flood-stopped, "
                         "uploads)");
    for (const auto& p : procs)
      if (std::find(names.begin(), names.end(), p) == names.end())
        names.push_back(p);
    at = comma + 1;
  }

  const auto deadline = cfg.quick ? quick_deadline : full_deadline;
  std::printf("ag-soak: %lld iterations per flood, %lld uploads of 1 MiB%s; %u cores\n",
              n.iterations, n.uploads, cfg.quick ? " (quick)" : "",
              std::thread::hardware_concurrency());
  std::fflush(stdout);
  std::vector<outcome> rows;
  for (const auto& name : names) {
    outcome o;
    o.name = name;
    o.run = ag::soak::run_scenario_process({"--scenario=" + name,
                                            "--iterations=" + std::to_string(n.iterations),
                                            "--uploads=" + std::to_string(n.uploads)},
                                           deadline);
    if (auto parsed = ag::soak::flat_json::parse(o.run.line)) {
      o.figures = std::move(*parsed);
      o.parsed = o.figures.text("scenario") == name;
    }
    std::string problems = o.parsed ? o.figures.text("problems") : "";
    if (!o.run.problem.empty())
      problems = o.run.problem + (problems.empty() ? "" : "; " + problems);
    else if (!o.parsed)
      problems = "ag-soak --scenario=" + name + ": its figures could not be read: \""
                 + o.run.line + "\"";
    if (problems.empty() && o.run.exit_code != 0)
      problems = "ag-soak --scenario=" + name + ": exited with code "
                 + std::to_string(o.run.exit_code);
    o.problems = problems;
    o.code = problems.empty() ? ag::app::exit_ok
             : o.run.exit_code == ag::app::exit_cannot_run && o.run.problem.empty()
               ? ag::app::exit_cannot_run
               : ag::app::exit_failed;
    std::printf("  %-16s %s in %.1f s\n", name.c_str(), verdict(o.code), o.run.wall_s);
    std::fflush(stdout);
    rows.push_back(std::move(o));
  }
  print_table(rows);

  // A failure outweighs a scenario that could not run.
  int code = ag::app::exit_ok;
  for (const auto& r : rows)
    if (r.code == ag::app::exit_failed || (r.code != 0 && code == ag::app::exit_ok))
      code = r.code;
  if (!cfg.json.empty() && !write_json(cfg.json, cfg, n.iterations, n.uploads, rows, code))
    return cfg.fail(ag::app::exit_cannot_run, "--json=" + cfg.json + ": cannot write it");
  return code;
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-soak", start, argc, argv, ag::app::exit_failed);
}
