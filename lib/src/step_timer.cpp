#include "step_timer.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include "torchbench/device.h"

namespace torchbench {

StepTimer::StepTimer(c10::Device device) : device_(device) {
  if (!device_.is_cpu()) {
    // BACKEND_DEFAULT enables timing; the default flag makes elapsedTime throw.
    start_event_.emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
    stop_event_.emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  }
}

void StepTimer::Start() {
  wall_start_ = std::chrono::steady_clock::now();
  if (start_event_) {
    c10::impl::VirtualGuardImpl impl(device_.type());
    start_event_->record(impl.getStream(device_));
  }
}

StepTime StepTimer::Stop() {
  StepTime t;
  if (stop_event_) {
    c10::impl::VirtualGuardImpl impl(device_.type());
    stop_event_->record(impl.getStream(device_));
  }
  SynchronizeDevice(device_);
  t.wall_seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - wall_start_)
                       .count();
  t.seconds = stop_event_ ? start_event_->elapsedTime(*stop_event_) / 1e3
                          : t.wall_seconds;
  return t;
}

}  // namespace torchbench
