// File: program/filters.h
//
// --benchmark_filter as Google Benchmark reads it, applied to the names the
// harness registers (so `^name$` selects exactly one instance).
#ifndef TORCHBENCH_PROGRAM_FILTERS_H_
#define TORCHBENCH_PROGRAM_FILTERS_H_

#include <string>
#include <vector>

namespace torchbench {

// `text` with every extended-regex metacharacter escaped.
std::string EscapeRegex(const std::string& text);

// Returns whether `name` is selected by a --benchmark_filter value, with
// Google Benchmark's rules: extended regex search, a leading '-' negates,
// "" and "all" select everything.
bool FilterSelects(const std::string& filter, const std::string& name);

// Returns why a --benchmark_filter value is not a valid extended regular
// expression, or "" when it is.
std::string FilterError(const std::string& filter);

// Returns the filter to hand Google Benchmark so that it runs exactly the
// TorchBench benchmarks `registered` (the names RegisterModelBenchmarks
// returned for `filter`) and, among any other benchmarks of the process,
// those `filter` selects. Google Benchmark matches manually timed benchmarks
// by an internal name ending in "/manual_time"; this keeps `^name$` working
// on the names the harness prints.
std::string GoogleBenchmarkFilter(const std::string& filter,
                                  const std::vector<std::string>& registered);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_FILTERS_H_
