// File: torchbench/registry.h
//
// The one global table of models. Model files self-register with
// TORCHBENCH_REGISTER_MODEL at static-initialization time; the registry
// stores specs and factories only, never built modules, and touches no
// device while registering.
//
//   for (const torchbench::RegisteredModel* m :
//   torchbench::Registry::Global().List())
//     std::cout << m->spec.name << "\n";
#ifndef TORCHBENCH_REGISTRY_H_
#define TORCHBENCH_REGISTRY_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "torchbench/model.h"

namespace torchbench {

struct RegisteredModel {
  ModelSpec spec;
  ModelFactory factory;
  std::string file;  // Where it was registered, for duplicate reports.
  int line = 0;

  // Builds the model for `config`. Seeds torch with config.seed first so
  // weights and inputs are the same on every call.
  std::unique_ptr<Model> Create(const ModelConfig& config) const;
};

class Registry {
 public:
  // Returns the process-wide registry the macro fills.
  static Registry& Global();

  // Adds a model. Returns AlreadyExists naming both registration places when
  // the name is taken, InvalidArgument for an empty name, no mode, or a
  // supported mode without a default batch size.
  absl::Status Add(ModelSpec spec, ModelFactory factory, std::string file,
                   int line);

  // Returns the model named exactly `name`, or nullptr.
  const RegisteredModel* Find(std::string_view name) const;

  // Returns every model, sorted by name.
  std::vector<const RegisteredModel*> List() const;

  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<RegisteredModel>, std::less<>> models_;
};

namespace internal {
// Registers at construction; on failure prints the reason and exits, so a
// duplicate name stops the program at start-up rather than hiding a model.
struct Registrar {
  Registrar(ModelSpec spec, ModelFactory factory, const char* file, int line);
};
}  // namespace internal

}  // namespace torchbench

#define TORCHBENCH_INTERNAL_CONCAT2(a, b) a##b
#define TORCHBENCH_INTERNAL_CONCAT(a, b) TORCHBENCH_INTERNAL_CONCAT2(a, b)

// Registers a model: TORCHBENCH_REGISTER_MODEL(spec, factory), where `spec`
// is a ModelSpec and `factory` a ModelFactory (see MakeModel<T>()).
#define TORCHBENCH_REGISTER_MODEL(spec, factory)                             \
  static const ::torchbench::internal::Registrar TORCHBENCH_INTERNAL_CONCAT( \
      torchbench_registrar_, __LINE__)((spec), (factory), __FILE__, __LINE__)

#endif  // TORCHBENCH_REGISTRY_H_
