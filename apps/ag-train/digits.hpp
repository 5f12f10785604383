// The handwritten digits of scikit-learn (sklearn/datasets/data/digits.csv.gz: 1,797 images of
// 8x8 pixels, 0 to 16, each line 64 pixels then the digit), read with zlib, and its split into a
// training and a test set by a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ag::train {

struct dataset {
  std::vector<float> pixels; // 64 per image, scaled to [0, 1]
  std::vector<int32_t> labels;

  std::size_t size() const noexcept { return labels.size(); }
};

// Where python3-sklearn puts the file (Debian's package), tried in order.
std::vector<std::string> default_digits_paths();

// Reads the gzip'ed CSV at path; throws std::runtime_error naming the path and the line for a
// file that cannot be read or a line that is not 64 pixels (0 to 16) and a digit (0 to 9).
dataset read_digits(const std::string& path);

// The images in an order shuffled by `seed` (Fisher-Yates over SplitMix64, the same on every
// machine), the first `test` of them the test set.
void split(const dataset& all, uint64_t seed, std::size_t test, dataset& train_set,
           dataset& test_set);

} // namespace ag::train
