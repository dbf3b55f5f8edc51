/// \file
/// \brief Helpers shared by the SIMT emulator tests: the schedules every test runs under, and
/// seeded random inputs.
#pragma once

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/simt/simt.h"

namespace vramlab::simt::testing {

/// One way to run a launch, with a name for failure messages.
struct NamedOptions {
  std::string name;       ///< e.g. "random:7, 2 workers"
  LaunchOptions options;  ///< the options
};

/// In order, reverse and two random seeds, each with 1 and 2 workers, shared memory poisoned.
/// \return the list.
inline std::vector<NamedOptions> all_schedules() {
  std::vector<NamedOptions> list;
  const struct {
    Schedule schedule;
    std::uint64_t seed;
  } orders[] = {{Schedule::kInOrder, 0},
                {Schedule::kReverse, 0},
                {Schedule::kRandom, 7},
                {Schedule::kRandom, 12345}};
  for (const auto& order : orders) {
    for (std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
      LaunchOptions options;
      options.schedule = order.schedule;
      options.seed = order.seed;
      options.workers = workers;
      options.poison_shared = true;
      std::ostringstream name;
      name << schedule_name(order.schedule);
      if (order.schedule == Schedule::kRandom) name << ":" << order.seed;
      name << ", " << workers << " worker(s)";
      list.push_back({name.str(), options});
    }
  }
  return list;
}

/// \param count how many. \param low smallest. \param high largest. \param seed the generator's
/// seed. \return uniformly random integers in [low, high].
inline std::vector<int> random_ints(std::size_t count, int low, int high, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int> distribution(low, high);
  std::vector<int> values(count);
  for (int& v : values) v = distribution(generator);
  return values;
}

}  // namespace vramlab::simt::testing
