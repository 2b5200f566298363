// File: program/list_models.h
//
// --torchbench_list_models: every model's spec as a table or as JSON.
#ifndef TORCHBENCH_PROGRAM_LIST_MODELS_H_
#define TORCHBENCH_PROGRAM_LIST_MODELS_H_

#include <ostream>
#include <string>

#include "torchbench/registry.h"

namespace torchbench {

// Prints every model's metadata and element counts (its spec's reference
// figures, which the built port equals: tests/models/counts_test.cpp) as a
// table or as JSON (a list of objects with name, domain, task, reference,
// modes, train_batch_size, eval_batch_size, fixed_batch_size,
// min_train_batch_size, min_eval_batch_size, parameters, buffers). Builds
// no model. Returns false when a spec records no counts (that model is
// listed with an "error" field).
bool ListModels(const Registry& registry, const std::string& format,
                std::ostream& out);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_LIST_MODELS_H_
