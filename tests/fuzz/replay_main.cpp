// A main() for ordinary (non-fuzzer) builds of a fuzz target: runs LLVMFuzzerTestOneInput once on
// each input named on the command line (a file, or every regular file of a directory, sorted), so
// that ctest replays the committed corpora with any compiler. Exceptions from the target are not
// caught here: as under libFuzzer, one escaping it terminates the program.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "fuzz replay: " << what << "\n";
  std::exit(2);
}

// A path that is missing or unreadable is an error, not zero inputs: a wrong corpus path in a test
// must not pass silently.
std::vector<fs::path> inputs(const fs::path& arg) {
  std::error_code ec;
  if (!fs::is_directory(arg, ec)) {
    if (!fs::exists(arg, ec))
      die(arg.string() + " does not exist");
    return {arg};
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it{arg, ec}, end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec))
      files.push_back(it->path());
  if (ec)
    die("cannot list " + arg.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

void run_one(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    die("cannot open " + p.string());
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  // Named before it runs, so that the last name printed before a crash is the crashing input.
  std::cout << "  " << p.string() << " (" << bytes.size() << " bytes)" << std::endl;
  // libFuzzer passes a heap copy of exactly size bytes, never a null pointer: so does this, so that
  // AddressSanitizer or valgrind see any read past the input.
  const std::size_t size = bytes.size();
  const std::unique_ptr<uint8_t[]> copy{new uint8_t[size]};
  std::copy(bytes.begin(), bytes.end(), copy.get());
  LLVMFuzzerTestOneInput(copy.get(), size);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    die(std::string{"usage: "} + argv[0] + " FILE_OR_DIR...");
  std::size_t ran = 0;
  for (int i = 1; i < argc; ++i)
    for (const auto& p : inputs(argv[i])) {
      run_one(p);
      ++ran;
    }
  std::cout << ran << " inputs ran\n";
  return 0;
}
