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

// The filter that hands Google Benchmark exactly the harness's benchmark
// `name`: Google Benchmark matches a manually timed benchmark by an internal
// name ending in "/manual_time".
std::string ExactBenchmarkFilter(const std::string& name);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_FILTERS_H_
